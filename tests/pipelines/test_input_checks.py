"""Input that cannot be what the user meant fails loudly: no file, no example, mostly dead letters.

Each case runs through the ``polybeam`` command (one-line errors, exit codes)
and through the Python API (the same message, as an exception), and a
refused job writes no model, checkpoint or prefix file, but all of its dead
letters.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from polybeam import datasets
from polybeam.formats.acceptance import InputRejected
from polybeam.pipelines.anytime import run_sequence
from polybeam.pipelines.cli import main
from polybeam.pipelines.jobs import run_evaluate, run_predict, run_train
from tests.pipelines.commands import last_json
from tests.transforms.torture_corpus import corrupt_gzip

CSV_ROWS = "a,b,label\n1,2,1\n3,4,0\n5,6,1\n"


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main([str(arg) for arg in argv])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def spam(tmp_path_factory):
    folder = tmp_path_factory.mktemp("spam")
    train, test = datasets.write_split("spam", str(folder))
    model = folder / "spam.model"
    assert run("train", "--input", train, "--loss", "logistic", "--model", model)[0] == 0
    prefixes = folder / "prefixes.jsonl"
    assert run("sequence", "--input", train, "--groups", datasets.group_spec_path("spam"), "--output", prefixes)[0] == 0
    return {"train": train, "test": test, "model": model, "prefixes": prefixes}


def csv_file(folder) -> str:
    path = folder / "rows.csv"
    path.write_text(CSV_ROWS)
    return str(path)


def commands(spam, folder, data):
    """Every reading command with ``data`` as its input, writing into ``folder``."""
    return {
        "train": ["train", "--input", data, "--model", folder / "m.model"],
        "evaluate": [
            "evaluate",
            "--input",
            data,
            "--model",
            spam["model"],
            "--report",
            folder / "e.json",
            "--dead-letters",
            folder / "e.dead.jsonl",
        ],
        "predict": ["predict", "--input", data, "--model", spam["model"], "--output", folder / "p"],
        "sequence": [
            "sequence",
            "--input",
            data,
            "--groups",
            datasets.group_spec_path("spam"),
            "--output",
            folder / "s.jsonl",
        ],
        "timeliness": [
            "timeliness",
            "--input",
            data,
            "--prefixes",
            spam["prefixes"],
            "--report",
            folder / "t.json",
            "--dead-letters",
            folder / "t.dead.jsonl",
        ],
        "predict --prefixes": [
            "predict",
            "--input",
            data,
            "--prefixes",
            spam["prefixes"],
            "--budget",
            "5",
            "--output",
            folder / "ap",
        ],
    }


@pytest.mark.slow
@pytest.mark.parametrize("command", ["train", "evaluate", "predict", "sequence", "timeliness", "predict --prefixes"])
def test_an_unmatched_input_pattern_is_one_line_for_every_command(tmp_path, spam, command):
    argv = commands(spam, tmp_path, str(tmp_path / "nothere*.libsvm"))[command]
    code, stdout, stderr = run(*argv)
    name = command.split()[0]
    assert code == 2 and stdout == ""
    assert stderr == f"polybeam {name}: error: no file matches {str(tmp_path / 'nothere*.libsvm')!r}\n"


@pytest.mark.slow
def test_an_empty_input_fails_unless_allowed(tmp_path):
    empty = tmp_path / "empty.libsvm"
    empty.write_text("")
    model = tmp_path / "m.model"
    code, stdout, stderr = run("train", "--input", empty, "--model", model)
    assert code == 1 and "Traceback" not in stderr
    assert stderr == (
        "polybeam train: error: no example was read: the input holds no record; check --input, "
        "or pass --allow-empty to accept an empty input\n"
    )
    assert not model.exists()
    report = json.loads((tmp_path / "m.model.report.json").read_text())
    assert report["failed"] and report["records"] == 0 and report["error"] in stderr

    comments = tmp_path / "comments.libsvm"
    comments.write_text("# nothing but a comment\n\n")
    code, _, stderr = run("train", "--input", comments, "--model", model)
    assert code == 1 and "the 2 records read are all blank, comment or header lines" in stderr

    code, stdout, _ = run("train", "--input", empty, "--model", model, "--allow-empty")
    assert code == 0 and last_json(stdout)["examples"] == 0 and model.exists()


@pytest.mark.slow
def test_a_wrong_format_fails_with_the_first_reasons_and_the_cause_and_keeps_the_old_model(tmp_path, spam):
    model = tmp_path / "m.model"
    code, _, _ = run("train", "--input", spam["train"], "--model", model, "--loss", "logistic")
    assert code == 0
    before = model.read_bytes()
    data = csv_file(tmp_path)
    code, stdout, stderr = run("train", "--input", data, "--model", model, "--loss", "logistic")
    assert code == 1 and stdout == "" and "Traceback" not in stderr
    dead = f"{model}.dead_letters.jsonl"
    assert stderr.splitlines() == [
        "polybeam train: error: all 4 records (100%) are dead letters, more than --max-dead-letter-fraction 0.1 "
        "allows; the first reasons:",
        f"  {data} line 1: label is not a number: 'a,b,label'",
        f"  {data} line 2: label is not a number: '1,2,1'",
        f"  {data} line 3: label is not a number: '3,4,0'",
        f"likely cause: the records look like CSV, not LIBSVM: check --format (--format csv?). Every dead letter "
        f"is in {dead}",
    ]
    assert model.read_bytes() == before  # the refused job wrote no model over the good one
    # Nothing is lost: every record is in the dead letters, not just the three shown.
    assert [json.loads(line)["line"] for line in open(dead)] == [1, 2, 3, 4]

    code, stdout, _ = run("train", "--input", data, "--model", model, "--format", "csv", "--label-column", "label")
    assert code == 0 and last_json(stdout)["examples"] == 3


def test_a_refused_multi_pass_job_leaves_no_checkpoint_to_resume_from(tmp_path):
    model = tmp_path / "m.model"
    code, _, _ = run("train", "--input", csv_file(tmp_path), "--model", model, "--passes", "3")
    assert code == 1
    checkpoints = tmp_path / "m.model.checkpoints"
    assert not checkpoints.exists() or not os.listdir(checkpoints)
    assert not model.exists()


@pytest.mark.slow
def test_the_dead_letter_fraction_is_a_limit_on_the_readable_records(tmp_path, spam):
    good = open(spam["train"]).read().splitlines()[:18]
    comments = ["# a comment"] * 50  # blank and comment lines count for neither side
    two_bad = tmp_path / "two_bad.libsvm"
    two_bad.write_text("\n".join(good + ["x 1:1", "1 -1:1"] + comments) + "\n")  # 2 of 20: 10%, not more
    code, stdout, _ = run("train", "--input", two_bad, "--model", tmp_path / "a.model", "--loss", "logistic")
    assert code == 0 and last_json(stdout)["dead_letters"] == 2

    three_bad = tmp_path / "three_bad.libsvm"
    three_bad.write_text("\n".join(good[:17] + ["x 1:1", "1 -1:1", "1 2:y"]) + "\n")  # 3 of 20: 15%
    code, _, stderr = run(
        "train", "--input", three_bad, "--model", tmp_path / "b.model", "--loss", "logistic", "--quiet"
    )  # no progress lines before the error
    assert code == 1
    assert stderr.startswith(
        "polybeam train: error: 3 of 20 records (15%) are dead letters, more than "
        "--max-dead-letter-fraction 0.1 allows; the first reasons:\n"
    )
    assert "likely cause: part of the input is damaged or of another kind" in stderr
    code, _, _ = run(
        "train",
        "--input",
        three_bad,
        "--model",
        tmp_path / "b.model",
        "--loss",
        "logistic",
        "--max-dead-letter-fraction",
        "0.2",
    )
    assert code == 0


@pytest.mark.parametrize("value", ["1.5", "-0.1", "most", "nan"])
def test_a_bad_fraction_is_a_usage_error(tmp_path, value):
    code, _, stderr = run(
        "train", "--input", csv_file(tmp_path), "--model", tmp_path / "m", "--max-dead-letter-fraction", value
    )
    assert code == 2 and stderr.count("\n") == 1 and "--max-dead-letter-fraction" in stderr
    assert ("invalid float value: 'most'" if value == "most" else "must be a number from 0 to 1") in stderr
    assert not (tmp_path / "m.dead_letters.jsonl").exists()  # refused before anything ran


@pytest.mark.parametrize("command", ["evaluate", "predict"])
def test_scoring_input_that_contradicts_the_model_fails_before_launch_naming_the_models_format(tmp_path, spam, command):
    """The model says it reads LIBSVM; the first input file is CSV: one line, before anything runs or is written."""
    data = csv_file(tmp_path)
    code, stdout, stderr = run(*commands(spam, tmp_path, data)[command])
    assert code == 2 and stdout == ""
    assert stderr == (
        f"polybeam {command}: error: {data} line 1: label is not a number: 'a,b,label'; these records "
        f"look like CSV; the model {spam['model']} was trained on LIBSVM input (--format libsvm): give "
        "it input like its training data, or the options that read this input\n"
    )
    assert sorted(os.listdir(tmp_path)) == ["rows.csv"]


def test_a_later_file_that_contradicts_the_model_fails_the_job_naming_the_models_format(tmp_path, spam):
    """The first file (by name) reads as the model's, a later one is CSV: the job's check sees every record."""
    (tmp_path / "a.libsvm").write_text("".join(open(spam["test"]).readlines()[:2]))
    (tmp_path / "b.libsvm").write_text(CSV_ROWS * 10)
    code, stdout, stderr = run(
        "evaluate", "--input", tmp_path / "*.libsvm", "--model", spam["model"], "--report", tmp_path / "e.json"
    )
    assert code == 1 and stdout == ""
    assert stderr.startswith("polybeam evaluate: error: 40 of 42 records (95.2%) are dead letters")
    assert (
        f"likely cause: the records look like CSV, not LIBSVM, and the model {spam['model']} was trained on "
        "LIBSVM input (--format libsvm): give it input like its training data"
    ) in stderr


@pytest.mark.parametrize("command", ["sequence", "timeliness", "predict --prefixes"])
def test_every_reading_command_refuses_a_wrong_format(tmp_path, spam, command):
    argv = commands(spam, tmp_path, csv_file(tmp_path))[command]
    code, stdout, stderr = run(*argv)
    name = command.split()[0]
    assert code == 1 and stdout == "" and "Traceback" not in stderr
    assert stderr.startswith(f"polybeam {name}: error: all 4 records (100%) are dead letters")
    assert "check --format (--format csv?)" in stderr
    if command == "sequence":
        assert not (tmp_path / "s.jsonl").exists()  # no prefix file from a refused input


@pytest.mark.slow
def test_the_python_api_raises_the_message_the_command_prints(tmp_path, spam):
    data = csv_file(tmp_path)
    code, _, stderr = run("train", "--input", data, "--model", tmp_path / "m.model")
    with pytest.raises(InputRejected) as raised:
        run_train(PipelineOptions(["--input", data, "--model", str(tmp_path / "m.model")]))
    assert stderr == f"polybeam train: error: {raised.value}\n"

    empty = tmp_path / "empty.libsvm"
    empty.write_text("")
    for job, flags in (
        (run_evaluate, ["--model", str(spam["model"])]),
        (run_predict, ["--model", str(spam["model"]), "--output", str(tmp_path / "p")]),
        (run_sequence, ["--groups", datasets.group_spec_path("spam"), "--output", str(tmp_path / "s")]),
    ):
        with pytest.raises(InputRejected, match="^no example was read: the input holds no record"):
            job(PipelineOptions(["--input", str(empty), *flags]))
    with pytest.raises(ValueError, match="--max-dead-letter-fraction must be a number from 0 to 1"):
        run_train(PipelineOptions(["--input", data, "--model", str(tmp_path / "m"), "--max_dead_letter_fraction", "2"]))


@pytest.mark.slow
def test_a_detached_job_leaves_the_reason_in_its_report(tmp_path):
    model = tmp_path / "m.model"
    code, stdout, _ = run("train", "--input", csv_file(tmp_path), "--model", model, "--no-wait")
    assert code == 0 and last_json(stdout)["state"] == "RUNNING"
    report = tmp_path / "m.model.report.json"
    deadline = time.monotonic() + 120
    while not report.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    written = json.loads(report.read_text())
    assert written["failed"] and written["error"].startswith("all 4 records (100%) are dead letters")
    assert [letter["line"] for letter in written["first_dead_letters"]] == [1, 2, 3]
    assert not model.exists()
    # The detached copy writes its report before it prints the error, so the log may lag the report.
    log = tmp_path / "m.model.report.json.log"
    while "polybeam train: error:" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "polybeam train: error: all 4 records" in log.read_text()


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_refused_input_on_local_worker_processes_is_said_once(tmp_path):
    """Two local worker processes: stderr holds the error message and nothing else (no worker traceback,
    no relayed log entries, no Beam warnings that say nothing to the user)."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "polybeam.pipelines.cli",
            "train",
            "--input",
            csv_file(tmp_path),
            "--model",
            tmp_path / "m.model",
            "--direct_num_workers",
            "2",
            "--direct_running_mode",
            "multi_processing",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("polybeam train: error: all 4 records (100%) are dead letters")
    assert len(done.stderr.splitlines()) == 5


def test_a_damaged_file_fails_the_job_in_one_line(tmp_path):
    """Errors a worker raises about a whole file (corrupt gzip, a Parquet file without the label column)
    are the command's one-line error, exit 1, with no traceback."""
    data = str(tmp_path / "bad.libsvm.gz")
    Path(data).write_bytes(corrupt_gzip(b"".join(b"1 1:%d\n" % i for i in range(10_000))))
    code, stdout, stderr = run("train", "--input", data, "--model", tmp_path / "m.model")
    assert code == 1 and stdout == ""
    assert stderr.startswith(f"polybeam train: error: {data}: corrupt gzip data") and stderr.count("\n") == 1
    # The first file (by name) reads; a later one has no label column: the worker reading it fails the job.
    pq.write_table(pa.table({"label": [1.0, -1.0], "x": [1.0, 2.0]}), tmp_path / "a.parquet")
    parquet = tmp_path / "w.parquet"
    pq.write_table(pa.table({"x": [1.0, 2.0], "y": ["a", "b"]}), parquet)
    code, _, stderr = run(
        "train", "--input", tmp_path / "*.parquet", "--format", "parquet", "--model", tmp_path / "m.model"
    )
    assert code == 1 and stderr.count("\n") == 1
    assert stderr.startswith(f"polybeam train: error: {parquet}: label column 'label' not found")
    assert not (tmp_path / "m.model").exists()
    # When the first file is that one, train says so before launching (exit 2), in the same words.
    code, _, stderr = run("train", "--input", parquet, "--format", "parquet", "--model", tmp_path / "m.model")
    assert code == 2 and stderr.count("\n") == 1
    assert stderr.startswith(f"polybeam train: error: {parquet}: label column 'label' not found")
