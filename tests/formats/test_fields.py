"""Rows of named fields (polybeam.formats.fields) read as the model's input was: a row is the example its CSV record
or Parquet row is, label, weight and features included, and a row without a usable label is refused as a record is
dead-lettered."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from polybeam.formats.csv import CsvFormat
from polybeam.formats.fields import RowReading
from polybeam.formats.input_settings import InputSettings
from polybeam.formats.mappings import batch_from_mappings
from polybeam.formats.parquet import ParquetFormat
from polybeam.learners.hashing import hash_string

FIELDS = ("rid", "y", "w", "age", "income", "colour", "zip", "note")


def random_rows(count: int, seed: int) -> list[dict]:
    """Rows as Beam YAML's readers give them: numbers, strings, and None for an empty cell."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(count):
        rows.append(
            {
                "rid": f"r{i}",
                "y": int(rng.choice([-1, 0, 1])),
                "w": None if rng.random() < 0.2 else float(rng.integers(1, 4)),
                "age": None if rng.random() < 0.3 else float(np.round(rng.normal(40, 10), 3)),
                "income": 0.0 if rng.random() < 0.2 else float(np.round(rng.lognormal(3), 4)),
                "colour": rng.choice(["red", "blue", "dark green", None, ""]),
                "zip": int(rng.choice([10115, 20095, 80331])),
                "note": rng.choice(["a", "b"]),
            }
        )
    return rows


def as_csv(rows: list[dict]) -> bytes:
    cells = lambda row: ",".join("" if row[name] is None else str(row[name]) for name in FIELDS)  # noqa: E731
    return ("\n".join([",".join(FIELDS)] + [cells(row) for row in rows]) + "\n").encode()


def assert_same_examples(a, b):
    for name in ("labels", "weights", "indptr", "indices", "values"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


CSV = CsvFormat(
    labels="binary",
    bits=20,
    seed=7,
    label_column="y",
    weight_column="w",
    id_column="rid",
    categorical_columns=("colour", "zip"),
    ignore_columns=("note",),
)


@pytest.mark.slow
def test_a_row_is_the_example_its_csv_record_is():
    rows = random_rows(300, seed=1)
    parsed = CSV.parse(as_csv(rows))
    assert not parsed.dead_letters
    read = RowReading(InputSettings.of(CSV)).examples(rows, bits=20, seed=7, labels="binary")
    assert read.rows.tolist() == list(range(300)) and read.refused == []
    assert_same_examples(read.batch, parsed.batch)
    # The numbers of zip are categories (the model's categorical column), not values: a different batch otherwise.
    plain = RowReading(InputSettings.of(CSV.__class__(**{**CSV.__dict__, "categorical_columns": ("colour",)})))
    assert not np.array_equal(plain.examples(rows, bits=20, seed=7).batch.indices, parsed.batch.indices)


def test_fields_named_in_the_config_win_over_the_models_columns():
    rows = [{**row, "outcome": row.pop("y")} for row in random_rows(100, seed=2)]
    settings = InputSettings.of(CSV)
    # The model's label column is y; these rows call it outcome, and a feature subset leaves out income.
    read = RowReading(settings, label="outcome", features=("age", "colour", "zip")).examples(
        rows, bits=20, seed=7, labels="binary"
    )
    subset = CsvFormat(**{**CSV.__dict__, "ignore_columns": ("note", "income")})
    expected = subset.parse(as_csv([{**row, "y": row["outcome"]} for row in rows])).batch
    assert_same_examples(read.batch, expected)
    with pytest.raises(ValueError, match=r"the rows have no label field \(label: 'label'\)"):
        RowReading(settings, label="label").examples(rows, bits=20, seed=7, labels="binary")
    assert len(RowReading(settings, label="label").examples(rows, bits=20, seed=7).batch) == 100  # to predict
    with pytest.raises(ValueError, match=r"features \['size'\] are not fields"):
        RowReading(settings, features=("size",)).examples(rows, bits=20, seed=7)
    with pytest.raises(ValueError, match="cannot also be features"):
        RowReading(settings, label="outcome", features=("outcome", "age"))


def test_a_csv_model_without_a_label_column_takes_the_first_column_as_the_csv_reader_does():
    fmt = CsvFormat(labels="real", bits=18, categorical_columns=(2,))
    rows = [{"target": 2.5, "a": 1.0, "b": 3}, {"target": -1.0, "a": None, "b": 2}]
    read = RowReading(InputSettings.of(fmt)).examples(rows, bits=18, seed=0, labels="real")
    assert_same_examples(read.batch, fmt.parse(b"target,a,b\n2.5,1,3\n-1,,2\n").batch)
    # The model knows its file's header: the first column is target, and unlabelled rows keep every feature.
    recorded = InputSettings.of(fmt, columns=("target", "a", "b"))
    unlabelled = [{"a": 1.0, "b": 3}, {"a": None, "b": 2}]
    scored = RowReading(recorded).examples(unlabelled, bits=18, seed=0).batch
    assert_same_examples(scored.with_labels(read.batch.labels), read.batch)


def test_rows_without_a_label_the_model_takes_are_refused_as_records_are_dead_lettered():
    fmt = CsvFormat(labels="multiclass", label_names=("cat", "dog"), label_column="y", weight_column="w")
    rows = [
        {"y": None, "w": 1.0, "a": 1.0},
        {"y": "cow", "w": 1.0, "a": 2.0},
        {"y": 3, "w": 1.0, "a": 1.0},
        {"y": "dog", "w": 2.0, "a": 1.0},
        {"y": "1", "w": -1.0, "a": 1.0},
        {"y": 1, "w": None, "a": 4.0},
    ]
    parsed = fmt.parse(b"y,w,a\n,1,1\ncow,1,2\n3,1,1\ndog,2,1\n1,-1,1\n1,,4\n")
    read = RowReading(InputSettings.of(fmt)).examples(
        rows, bits=18, seed=0, labels="multiclass", classes=2, label_names=("cat", "dog")
    )
    assert read.rows.tolist() == [3, 5] and [position for position, _ in read.refused] == [0, 1, 2, 4]
    assert [letter.line - 2 for letter in parsed.dead_letters] == [0, 1, 2, 4]
    assert_same_examples(read.batch, parsed.batch)
    reasons = dict(read.refused)
    assert (
        reasons[0] == "missing label" and reasons[2] == "label 3 is not a class of this task: the classes are cat, dog"
    )
    assert reasons[1] == "label field 'y': unknown class label 'cow'; known classes are cat, dog"
    assert reasons[4] == "weight field 'w': importance weight must be finite and >= 0, got -1.0"
    assert len(RowReading(InputSettings.of(fmt)).examples(rows, bits=18, seed=0).batch) == 6  # to predict: all


PARQUET = ParquetFormat(labels="binary", bits=19, seed=3, weight_column="w", id_column="rid", ignore_columns=("skip",))


def parquet_rows(count: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [
        {
            "label": int(rng.choice([-1, 1])),
            "rid": f"r{i}",
            "w": float(rng.integers(1, 3)),
            "age": None if rng.random() < 0.3 else float(rng.normal()),
            "count": int(rng.integers(0, 5)),
            "flag": bool(rng.random() < 0.5),
            "colour": str(rng.choice(["red", "blue"])),
            "skip": 9.0,
        }
        for i in range(count)
    ]


def test_a_row_for_a_parquet_model_is_the_example_its_parquet_row_is():
    rows = parquet_rows(200, seed=3)
    expected = PARQUET.parse_table(pa.Table.from_pylist(rows)).batch
    reading = RowReading(InputSettings.of(PARQUET))
    read = reading.examples(rows, bits=19, seed=3, labels="binary")
    assert_same_examples(read.batch, expected)
    # The strings are categories, as its reader reads text columns (and as a CSV model's rows read them).
    colour = {hash_string(c, hash_string("colour", 3)) & ((1 << 19) - 1) for c in ("red", "blue")}
    assert colour <= set(expected.indices.tolist())
    # One row at a time (RunInference's step): the same features through the mapping of each row.
    features = reading.feature_fields(list(rows[0]))
    features_of = reading.feature_mapper(list(rows[0]))
    assert set(features) == {"age", "count", "flag", "colour"}
    one_by_one = batch_from_mappings([features_of(row) for row in rows], bits=19, seed=3)
    for name in ("indptr", "indices", "values"):
        np.testing.assert_array_equal(getattr(one_by_one, name), getattr(expected, name))


def test_sparse_list_rows_for_a_parquet_model():
    rows = [
        {"label": 1.0, "indices": [1, 5, 5], "values": [0.5, 2.0, 1.0]},
        {"label": -1.0, "indices": [3], "values": None},
    ]
    fmt = ParquetFormat(labels="binary", bits=18)
    reading = RowReading(InputSettings.of(fmt))
    expected = fmt.parse_table(pa.Table.from_pylist(rows)).batch
    assert_same_examples(reading.examples(rows, bits=18, seed=0, labels="binary").batch, expected)
    mapped = batch_from_mappings([reading.feature_mapper(list(rows[0]))(row) for row in rows], bits=18, seed=0)
    assert mapped.indptr.tolist() == [0, 2, 3] and mapped.values.tolist() == [0.5, 3.0, 1.0]


def test_rows_for_a_csv_model_take_its_missing_value_spellings():
    """A row's string "NA" (or "?", ...) is what the CSV cell NA is for the model: missing (label, weight,
    number or category), unless the model's na_values leave it out."""
    rows = [
        {"y": 1, "w": "NA", "x": "NA", "colour": "?", "zip": 10115},
        {"y": "NA", "w": 2.0, "x": 1.5, "colour": "red", "zip": None},
        {"y": 0, "w": None, "x": 2.0, "colour": "NA", "zip": 20095},
    ]
    text = b"y,w,x,colour,zip\n1,NA,NA,?,10115\nNA,2.0,1.5,red,\n0,,2.0,NA,20095\n"
    options = dict(label_column="y", weight_column="w", categorical_columns=("colour", "zip"))
    for na_values in ((), ("NA", "?")):
        fmt = CsvFormat(**options, na_values=na_values, bits=18, seed=0)
        reading = RowReading(InputSettings.of(fmt))
        read = reading.examples(rows, bits=18, seed=0, labels="binary")
        parsed = CsvFormat(**options, na_values=na_values, labels="binary").parse(text)
        if na_values:
            assert_same_examples(read.batch, parsed.batch)
            assert read.refused == [(1, "missing label")] and parsed.dead_letters[0].reason == "missing label"
        else:  # "NA" is no label, no weight and no number: refused, as its line is a dead letter
            assert [position for position, _ in read.refused] == [0, 1]
            assert len(parsed.dead_letters) == 2
    mapped = RowReading(InputSettings.of(CsvFormat(**options))).feature_mapper(list(rows[0]))(rows[2])
    assert mapped == {"x": 2.0, "colour": "", "zip": "20095"}  # (a missing category: "", none)


def test_rows_for_a_parquet_model_read_its_categorical_columns():
    fmt = ParquetFormat(labels="binary", categorical_columns=("zip",))
    rows = [{"label": 1, "zip": 10115, "size": 2.5, "city": "Berlin"}, {"label": -1, "zip": None, "size": 1.0}]
    reading = RowReading(InputSettings.of(fmt))
    expected = fmt.parse_table(pa.Table.from_pylist(rows)).batch
    assert_same_examples(reading.examples(rows, bits=18, seed=0, labels="binary").batch, expected)
    # The rows' schema says city is text: its missing value is no category (a missing number without it).
    features_of = reading.feature_mapper(["label", "zip", "size", "city"], text_fields=("city",))
    mapped = batch_from_mappings([features_of(row) for row in rows], bits=18, seed=0)
    for name in ("indptr", "indices", "values"):
        np.testing.assert_array_equal(getattr(mapped, name), getattr(expected, name))
    assert features_of(rows[0]) == {"zip": "10115", "size": 2.5, "city": "Berlin"}
    assert features_of(rows[1]) == {"zip": "", "size": 1.0, "city": ""}
    untyped = reading.feature_mapper(["label", "zip", "size", "city"])({"label": 1, "size": None, "city": None})
    assert untyped["zip"] == "" and np.isnan(untyped["size"]) and np.isnan(untyped["city"])
