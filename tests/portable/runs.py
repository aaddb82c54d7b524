"""The runs of the portable suite: every command, on the one-worker and (train, evaluate) two-worker services.

Each run is a side-by-side pair (see ``plan.py``) named ``COMMAND/CASE/Nw``.
Evaluation, prediction and timeliness read models and prefix files that the
in-process runs of ``train`` and ``sequence`` wrote, so each test checks only
its own command. Runs are defined so that those that others need come first;
the slowest (two-worker) runs come last, to overlap with the tests checking
the first ones.
"""

from __future__ import annotations

from polybeam import datasets
from tests.portable.plan import Plan
from tests.portable.variants import TRAIN_VARIANTS

# Evaluated and predicted with both a binary (logistic) and a multiclass (softmax) model.
SCORED_VARIANTS = ("one-pass", "softmax")


def model_of(plan: Plan, variant: str):
    """The model file of the in-process one-worker run of a train variant."""
    return plan.folder(f"train/{variant}/1w") / "model"


def beside(out):
    """Evaluate and timeliness write their report and dead letters next to the model or prefix file they
    read by default, which both sides of a run share: each side writes into its own folder instead."""
    return ["--report", out / "report.json", "--dead-letters", out / "dead_letters.jsonl"]


def define_runs(plan: Plan, data: dict) -> None:
    """Define every run of the suite in ``plan``; ``data`` maps dataset names to ``data.Split``."""
    spam = data["spam"]
    groups = datasets.group_spec_path("spam")

    for variant, spec in TRAIN_VARIANTS.items():
        train = data[spec.dataset].train

        def train_args(out, train=train, spec=spec):
            return ["train", "--input", train, "--model", out / "model", *spec.options]

        plan.side_by_side(f"train/{variant}/1w", train_args)

    # Handed to the job service without waiting (as a flex template's launcher does): portable only.
    plan.side_by_side("train/one-pass-no-wait/1w", lambda out: [
        "train", "--input", spam.train, "--model", out / "model", *TRAIN_VARIANTS["one-pass"].options, "--no-wait"],
        kinds=("portable",))  # fmt: skip

    def sequence_args(method):
        return lambda out: ["sequence", "--input", spam.train, "--groups", groups, "--method", method,
                            "--output", out / "prefixes.jsonl"]  # fmt: skip

    plan.side_by_side("sequence/cs-g-omp/1w", sequence_args("cs-g-omp"))
    # The second prefix file of the timeliness comparison: in process only.
    plan.side_by_side("sequence/cs-g-fr/1w", sequence_args("cs-g-fr"), kinds=("in-process",))

    for variant in SCORED_VARIANTS:
        test = data[TRAIN_VARIANTS[variant].dataset].test
        model = model_of(plan, variant)
        plan.side_by_side(f"evaluate/{variant}/1w", lambda out, test=test, model=model: [
            "evaluate", "--input", test, "--model", model, *beside(out)],
            needs=[f"train/{variant}/1w"])  # fmt: skip
        plan.side_by_side(f"predict/{variant}/1w", lambda out, test=test, model=model: [
            "predict", "--input", test, "--model", model, "--output", out / "predictions", "--num-shards", "1"],
            needs=[f"train/{variant}/1w"])  # fmt: skip

    prefixes = ",".join(str(plan.folder(f"sequence/{method}/1w") / "prefixes.jsonl")
                        for method in ("cs-g-omp", "cs-g-fr"))  # fmt: skip
    plan.side_by_side("timeliness/spam/1w", lambda out: [
        "timeliness", "--input", spam.test, "--prefixes", prefixes, *beside(out)],
        needs=["sequence/cs-g-omp/1w", "sequence/cs-g-fr/1w"])  # fmt: skip

    plan.side_by_side("demo/spam/1w", lambda out: ["demo", "--output-dir", out / "demo"])

    # Two workers: on shards, so that each worker reads a share and the learners are averaged.
    for variant, spec in TRAIN_VARIANTS.items():
        shards = data[spec.dataset].train_shards

        def sharded_args(out, shards=shards, spec=spec):
            return ["train", "--input", shards, "--model", out / "model", *spec.options]

        plan.side_by_side(f"train/{variant}/2w", sharded_args, workers=2)
    # The control: the same shards with one in-process worker (the two-worker model must differ).
    plan.side_by_side("train/one-pass-shards/1w", lambda out: [
        "train", "--input", spam.train_shards, "--model", out / "model", *TRAIN_VARIANTS["one-pass"].options],
        kinds=("in-process",))  # fmt: skip
    plan.side_by_side("evaluate/one-pass/2w", lambda out: [
        "evaluate", "--input", spam.test_shards, "--model", model_of(plan, "one-pass"), *beside(out)],
        workers=2, needs=["train/one-pass/1w"])  # fmt: skip
