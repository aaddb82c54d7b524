"""The engine suite's runs: the same commands on an engine and in process (the reference), once each.

The reference is one plan of in-process runs for the session; each engine
has a plan of its own runs, named as the reference's, that ``test_engine_
suite.py`` compares with them. Models an engine trains are also evaluated in
process on the held-out split (``evaluate-model/...``): that is how a model
trained on other bundles is judged (see ``tolerance.py``).

Commands that score a reference model on the engine (evaluate, predict,
RunInference, timeliness) and ``sequence`` must give the reference's results
up to the order of floating-point sums; training must read the same records
and dead-letter the same ones, and learn as well to within the tolerance.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from polybeam import datasets
from tests.engines.data import EngineData
from tests.portable.commands import PYTHON
from tests.portable.plan import Plan

HERE = Path(__file__).resolve().parent
EXAMPLE_YAML = HERE.parent.parent / "examples" / "train_evaluate.yaml"
REFERENCE, ENGINE = "in-process", "portable"

TRAINS = {
    "linear": ("spam", ("--loss", "logistic")),
    "apple": ("spam", ("--loss", "logistic", "--expand", "apple")),
    "softmax": ("satellite", ("--loss", "softmax", "--classes", "6")),
    "three-passes": ("spam", ("--loss", "logistic", "--passes", "3", "--holdout-min-examples", "0")),
}
PER_KEY = ("--format", "vw", "--key", "tag", "--bits", "10", "--loss", "logistic")
# Models per event-time window, from the timestamped CSV: daily models, and per store in sliding windows.
TIMESTAMPED = ("--format", "csv", "--label-column", "y", "--timestamp", "column:ts", "--loss", "logistic")
WINDOWED = {
    "windowed-fixed": (*TIMESTAMPED, "--ignore-columns", "store", "--window", "fixed:1d"),
    "windowed-sliding-per-key": (*TIMESTAMPED, "--key", "column:store", "--window", "sliding:1d,12h", "--passes", "2"),
}
# The uninterrupted three-pass job whose checkpoints a resumed job finds (reference only), and the
# checkpoint a job killed in its last pass never wrote.
CHECKPOINTED = ("--loss", "logistic", "--passes", "3", "--holdout-off")
CHECKPOINTS, LOST_PASS = "model.checkpoints", "pass-0003.state"


# The runs an engine takes when it need not take all: the Flink cluster repeats on several TaskManagers what
# embedded Flink runs, and what a cluster can change is how work is split, shuffled and combined across
# processes -- training (one pass, per key, per window) and evaluating per key and per window. Several passes
# and a resumed pass (the same combining, pass after pass), scoring with one model, sequencing, RunInference
# and YAML run on embedded Flink (and every other engine), to keep CI under its time limit;
# POLYBEAM_ENGINES_FULL=1 runs every run on the cluster too.
SUBSETS = {
    "flink-cluster": frozenset(
        f"{kind}/{variant}" for kind in ("train", "evaluate-model") for variant in ("linear", "per-key", *WINDOWED)
    )
    | {"evaluate-model/per-key-on-engine", "evaluate-model/windowed-fixed-on-engine"},
}


def subset(engine: str) -> frozenset[str] | None:
    """The runs ``engine`` takes (None: every run; see :data:`SUBSETS`)."""
    return None if os.environ.get("POLYBEAM_ENGINES_FULL") else SUBSETS.get(engine)


def reports(out: Path) -> list:
    """Where evaluate/timeliness write their report and dead letters: the run's own folder."""
    return ["--report", out / "report.json", "--dead-letters", out / "dead_letters.jsonl"]


def _test_input(data: EngineData, dataset: str) -> str:
    return getattr(data, dataset).test_shards


def define_runs(
    plan: Plan, data: EngineData, reference: Plan | None = None, only: frozenset[str] | None = None
) -> None:
    """The suite's runs in ``plan``: the reference's (``reference=None``: in process) or an engine's, whose
    runs read the reference's models and checkpoints (waiting for them); ``only``: the names of the runs to
    define (None: all; see :func:`subset`)."""
    side = ENGINE if reference is not None else REFERENCE
    reference = reference or plan

    def add(name: str, *args, **options) -> None:
        if only is None or name in only:
            plan.side_by_side(name, *args, **options)

    def from_reference(*names):
        """``prepare`` that waits until the reference's runs ``names`` succeeded (their files are read)."""

        def prepare(kind, out):
            for name in names:
                done = reference[name].in_process
                if done.returncode != 0:
                    raise RuntimeError(f"the reference's {name} failed:\n{done.failure()}")

        return prepare

    def model(name: str) -> Path:
        return reference.folder(name, REFERENCE) / "model"

    def train_and_judge(name: str, args_for, test: str, *extra_eval, prepare=None):
        add(f"train/{name}", args_for, kinds=(side,), prepare=prepare)
        trained = plan.folder(f"train/{name}", side)
        add(
            f"evaluate-model/{name}",
            lambda out: [
                "evaluate",
                "--input",
                test,
                "--model",
                trained / ("models" if name == "per-key" else "model"),
                *extra_eval,
                *reports(out),
            ],
            needs=[f"train/{name}"],
            kinds=(REFERENCE,),
        )

    for name, options in WINDOWED.items():
        # A windowed folder's models say how to read and window the test input: no options to repeat.
        train_and_judge(
            name,
            lambda out, options=options: [
                "train",
                "--input",
                data.timestamped_train,
                "--model",
                out / "model",
                *options,
            ],
            str(data.timestamped_test),
        )

    for name, (dataset, options) in TRAINS.items():
        train = data.spam_train if dataset == "spam" else data.satellite.train_shards
        train_and_judge(
            name,
            lambda out, train=train, options=options: ["train", "--input", train, "--model", out / "model", *options],
            _test_input(data, dataset),
        )
    train_and_judge(
        "per-key",
        lambda out: ["train", "--input", data.per_key.train_vw_shards, "--model", out / "models", *PER_KEY],
        str(data.per_key.test_vw),
        "--format",
        "vw",
    )

    spam_test = _test_input(data, "spam")
    # A warm start from the reference's linear model.
    train_and_judge(
        "warm-start",
        lambda out: [
            "train",
            "--input",
            data.spam_train,
            "--model",
            out / "model",
            "--loss",
            "logistic",
            "--initial-model",
            model("train/linear"),
        ],
        spam_test,
        prepare=from_reference("train/linear"),
    )
    if side == REFERENCE:
        train_and_judge(
            "checkpointed",
            lambda out: ["train", "--input", data.spam_train, "--model", out / "model", *CHECKPOINTED],
            spam_test,
        )
    else:
        # A job killed in its last pass: the reference's checkpoints but the last, resumed on the engine.
        def lose_the_last_pass(kind, out):
            from_reference("train/checkpointed")(kind, out)
            shutil.copytree(reference.folder("train/checkpointed", REFERENCE) / CHECKPOINTS, out / CHECKPOINTS)
            (out / CHECKPOINTS / LOST_PASS).unlink()

        train_and_judge(
            "resume",
            lambda out: ["train", "--input", data.spam_train, "--model", out / "model", *CHECKPOINTED, "--resume"],
            spam_test,
            prepare=lose_the_last_pass,
        )

    # Scoring the reference's models, and sequencing: the reference's results, up to the order of sums.
    # (The reference's own evaluation of its models is its evaluate-model/... runs.)
    if side == ENGINE:
        add(
            "evaluate-model/linear-on-engine",
            lambda out: ["evaluate", "--input", spam_test, "--model", model("train/linear"), *reports(out)],
            kinds=(side,),
            prepare=from_reference("train/linear"),
        )
        add(
            "evaluate-model/windowed-fixed-on-engine",
            lambda out: [
                "evaluate",
                "--input",
                data.timestamped_test,
                "--model",
                model("train/windowed-fixed"),
                *reports(out),
            ],
            kinds=(side,),
            prepare=from_reference("train/windowed-fixed"),
        )
        add(
            "evaluate-model/per-key-on-engine",
            lambda out: [
                "evaluate",
                "--input",
                data.per_key.test_vw,
                "--format",
                "vw",
                "--model",
                reference.folder("train/per-key", REFERENCE) / "models",
                *reports(out),
            ],
            kinds=(side,),
            prepare=from_reference("train/per-key"),
        )
    add(
        "predict/linear",
        lambda out: [
            "predict",
            "--input",
            spam_test,
            "--model",
            model("train/linear"),
            "--output",
            out / "predictions",
            "--num-shards",
            "1",
        ],
        kinds=(side,),
        prepare=from_reference("train/linear"),
    )
    add(
        "inference/linear",
        lambda out: [
            PYTHON,
            HERE / "inference_job.py",
            "--model",
            model("train/linear"),
            "--input",
            spam_test,
            "--output",
            out / "scored",
        ],
        kinds=(side,),
        prepare=from_reference("train/linear"),
    )
    groups = datasets.group_spec_path("spam")
    methods = ("cs-g-omp", "cs-g-fr") if side == REFERENCE else ("cs-g-omp",)
    for method in methods:
        add(
            f"sequence/{method}",
            lambda out, method=method: [
                "sequence",
                "--input",
                data.spam.train,
                "--groups",
                groups,
                "--method",
                method,
                "--output",
                out / "prefixes.jsonl",
            ],
            kinds=(side,),
        )
    prefixes = ",".join(
        str(reference.folder(f"sequence/{method}", REFERENCE) / "prefixes.jsonl") for method in ("cs-g-omp", "cs-g-fr")
    )
    add(
        "timeliness/spam",
        lambda out: ["timeliness", "--input", data.spam.test, "--prefixes", prefixes, *reports(out)],
        kinds=(side,),
        prepare=from_reference("sequence/cs-g-omp", "sequence/cs-g-fr"),
    )
    # Beam YAML: the shipped example, run by Beam's own YAML runner on the engine.
    add(
        "yaml/train-evaluate",
        lambda out: [
            PYTHON,
            "-m",
            "apache_beam.yaml.main",
            "--yaml_pipeline_file",
            EXAMPLE_YAML,
            "--jinja_variables",
            yaml_variables(data, out),
        ],
        kinds=(side,),
    )


def yaml_variables(data: EngineData, out: Path) -> str:
    import json

    from polybeam.transforms.yaml_steps import PROVIDERS

    return json.dumps(
        {"providers": PROVIDERS, "train": data.spam_train, "test": data.spam.test_shards, "out": str(out / "out")}
    )
