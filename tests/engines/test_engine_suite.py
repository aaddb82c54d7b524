"""polybeam's engine suite: each command on a real engine against the in-process reference (``runs.py``).

* reads: the same records, examples, skipped lines and dead letters, exactly
  (the dead-letter files hold the same lines: source, position, reason);
* training: an engine's model, evaluated in process on held-out data, within
  ``tolerance.held_out`` of the reference model (bundling is the engine's);
* scoring a fixed model and sequencing: the reference's results up to the
  order of floating-point sums (``compare.py``).
"""

from __future__ import annotations

import glob
import json
from pathlib import Path

import pytest

from tests.engines.data import BAD_RECORDS, BAD_TIMES
from tests.engines.runs import TRAINS, WINDOWED
from tests.engines.tolerance import METRICS, held_out
from tests.portable.compare import assert_close, assert_same_lines, normalised, prediction_lines

pytestmark = pytest.mark.engines

READ_COUNTS = ("records", "examples", "dead_letters", "skipped", "reconciles")
TRAINED = [*TRAINS, "per-key", "warm-start", "resume", *WINDOWED]


def bad_records(variant: str) -> int:
    """The dead letters a training command's input holds (``data.py``)."""
    if variant in WINDOWED:
        return BAD_TIMES
    return BAD_RECORDS if TRAINS.get(variant, ("spam",))[0] == "spam" and variant != "per-key" else 0


def engine_run(engine, name: str):
    """Run ``name`` of the engine's plan; a run the engine does not take (``runs.SUBSETS``) skips the test."""
    started, plan = engine
    if name not in plan.definitions:
        pytest.skip(
            f"{started.name} takes a subset of the runs (tests/engines/runs.py SUBSETS); embedded Flink runs "
            f"{name} (POLYBEAM_ENGINES_FULL=1 runs it here too)"
        )
    return plan[name]


def on_engine(engine, name: str):
    return engine_run(engine, name).portable


def in_reference(reference_plan, name: str):
    return reference_plan[name].in_process


def judged(report: dict) -> dict:
    return {metric: report[metric] for metric in METRICS if report.get(metric) is not None}


@pytest.mark.parametrize("variant", TRAINED)
def test_training(engine, reference_plan, variant):
    """The same reads and dead letters; a model as good as the reference's on held-out data."""
    reference_variant = "checkpointed" if variant == "resume" else variant
    mine = on_engine(engine, f"train/{variant}").report
    theirs = in_reference(reference_plan, f"train/{reference_variant}").report
    assert {k: mine[k] for k in READ_COUNTS} == {k: theirs[k] for k in READ_COUNTS}
    assert mine["reconciles"] and mine["dead_letters"] == bad_records(variant)
    if variant != "resume":  # a resumed job trains its last pass only
        assert mine["examples_trained"] == theirs["examples_trained"]
        assert mine.get("examples_held_out") == theirs.get("examples_held_out")
        assert [p["examples"] for p in mine.get("passes", [])] == [p["examples"] for p in theirs.get("passes", [])]
    if theirs["dead_letters"]:
        assert_same_lines(mine["dead_letter_file"], theirs["dead_letter_file"])
    engine_model = engine_run(engine, f"evaluate-model/{variant}").in_process.report
    reference_model = in_reference(reference_plan, f"evaluate-model/{reference_variant}").report
    assert engine_model["examples"] == reference_model["examples"]
    allowed = held_out(variant)
    for metric, reference_value in judged(reference_model).items():
        assert abs(engine_model[metric] - reference_value) <= allowed[metric], (
            f"{metric}: engine {engine_model[metric]:.5f}, in process {reference_value:.5f}"
        )
    if variant in WINDOWED:
        assert_same_windows(variant, mine, theirs, engine_model, reference_model)


def assert_same_windows(command: str, mine: dict, theirs: dict, engine_model: dict, reference_model: dict) -> None:
    """The same windows, each with the same examples (and keys), trained and evaluated; each window's model
    within the tolerance (widened for its fewer examples: ``tolerance.held_out``)."""
    assert mine["window_spec"] == theirs["window_spec"]
    trained = {name: (window["examples"], window.get("keys")) for name, window in mine["windows"].items()}
    assert trained == {name: (window["examples"], window.get("keys")) for name, window in theirs["windows"].items()}
    assert sorted(engine_model["windows"]) == sorted(reference_model["windows"]) == sorted(trained)
    for name, reference_window in reference_model["windows"].items():
        # A window's metrics, or (per key) each of its keys' metrics.
        per_key = "examples" not in reference_window
        mine_by_key = engine_model["windows"][name] if per_key else {None: engine_model["windows"][name]}
        theirs_by_key = reference_window if per_key else {None: reference_window}
        assert sorted(mine_by_key, key=str) == sorted(theirs_by_key, key=str)
        for key, reference_metrics in theirs_by_key.items():
            assert mine_by_key[key]["examples"] == reference_metrics["examples"]
            allowed_here = held_out(command, reference_metrics["examples"])
            for metric, value in judged(reference_metrics).items():
                assert abs(mine_by_key[key][metric] - value) <= allowed_here[metric], (name, key, metric, value)


@pytest.mark.parametrize("scored", ["linear", "per-key", "windowed-fixed"])
def test_evaluate_a_reference_model(engine, reference_plan, scored):
    """The reference's model evaluated on the engine: the reference's metrics (per key too) and dead letters."""
    run = engine_run(engine, f"evaluate-model/{scored}-on-engine")
    reference = reference_plan[f"evaluate-model/{scored}"]
    assert_close(
        normalised(run.portable.report, str(run.portable_dir)),
        normalised(reference.in_process.report, str(reference.in_process_dir)),
    )


def test_predict(engine, reference_plan):
    """The same header and prediction lines (any order)."""
    mine, theirs = on_engine(engine, "predict/linear").report, in_reference(reference_plan, "predict/linear").report
    assert prediction_lines(mine) == prediction_lines(theirs)
    assert len(prediction_lines(mine)[1]) == 920


def test_run_inference(engine, reference_plan):
    """A user's pipeline with RunInference and polybeam's handler: every line scored as in process."""
    mine = Path(on_engine(engine, "inference/linear").report["output"]).read_text().splitlines()
    theirs = Path(in_reference(reference_plan, "inference/linear").report["output"]).read_text().splitlines()
    assert len(mine) == 920

    def by_line(lines):
        return {line.rsplit("\t", 1)[0]: float(line.rsplit("\t", 1)[1]) for line in lines}

    assert_close(by_line(mine), by_line(theirs), "scores")


def test_sequence_and_timeliness(engine, reference_plan):
    """CS-G-OMP's order, costs and prefixes; the timeliness of the reference's prefix files."""
    for name in ("sequence/cs-g-omp", "timeliness/spam"):
        run, reference = engine_run(engine, name), reference_plan[name]
        assert_close(
            normalised(run.portable.report, str(run.portable_dir)),
            normalised(reference.in_process.report, str(reference.in_process_dir)),
            name,
        )
    mine = on_engine(engine, "sequence/cs-g-omp").report["output"]
    theirs = in_reference(reference_plan, "sequence/cs-g-omp").report["output"]
    assert_close([json.loads(line) for line in open(mine)], [json.loads(line) for line in open(theirs)], "prefixes")


def test_beam_yaml(engine, reference_plan):
    """The shipped YAML example (train, evaluate, predict) by Beam's YAML runner: the same metrics, dead letters
    and predictions."""
    outputs = {}
    for side, run in (
        ("engine", engine_run(engine, "yaml/train-evaluate")),
        ("reference", reference_plan["yaml/train-evaluate"]),
    ):
        done = run.portable if side == "engine" else run.in_process
        assert done.returncode == 0, done.failure()
        folder = (run.portable_dir if side == "engine" else run.in_process_dir) / "out"
        (metrics,) = glob.glob(str(folder / "metrics*"))
        outputs[side] = {"metrics": json.loads(Path(metrics).read_text()), "folder": folder}
    mine, theirs = outputs["engine"]["metrics"], outputs["reference"]["metrics"]
    assert mine["examples"] == theirs["examples"] == 920
    allowed = held_out("three-passes")  # the example trains two passes on the engine
    for metric in METRICS:
        assert abs(mine[metric] - theirs[metric]) <= allowed[metric], (metric, mine[metric], theirs[metric])
    assert_same_lines(
        outputs["engine"]["folder"] / "train.dead_letters.jsonl",
        outputs["reference"]["folder"] / "train.dead_letters.jsonl",
    )
