"""RunInference and YAML rows read through the model's input contract, as its CSV file is read.

Before the contract: a numeric string became a category, a row without the model's columns (even an empty
dict) was scored as if every value were missing, without a word.
"""

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.ml.inference.base import RunInference

from polybeam.formats.csv import CsvFormat
from polybeam.formats.fields import RowReading
from polybeam.formats.input_settings import InputSettings
from polybeam.learners.config import LearnerConfig
from polybeam.learners.linear import LinearLearner
from polybeam.transforms.inference import PolybeamModelHandler, mappings_batch
from tests.transforms.test_inference import collect

HEADER = b"y,age,income,zip"
ROWS = [b"yes,41,52000.5,10115", b"no,23,31000,80331", b"yes,67,,10115", b"no,35,44000,20095"] * 25


@pytest.fixture(scope="module")
def model():
    fmt = CsvFormat(label_column="y", categorical_columns=("zip",), labels="binary", label_names=("no", "yes"))
    batch = fmt.parse(HEADER + b"\n" + b"\n".join(ROWS) + b"\n").batch
    config = LearnerConfig(loss="logistic", class_names=("no", "yes"))
    settings = InputSettings.of(fmt, columns=("y", "age", "income", "zip"))
    return LinearLearner(config).fit([batch]).to_model({"input": settings.to_dict()})


def csv_margins(model, lines):
    fmt = CsvFormat(label_column="y", categorical_columns=("zip",), labels="any", label_names=("no", "yes"))
    return model.margins(fmt.parse(HEADER + b"\n" + b"\n".join(lines) + b"\n").batch)


def test_rows_read_as_their_csv_records_numeric_strings_included(model):
    rows = [
        {"y": "yes", "age": "41", "income": "52000.5", "zip": "10115"},  # every value a string, as CSV's text
        {"y": "no", "age": 23, "income": 31000, "zip": 80331},  # a number in a categorical column
        {"age": 67.0, "income": float("nan"), "zip": 10115},  # NaN: missing, as an empty cell; no label
        {"age": 35, "income": None, "zip": "20095", "note": "x"},  # an extra field, as an extra CSV column
    ]
    lines = [b"yes,41,52000.5,10115", b"no,23,31000,80331", b"yes,67,,10115", b"no,35,,20095"]
    expected = csv_margins(model, lines)
    # (the extra field's slot has no weight: the rows agree with their CSV records)
    assert np.allclose(model.margins(mappings_batch(model, rows)), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "row, message",
    [
        ({}, "the row lacks the model's columns 'age', 'income', 'zip'"),
        ({"age": 41, "zip": 10115}, "the row lacks the model's column 'income'"),
        ({"age": "forty", "income": 1, "zip": 1}, "column 'age': not a number: 'forty'"),
    ],
)
def test_rows_that_are_not_the_models_rows_are_refused_naming_why(model, row, message):
    with pytest.raises(ValueError, match=message):
        mappings_batch(model, [row])


def test_absent_columns_may_be_read_as_missing_when_asked(model):
    rows = [{"age": 41, "zip": 10115}]
    reading = RowReading(InputSettings.from_dict(model.input), missing_columns="allow")
    read = reading.examples(rows, bits=18, seed=0)
    assert np.allclose(model.margins(read.batch), csv_margins(model, [b",41,,10115"]), rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="lacks the model's column 'income'"):
        RowReading(InputSettings.from_dict(model.input)).examples(rows, bits=18, seed=0)


@pytest.mark.slow
def test_run_inference_refuses_an_empty_dict_and_names_binary_classes(model, tmp_path):
    path = str(tmp_path / "m.model")
    model.save(path)
    results = []
    with beam.Pipeline(runner="FnApiRunner") as p:
        rows = p | beam.Create(
            [{"age": 41, "income": 52000.5, "zip": 10115}, {"age": 23, "income": 31000, "zip": 80331}]
        )
        collect(rows | RunInference(PolybeamModelHandler(path, output="label")), results)
    assert sorted(result.inference for result in results) == ["no", "yes"]
    with pytest.raises(Exception, match="lacks the model's columns"):
        with beam.Pipeline(runner="FnApiRunner") as p:
            _ = p | beam.Create([{}]) | RunInference(PolybeamModelHandler(path))
    allowed = []
    with beam.Pipeline(runner="FnApiRunner") as p:
        handler = PolybeamModelHandler(path, output="score", missing_columns="allow")
        collect(p | beam.Create([{}]) | RunInference(handler), allowed)
    assert allowed[0].inference == pytest.approx(float(csv_margins(model, [b",,,"])[0]))


def test_a_bad_missing_columns_policy_is_refused_at_construction(model, tmp_path):
    with pytest.raises(ValueError, match="missing_columns must be one of refuse, allow"):
        PolybeamModelHandler(str(tmp_path / "m.model"), missing_columns="ignore")
    with pytest.raises(ValueError, match="missing_columns must be one of refuse, allow"):
        RowReading(missing_columns="sometimes")


def test_a_label_is_what_predict_writes_at_a_zero_score_and_for_squared_loss(model):
    from polybeam.learners.predictions import model_values
    from polybeam.transforms.inference import _model_outputs

    rows = [{"age": 41, "income": 52000.5, "zip": 10115}, {"age": 23, "income": 31000, "zip": 80331}]
    untrained = LinearLearner(model.config).to_model({"input": model.input})  # every score exactly 0
    batch = mappings_batch(untrained, rows)
    assert _model_outputs(untrained, batch, "label") == ["no", "no"]  # above 0 is positive, as predict says
    assert _model_outputs(model, batch, "label") == model_values(model, batch, "label").tolist()
    fmt = CsvFormat(label_column="age", labels="any")
    values = fmt.parse(b"age,income\n20,1\n60,2\n40,3\n").batch
    squared = (
        LinearLearner(LearnerConfig(loss="squared")).fit([values]).to_model({"label_min": 20.0, "label_max": 60.0})
    )
    assert np.array_equal(_model_outputs(squared, values, "label"), model_values(squared, values, "label"))
