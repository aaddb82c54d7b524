"""Models that know their input and where they came from, and IDs through to predictions, end to end with the
``polybeam`` command on the local runner (and from Python): what a model records, evaluate and predict reading
as the model's input was read unless told otherwise, one-line errors for input that contradicts it, models from
before any of this, and per-key folders."""

from __future__ import annotations

import json
import os
import re
import shutil

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from polybeam import datasets
from polybeam.formats.missing import DEFAULT_NA_VALUES
from polybeam.pipelines.cli import main
from polybeam.pipelines.options import given_options
from polybeam.transforms.keyed_files import KeyedFolder, read_index
from polybeam.transforms.model_io import WriteModel, read_model
from polybeam.transforms.provenance import RecordOrigin
from polybeam.transforms.read import ReadExamples
from polybeam.transforms.train import Train
from polybeam.versions import version_line, versions
from tests.pipelines.commands import last_json, run

DATA = os.path.join(os.path.dirname(__file__), "data")
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def prediction_file(stdout) -> tuple[list[str], list[list[str]]]:
    (path,) = last_json(stdout)["prediction_files"]
    header, *lines = open(path).read().splitlines()
    return header.split("\t"), [line.split("\t") for line in lines]


def write_rows(path, rows, delimiter=";"):
    header = delimiter.join(["rid", "y", "colour", "size", "notes"])
    path.write_text(header + "\n" + "".join(delimiter.join(map(str, row)) + "\n" for row in rows))


def table_rows(count: int, start: int = 0):
    """Rows of a task a colour decides (the notes are noise that must not be a feature: unique per row)."""
    return [
        (f"r{i}", 1 if i % 3 else -1, "red" if i % 3 else "blue", i % 5, f"n{i * 7919 % 1000}")
        for i in range(start, start + count)
    ]


CSV_OPTIONS = [
    "--format",
    "csv",
    "--csv-delimiter",
    ";",
    "--label-column",
    "y",
    "--categorical-columns",
    "colour",
    "--id-column",
    "rid",
    "--ignore-columns",
    "notes",
]


@pytest.fixture(scope="module")
def csv_model(tmp_path_factory):
    """A logistic model trained on ';'-separated CSV with an ID, an ignored and a categorical column."""
    folder = tmp_path_factory.mktemp("csv")
    write_rows(folder / "train.csv", table_rows(240))
    write_rows(folder / "test.csv", table_rows(60, start=240))
    model = folder / "m.model"
    code = main(
        [
            "train",
            "--input",
            str(folder / "train.csv"),
            *CSV_OPTIONS,
            "--loss",
            "logistic",
            "--model",
            str(model),
            "--quiet",
        ]
    )
    assert code == 0
    report = json.loads((folder / "m.model.report.json").read_text())
    return {"folder": folder, "model": model, "report": report}


def test_the_model_records_how_its_input_was_read_and_where_it_came_from(csv_model):
    model = read_model(str(csv_model["model"]))
    folder = csv_model["folder"]
    assert model.input == {
        "format": "csv",
        "label_column": "y",
        "weight_column": None,
        "delimiter": ";",
        "has_header": True,
        "categorical_columns": ["colour"],
        "ignore_columns": ["notes"],
        "key_column": None,
        "id_column": "rid",
        "na_values": list(DEFAULT_NA_VALUES),
        "bits": 18,
        "seed": 0,
        "classes": 0,
        "class_names": [],
        "columns": ["rid", "y", "colour", "size", "notes"],
    }
    record = model.provenance
    assert {name: record[name] for name in versions()} == versions()
    assert record["inputs"] == [str(folder / "train.csv")] and record["command"] == "train"
    # The counts of the read, known only on the workers, reached the model through the pipeline.
    assert record["read"] == {"records": 241, "examples": 240, "dead_letters": 0, "skipped": 1, "reconciles": True}
    assert record["options"] == {
        "categorical_columns": ["colour"],
        "csv_delimiter": ";",
        "format": "csv",
        "id_column": "rid",
        "ignore_columns": ["notes"],
        "input": str(folder / "train.csv"),
        "label_column": "y",
        "loss": "logistic",
        "model": str(csv_model["model"]),
        "quiet": True,
    }
    assert record["runner"] == "FnApiRunner"
    assert ISO_UTC.match(record["started"]) and ISO_UTC.match(record["finished"])
    assert record["started"] <= record["finished"]
    # The notes (unique per row) are no feature, nor is the ID; the colour is a category.
    names = {entry["name"] for entry in model.top_weights(100)}
    assert names == {"(bias)", "colour=red", "colour=blue", "size"}
    # The job's report says the same.
    report = csv_model["report"]
    assert report["input"] == model.input
    assert {k: v for k, v in report["provenance"].items() if k not in ("finished", "started")} == {
        k: v for k, v in record.items() if k not in ("finished", "started")
    }


@pytest.mark.slow
def test_evaluate_and_predict_read_as_the_model_did_without_the_options(csv_model, capsys):
    folder, model = csv_model["folder"], csv_model["model"]
    test = folder / "test.csv"
    code, stdout, stderr = run(capsys, "evaluate", "--input", test, "--model", model, "--report", folder / "e1.json")
    assert code == 0, stderr
    implied = last_json(stdout)
    code, stdout, _ = run(
        capsys, "evaluate", "--input", test, *CSV_OPTIONS, "--model", model, "--report", folder / "e2.json"
    )
    assert code == 0
    explicit = last_json(stdout)
    assert implied["examples"] == explicit["examples"] == 60 and implied["error"] == explicit["error"] == 0.0
    assert implied["auc"] == explicit["auc"] == 1.0 and implied["loss"] == explicit["loss"]
    assert implied["input"] == read_model(str(model)).input

    code, stdout, stderr = run(
        capsys, "predict", "--input", test, "--model", model, "--output", folder / "p", "--num-shards", "1"
    )
    assert code == 0, stderr
    header, lines = prediction_file(stdout)
    assert header == ["prediction", "label", "source", "row", "rid"]  # the ID column, named after it
    assert sorted(line[4] for line in lines) == sorted(f"r{i}" for i in range(240, 300))
    by_id = {line[4]: float(line[0]) for line in lines}
    assert all((by_id[f"r{i}"] > 0.5) == (i % 3 != 0) for i in range(240, 300))


def test_options_given_override_the_models(csv_model, tmp_path, capsys):
    """A test file whose label column has another name: --label-column says so, the rest is the model's."""
    text = (csv_model["folder"] / "test.csv").read_text().replace("rid;y;", "rid;target;", 1)
    renamed = tmp_path / "renamed.csv"
    renamed.write_text(text)
    code, stdout, stderr = run(
        capsys,
        "evaluate",
        "--input",
        renamed,
        "--model",
        csv_model["model"],
        "--label-column",
        "target",
        "--report",
        tmp_path / "e.json",
    )
    assert code == 0, stderr
    assert last_json(stdout)["examples"] == 60 and last_json(stdout)["error"] == 0.0
    assert last_json(stdout)["input"]["label_column"] == "target"
    assert last_json(stdout)["input"]["delimiter"] == ";"  # (the model's)


def test_input_that_contradicts_the_model_is_one_line_naming_its_format(csv_model, tmp_path, capsys):
    train, _ = datasets.write_split("spam", str(tmp_path))
    model = csv_model["model"]
    flags = "--format csv --label-column y --csv-delimiter ';' --categorical-columns colour --ignore-columns notes --id-column rid"
    for extra in ([], ["--format", "libsvm"]):
        code, stdout, stderr = run(capsys, "evaluate", "--input", train, "--model", model, *extra)
        assert code == 2 and stdout == "" and stderr.count("\n") == 1, stderr
        assert stderr.startswith("polybeam evaluate: error: ")
        assert "csv" in stderr.lower() and flags in stderr
    code, _, stderr = run(capsys, "predict", "--input", train, "--model", model, "--output", tmp_path / "p")
    assert (
        code == 2
        and f"; these records look like LIBSVM; the model {model} was trained on CSV input ({flags})" in stderr
    )
    assert not list(tmp_path.glob("p*"))  # refused before anything ran


def test_inspect_shows_the_input_and_the_provenance_and_the_command_its_version(csv_model, capsys):
    code, stdout, _ = run(capsys, "inspect", "--model", csv_model["model"])
    assert code == 0
    assert "input: csv, read with " in stdout and "id_column='rid'" in stdout
    assert f"trained by polybeam {versions()['polybeam']} (Apache Beam {versions()['apache_beam']}" in stdout
    assert (
        f"read {csv_model['folder'] / 'train.csv'}: 241 records = 240 examples + 0 dead letters + 1 skipped" in stdout
    )
    assert (
        "evaluate and predict read input as: csv (--format csv --label-column y --csv-delimiter ';' "
        "--categorical-columns colour --ignore-columns notes --id-column rid), 18 bits, hash seed 0"
    ) in stdout
    summary = json.loads(run(capsys, "inspect", "--model", csv_model["model"], "--json")[1])
    assert summary["input"]["id_column"] == "rid" and summary["provenance"]["read"]["examples"] == 240
    code, stdout, _ = run(capsys, "--version")
    assert code == 0 and stdout.strip() == version_line()
    assert stdout.startswith(f"polybeam {versions()['polybeam']} (Apache Beam {versions()['apache_beam']}, numba ")


@pytest.mark.slow
def test_model_files_from_before_still_load_and_score_as_before(tmp_path, capsys):
    """Model files written by polybeam before models recorded their input (the files in tests/pipelines/data
    were written by that version): the options alone say how to read, as before; nothing is guessed."""
    _, test = datasets.write_split("spam", str(tmp_path))
    for name in ("spam-before-provenance.model", "csv-before-provenance.model", "csv-before-provenance.csv"):
        shutil.copy(os.path.join(DATA, name), tmp_path / name)  # (jobs write beside their model)
    old = str(tmp_path / "spam-before-provenance.model")
    assert read_model(old).input is None and read_model(old).provenance is None
    code, stdout, stderr = run(capsys, "evaluate", "--input", test, "--model", old, "--report", tmp_path / "e.json")
    assert code == 0, stderr
    # Measured with that model: 920 examples, 0.0935 held-out error.
    assert last_json(stdout)["examples"] == 920 and last_json(stdout)["error"] < 0.11
    code, stdout, _ = run(capsys, "inspect", "--model", old)
    assert code == 0 and "trained by" not in stdout and "read input as" not in stdout

    old_csv = str(tmp_path / "csv-before-provenance.model")
    rows = str(tmp_path / "csv-before-provenance.csv")
    dead = ["--report", tmp_path / "c.json", "--dead-letters", tmp_path / "c.dead.jsonl"]
    code, _, stderr = run(capsys, "evaluate", "--input", rows, "--model", old_csv, *dead)
    assert code == 1 and "check --format (--format csv?)" in stderr  # as before: LIBSVM unless told
    code, stdout, stderr = run(
        capsys,
        "evaluate",
        "--input",
        rows,
        "--model",
        old_csv,
        "--format",
        "csv",
        "--label-column",
        "y",
        "--categorical-columns",
        "colour",
        *dead,
    )
    assert code == 0 and last_json(stdout)["examples"] == 60 and last_json(stdout)["error"] == 0.0, stderr


@pytest.mark.slow
def test_parquet_ids_and_ignored_columns_through_to_predictions(tmp_path, capsys):
    n = 300
    rng = np.random.default_rng(3)
    x = rng.normal(size=n)
    table = pa.table(
        {
            "label": np.where(x > 0, 1.0, -1.0),
            "x": x,
            "user": [f"u{i}" for i in range(n)],
            "leak": np.where(x > 0, 1.0, -1.0),
        }
    )  # a column that must not be a feature
    pq.write_table(table.slice(0, 240), tmp_path / "train.parquet")
    pq.write_table(table.slice(240), tmp_path / "test.parquet")
    model = tmp_path / "m.model"
    code, _, stderr = run(
        capsys,
        "train",
        "--input",
        tmp_path / "train.parquet",
        "--format",
        "parquet",
        "--id-column",
        "user",
        "--ignore-columns",
        "leak",
        "--loss",
        "logistic",
        "--model",
        model,
    )
    assert code == 0, stderr
    assert {entry["name"] for entry in read_model(str(model)).top_weights(10)} == {"(bias)", "x"}
    code, stdout, stderr = run(
        capsys,
        "predict",
        "--input",
        tmp_path / "test.parquet",
        "--model",
        model,
        "--output",
        tmp_path / "p",
        "--num-shards",
        "1",
    )
    assert code == 0, stderr
    header, lines = prediction_file(stdout)
    assert header[-1] == "user" and sorted(line[4] for line in lines) == sorted(f"u{i}" for i in range(240, 300))
    assert all(line[3] == str(int(line[4][1:]) - 240) for line in lines)  # each ID beside its row


@pytest.mark.slow
def test_vw_tags_stay_the_tag_column(tmp_path, capsys):
    vw = tmp_path / "t.vw"
    vw.write_text("".join(f"{1 if i % 2 else -1} 'ex{i}|f a:{i % 2}\n" for i in range(40)))
    model = tmp_path / "vw.model"
    assert run(capsys, "train", "--input", vw, "--format", "vw", "--loss", "logistic", "--model", model)[0] == 0
    code, stdout, _ = run(
        capsys, "predict", "--input", vw, "--model", model, "--output", tmp_path / "p", "--num-shards", "1"
    )
    assert code == 0
    header, lines = prediction_file(stdout)
    assert header[-1] == "tag" and sorted(line[4] for line in lines) == sorted(f"ex{i}" for i in range(40))


@pytest.mark.slow
def test_a_per_key_folder_records_its_input_and_scores_as_it_was_read(tmp_path, capsys):
    rows = [f"{'ab'[i % 2]},r{i},{1 if (i // 2) % 2 else -1},{'red' if (i // 2) % 2 else 'blue'}" for i in range(200)]
    (tmp_path / "rows.csv").write_text("store,rid,y,colour\n" + "\n".join(rows) + "\n")
    models = tmp_path / "models"
    code, _, stderr = run(
        capsys,
        "train",
        "--input",
        tmp_path / "rows.csv",
        "--format",
        "csv",
        "--label-column",
        "y",
        "--categorical-columns",
        "colour",
        "--id-column",
        "rid",
        "--key",
        "column:store",
        "--loss",
        "logistic",
        "--model",
        models,
    )
    assert code == 0, stderr
    index = read_index(str(models))
    assert index["input"]["key_column"] == "store" and index["input"]["id_column"] == "rid"
    model = KeyedFolder(str(models)).model("a")
    assert model.input == index["input"] and model.provenance["read"]["examples"] == 200
    code, stdout, stderr = run(
        capsys,
        "predict",
        "--input",
        tmp_path / "rows.csv",
        "--model",
        models,
        "--output",
        tmp_path / "p",
        "--num-shards",
        "1",
    )
    assert code == 0, stderr
    header, lines = prediction_file(stdout)
    assert header == ["prediction", "label", "source", "row", "rid", "key"]
    assert sorted((line[4], line[5]) for line in lines) == sorted((f"r{i}", "ab"[i % 2]) for i in range(200))


def test_from_python_read_train_record_origin_write(tmp_path, capsys):
    """The same record from a Python pipeline: ReadExamples | Train | RecordOrigin | WriteModel; the command
    then reads as the model did."""
    write_rows(tmp_path / "rows.csv", table_rows(120))
    reading = ReadExamples(
        str(tmp_path / "rows.csv"),
        format="csv",
        delimiter=";",
        label_column="y",
        categorical_columns=("colour",),
        id_column="rid",
        ignore_columns=("notes",),
        labels="binary",
    )
    with beam.Pipeline(runner="FnApiRunner") as pipeline:
        read = pipeline | reading
        (
            read.examples
            | Train(loss="logistic")
            | RecordOrigin(reading, counts=read.counts)
            | WriteModel(str(tmp_path / "m.model"))
        )
    model = read_model(str(tmp_path / "m.model"))
    assert model.input["id_column"] == "rid" and model.input["delimiter"] == ";"
    assert model.provenance["read"]["examples"] == 120 and model.provenance["inputs"] == [str(tmp_path / "rows.csv")]
    code, stdout, stderr = run(capsys, "evaluate", "--input", tmp_path / "rows.csv", "--model", tmp_path / "m.model")
    assert code == 0 and last_json(stdout)["examples"] == 120 and last_json(stdout)["error"] == 0.0, stderr


def test_the_options_on_record_are_polybeams_own_and_given():
    options = PipelineOptions(
        [
            "--input",
            "x",
            "--loss",
            "logistic",
            "--runner",
            "PortableRunner",
            "--job_endpoint",
            "localhost:1",
            "--format",
            "libsvm",
            "--passes",
            "1",
        ]
    )
    # Beam's options are the runner's; an option left at its default is not on record (--passes 1 is the default).
    assert given_options(options) == {"format": "libsvm", "input": "x", "loss": "logistic"}


def test_a_bad_record_of_the_input_is_refused_naming_the_model(tmp_path, capsys, csv_model):
    """A model whose input record names a format this polybeam does not know (a newer one's)."""
    from dataclasses import replace

    model = read_model(str(csv_model["model"]))
    strange = replace(model, metadata={**model.metadata, "input": {**model.input, "format": "orc"}})
    strange.save(str(tmp_path / "strange.model"))
    shutil.copy(csv_model["folder"] / "test.csv", tmp_path / "test.csv")
    code, _, stderr = run(capsys, "evaluate", "--input", tmp_path / "test.csv", "--model", tmp_path / "strange.model")
    assert code == 2 and stderr.count("\n") == 1
    assert "strange.model: its record of how its input was read cannot be used (unknown input format 'orc'" in stderr


def test_train_refuses_a_header_without_the_columns_it_names_before_launch(tmp_path, capsys):
    rows = tmp_path / "rows.csv"
    rows.write_text("rid,y,x\nr1,1,2\n")
    for extra, message in (
        (["--label-column", "label"], "label_column 'label' is not a column"),
        (["--label-column", "y", "--id-column", "y"], "the ID column 'y' cannot also be"),
        (["--label-column", "y", "--id-column", "user"], "id_column 'user' is not a column"),
    ):
        code, stdout, stderr = run(
            capsys, "train", "--input", rows, "--format", "csv", *extra, "--model", tmp_path / "m.model"
        )
        assert code == 2 and stdout == "" and stderr.count("\n") == 1, stderr
        assert stderr.startswith(f"polybeam train: error: {rows}: ") and message in stderr
        assert sorted(os.listdir(tmp_path)) == ["rows.csv"]  # nothing ran


def test_a_parquet_models_record_names_its_columns_and_its_text_columns_categories(tmp_path):
    from polybeam.formats.input_settings import InputSettings
    from polybeam.pipelines.model_input import with_columns

    table = pa.table({"label": [1.0], "store": ["a"], "size": [2.0], "code": pa.array(["x"]).dictionary_encode()})
    pq.write_table(table, tmp_path / "t.parquet")
    settings = with_columns(str(tmp_path / "t.parquet"), InputSettings("parquet", {"ignore_columns": ("code",)}))
    assert settings.columns == ("label", "store", "size", "code")
    assert settings.options["categorical_columns"] == ("store",)  # (read as categories by their type)
    headerless = tmp_path / "h.csv"
    headerless.write_text("# a comment\n1,2,3\n")
    assert with_columns(str(headerless), InputSettings("csv", {"has_header": False})).columns == ("1", "2", "3")
