"""``polybeam train --window`` and ``polybeam evaluate`` of its folder: a model per window (per key and window),
named and recorded with its window, an index, per-window reports, and clear refusals."""

from __future__ import annotations

import json
import re

import pytest

from polybeam.datasets.timestamped import write_timestamped_csv
from polybeam.formats.csv import CsvFormat
from polybeam.learners.evaluation import Evaluation
from polybeam.learners.windows import to_micros
from polybeam.transforms.keyed_files import KeyedFolder
from polybeam.transforms.model_io import read_model
from tests.pipelines.test_cli import run

COMMON = [
    "--format",
    "csv",
    "--label-column",
    "y",
    "--timestamp",
    "column:ts",
    "--loss",
    "logistic",
    "--quiet",
    "--bits",
    "12",
]


@pytest.fixture(scope="module")
def timed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("timed")
    train, test = folder / "train.csv", folder / "test.csv"
    write_timestamped_csv(str(train), rows=900, bad=3)
    write_timestamped_csv(str(test), rows=600, seed=1)
    return train, test


def _examples_in(path, window):
    """The examples of a CSV file in a window, read as the models read them."""
    fmt = CsvFormat(label_column="y", timestamp_column="ts", ignore_columns=("store",), bits=12, labels="binary")
    batch = fmt.parse(path.read_bytes(), source=str(path)).batch
    micros = to_micros(batch.timestamps)
    return batch.take((micros >= window["start_micros"]) & (micros < window["end_micros"]))


@pytest.mark.slow
def test_a_model_per_fixed_window_and_evaluate_per_window(timed, tmp_path, capsys):
    train, test = timed
    model = tmp_path / "daily"
    code, stdout, _ = run(
        capsys,
        "train",
        "--input",
        train,
        *COMMON,
        "--ignore-columns",
        "store",
        "--window",
        "fixed:1d",
        "--model",
        model,
    )
    assert code == 0, stdout
    report = json.loads(stdout.strip().splitlines()[-1])
    assert report["records"] == 901 and report["dead_letters"] == 3 and report["reconciles"]
    assert "2026-11-01T00:00:00Z .. 2026-11-02T00:00:00Z" in stdout
    index = json.loads((model / "index.json").read_text())
    assert index["kind"] == "polybeam-windowed-models" and index["window_spec"] == "fixed:86400"
    names = sorted(index["entries"])
    assert names == [
        "window-20261101T000000Z-20261102T000000Z",
        "window-20261102T000000Z-20261103T000000Z",
        "window-20261103T000000Z-20261104T000000Z",
    ]
    assert sum(entry["examples"] for entry in index["entries"].values()) == 897 == report["examples_trained"]
    for name, entry in index["entries"].items():
        stored = read_model(str(model / entry["file"]))
        assert stored.metadata["window"]["start"] == entry["start"] and entry["file"] == f"{name}.model"
        assert stored.input["timestamp_column"] == "ts"

    code, stdout, _ = run(capsys, "evaluate", "--model", model, "--input", test)
    assert code == 0
    evaluation = json.loads(stdout.strip().splitlines()[-1])
    assert evaluation["examples"] == 600 and evaluation["examples_without_model"] == {}
    assert f"models per window (fixed:86400) in {model}: 3 windows scored" in stdout
    assert "  window-20261101T000000Z-20261102T000000Z: " in stdout  # a line per window, before the JSON line
    for name, metrics in evaluation["windows"].items():
        entry = index["entries"][name]
        stored = read_model(str(model / entry["file"]))
        own = _examples_in(test, entry)
        expected = Evaluation.for_model(stored).add_batch(stored, own).result()
        assert metrics == pytest.approx(expected)

    # inspect lists the windows in time order (it called them keys, and their names a key column of None).
    code, stdout, _ = run(capsys, "inspect", "--model", model)
    assert code == 0 and "key" not in stdout.replace("--key", "")
    assert (
        stdout.splitlines()[0]
        == f"polybeam models per window: 3 windows (fixed:86400) of the times in column ts, in {model}"
    )
    starts = [line.split()[0] for line in stdout.splitlines() if line.startswith("  2026-")]
    assert starts == ["2026-11-01T00:00:00Z", "2026-11-02T00:00:00Z", "2026-11-03T00:00:00Z"]
    code, stdout, _ = run(capsys, "inspect", "--model", model, "--window", "2026-11-02T00:00:00Z", "--json")
    shown = json.loads(stdout)
    assert code == 0 and shown == read_model(str(model / index["entries"][names[1]]["file"])).summary_dict(20)
    code, _, stderr = run(capsys, "inspect", "--model", model, "--window", "2026-12-01")
    assert code == 2 and stderr.startswith(f"polybeam inspect: error: {model} has no window '2026-12-01'")


@pytest.mark.slow
def test_per_key_models_per_sliding_window_with_two_passes(timed, tmp_path, capsys):
    train, test = timed
    model = tmp_path / "stores"
    code, stdout, _ = run(
        capsys,
        "train",
        "--input",
        train,
        *COMMON,
        "--key",
        "column:store",
        "--window",
        "sliding:1d,12h",
        "--passes",
        "2",
        "--holdout-min-examples",
        "5",
        "--model",
        model,
    )
    assert code == 0, stdout
    index = json.loads((model / "index.json").read_text())
    assert len(index["entries"]) == 7
    judged = 0
    for entry in index["entries"].values():
        folder = KeyedFolder(str(model / entry["folder"]))
        assert folder.keys == 3 and folder.index["window"]["start"] == entry["start"]
        holdout = folder.model("s1").metadata["holdout"]  # (a half-day window holds out too few to judge by)
        assert holdout["released"] or holdout["passes"][-1]["pass"] == 2
        judged += not holdout["released"]
    assert judged >= 4
    # The checkpoints of every window are apart.
    for name in index["entries"]:
        assert (tmp_path / "stores.checkpoints" / name / "pass-0002" / "index.json").exists()
    code, stdout, _ = run(capsys, "evaluate", "--model", model, "--input", test)
    evaluation = json.loads(stdout.strip().splitlines()[-1])
    assert code == 0 and set(evaluation["windows"]) == set(index["entries"])
    assert all(set(keys) == {"s0", "s1", "s2"} for keys in evaluation["windows"].values())
    # Each example of the test file is in two windows but one (the first and last half days have one).
    assert evaluation["examples"] == sum(
        m["examples"] for keys in evaluation["windows"].values() for m in keys.values()
    )
    code, _, stderr = run(capsys, "predict", "--model", model, "--input", test, "--output", tmp_path / "p")
    assert code != 0 and "folder of models per window" in stderr
    code, stdout, _ = run(capsys, "inspect", "--model", model, "--json")
    summary = json.loads(stdout)
    assert code == 0 and summary["kind"] == "windows" and summary["key"] == "column:store"
    assert [row["keys"] for row in summary["windows"]] == [3] * 7
    first = summary["windows"][0]["window"]
    code, stdout, _ = run(capsys, "inspect", "--model", model, "--window", first, "--key", "s1")
    assert code == 0 and stdout.startswith("polybeam linear model")
    code, _, stderr = run(capsys, "inspect", "--model", model, "--window", first)
    assert code == 2 and "holds per-key models in each window: add --key KEY" in stderr


@pytest.mark.parametrize(
    "options, message",
    [
        (["--window", "fixed:1d"], "--window fixed:1d needs --timestamp column:NAME"),
        (["--timestamp", "column:ts"], "add --window"),
        (["--window", "hourly", "--timestamp", "column:ts"], "--window must be fixed:SIZE or sliding:SIZE,PERIOD"),
        (["--window", "sliding:1h,1d", "--timestamp", "column:ts"], "period (86400 s) cannot exceed its size"),
        (["--window", "fixed:1d", "--timestamp", "ts"], "--timestamp must be column:NAME"),
        (["--window", "fixed:1d", "--timestamp", "column:when"], "'when' is not a column"),
    ],
)
def test_bad_window_options_fail_fast_saying_what_to_fix(timed, tmp_path, capsys, options, message):
    train, _ = timed
    argv = [
        "train",
        "--input",
        train,
        "--format",
        "csv",
        "--label-column",
        "y",
        "--ignore-columns",
        "store",
        "--model",
        tmp_path / "m",
        *options,
    ]
    try:
        code, stdout, stderr = run(capsys, *argv)
    except SystemExit as exit:  # argparse refuses a malformed value itself
        code, captured = exit.code, capsys.readouterr()
        stdout, stderr = captured.out, captured.err
    assert code != 0 and message in stdout + stderr
    assert not (tmp_path / "m").exists() or not (tmp_path / "m" / "index.json").exists()


def _in_milliseconds(source, target):
    """A copy of a timestamped CSV file whose numeric times are epoch milliseconds (ISO-8601 times kept)."""
    lines = source.read_text().splitlines()
    out = [lines[0]]
    for line in lines[1:]:
        label, stamp, rest = line.split(",", 2)
        out.append(",".join([label, f"{stamp}000" if stamp.isdigit() else stamp, rest]))
    target.write_text("\n".join(out) + "\n")
    return target


def test_epoch_milliseconds_read_as_seconds_are_refused_at_once_naming_the_unit(timed, tmp_path, capsys):
    """Was a 142-line traceback from the end of the job (the year 55,840 has no window name) and a model folder
    holding only dead letters: now one line before anything runs, saying what to pass."""
    train = _in_milliseconds(timed[0], tmp_path / "train_ms.csv")
    model = tmp_path / "daily"
    argv = ["--input", train, *COMMON, "--ignore-columns", "store", "--window", "fixed:1d", "--model", model]
    code, _, stderr = run(capsys, "train", *argv)
    first = train.read_text().splitlines()[2].split(",")[1]  # (the first record's time is ISO-8601)
    assert code == 2 and "Traceback" not in stderr
    message = stderr.strip()
    prefix = (
        f"polybeam train: error: --timestamp column:ts: timestamp column 'ts': {first} seconds since the epoch is "
        "after the year 9999; it looks like milliseconds: pass --timestamp-unit ms ("
    )
    assert message.startswith(prefix) and "\n" not in message
    wrong, sampled = map(int, re.fullmatch(r"(\d+) of the first (\d+) records\)", message[len(prefix) :]).groups())
    assert sampled > 100 and wrong == pytest.approx(2 * sampled / 3, abs=2)  # (a third of the times are ISO-8601)
    assert not model.exists()


@pytest.mark.slow
def test_timestamp_unit_ms_trains_the_same_windows_and_evaluate_reads_it_from_the_folder(timed, tmp_path, capsys):
    train, test = timed
    train_ms, test_ms = _in_milliseconds(train, tmp_path / "train_ms.csv"), _in_milliseconds(test, tmp_path / "t.csv")
    folders = {}
    for name, source, unit in (("seconds", train, []), ("ms", train_ms, ["--timestamp-unit", "ms"])):
        folders[name] = tmp_path / name
        argv = ["--input", source, *COMMON, "--ignore-columns", "store", "--window", "fixed:1d", *unit]
        code, _, stderr = run(capsys, "train", *argv, "--model", folders[name])
        assert code == 0, stderr
    seconds, ms = (json.loads((folders[name] / "index.json").read_text()) for name in ("seconds", "ms"))
    assert seconds["entries"] == ms["entries"] and len(ms["entries"]) == 3
    assert ms["input"]["timestamp_unit"] == "ms" and "timestamp_unit" not in seconds["input"]
    scores = {}
    for name, source in (("seconds", test), ("ms", test_ms)):
        code, stdout, stderr = run(capsys, "evaluate", "--model", folders[name], "--input", source)
        assert code == 0, stderr
        scores[name] = json.loads(stdout.strip().splitlines()[-1])
    assert scores["ms"]["windows"] == scores["seconds"]["windows"] and scores["ms"]["examples"] == 600
