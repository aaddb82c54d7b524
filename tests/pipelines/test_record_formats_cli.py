"""The same real table as CSV, Parquet, JSON Lines and Avro trains the same model with
``polybeam train``, with the same counts; each model evaluates and predicts its own format's file as the
CSV model does its CSV; RunInference on the rows as dicts gives what ``predict`` writes; and a JSON Lines
file with damaged lines counts every line (records = examples + dead letters + skipped).

The data: scikit-learn's iris (petal width at least 1.5 cm, from the sepals and the species, a text column),
with missing values, as in ``test_csv_parquet_cli.py``.
"""

from __future__ import annotations

import gzip
import json

import apache_beam as beam
import fastavro
import numpy as np
import pytest
from apache_beam.ml.inference.base import RunInference

from polybeam.transforms.inference import PolybeamModelHandler
from polybeam.transforms.model_io import read_model
from tests.pipelines.commands import run
from tests.pipelines.test_csv_parquet_cli import iris_frame, report
from tests.test_doors import json_rows
from tests.transforms.test_inference import collect

pytestmark = pytest.mark.slow

AVRO_SCHEMA = {
    "type": "record",
    "name": "Iris",
    "fields": [
        {"name": "y", "type": "long"},
        {"name": "sepal_length", "type": "double"},
        {"name": "sepal_width", "type": ["null", "double"]},
        {"name": "species", "type": ["null", "string"]},
    ],
}


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tables")
    frame = iris_frame(missing=True)
    rows = json_rows(frame)
    frame.assign(species=frame["species"].where(frame["species"].notna(), "?")).to_csv(
        folder / "iris.csv", index=False, na_rep="NA"
    )
    frame.to_parquet(folder / "iris.parquet", index=False)
    text = "".join(json.dumps(row) + "\n" for row in rows)
    (folder / "iris.jsonl").write_text(text)
    (folder / "iris.jsonl.gz").write_bytes(gzip.compress(text.encode()))
    with open(folder / "iris.avro", "wb") as sink:
        fastavro.writer(sink, AVRO_SCHEMA, rows, codec="deflate")
    return folder, rows


FORMATS = {
    "iris.csv": ("--format", "csv", "--categorical-columns", "species", "--na-values", "NA,?"),
    "iris.parquet": ("--format", "parquet"),
    "iris.jsonl": ("--format", "jsonl"),  # (gzip: in the Python door's test below)
    "iris.avro": ("--format", "avro"),
}


def test_every_format_of_the_table_trains_evaluates_and_predicts_alike(tables, tmp_path, capsys):
    folder, rows = tables
    trained, predicted, evaluated = {}, {}, {}
    for name, options in FORMATS.items():
        model = tmp_path / f"{name}.model"
        code, stdout, stderr = run(capsys, "train", "--input", folder / name, "--label-column", "y",
                                   "--loss", "logistic", "--model", model, *options)  # fmt: skip
        assert code == 0, (name, stderr)
        trained[name] = (report(stdout), read_model(str(model)))
        code, stdout, stderr = run(capsys, "evaluate", "--input", folder / name, "--model", model)
        assert code == 0, (name, stderr)
        evaluated[name] = report(stdout)
        output = tmp_path / f"{name}.tsv"
        code, _, stderr = run(capsys, "predict", "--input", folder / name, "--model", model, "--output", output)
        assert code == 0, (name, stderr)
        header, *lines = output.read_text().splitlines()
        column = header.split("\t").index("prediction")
        predicted[name] = np.array([float(line.split("\t")[column]) for line in lines])
    csv_report, csv_model = trained["iris.csv"]
    assert csv_report["examples"] == 150 and csv_report["dead_letters"] == 0
    for name, (said, model) in trained.items():
        # (the CSV header is a record, skipped)
        assert (said["records"] - said["skipped"], said["examples"], said["dead_letters"]) == (150, 150, 0), name
        np.testing.assert_array_equal(model.weights, csv_model.weights, err_msg=name)
        assert evaluated[name]["loss"] == evaluated["iris.csv"]["loss"], name
        np.testing.assert_array_equal(predicted[name], predicted["iris.csv"], err_msg=name)
    assert trained["iris.avro"][1].input["categorical_columns"] == ["species"]  # (a text field, by its schema)
    # RunInference on the rows as dicts, with each row-format's model: what predict wrote.
    for name in ("iris.jsonl", "iris.avro"):
        results = []
        with beam.Pipeline(runner="FnApiRunner") as p:
            created = p | beam.Create([{k: v for k, v in row.items() if k != "y"} for row in rows])
            collect(created | RunInference(PolybeamModelHandler(str(tmp_path / f"{name}.model"))), results)
        by_row = {json.dumps(r.example, sort_keys=True): r.inference for r in results}
        served = [by_row[json.dumps({k: v for k, v in row.items() if k != "y"}, sort_keys=True)] for row in rows]
        np.testing.assert_allclose(served, predicted[name], rtol=1e-7, err_msg=name)


def test_damaged_json_lines_are_counted_and_dead_lettered(tables, tmp_path, capsys):
    folder, rows = tables
    lines = [json.dumps(row) for row in rows[:40]]
    lines[3] = lines[3][:-5]  # cut short
    lines[7] = "[1, 2, 3]"
    lines[9] = ""
    lines[11] = "# a comment"
    (tmp_path / "bad.jsonl").write_text("\n".join(lines) + "\n")
    code, stdout, stderr = run(capsys, "train", "--input", tmp_path / "bad.jsonl", "--format", "jsonl",
                               "--label-column", "y", "--loss", "logistic", "--model", tmp_path / "m.model",
                               "--dead-letters", tmp_path / "dead", "--max-dead-letter-fraction", "0.1")  # fmt: skip
    assert code == 0, stderr
    said = report(stdout)
    assert (said["records"], said["examples"], said["dead_letters"], said["skipped"]) == (40, 36, 2, 2)
    written = list(tmp_path.glob("dead*"))
    letters = [json.loads(line) for path in written for line in path.read_text().splitlines()]
    assert sorted((letter["line"], letter["reason"][:14]) for letter in letters) == [
        (4, "not valid JSON"),
        (8, "not a JSON obj"),
    ]


def test_the_python_door_reads_each_format_as_the_command_line(tables, tmp_path, capsys):
    """ReadExamples | Train in a pipeline of one's own gives the command line's model, for JSON Lines and Avro."""
    from polybeam.transforms import ReadExamples, Train, WriteModel

    folder, _ = tables
    for name, fmt in (("iris.jsonl.gz", "jsonl"), ("iris.avro", "avro")):
        model = tmp_path / f"{name}.model"
        code, _, stderr = run(capsys, "train", "--input", folder / name, "--format", fmt, "--label-column", "y",
                              "--loss", "logistic", "--model", model)  # fmt: skip
        assert code == 0, stderr
        written = tmp_path / f"{name}.python.model"
        with beam.Pipeline(runner="FnApiRunner") as p:
            read = p | ReadExamples(str(folder / name), format=fmt, label_column="y", labels="binary")
            _ = read | Train(loss="logistic") | WriteModel(str(written))
        mine, theirs = read_model(str(written)), read_model(str(model))
        np.testing.assert_array_equal(mine.weights, theirs.weights, err_msg=name)
        # The fields whose null is a missing number, settled from the same sample, and their means.
        if fmt == "jsonl":
            assert theirs.input["number_columns"] == ["sepal_length", "sepal_width"], theirs.input
        assert mine.input.get("number_columns") == theirs.input.get("number_columns")
        np.testing.assert_array_equal(mine.fill_values, theirs.fill_values, err_msg=name)


RECORD_FORMATS_YAML = """
pipeline:
  transforms:
    - {name: Read, type: PolybeamReadExamples,
       config: {path: "{{ data }}", format: "{{ format }}", label_column: y, labels: binary, bits: 16}}
    - {name: Train, type: PolybeamTrain, input: {examples: Read.examples, origin: Read.origin},
       config: {model: "{{ model }}", loss: logistic}}
providers:
  - include: "{{ providers }}"
"""


@pytest.mark.subprocess
def test_beam_yaml_reads_json_lines_and_avro_as_the_command_line(tables, tmp_path, capsys):
    """A Beam YAML pipeline (as its users run it) reading each format trains the command line's model; the
    read step's bits are the learner's (given once)."""
    pytest.importorskip("docstring_parser", reason="Beam YAML needs apache-beam[yaml] (polybeam's test extra has it)")
    from tests.pipelines.test_beam_yaml import run_yaml

    folder, _ = tables
    pipeline = tmp_path / "formats.yaml"
    pipeline.write_text(RECORD_FORMATS_YAML)
    for name, fmt in (("iris.jsonl", "jsonl"), ("iris.avro", "avro")):
        cli_model, yaml_model = tmp_path / f"{fmt}.cli.model", tmp_path / f"{fmt}.yaml.model"
        code, _, stderr = run(capsys, "train", "--input", folder / name, "--format", fmt, "--label-column", "y",
                              "--loss", "logistic", "--bits", "16", "--model", cli_model)  # fmt: skip
        assert code == 0, stderr
        variables = {"data": str(folder / name), "format": fmt, "model": str(yaml_model)}
        done = run_yaml(str(pipeline), variables, tmp_path)
        assert done.returncode == 0, done.stderr[-3000:]
        from_yaml, from_cli = read_model(str(yaml_model)), read_model(str(cli_model))
        assert from_yaml.config.bits == 16 and from_yaml.input["format"] == fmt
        np.testing.assert_array_equal(from_yaml.weights, from_cli.weights, err_msg=name)
