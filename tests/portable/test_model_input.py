"""Models that know their input and origin, and IDs through to predictions, through Beam's portable runner.

The SDK workers write the model, so what it records of its input and origin, the read's counts included
(which only the workers know, once they have read everything), comes through the pipeline, not through the
launcher; ``predict`` then reads with the model alone (no format options) and writes each example's ID. Both
runs equal their in-process twins (``compare.py``).
"""

from __future__ import annotations

import pytest

from polybeam.transforms.model_io import read_model
from polybeam.versions import versions
from tests.portable.compare import assert_same_model, assert_same_predictions, assert_same_report, prediction_lines

pytestmark = pytest.mark.portable


def test_the_workers_write_what_the_model_knows_of_its_input_and_origin(portable_plan, portable_data):
    runs = portable_plan["train/csv-ids/1w"]
    report = runs.portable.report
    assert report["runner"] == "PortableRunner" and report["examples"] == 3681 and report["reconciles"]
    assert_same_report(runs)
    assert_same_model(runs.portable_dir / "model", runs.in_process_dir / "model")
    model = read_model(str(runs.portable_dir / "model"))
    csv = portable_data["spam-csv-ids"]
    assert model.input["format"] == "csv" and model.input["id_column"] == "id"
    assert model.input["ignore_columns"] == ["note"] and model.input["label_column"] == "label"
    assert model.input["columns"] == ["id", "label", *(f"f{j}" for j in range(1, 58)), "note"]
    record = model.provenance
    assert record["runner"] == "PortableRunner" and record["inputs"] == [str(csv.train)]
    assert record["read"] == {"records": 3682, "examples": 3681, "dead_letters": 0, "skipped": 1, "reconciles": True}
    assert {name: record[name] for name in versions()} == versions()  # (the workers run this environment)
    assert {entry["name"] for entry in model.top_weights(100)} <= {"(bias)", *(f"f{j}" for j in range(1, 58))}


def test_predict_reads_as_the_model_did_and_writes_each_examples_id(portable_plan, portable_data):
    runs = portable_plan["predict/csv-ids/1w"]
    assert_same_report(runs)
    assert_same_predictions(runs)
    report = runs.portable.report
    assert report["input"]["format"] == "csv" and report["input"]["id_column"] == "id" and report["examples"] == 920
    header, lines = prediction_lines(report)
    assert header.split("\t") == ["prediction", "label", "source", "row", "id"]
    assert sorted(line.split("\t")[4] for line in lines) == sorted(f"row{number}" for number in range(920))
