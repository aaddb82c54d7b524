"""The Python API fails as loudly as the command line: ReadExamples checks its read, Train refuses to learn from
nothing, ``ReadExamples | Train`` writes no model for a refused read, and dict examples with missing values
(RunInference) are scored, not failed."""

from __future__ import annotations

import os

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.ml.inference.base import KeyedModelHandler, RunInference

from polybeam import datasets
from polybeam.formats.acceptance import InputRejected
from polybeam.formats.csv import CsvFormat
from polybeam.inference import PolybeamModelHandler
from polybeam.learners.config import LearnerConfig
from polybeam.learners.linear import LinearLearner
from polybeam.learners.model import Model
from polybeam.transforms import CheckInput, InputPolicy, ReadExamples, Train, WriteModel
from polybeam.transforms.yaml_steps import PolybeamPredict, PolybeamTrain

RUNNER = "FnApiRunner"
CSV_ROWS = "a,b,label\n1,2,1\n3,4,0\n5,6,1\n"
# What the pipelines below hand back (the local runner runs in this process).
SEEN: dict[str, list] = {}


def _keep(element, name):
    SEEN.setdefault(name, []).append(element)


def train_and_write(path: str, model: str, **read_options) -> None:
    with beam.Pipeline(RUNNER) as pipeline:
        models = pipeline | ReadExamples(path, **read_options) | Train(loss="logistic")
        _ = models | WriteModel(model)


def test_read_then_train_on_a_file_of_dead_letters_fails_and_writes_no_model(tmp_path):
    path, model = tmp_path / "rows.csv", str(tmp_path / "m.model")
    path.write_text(CSV_ROWS)
    with pytest.raises(InputRejected) as error:
        train_and_write(str(path), model)  # read as LIBSVM, the default
    message = str(error.value)
    assert message.startswith("all 4 records (100%) are dead letters, more than max_dead_letter_fraction=0.1 allows")
    assert "the records look like CSV, not LIBSVM: check format (format='csv'?)" in message
    assert not os.path.exists(model)
    # Read as what it is, the same pipeline trains.
    train_and_write(str(path), model, format="csv", label_column="label", labels="binary")
    assert os.path.exists(model)


@pytest.mark.slow
def test_too_many_dead_letters_fail_unless_the_fraction_allows_them(tmp_path):
    lines = datasets.lines("spam")[:90] + [b"spam 1:2\n"] * 10  # 10% of the records are bad
    path, model = tmp_path / "mixed.libsvm", str(tmp_path / "m.model")
    path.write_bytes(b"".join(lines))
    train_and_write(str(path), model)  # 10 of 100: at the limit, not beyond
    os.remove(model)
    path.write_bytes(b"".join(lines + [b"ham 1:2\n"]))
    with pytest.raises(
        InputRejected,
        match=r"(?s)11 of 101 records \(10.8%\) are dead letters.*raise "
        r"max_dead_letter_fraction to go on without them",
    ):
        train_and_write(str(path), model)
    assert not os.path.exists(model)
    train_and_write(str(path), model, max_dead_letter_fraction=0.2)
    assert os.path.exists(model)


def test_an_empty_read_fails_unless_allowed_and_train_refuses_no_example(tmp_path):
    path = tmp_path / "empty.libsvm"
    path.write_text("# only a comment\n")
    with pytest.raises(
        InputRejected,
        match="no example was read: the 1 records read are all blank, comment or header "
        "lines; check the file pattern, or pass allow_empty=True",
    ):
        train_and_write(str(path), str(tmp_path / "m.model"))
    # The read may accept it; Train still will not learn from nothing...
    with pytest.raises(InputRejected, match="Train got no example.*pass allow_empty=True to Train"):
        with beam.Pipeline(RUNNER) as pipeline:
            _ = (pipeline | ReadExamples(str(path), allow_empty=True)).examples | Train(loss="logistic")
    # ... unless told to: then the model says it learned from no example.
    with beam.Pipeline(RUNNER) as pipeline:
        models = pipeline | beam.Create([]) | Train(loss="logistic", allow_empty=True)
        _ = models | beam.Map(_keep, "empty")
    assert [model.metadata["examples"] for model in SEEN.pop("empty")] == [0]
    with pytest.raises(InputRejected, match="Train got no example"):
        with beam.Pipeline(RUNNER) as pipeline:
            _ = pipeline | beam.Create([]) | PolybeamTrain(model=str(tmp_path / "yaml.model"))
    assert not os.path.exists(tmp_path / "yaml.model")


def test_the_check_is_exported_and_a_bad_fraction_fails_at_once(tmp_path):
    assert CheckInput.__module__ == "polybeam.transforms.input_check" and InputPolicy(spelling="python")
    with pytest.raises(ValueError, match="max_dead_letter_fraction must be a number from 0 to 1, got 2"):
        ReadExamples(datasets.path("spam"), max_dead_letter_fraction=2)


def test_the_checked_counts_come_with_the_read():
    with beam.Pipeline(RUNNER) as pipeline:
        read = pipeline | ReadExamples(datasets.path("spam"))
        _ = read.checked | beam.Map(_keep, "checked")
    (counts,) = SEEN.pop("checked")
    assert (counts.records, counts.examples, counts.dead_letters) == (4601, 4601, 0)


def test_run_inference_scores_dicts_with_missing_values_as_their_csv_lines(tmp_path):
    # A model trained on CSV rows with empty cells; RunInference gets the same rows as dicts with None and NaN.
    rng = np.random.default_rng(0)
    rows = []
    for i in range(400):
        age, income = rng.integers(20, 70), rng.normal(3, 1)
        label = int(income > 3)
        rows.append(
            (
                label,
                "" if i % 3 == 0 else str(age),
                "" if i % 5 == 0 else f"{income:.3f}",
                "" if i % 7 == 0 else ("red" if label else "blue"),
            )
        )
    text = "y,age,income,colour\n" + "".join(",".join(map(str, row)) + "\n" for row in rows)
    batch = CsvFormat(labels="binary", categorical_columns=("colour",)).parse(text.encode()).batch
    model_path = str(tmp_path / "csv.model")
    LinearLearner(LearnerConfig(loss="logistic")).fit(batch).to_model().save(model_path)
    cell = lambda text, kind: (None if kind == "none" else np.nan) if text == "" else text  # noqa: E731
    dicts = [
        {
            "age": cell(age, "none") if age == "" else int(age),
            "income": cell(income, "nan") if income == "" else float(income),
            "colour": cell(colour, "none"),
        }
        for _, age, income, colour in rows
    ]
    with beam.Pipeline(RUNNER) as pipeline:
        keyed = pipeline | beam.Create(list(enumerate(dicts)))
        results = keyed | RunInference(KeyedModelHandler(PolybeamModelHandler(model_path)))
        _ = results | beam.Map(_keep, "scored")
    scored = [result.inference for _, result in sorted(SEEN.pop("scored"), key=lambda pair: pair[0])]
    np.testing.assert_allclose(scored, Model.load(model_path).predict(batch), rtol=0, atol=1e-12)


def test_yaml_predict_scores_rows_with_nulls_as_csv_lines_with_empty_cells(tmp_path):
    text = b"id,y,age,colour\n7,1,41,red\n8,0,,blue\n9,1,30,\n"
    batch = (
        CsvFormat(labels="binary", label_column="y", ignore_columns=("id",), categorical_columns=("colour",))
        .parse(text)
        .batch
    )
    model_path = str(tmp_path / "rows.model")
    model = LinearLearner(LearnerConfig(loss="logistic")).fit([batch] * 20).to_model()
    model.save(model_path)
    rows = [
        beam.Row(id=7, y=1, age=41.0, colour="red"),
        beam.Row(id=8, y=0, age=None, colour="blue"),
        beam.Row(id=9, y=1, age=30.0, colour=None),
    ]
    with beam.Pipeline(RUNNER) as pipeline:
        examples = pipeline | beam.Create(rows)
        predictions = examples | PolybeamPredict(model=model_path, ignore=["id", "y"])
        _ = predictions["predictions"] | beam.Map(_keep, "rows")
    scored = sorted(SEEN.pop("rows"), key=lambda row: row.id)
    assert [(row.id, row.age, row.colour, row.predicted_class) for row in scored] == [
        (7, 41.0, "red", ""),
        (8, None, "blue", ""),
        (9, 30.0, None, ""),
    ]
    np.testing.assert_allclose([row.prediction for row in scored], model.predict(batch), rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match=r"ignore names \['label'\], which the rows do not have"):
        with beam.Pipeline(RUNNER) as pipeline:
            _ = pipeline | beam.Create(rows) | PolybeamPredict(model=model_path, ignore=["label"])
