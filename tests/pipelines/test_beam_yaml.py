"""Beam YAML: the provider listing shipped with the package, and the example pipeline run as its users run it
(``python -m apache_beam.yaml.main``) on bundled data."""

from __future__ import annotations

import glob
import importlib
import json
import os
import subprocess
import sys

import pytest
import yaml

from polybeam import datasets
from polybeam.pipelines.cli import main
from polybeam.transforms import yaml_steps

pytest.importorskip("docstring_parser", reason="Beam YAML needs apache-beam[yaml] (polybeam's test extra has it)")

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
EXAMPLE = os.path.join(ROOT, "examples", "train_evaluate.yaml")


def run_yaml(pipeline_file: str, variables: dict, cwd) -> subprocess.CompletedProcess:
    variables = {"providers": yaml_steps.PROVIDERS, **variables}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "apache_beam.yaml.main",
            "--yaml_pipeline_file",
            pipeline_file,
            "--runner",
            "FnApiRunner",
            "--jinja_variables",
            json.dumps(variables),
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
@pytest.mark.subprocess
def test_the_listing_names_every_step_and_each_resolves():
    with open(yaml_steps.PROVIDERS) as handle:
        listing = yaml.safe_load(handle)
    assert [provider["type"] for provider in listing] == ["python"]
    transforms = listing[0]["transforms"]
    assert set(transforms) == {
        "PolybeamReadExamples",
        "PolybeamTrain",
        "PolybeamEvaluate",
        "PolybeamPredict",
        "PolybeamSequence",
        "PolybeamRunInference",
    }
    for name, qualified in transforms.items():
        module, _, attribute = qualified.rpartition(".")
        assert getattr(importlib.import_module(module), attribute).__name__ == name
    printed = subprocess.run([sys.executable, "-m", "polybeam.transforms.yaml_steps"], capture_output=True, text=True)
    assert printed.stdout.strip() == yaml_steps.PROVIDERS and os.path.isfile(printed.stdout.strip())


@pytest.fixture(scope="module")
def example_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("yaml")
    train, test = datasets.write_split("spam", str(folder))
    out = folder / "out"
    done = run_yaml(EXAMPLE, {"train": train, "test": test, "out": str(out)}, folder)
    assert done.returncode == 0, done.stderr[-3000:]
    return {"train": train, "test": test, "out": out}


@pytest.mark.slow
@pytest.mark.subprocess
def test_the_example_trains_and_evaluates_on_bundled_data(example_run, capsys):
    out = example_run["out"]
    (metrics_file,) = glob.glob(str(out / "metrics*"))
    metrics = json.loads(open(metrics_file).read())
    # Measured: error 0.076, AUC 0.968 (logistic, 2 passes); a model gone wrong is far from both.
    assert metrics["examples"] == 920 and metrics["error"] < 0.10 and metrics["auc"] > 0.95
    # The model the YAML job wrote is a polybeam model: polybeam evaluate agrees with the YAML metrics.
    assert main(["evaluate", "--input", example_run["test"], "--model", str(out / "spam.model")]) == 0
    evaluated = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert evaluated["error"] == pytest.approx(metrics["error"]) and evaluated["auc"] == pytest.approx(metrics["auc"])
    assert open(out / "train.dead_letters.jsonl").read() == ""


@pytest.mark.subprocess
def test_the_example_writes_the_filtered_predictions_as_csv(example_run, tmp_path, capsys):
    out = example_run["out"]
    rows = []
    for path in glob.glob(str(out / "predictions*")):
        lines = open(path).read().splitlines()
        assert lines[0] == "prediction,label,source,row,predicted_class,id"
        rows += [line.split(",") for line in lines[1:]]
    assert rows and all(float(r[0]) > 0.9 or float(r[0]) < 0.1 for r in rows)
    # The numbers are polybeam predict's.
    assert (
        main(
            [
                "predict",
                "--input",
                example_run["test"],
                "--model",
                str(out / "spam.model"),
                "--output",
                str(tmp_path / "p"),
            ]
        )
        == 0
    )
    capsys.readouterr()
    written = {}
    for path in [tmp_path / "p"]:  # (one file, named as asked)
        for line in open(path).read().splitlines()[1:]:
            prediction, _, _, row, _ = line.split("\t")
            written[int(row)] = float(prediction)
    assert sum(1 for p in written.values() if p > 0.9 or p < 0.1) == len(rows)
    for prediction, _, _, row, _, _ in rows:
        assert float(prediction) == pytest.approx(written[int(row)], rel=1e-8)


@pytest.mark.slow
@pytest.mark.subprocess
def test_sequence_and_a_model_path_from_yaml(tmp_path):
    train, test = datasets.write_split("spam", str(tmp_path))
    model = tmp_path / "m.model"
    assert main(["train", "--input", train, "--loss", "logistic", "--model", str(model)]) == 0
    pipeline = tmp_path / "sequence.yaml"
    pipeline.write_text("""
pipeline:
  transforms:
    - {name: Read, type: PolybeamReadExamples, config: {path: "{{ train }}"}}
    - {name: Sequence, type: PolybeamSequence, input: Read.examples,
       config: {groups: "{{ groups }}", output: "{{ out }}/omp.jsonl", method: cs-g-fr}}
    - {name: WritePrefixes, type: WriteToJson, input: Sequence.prefixes, config: {path: "{{ out }}/prefixes"}}
    - {name: ReadTest, type: PolybeamReadExamples, config: {path: "{{ test }}", labels: binary}}
    - {name: Evaluate, type: PolybeamEvaluate, input: ReadTest.examples, config: {model: "{{ model }}"}}
    - {name: WriteMetrics, type: WriteToJson, input: Evaluate.metrics, config: {path: "{{ out }}/metrics"}}
providers:
  - include: "{{ providers }}"
""")
    out = tmp_path / "out"
    done = run_yaml(
        str(pipeline),
        {
            "train": train,
            "test": test,
            "out": str(out),
            "model": str(model),
            "groups": datasets.group_spec_path("spam"),
        },
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    prefixes = [json.loads(line) for path in glob.glob(str(out / "prefixes*")) for line in open(path)]
    written = [json.loads(line) for line in open(out / "omp.jsonl")]
    assert sorted(p["rank"] for p in prefixes) == [w["rank"] for w in written] == list(range(1, 14))
    assert {p["group"]: p["cumulative_cost"] for p in prefixes} == {w["group"]: w["cumulative_cost"] for w in written}
    assert all(w["method"] == "cs-g-fr" for w in written)
    (metrics,) = [json.loads(line) for path in glob.glob(str(out / "metrics*")) for line in open(path)]
    assert metrics["examples"] == 920 and metrics["error"] < 0.12


def test_a_model_step_needs_its_model_from_exactly_one_place():
    import apache_beam as beam

    from polybeam.learners.batch import ExampleBatch

    pipeline = beam.Pipeline("FnApiRunner")
    examples = pipeline | beam.Create([ExampleBatch.from_rows([(1.0, {1: 1.0})])])
    with pytest.raises(ValueError, match="needs its model from one place"):
        examples | "NoModel" >> yaml_steps.PolybeamEvaluate()
    with pytest.raises(ValueError, match="needs its model from one place"):
        {"examples": examples, "model": examples} | "TwoModels" >> yaml_steps.PolybeamPredict(model="m.model")
    with pytest.raises(ValueError, match="takes input"):
        {"batches": examples} | "Misnamed" >> yaml_steps.PolybeamPredict(model="m.model")


ROWS_PIPELINE = """
pipeline:
  transforms:
    - {name: Rows, type: Create, config: {elements: [{id: 7, age: 41.0, colour: red}, {id: 8, age: null, colour: blue},
                                                     {id: 9, age: 30.0, colour: null}]}}
    - {name: Score, type: PolybeamPredict, input: Rows, config: {model: "{{ model }}", ignore: [id]}}
    - {name: Write, type: WriteToJson, input: Score.predictions, config: {path: "{{ out }}"}}
providers:
  - include: "{{ providers }}"
"""


@pytest.mark.slow
@pytest.mark.subprocess
def test_rows_with_nulls_from_other_steps_are_scored_as_csv_lines_with_empty_cells(tmp_path):
    from polybeam.formats.csv import CsvFormat
    from polybeam.learners.config import LearnerConfig
    from polybeam.learners.linear import LinearLearner

    text = b"id,y,age,colour\n7,1,41,red\n8,0,,blue\n9,1,30,\n"
    batch = (
        CsvFormat(labels="binary", label_column="y", ignore_columns=("id",), categorical_columns=("colour",))
        .parse(text)
        .batch
    )
    model = LinearLearner(LearnerConfig(loss="logistic")).fit([batch] * 20).to_model()
    model.save(str(tmp_path / "rows.model"))
    (tmp_path / "rows.yaml").write_text(ROWS_PIPELINE)
    done = run_yaml(
        str(tmp_path / "rows.yaml"), {"model": str(tmp_path / "rows.model"), "out": str(tmp_path / "scored")}, tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (written,) = glob.glob(str(tmp_path / "scored*"))
    rows = sorted((json.loads(line) for line in open(written)), key=lambda row: row["id"])
    assert [(row["age"], row["colour"]) for row in rows] == [(41.0, "red"), (None, "blue"), (30.0, None)]
    assert [row["prediction"] for row in rows] == pytest.approx(model.predict(batch).tolist(), abs=1e-9)


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_yaml_model_records_its_input_and_a_yaml_read_reads_as_the_model_did(tmp_path):
    """Train from CSV with an ID and an ignored column; read the test file with ``model:`` alone (no format, no
    columns): the same numbers as ``polybeam predict``, each prediction with its example's ID."""
    rows = [f"r{i},{1 if i % 3 else -1},{'red' if i % 3 else 'blue'},{i % 5},note{i}" for i in range(300)]
    header = "rid,y,colour,size,notes\n"
    (tmp_path / "train.csv").write_text(header + "\n".join(rows[:240]) + "\n")
    (tmp_path / "test.csv").write_text(header + "\n".join(rows[240:]) + "\n")
    pipeline = tmp_path / "csv.yaml"
    pipeline.write_text("""
pipeline:
  transforms:
    - {name: Read, type: PolybeamReadExamples,
       config: {path: "{{ dir }}/train.csv", format: csv, label_column: y, categorical_columns: [colour],
                id_column: rid, ignore_columns: [notes], labels: binary}}
    - {name: Train, type: PolybeamTrain, input: {examples: Read.examples, origin: Read.origin},
       config: {model: "{{ dir }}/m.model", loss: logistic}}
providers:
  - include: "{{ providers }}"
""")
    done = run_yaml(str(pipeline), {"dir": str(tmp_path)}, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    from polybeam.transforms.model_io import read_model

    model = read_model(str(tmp_path / "m.model"))
    assert model.input["format"] == "csv" and model.input["id_column"] == "rid"
    assert model.input["ignore_columns"] == ["notes"] and model.input["categorical_columns"] == ["colour"]
    assert model.provenance["read"] == {
        "records": 241,
        "examples": 240,
        "dead_letters": 0,
        "skipped": 1,
        "reconciles": True,
    }
    assert model.provenance["inputs"] == [str(tmp_path / "train.csv")] and model.provenance["command"] == "yaml"

    scoring = tmp_path / "score.yaml"
    scoring.write_text("""
pipeline:
  transforms:
    - {name: ReadTest, type: PolybeamReadExamples, config: {path: "{{ dir }}/test.csv", model: "{{ dir }}/m.model"}}
    - {name: Predict, type: PolybeamPredict, input: ReadTest.examples, config: {model: "{{ dir }}/m.model"}}
    - {name: Write, type: WriteToJson, input: Predict.predictions, config: {path: "{{ dir }}/out/predictions"}}
providers:
  - include: "{{ providers }}"
""")
    done = run_yaml(str(scoring), {"dir": str(tmp_path)}, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    predicted = {
        row["id"]: row["prediction"]
        for path in glob.glob(str(tmp_path / "out" / "predictions*"))
        for row in map(json.loads, open(path))
    }
    assert (
        main(
            [
                "predict",
                "--input",
                str(tmp_path / "test.csv"),
                "--model",
                str(tmp_path / "m.model"),
                "--output",
                str(tmp_path / "p"),
                "--num-shards",
                "1",
            ]
        )
        == 0
    )
    header_line, *lines = open(tmp_path / "p-00000-of-00001").read().splitlines()
    assert header_line.split("\t")[-1] == "rid"
    expected = {line.split("\t")[-1]: float(line.split("\t")[0]) for line in lines}
    assert sorted(predicted) == sorted(expected) == sorted(f"r{i}" for i in range(240, 300))
    assert all(predicted[rid] == pytest.approx(expected[rid], rel=1e-8) for rid in expected)
