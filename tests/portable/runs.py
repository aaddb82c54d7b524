"""The runs of the portable suite: every command, on the one-worker and (train, evaluate) two-worker services.

Each run is a side-by-side pair (see ``plan.py``) named ``COMMAND/CASE/Nw``.
Evaluation, prediction and timeliness read models and prefix files that the
in-process runs of ``train`` and ``sequence`` wrote, so each test checks only
its own command. Runs are defined so that those that others need come first;
the slowest (two-worker) runs come last, to overlap with the tests checking
the first ones.

Production runs: per-key models (train from VW tags and a CSV column,
evaluate on the folder, predict with a fallback model), a resume from the
checkpoints of the three-pass run after losing its last pass, and warm
starts from its model and from one of its learner-state files. Where an
in-process run adds nothing (resume, and the warm start from a state, equal
the uninterrupted in-process run), only the portable side runs: each run
costs seconds of the suite's budget.
"""

from __future__ import annotations

import os
import shutil
import threading

from polybeam import datasets
from polybeam.transforms.keyed_files import KeyedFolder
from tests.portable.plan import Plan
from tests.portable.variants import PER_KEY_VARIANTS, TRAIN_VARIANTS

# The uninterrupted multi-pass run whose checkpoints the resume and warm-start runs read.
CHECKPOINTED = "train/three-passes/1w"
CHECKPOINTS = "model.checkpoints"
# A job that died in pass 3 of 3: pass 2's state is the last complete one.
LOST_PASS = "pass-0003.state"
# Warm starts (--initial-model) from the checkpointed run's files: its model, or its state after pass 2.
WARM_STARTS = {"model": "model", "state": f"{CHECKPOINTS}/pass-0002.state"}
# The fallback model of per-key prediction: any model of the per-key settings will do, so one key's
# own model stands in for a global one (one training job less).
FALLBACK_KEY = "key0"

# Evaluated and predicted with both a binary (logistic) and a multiclass (softmax) model.
SCORED_VARIANTS = ("one-pass", "softmax")


def fallback_model(folder):
    """Where the fallback model of the per-key ``folder`` goes: one key's model, beside the folder."""
    return folder.parent / "fallback.model"


def write_fallback_model(folder) -> None:
    """Write :func:`fallback_model` from the trained folder's shards (once its training is done)."""
    path = fallback_model(folder)
    if not path.exists():  # both sides of the run may get here: the file appears whole, once
        temporary = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}")
        KeyedFolder(str(folder)).model(FALLBACK_KEY).save(str(temporary))
        os.replace(temporary, path)


def model_of(plan: Plan, variant: str):
    """The model file of the in-process one-worker run of a train variant."""
    return plan.folder(f"train/{variant}/1w") / "model"


def beside(out):
    """Evaluate and timeliness write their report and dead letters next to the model or prefix file they
    read by default, which both sides of a run share: each side writes into its own folder instead."""
    return ["--report", out / "report.json", "--dead-letters", out / "dead_letters.jsonl"]


def per_key_models_of(plan: Plan, variant: str = "per-key-vw"):
    """The per-key folder of the in-process one-worker run of a per-key train variant."""
    return plan.folder(f"train/{variant}/1w") / "models"


def copy_checkpoints_but_the_last(plan: Plan):
    """``prepare`` of a resume: the checkpointed run's checkpoints, from the same side, without its last pass.

    That is what a job killed in its last pass leaves (no model, pass 2 saved);
    copied, so that the checkpointed run's own folder stays as its test expects.
    """

    def prepare(kind, out):
        source = plan[CHECKPOINTED]
        if source.futures[kind].result().returncode != 0:
            raise RuntimeError(f"{CHECKPOINTED} ({kind}) failed")
        shutil.copytree(source.folders[kind] / CHECKPOINTS, out / CHECKPOINTS)
        (out / CHECKPOINTS / LOST_PASS).unlink()

    return prepare


def define_per_key_training(plan: Plan, split) -> None:
    """``train --key`` from VW tags and from a CSV column."""
    for variant, spec in PER_KEY_VARIANTS.items():
        plan.side_by_side(
            f"train/{variant}/1w",
            lambda out, spec=spec: [
                "train",
                "--input",
                getattr(split, spec.input),
                "--model",
                out / "models",
                *spec.options,
            ],
        )


def define_per_key_scoring(plan: Plan, split) -> None:
    """Evaluate and predict on the per-key folder; the test file's last example has a key without a model:
    a dead letter in the evaluation, the fallback model's in the predictions."""
    trained = "train/per-key-vw/1w"
    scored = ["--input", split.test_vw, "--format", "vw", "--model", per_key_models_of(plan)]
    plan.side_by_side("evaluate/per-key/1w", lambda out: ["evaluate", *scored, *beside(out)], needs=[trained])
    plan.side_by_side(
        "predict/per-key-fallback/1w",
        lambda out: [
            "predict",
            *scored,
            "--fallback-model",
            fallback_model(per_key_models_of(plan)),
            "--output",
            out / "predictions",
            "--num-shards",
            "1",
        ],
        needs=[trained],
        prepare=lambda kind, out: write_fallback_model(per_key_models_of(plan)),
    )


def define_resume_and_warm_starts(plan: Plan, spam) -> None:
    """``--resume`` after losing pass 3, and ``--initial-model`` from the checkpointed run's model and from its
    state after pass 2. The resume and the warm start from a state are portable only: their in-process
    reference is the uninterrupted in-process run itself."""
    options = TRAIN_VARIANTS["three-passes"].options
    plan.side_by_side(
        "train/resume/1w",
        lambda out: ["train", "--input", spam.train, "--model", out / "model", *options, "--resume"],
        kinds=("portable",),
        needs=[CHECKPOINTED],
        prepare=copy_checkpoints_but_the_last(plan),
    )
    for source, name in WARM_STARTS.items():
        initial = plan.folder(CHECKPOINTED) / name
        kinds = ("portable",) if source == "state" else ("portable", "in-process")
        plan.side_by_side(
            f"train/warm-from-{source}/1w",
            lambda out, initial=initial: [
                "train",
                "--input",
                spam.train,
                "--model",
                out / "model",
                "--loss",
                "logistic",
                "--initial-model",
                initial,
            ],
            needs=[CHECKPOINTED],
            kinds=kinds,
        )


# The model that records its input (CSV with an ID and an ignored column), and predictions read as it was read.
CSV_IDS = (
    "--format",
    "csv",
    "--label-column",
    "label",
    "--id-column",
    "id",
    "--ignore-columns",
    "note",
    "--loss",
    "logistic",
)


def define_input_record_runs(plan: Plan, csv) -> None:
    """``train`` on CSV with an ID and an ignored column (the workers write what the model records of its
    input and origin), and ``predict`` with the model alone: no format options, each line with its ID."""
    plan.side_by_side(
        "train/csv-ids/1w", lambda out: ["train", "--input", csv.train, "--model", out / "model", *CSV_IDS]
    )
    plan.side_by_side(
        "predict/csv-ids/1w",
        lambda out: [
            "predict",
            "--input",
            csv.test,
            "--model",
            plan.folder("train/csv-ids/1w") / "model",
            "--output",
            out / "predictions",
            "--num-shards",
            "1",
        ],
        needs=["train/csv-ids/1w"],
    )


# Models per day (fixed windows) of the timed CSV, the store column left out of the features.
WINDOWED = (
    "--format",
    "csv",
    "--label-column",
    "y",
    "--ignore-columns",
    "store",
    "--timestamp",
    "column:ts",
    "--window",
    "fixed:1d",
    "--loss",
    "logistic",
    "--bits",
    "12",
)


def define_windowed_runs(plan: Plan, timed) -> None:
    """``train --window`` (a model per day) and ``evaluate`` of its folder (each day's examples by its model)."""
    plan.side_by_side(
        "train/windowed/1w", lambda out: ["train", "--input", timed.train, "--model", out / "models", *WINDOWED]
    )
    plan.side_by_side(
        "evaluate/windowed/1w",
        lambda out: [
            "evaluate",
            "--input",
            timed.test,
            "--model",
            plan.folder("train/windowed/1w") / "models",
            *beside(out),
        ],
        needs=["train/windowed/1w"],
    )


def define_runs(plan: Plan, data: dict) -> None:
    """Define every run of the suite in ``plan``; ``data`` maps dataset names to ``data.Split`` (and
    ``"per-key"`` to ``data.PerKeySplit``)."""
    spam = data["spam"]
    groups = datasets.group_spec_path("spam")

    for variant, spec in TRAIN_VARIANTS.items():
        train = data[spec.dataset].train

        def train_args(out, train=train, spec=spec):
            return ["train", "--input", train, "--model", out / "model", *spec.options]

        plan.side_by_side(f"train/{variant}/1w", train_args)
    define_per_key_training(plan, data["per-key"])

    # Handed to the job service without waiting (as a flex template's launcher does): portable only.
    plan.side_by_side(
        "train/one-pass-no-wait/1w",
        lambda out: [
            "train",
            "--input",
            spam.train,
            "--model",
            out / "model",
            *TRAIN_VARIANTS["one-pass"].options,
            "--no-wait",
        ],
        kinds=("portable",),
    )

    def sequence_args(method):
        return lambda out: [
            "sequence",
            "--input",
            spam.train,
            "--groups",
            groups,
            "--method",
            method,
            "--output",
            out / "prefixes.jsonl",
        ]

    plan.side_by_side("sequence/cs-g-omp/1w", sequence_args("cs-g-omp"))
    # The second prefix file of the timeliness comparison: in process only.
    plan.side_by_side("sequence/cs-g-fr/1w", sequence_args("cs-g-fr"), kinds=("in-process",))

    for variant in SCORED_VARIANTS:
        test = data[TRAIN_VARIANTS[variant].dataset].test
        model = model_of(plan, variant)
        plan.side_by_side(
            f"evaluate/{variant}/1w",
            lambda out, test=test, model=model: ["evaluate", "--input", test, "--model", model, *beside(out)],
            needs=[f"train/{variant}/1w"],
        )
        plan.side_by_side(
            f"predict/{variant}/1w",
            lambda out, test=test, model=model: [
                "predict",
                "--input",
                test,
                "--model",
                model,
                "--output",
                out / "predictions",
                "--num-shards",
                "1",
            ],
            needs=[f"train/{variant}/1w"],
        )

    define_per_key_scoring(plan, data["per-key"])
    define_resume_and_warm_starts(plan, spam)
    define_input_record_runs(plan, data["spam-csv-ids"])
    define_windowed_runs(plan, data["timed"])

    prefixes = ",".join(
        str(plan.folder(f"sequence/{method}/1w") / "prefixes.jsonl") for method in ("cs-g-omp", "cs-g-fr")
    )
    plan.side_by_side(
        "timeliness/spam/1w",
        lambda out: ["timeliness", "--input", spam.test, "--prefixes", prefixes, *beside(out)],
        needs=["sequence/cs-g-omp/1w", "sequence/cs-g-fr/1w"],
    )

    plan.side_by_side("demo/spam/1w", lambda out: ["demo", "--output-dir", out / "demo"])

    # Two workers: on shards, so that each worker reads a share and the learners are averaged.
    for variant, spec in TRAIN_VARIANTS.items():
        shards = data[spec.dataset].train_shards

        def sharded_args(out, shards=shards, spec=spec):
            return ["train", "--input", shards, "--model", out / "model", *spec.options]

        plan.side_by_side(f"train/{variant}/2w", sharded_args, workers=2)
    # The control: the same shards with one in-process worker (the two-worker model must differ).
    plan.side_by_side(
        "train/one-pass-shards/1w",
        lambda out: [
            "train",
            "--input",
            spam.train_shards,
            "--model",
            out / "model",
            *TRAIN_VARIANTS["one-pass"].options,
        ],
        kinds=("in-process",),
    )
    plan.side_by_side(
        "evaluate/one-pass/2w",
        lambda out: ["evaluate", "--input", spam.test_shards, "--model", model_of(plan, "one-pass"), *beside(out)],
        workers=2,
        needs=["train/one-pass/1w"],
    )
    # Per-key learners of four shards, merged key by key.
    plan.side_by_side(
        "train/per-key-vw/2w",
        lambda out: [
            "train",
            "--input",
            data["per-key"].train_vw_shards,
            "--model",
            out / "models",
            *PER_KEY_VARIANTS["per-key-vw"].options,
        ],
        workers=2,
    )
