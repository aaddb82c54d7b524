"""Every command through a corpus of user mistakes: each answered in one line, with the right exit status.

A mistake reachable from the command line (a bad option value, a missing or
unreadable file, input in another format, epoch milliseconds read as seconds,
a header-less file in a glob of CSV files, a runner that needs a job server,
a path Beam cannot write, ...) must end the command with

* exit status 2 when the user must change how they asked (an option, a
  path, a file given), 1 when a job ran and failed (input it refused, a
  damaged file it met);
* one line on stderr, ``polybeam COMMAND: error: ...`` (an input refusal's
  reasons follow it, indented: the input check's established form);
* no traceback, neither printed nor logged.

The corpus is a table (:data:`CASES`): a row is a case's name, its command
line, with ``{placeholders}`` for the files of :func:`corpus` (a folder of
good and broken inputs and models), the exit status, and a piece of the
error line. Add a mistake by adding a row (and its file to the folder, if
it needs one). Cases run in process through :func:`polybeam.pipelines.cli.main`,
which prints what the console script prints, and the log records a user would
see are checked too; those marked ``subprocess`` run the installed command
itself, whose whole stderr is what a user sees.
"""

from __future__ import annotations

import gzip
import logging
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.error import URLError

import pytest

from polybeam import datasets
from polybeam.pipelines.cli import main

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Case:
    """A user mistake: ``argv`` (``{name}`` for a file of the corpus folder), the exit status it must end
    with, and what its error line must say; ``env``: environment variables it runs with; ``subprocess``:
    run the ``polybeam`` command in a child process."""

    name: str
    argv: tuple[str, ...]
    status: int
    says: str
    env: dict = field(default_factory=dict)
    subprocess: bool = False


CSV = ("--format", "csv", "--label-column", "y")
TRAIN = ("train", "--loss", "logistic")
WINDOWED = ("--timestamp", "column:ts", "--window", "fixed:1d")

CASES = [
    # -- the command line itself
    Case("unknown command", ("frobnicate",), 2, "unknown command 'frobnicate'"),
    Case(
        "unknown option",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--model", "{out}/m.model", "--lerning-rate", "1"),
        2,
        "unrecognised arguments: --lerning-rate",
    ),
    Case(
        "option of another command",
        ("evaluate", "--input", "{good_csv}", "--model", "{good_model}", "--passes", "2"),
        2,
        "--passes does not apply to polybeam evaluate",
    ),
    Case("missing --input", (*TRAIN, "--model", "{out}/m.model"), 2, "polybeam train needs --input"),
    # -- streaming training (train --watch): each refused before any job starts
    Case(
        "watch every 0 s",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--watch", "0", "--model", "{out}/stream"),
        2,
        "--watch must be a number of seconds > 0, got 0.0",
    ),
    Case(
        "watch idle shorter than two polls",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--watch", "1", "--stop-after-idle", "1", "--model", "{out}/stream"),
        2,
        "--stop-after-idle must be at least two polls (2 s with --watch 1)",
    ),
    Case(
        "watch with passes",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--watch", "1", "--passes", "3", "--model", "{out}/stream"),
        2,
        "--watch learns each example once as it arrives: leave out --passes",
    ),
    Case(
        "watch per key",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--watch", "1", "--key", "column:colour", "--model", "{out}/stream"),
        2,
        "--watch trains one model from files as they appear; leave out --key",
    ),
    Case(
        "version of a model file",
        ("evaluate", "--input", "{good_csv}", *CSV, "--model", "{good_model}", "--version", "2"),
        2,
        "--version picks a version of a folder that train --watch writes",
    ),
    Case(
        "bad choice",
        ("train", "--input", "{good_csv}", *CSV, "--loss", "hinged", "--model", "{out}/m.model"),
        2,
        "argument --loss: invalid choice: 'hinged'",
    ),
    Case(
        "not a number",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--bits", "many", "--model", "{out}/m.model"),
        2,
        "argument --bits: invalid int value: 'many'",
    ),
    Case(
        "out of range",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--bits", "40", "--model", "{out}/m.model"),
        2,
        "bits must be between",
    ),
    Case(
        "option without its value",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--model"),
        2,
        "argument --model: expected one argument",
    ),
    # -- input files
    Case(
        "no file matches",
        (*TRAIN, "--input", "{folder}/nothing-*.csv", *CSV, "--model", "{out}/m.model"),
        2,
        "nothing-*.csv",
    ),
    Case(
        "input is a folder",
        (*TRAIN, "--input", "{folder}/glob", *CSV, "--model", "{out}/m.model"),
        2,
        "glob is a folder: give a pattern of its files, such as",
    ),
    Case(
        "label column not in the header",
        (*TRAIN, "--input", "{good_csv}", "--format", "csv", "--label-column", "label", "--model", "{out}/m.model"),
        2,
        "label_column 'label' is not a column",
    ),
    Case(
        "header-less file in a glob",
        (*TRAIN, "--input", "{folder}/glob/*.csv", *CSV, "--model", "{out}/m.model"),
        1,
        "b.csv: its first line looks like a record, not a header (every field a number: 1,1700536400,0.531,0.736)",
    ),
    Case(
        "CSV of numbers read with the default header",  # (its first record was taken as the column names)
        (*TRAIN, "--input", "{folder}/glob/b.csv", "--format", "csv", "--model", "{out}/m.model"),
        2,
        "b.csv: its first line looks like a record, not a header (every field a number: 1,1700536400,0.531,0.736)",
    ),
    Case(
        "CSV read as LIBSVM",
        (*TRAIN, "--input", "{good_csv}", "--model", "{out}/m.model"),
        1,
        "all 301 records (100%) are dead letters",
    ),
    Case(
        "empty input",
        (*TRAIN, "--input", "{empty_csv}", *CSV, "--model", "{out}/m.model"),
        1,
        "no example was read: the 1 records read are all blank, comment or header lines",
    ),
    Case(
        "empty file",
        (*TRAIN, "--input", "{empty_libsvm}", "--model", "{out}/m.model"),
        1,
        "no example was read: the input holds no record",
    ),
    Case("corrupt gzip", (*TRAIN, "--input", "{corrupt_gz}", "--model", "{out}/m.model"), 1, "corrupt.libsvm.gz"),
    # -- event times
    Case(
        "epoch milliseconds read as seconds",
        (*TRAIN, "--input", "{ms_csv}", *CSV, *WINDOWED, "--model", "{out}/w"),
        2,
        "it looks like milliseconds: pass --timestamp-unit ms",
    ),
    Case(
        "epoch nanoseconds read as milliseconds",
        (*TRAIN, "--input", "{ns_csv}", *CSV, *WINDOWED, "--timestamp-unit", "ms", "--model", "{out}/w"),
        2,
        "it looks like nanoseconds: pass --timestamp-unit ns",
    ),
    Case(
        "unknown time unit",
        (*TRAIN, "--input", "{ms_csv}", *CSV, *WINDOWED, "--timestamp-unit", "min", "--model", "{out}/w"),
        2,
        "argument --timestamp-unit/--timestamp_unit: invalid choice: 'min'",
    ),
    Case(
        "window without a time column",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--window", "fixed:1d", "--model", "{out}/w"),
        2,
        "needs --timestamp column:NAME",
    ),
    Case(
        "time column not in the header",
        (
            *TRAIN,
            "--input",
            "{good_csv}",
            *CSV,
            "--timestamp",
            "column:when",
            "--window",
            "fixed:1d",
            "--model",
            "{out}/w",
        ),
        2,
        "'when' is not a column",
    ),
    Case(
        "windows of LIBSVM",
        (*TRAIN, "--input", "{train_libsvm}", *WINDOWED, "--model", "{out}/w"),
        2,
        "--window needs CSV, Parquet, JSON Lines or Avro input with a timestamp column",
    ),
    # -- where results go
    Case(
        "model in a missing folder",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--model", "{out}/no/such/m.model"),
        2,
        "/no/such does not exist; create it first",
    ),
    Case(
        "model path with [",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--model", "{out}/m[1].model"),
        2,
        "read *, ?, [ and ] in a path as a pattern",
    ),
    Case(
        "model path with *",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--model", "{out}/m*.model"),
        2,
        "read *, ?, [ and ] in a path as a pattern",
    ),
    Case(
        "dead letters in a missing folder",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--model", "{out}/m.model", "--dead-letters", "{out}/no/dead.jsonl"),
        2,
        "--dead-letters",
    ),
    Case(
        "model inside a file",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--model", "{good_csv}/m.model"),
        2,
        "is a file, not a folder",
    ),
    Case(
        "scoring a model named with [",
        ("evaluate", "--input", "{good_csv}", "--model", "{bracket_model}"),
        2,
        "give --dead-letters a path without them",
    ),
    Case(
        "predictions in a missing folder",
        ("predict", "--input", "{good_csv}", "--model", "{good_model}", "--output", "{out}/no/p"),
        2,
        "does not exist; create it first",
    ),
    # -- models
    Case(
        "model file missing", ("evaluate", "--input", "{good_csv}", "--model", "{folder}/none.model"), 2, "none.model"
    ),
    Case(
        "model file of garbage", ("evaluate", "--input", "{good_csv}", "--model", "{garbage_model}"), 2, "garbage.model"
    ),
    Case(
        "model file of text",
        ("predict", "--input", "{good_csv}", "--model", "{good_csv}", "--output", "{out}/p"),
        2,
        "good.csv",
    ),
    Case(
        "model is an empty file", ("evaluate", "--input", "{good_csv}", "--model", "{empty_libsvm}"), 2, "empty.libsvm"
    ),
    Case(
        "model is a folder without an index",
        ("evaluate", "--input", "{good_csv}", "--model", "{folder}/glob"),
        2,
        "glob",
    ),
    Case(
        "warm start from garbage",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--model", "{out}/m.model", "--initial-model", "{garbage_model}"),
        2,
        "garbage.model: not a polybeam model file",
    ),
    Case(
        "LIBSVM input for a CSV model",
        ("evaluate", "--input", "{train_libsvm}", "--model", "{good_model}"),
        2,
        "these records look like LIBSVM",
    ),
    Case(
        "predict without --output",
        ("predict", "--input", "{good_csv}", "--model", "{good_model}"),
        2,
        "polybeam predict needs --output",
    ),
    Case(
        "scoring rows without some of the model's columns",
        ("predict", "--input", "{lacking_csv}", "--model", "{good_model}", "--output", "{out}/p"),
        2,
        "lacks 1 of the model's 3 feature columns: b (",
    ),
    Case(
        "evaluating rows without labels",
        ("evaluate", "--input", "{unlabelled_csv}", "--model", "{good_model}"),
        2,
        "lacks the model's label column 'y'",
    ),
    Case(
        "probabilities of an anytime prefix",
        (
            "predict",
            "--input",
            "{train_libsvm}",
            "--prefixes",
            "{prefixes}",
            "--budget",
            "1",
            "--predictions",
            "probability",
            "--output",
            "{out}/p",
        ),
        2,
        "an anytime prefix predicts values, not probabilities",
    ),
    Case(
        "standard output from a remote runner",
        ("predict", "--input", "{good_csv}", "--model", "{good_model}", "--output", "-", "--runner", "PortableRunner"),
        2,
        "--output - needs the local runner",
    ),
    Case(
        "standard input to a detached job",
        ("predict", "--input", "-", "--model", "{good_model}", "--output", "{out}/p", "--no-wait"),
        2,
        "--input - cannot be used with --no-wait",
    ),
    # -- runners
    Case(
        "Flink without a job server jar",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--model", "{out}/m.model", "--runner", "FlinkRunner"),
        2,
        "pass --flink_job_server_jar PATH: polybeam engines fetch flink",
    ),
    Case(
        "Spark without a job server jar",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--model", "{out}/m.model", "--runner", "SparkRunner"),
        2,
        "pass --spark_job_server_jar PATH",
    ),
    Case(
        "a jar that is not there",
        (
            *TRAIN,
            "--input",
            "{good_csv}",
            *CSV,
            "--model",
            "{out}/m.model",
            "--runner",
            "FlinkRunner",
            "--flink_job_server_jar",
            "{folder}/job-server.jar",
        ),
        2,
        "job-server.jar: no such file",
    ),
    Case(
        "Prism offline",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--model", "{out}/m.model", "--runner", "PrismRunner"),
        2,
        "pass --prism_location PATH",
    ),
    Case(
        "portable runner without an endpoint",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--model", "{out}/m.model", "--runner", "PortableRunner"),
        2,
        "give its --job_endpoint HOST:PORT",
    ),
    Case(
        "unknown runner",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--model", "{out}/m.model", "--runner", "FastRunner"),
        2,
        "Unexpected pipeline runner: FastRunner",
    ),
    Case(
        "runner module that does not import",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--model", "{out}/m.model", "--runner", "no.such.Runner"),
        2,
        "cannot import no.such",
    ),
    Case(
        "Dataflow without a project",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--model", "{out}/m.model", "--runner", "DataflowRunner"),
        2,
        "Missing required option: project",
    ),
    # -- sequence and timeliness
    Case(
        "groups file missing",
        ("sequence", "--input", "{train_libsvm}", "--groups", "{folder}/none.json", "--output", "{out}/p.jsonl"),
        2,
        "none.json",
    ),
    Case(
        "groups file of garbage",
        ("sequence", "--input", "{train_libsvm}", "--groups", "{garbage_model}", "--output", "{out}/p.jsonl"),
        2,
        "garbage.model",
    ),
    Case(
        "unknown method",
        (
            "sequence",
            "--input",
            "{train_libsvm}",
            "--groups",
            "{groups}",
            "--method",
            "lasso",
            "--output",
            "{out}/p.jsonl",
        ),
        2,
        "invalid choice: 'lasso'",
    ),
    Case(
        "prefixes missing",
        ("timeliness", "--input", "{train_libsvm}", "--prefixes", "{folder}/none.jsonl"),
        2,
        "none.jsonl",
    ),
    Case("prefixes of garbage", ("timeliness", "--input", "{train_libsvm}", "--prefixes", "{good_csv}"), 2, "good.csv"),
    # -- inspect, plot, template, demo, engines
    Case("inspect without --model", ("inspect",), 2, "the following arguments are required: --model"),
    Case("inspect a missing file", ("inspect", "--model", "{folder}/none.model"), 2, "none.model"),
    Case("inspect garbage", ("inspect", "--model", "{garbage_model}"), 2, "garbage.model"),
    Case(
        "inspect a key of a model file",
        ("inspect", "--model", "{good_model}", "--key", "a"),
        2,
        "--key applies to a folder of per-key models",
    ),
    Case(
        "inspect a window of a model file",
        ("inspect", "--model", "{good_model}", "--window", "a"),
        2,
        "--window applies to a folder of models per window",
    ),
    Case(
        "inspect --top not a number",
        ("inspect", "--model", "{good_model}", "--top", "all"),
        2,
        "argument --top: invalid int value",
    ),
    Case("plot garbage", ("plot", "--model", "{garbage_model}"), 2, "garbage.model"),
    Case("plot prefixes without input", ("plot", "--prefixes", "{folder}/p.jsonl"), 2, "needs --input"),
    Case(
        "plot into a missing folder",
        ("plot", "--model", "{good_model}", "--output", "{out}/no/plot.png"),
        2,
        "does not exist; create it first",
    ),
    Case(
        "template of inspect",
        ("template", "--command", "inspect", "--output-dir", "{out}/t"),
        2,
        "invalid choice: 'inspect'",
    ),
    Case(
        "template of a missing wheel",
        ("template", "--command", "train", "--output-dir", "{out}/t", "--package", "{folder}/none.whl"),
        2,
        "no such wheel file",
    ),
    Case(
        "template in a missing folder",
        ("template", "--command", "train", "--output-dir", "{out}/no/t"),
        2,
        "does not exist; create it first",
    ),
    Case("demo in a missing folder", ("demo", "--output-dir", "{out}/no/demo"), 2, "does not exist; create it first"),
    Case("demo with an unknown option", ("demo", "--fast"), 2, "unrecognised arguments: --fast"),
    Case("engines without a subcommand", ("engines",), 2, "the following arguments are required"),
    Case("engines fetch of nothing", ("engines", "fetch"), 2, "the following arguments are required: ENGINE"),
    Case("engines fetch of an unknown engine", ("engines", "fetch", "dask"), 2, "invalid choice: 'dask'"),
    Case(
        "engines options before a fetch",
        ("engines", "options", "flink"),
        1,
        "run polybeam engines fetch flink",
        env={"POLYBEAM_ENGINE_CACHE": "{out}/cache"},
    ),
    Case("engines fetch without Go", ("engines", "fetch", "prism"), 1, "missing go", env={"PATH": "{out}"}),
    Case(
        "Parquet that is CSV",
        (*TRAIN, "--input", "{good_csv}", "--format", "parquet", "--model", "{out}/m.model"),
        2,
        "good.csv: Parquet magic bytes not found in footer. Either the file is corrupted or this is not a parquet file; these records look like CSV",
    ),
    Case(
        "gzip name, plain text",
        (*TRAIN, "--input", "{plain_gz}", "--model", "{out}/m.model"),
        1,
        "plain.libsvm.gz: corrupt gzip data",
    ),
    Case(
        "key column not in the header",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--key", "column:store", "--model", "{out}/k"),
        2,
        "key_column 'store' is not a column",
    ),
    Case(
        "dead-letter share above 1",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--max-dead-letter-fraction", "2", "--model", "{out}/m.model"),
        2,
        "--max-dead-letter-fraction must be a number from 0 to 1",
    ),
    Case(
        "a Beam option's bad value",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--direct_num_workers", "abc", "--model", "{out}/m.model"),
        2,
        "argument --direct_num_workers: invalid int value: 'abc'",
    ),
    Case(
        "--runner without a value",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--model", "{out}/m.model", "--runner"),
        2,
        "argument --runner: expected one argument",
    ),
    Case("empty --input", (*TRAIN, "--input", "", "--model", "{out}/m.model"), 2, "polybeam train needs --input"),
    Case(
        "three class names for logistic loss",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--class-names", "a,b,c", "--model", "{out}/m.model"),
        2,
        "loss 'logistic' has two classes: class_names are the negative and the positive one; got 3 names",
    ),
    Case(
        "class names the labels are not",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--class-names", "a,b", "--model", "{out}/m.model"),
        1,
        "records hold what this task cannot take",
    ),
    Case(
        "softmax without classes",
        ("train", "--loss", "softmax", "--input", "{good_csv}", *CSV, "--model", "{out}/m.model"),
        2,
        "loss 'softmax' needs classes >= 2",
    ),
    Case(
        "CSV delimiter of two characters",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--csv-delimiter", ";;", "--model", "{out}/m.model"),
        2,
        "delimiter must be a single ASCII character",
    ),
    Case(
        "checkpoints into a file",
        (
            *TRAIN,
            "--input",
            "{good_csv}",
            *CSV,
            "--passes",
            "2",
            "--checkpoint-dir",
            "{good_csv}",
            "--model",
            "{out}/m.model",
        ),
        2,
        "good.csv is a file; a folder goes there",
    ),
    Case(
        "model file onto a folder",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--model", "{folder}/glob"),
        2,
        "glob is a folder: give a file in it",
    ),
    Case(
        "predictions onto a folder",
        ("predict", "--input", "{good_csv}", "--model", "{good_model}", "--output", "{folder}/glob"),
        2,
        "glob is a folder: give a prefix of the files to write",
    ),
    Case(
        "model of gzip garbage",
        ("evaluate", "--input", "{good_csv}", "--model", "{corrupt_gz}"),
        2,
        "corrupt.libsvm.gz: cannot read the model file",
    ),
    Case(
        "per-key key for a model file",
        ("evaluate", "--input", "{good_csv}", "--model", "{good_model}", "--key", "column:a"),
        2,
        "--key applies to a folder of per-key models",
    ),
    Case(
        "ID column not in the header",
        ("predict", "--input", "{good_csv}", "--model", "{good_model}", "--id-column", "rid", "--output", "{out}/p"),
        2,
        "id_column 'rid' is not a column",
    ),
    Case(
        "prefixes of garbage to predict with",
        ("predict", "--input", "{train_libsvm}", "--prefixes", "{garbage_model}", "--output", "{out}/p"),
        2,
        "cannot read anytime prefixes",
    ),
    Case(
        "negative budget",
        ("predict", "--input", "{train_libsvm}", "--prefixes", "{prefixes}", "--budget", "-1", "--output", "{out}/p"),
        2,
        "--budget must be a finite cost >= 0",
    ),
    Case(
        "prefixes named with [",
        ("sequence", "--input", "{train_libsvm}", "--groups", "{groups}", "--output", "{out}/p[1].jsonl"),
        2,
        "read *, ?, [ and ] in a path as a pattern",
    ),
    Case(
        "timeliness plot in a missing folder",
        ("timeliness", "--input", "{train_libsvm}", "--prefixes", "{prefixes}", "--plot", "{out}/no/p.png"),
        2,
        "does not exist; create it first",
    ),
    Case("plot of a folder", ("plot", "--model", "{folder}/glob"), 2, "cannot read the model file"),
    # -- the installed command, whole stderr as a user sees it (Beam's logging, warnings)
    Case(
        "header-less file in a glob, installed command",
        (*TRAIN, "--input", "{folder}/glob/*.csv", *CSV, "--model", "{out}/m.model"),
        1,
        "its first line looks like a record, not a header",
        subprocess=True,
    ),
    Case(
        "Flink without a jar, installed command",
        (*TRAIN, "--input", "{good_csv}", *CSV, "--model", "{out}/m.model", "--runner", "FlinkRunner"),
        2,
        "pass --flink_job_server_jar PATH",
        subprocess=True,
    ),
    Case(
        "epoch milliseconds, installed command",
        (*TRAIN, "--input", "{ms_csv}", *CSV, *WINDOWED, "--model", "{out}/w"),
        2,
        "pass --timestamp-unit ms",
        subprocess=True,
    ),
]


def _write_csv(path: Path, times: list[str]) -> Path:
    rows = ["y,ts,a,b"] + [f"{i % 2},{time},{(i * 7) % 10 / 10},{(i * 3) % 10 / 10}" for i, time in enumerate(times)]
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, str]:
    """The corpus folder: good and broken inputs and models, by the names the cases use."""
    folder = tmp_path_factory.mktemp("corpus")
    seconds = [str(1700000000 + 3600 * i) for i in range(300)]
    files = {
        "folder": folder,
        "good_csv": _write_csv(folder / "good.csv", seconds),
        "ms_csv": _write_csv(folder / "ms.csv", [f"{time}000" for time in seconds]),
        "ns_csv": _write_csv(folder / "ns.csv", [f"{time}000000000" for time in seconds]),
        "empty_csv": folder / "empty.csv",
        "empty_libsvm": folder / "empty.libsvm",
        "corrupt_gz": folder / "corrupt.libsvm.gz",
        "garbage_model": folder / "garbage.model",
        "train_libsvm": datasets.write_split("spam", str(folder))[0],
        "groups": datasets.group_spec_path("spam"),
    }
    files["empty_csv"].write_text("y,ts,a,b\n")
    rows = [line.split(",") for line in (folder / "good.csv").read_text().splitlines()]
    files["lacking_csv"] = folder / "lacking.csv"
    files["lacking_csv"].write_text("".join(",".join(row[:3]) + "\n" for row in rows))
    files["unlabelled_csv"] = folder / "unlabelled.csv"
    files["unlabelled_csv"].write_text("".join(",".join(row[1:]) + "\n" for row in rows))
    files["plain_gz"] = folder / "plain.libsvm.gz"
    files["plain_gz"].write_text("1 1:1\n0 2:1\n")
    files["prefixes"] = folder / "p.jsonl"
    assert (
        main(
            [
                "sequence",
                "--input",
                str(files["train_libsvm"]),
                "--groups",
                str(files["groups"]),
                "--output",
                str(files["prefixes"]),
            ]
        )
        == 0
    )
    files["empty_libsvm"].write_bytes(b"")
    files["corrupt_gz"].write_bytes(gzip.compress(b"1 1:1\n" * 100)[:40] + b"\x00garbage")
    files["garbage_model"].write_bytes(os.urandom(512))
    (folder / "glob").mkdir()
    _write_csv(folder / "glob" / "a.csv", seconds[:150])
    lines = (folder / "good.csv").read_text().splitlines()
    (folder / "glob" / "b.csv").write_text("\n".join(["1,1700536400,0.531,0.736", *lines[151:]]) + "\n")
    model = folder / "good.model"
    assert main(["train", "--input", str(files["good_csv"]), *CSV, "--loss", "logistic", "--model", str(model)]) == 0
    files["good_model"] = model
    files["bracket_model"] = folder / "good[1].model"
    files["bracket_model"].write_bytes(model.read_bytes())
    return {name: str(path) for name, path in files.items()}


def _filled(values: tuple[str, ...] | dict, files: dict) -> list[str] | dict:
    if isinstance(values, dict):
        return {name: value.format(**files) for name, value in values.items()}
    return [value.format(**files) for value in values]


def _one_error_line(stderr: str, command: str) -> str:
    """The error line of ``stderr``: exactly one ``polybeam COMMAND[ SUBCOMMAND]: error:`` line, and after it only
    an input refusal's reasons (indented) and its likely cause."""
    lines = stderr.rstrip("\n").splitlines()
    error = re.compile(rf"polybeam( {command}( \w+)?)?: error: ")
    errors = [number for number, line in enumerate(lines) if error.match(line)]
    assert len(errors) == 1, f"expected one error line of polybeam {command}:\n{stderr}"
    after = lines[errors[0] + 1 :]
    assert all(line.startswith((" ", "likely cause: ")) for line in after), f"lines after the error:\n{stderr}"
    return lines[errors[0]]


def _offline(monkeypatch, home: Path) -> None:
    """Run as on a machine without the internet and with nothing fetched (the cases must not depend on either):
    Beam's downloads of job servers and Prism fail as they do offline, and its caches and polybeam's are empty."""
    from apache_beam.runners.portability import prism_runner
    from apache_beam.utils import subprocess_server

    def no_network(*args, **kwargs):
        raise URLError("no network in the corpus of mistakes")

    monkeypatch.setattr(subprocess_server, "urlopen", no_network)
    monkeypatch.setattr(prism_runner, "urlopen", no_network)
    monkeypatch.setattr(subprocess_server.JavaJarServer, "JAR_CACHE", str(home / "jars"))
    monkeypatch.setattr(prism_runner.PrismJobServer, "BIN_CACHE", str(home / "prism"))
    monkeypatch.setenv("POLYBEAM_ENGINE_CACHE", str(home / "engines"))


def _offline_environment(home: Path) -> dict:
    """The environment of a command run as :func:`_offline` runs cases in process: downloads go to a proxy that
    is not there, and the caches under ``~`` are empty (the kernels' stays where it is)."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    proxy = "http://127.0.0.1:9"  # (the discard port: nothing listens)
    return {"HOME": str(home), "XDG_CACHE_HOME": cache, "https_proxy": proxy, "HTTPS_PROXY": proxy, "NO_PROXY": ""}


@pytest.mark.parametrize("case", [case for case in CASES if not case.subprocess], ids=lambda case: case.name)
def test_a_mistake_is_one_line_and_its_exit_status(case, corpus, tmp_path, capsys, caplog, monkeypatch):
    files = {**corpus, "out": str(tmp_path)}
    _offline(monkeypatch, tmp_path / "home")
    for name, value in _filled(case.env, files).items():
        monkeypatch.setenv(name, value)
    caplog.set_level(logging.WARNING)
    status = main(_filled(case.argv, files))
    stderr = capsys.readouterr().err
    logged = [record for record in caplog.records if record.levelno >= logging.WARNING]
    assert not [record for record in logged if record.exc_info], "a traceback was logged"
    assert "Traceback" not in stderr + "\n".join(record.getMessage() for record in logged)
    line = _one_error_line(stderr, case.argv[0].split()[0])
    assert case.says in line
    assert status == case.status, line


@pytest.mark.subprocess
@pytest.mark.parametrize("case", [case for case in CASES if case.subprocess], ids=lambda case: case.name)
def test_a_mistake_is_one_line_from_the_installed_command(case, corpus, tmp_path):
    files = {**corpus, "out": str(tmp_path)}
    home = tmp_path / "home"
    environment = {**os.environ, **_offline_environment(home), **_filled(case.env, files)}
    environment["POLYBEAM_ENGINE_CACHE"] = str(home / "engines")
    command = [sys.executable, "-m", "polybeam.pipelines.cli", *_filled(case.argv, files)]
    done = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=300)
    assert "Traceback" not in done.stderr
    line = _one_error_line(done.stderr, case.argv[0])
    assert case.says in line
    # Whatever else is on stderr is a warning of one line each (Beam's, polybeam's).
    others = [text for text in done.stderr.splitlines() if text != line and not text.startswith(" ")]
    assert all(text.startswith(("WARNING ", "polybeam[")) for text in others), done.stderr
    assert done.returncode == case.status, done.stderr


def test_the_corpus_covers_every_command():
    from polybeam.pipelines.commands import COMMANDS

    assert {case.argv[0] for case in CASES} >= set(COMMANDS)
