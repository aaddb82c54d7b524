"""Every polybeam command through Beam's portable runner (one SDK worker per job) equals the in-process run.

Each run (defined in ``runs.py``) is the same command twice, in subprocesses:
through Beam's local job service to the external worker pool (whose workers
have their own working directory and, where allowed, a private /tmp), and on
polybeam's default in-process runner. Inputs and outputs live on the disk both
see. What must match, and how exactly, is in ``compare.py``: counts, orders,
prediction lines and slots exactly; floating-point results to 1e-9 relative
(today they agree bit for bit: one worker processes the same bundles in both).
"""

from __future__ import annotations

import json

import pytest

from polybeam import datasets
from polybeam.transforms.model_io import read_model
from tests.portable.commands import polybeam, wait_for_json
from tests.portable.compare import (
    assert_close,
    assert_same_model,
    assert_same_predictions,
    assert_same_report,
    normalised,
    prediction_lines,
)
from tests.portable.runs import SCORED_VARIANTS
from tests.portable.variants import TRAIN_VARIANTS
from tests.transforms.torture_corpus import corrupt_gzip

pytestmark = pytest.mark.portable


@pytest.mark.parametrize("variant", list(TRAIN_VARIANTS))
def test_train(portable_plan, variant):
    """Read counts, passes, progressive loss, non-zeros and the model file (weights, slots, metadata)."""
    runs = portable_plan[f"train/{variant}/1w"]
    in_process = runs.in_process.report
    spec = TRAIN_VARIANTS[variant]
    assert (in_process["examples"], in_process["records"], in_process["reconciles"]) == (spec.examples,) * 2 + (True,)
    assert_same_report(runs)
    assert_same_model(runs.portable_dir / "model", runs.in_process_dir / "model")
    spec.check(read_model(str(runs.in_process_dir / "model")), in_process)


def test_train_without_waiting_leaves_the_job_to_the_service(portable_plan):
    """``--no-wait``: the launcher returns with the job's id while it runs; the report the job writes, and its
    model, equal the in-process run's."""
    launched = portable_plan["train/one-pass-no-wait/1w"]
    answer = launched.portable.report
    assert answer["runner"] == "PortableRunner" and answer["job_id"] and "examples" not in answer
    finished = wait_for_json(answer["report"])
    assert finished["provenance"]["options"].pop("no_wait") is True  # (the reference waited)
    reference = portable_plan["train/one-pass/1w"]
    assert_close(
        normalised(finished, str(launched.portable_dir)),
        normalised(reference.in_process.report, str(reference.in_process_dir)),
    )
    assert_same_model(launched.portable_dir / "model", reference.in_process_dir / "model")


@pytest.mark.parametrize("variant", SCORED_VARIANTS)
def test_evaluate(portable_plan, variant):
    """Held-out metrics of one model file (``examples, loss, error, auc, mse``) and the read counts."""
    runs = portable_plan[f"evaluate/{variant}/1w"]
    in_process = runs.in_process.report
    assert {"examples", "loss", "error", "auc", "mse"} <= set(in_process)
    assert in_process["examples"] == datasets.ROWS[TRAIN_VARIANTS[variant].dataset] - TRAIN_VARIANTS[variant].examples
    assert_same_report(runs)


@pytest.mark.parametrize("variant", SCORED_VARIANTS)
def test_predict(portable_plan, variant):
    """The same prediction lines (prediction, label, source, row, tag) after the same header, in any order."""
    runs = portable_plan[f"predict/{variant}/1w"]
    assert_same_report(runs)
    assert_same_predictions(runs)
    spec = TRAIN_VARIANTS[variant]
    assert len(prediction_lines(runs.portable.report)[1]) == datasets.ROWS[spec.dataset] - spec.examples


def json_lines(path) -> list[dict]:
    return [json.loads(line) for line in open(path) if line.strip()]


def test_sequence(portable_plan):
    """The same report (order, costs, explained variance, counts) and the same prefix and skipped lines."""
    runs = portable_plan["sequence/cs-g-omp/1w"]
    portable, in_process = runs.portable.report, runs.in_process.report
    assert in_process["sequenced"] == 13 and in_process["examples"] == 3681
    assert_same_report(runs)
    assert portable["order"] == in_process["order"]
    assert_close(json_lines(portable["output"]), json_lines(in_process["output"]), "prefixes")
    assert_close(json_lines(portable["skipped_output"]), json_lines(in_process["skipped_output"]), "skipped")


def test_timeliness(portable_plan):
    """The same alpha, stopping cost, held-out curves and timeliness of two prefix files (CS-G-OMP, CS-G-FR)."""
    runs = portable_plan["timeliness/spam/1w"]
    in_process = runs.in_process.report
    assert set(in_process["timeliness"]) == {"cs-g-omp", "cs-g-fr"} and in_process["examples"] == 920
    assert_same_report(runs)


def test_demo(portable_plan):
    """The demo's report (counts of both splits, progressive loss, held-out metrics), report.json and model."""
    runs = portable_plan["demo/spam/1w"]
    portable, in_process = runs.portable.report, runs.in_process.report
    assert portable["runner"] == "PortableRunner"
    assert in_process["records_read"] == datasets.ROWS["spam"] and in_process["heldout"]["examples"] == 920
    assert_same_report(runs)
    assert_same_model(runs.portable_dir / "demo" / "spam.model", runs.in_process_dir / "demo" / "spam.model")
    written = json.loads((runs.portable_dir / "demo" / "report.json").read_text())
    assert_close(written["heldout"], in_process["heldout"], "report.json heldout")


def test_a_relative_input_is_read_or_refused_never_silently_empty(portable_cluster, portable_data):
    """A launcher in the data's folder giving ``--input spam.train.libsvm``: read it all, or fail; never 0 examples."""
    train = portable_data["spam"].train
    out = portable_cluster.job_dir("relative-input")
    run = polybeam(
        ["train", "--input", train.name, "--loss", "logistic", "--model", out / "model"],
        portable_cluster.portable_options(1),
        cwd=train.parent,
        env=portable_cluster.launcher_env,
    )
    assert run.returncode != 0 or run.report["examples"] == TRAIN_VARIANTS["one-pass"].examples, run.report


def test_a_refused_input_fails_the_job_with_the_checks_message(portable_cluster):
    """A CSV file read as LIBSVM on the portable runner: the workers refuse it, write its report and dead
    letters on the shared disk, write no model, and the launcher prints the check's message (exit 1)."""
    out = portable_cluster.job_dir("refused-input")
    data = out / "rows.csv"
    data.write_text("a,b,label\n1,2,1\n3,4,0\n5,6,1\n")
    run = polybeam(
        ["train", "--input", data, "--model", out / "m.model"],
        portable_cluster.portable_options(1),
        cwd=portable_cluster.launcher_dir,
        env=portable_cluster.launcher_env,
    )
    assert run.returncode == 1, run.failure()
    assert "polybeam train: error: all 4 records (100%) are dead letters" in run.stderr
    assert "check --format (--format csv?)" in run.stderr
    report = json.loads((out / "m.model.report.json").read_text())
    assert report["failed"] and report["runner"] == "PortableRunner" and report["dead_letters"] == 4
    assert len((out / "m.model.dead_letters.jsonl").read_text().splitlines()) == 4
    assert not (out / "m.model").exists()


def test_a_damaged_input_file_is_the_commands_one_line_error(portable_cluster):
    """A worker's error about a file (corrupt gzip) reaches the launcher as the runner's error text; the
    command says the worker's message in one line, exit 1."""
    out = portable_cluster.job_dir("damaged-input")
    (out / "bad.libsvm.gz").write_bytes(corrupt_gzip(b"".join(b"1 1:%d\n" % i for i in range(10_000))))
    run = polybeam(
        ["train", "--input", out / "bad.libsvm.gz", "--model", out / "m.model"],
        portable_cluster.portable_options(1),
        cwd=portable_cluster.launcher_dir,
        env=portable_cluster.launcher_env,
    )
    assert run.returncode == 1, run.failure()
    assert (
        run.stderr.strip()
        .splitlines()[-1]
        .startswith(f"polybeam train: error: {out / 'bad.libsvm.gz'}: corrupt gzip data")
    )
    assert "Traceback" not in run.stderr
