"""A missing value of a numeric feature is one entry, the value NaN at the feature's slot, in its column's place
among the row's features, at every door: CSV (an empty cell, a missing-value spelling, a NaN), Parquet and Avro
(a null, a NaN), rows of dicts and Beam rows (None, NaN, pandas' NA, an empty string, a spelling), matrices and
pandas frames (NaN), LIBSVM (``3:nan``), and a column a scoring file lacks when ``missing_columns="allow"``. The
learners fill it with the feature's mean over the training examples. A missing category, a zero and a field a
JSON Lines row leaves out are no entry; an infinite value or one too large is still refused."""

from __future__ import annotations

import io
import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from parsing_strategies import PROPERTY_SETTINGS

from polybeam.formats import CsvFormat, JsonLinesFormat, LibsvmFormat, ParquetFormat
from polybeam.formats.avro import AvroFormat
from polybeam.formats.columns import ColumnRoles
from polybeam.formats.fields import RowReading
from polybeam.formats.input_settings import InputSettings
from polybeam.formats.mappings import batch_from_mappings
from polybeam.formats.scoring import ScoringColumns, ScoringFormat
from polybeam.learners.arrays import batch_from_arrays
from polybeam.learners.hashing import feature_slot, hash_string

pd = pytest.importorskip("pandas")

NAN = "nan"  # (how entries() spells a NaN value, so that rows compare equal)


def category_slot(column: str, value: str, bits: int = 18) -> int:
    return hash_string(value, hash_string(column, 0)) & ((1 << bits) - 1)


def entries(batch) -> list[list[tuple[int, float | str]]]:
    """Each example's ``(slot, value)`` entries in order, NaN spelled ``"nan"``."""
    return [
        [(int(slot), NAN if value != value else float(value)) for slot, value in zip(*batch.row(i))]
        for i in range(len(batch))
    ]


A, B = feature_slot("a"), feature_slot("b")
RED = category_slot("c", "red")


# -- CSV --------------------------------------------------------------------------


def test_a_csv_missing_number_is_one_nan_entry_in_its_columns_place():
    data = b'y,a,c,b\n1,,,2\n1,NA,red,0\n1,0,?,\n1," ","",nan\n1,"NA",red,-NaN\n'
    parsed = CsvFormat(label_column="y", categorical_columns=("c",)).parse(data)
    assert parsed.dead_letters == []
    assert entries(parsed.batch) == [
        [(A, NAN), (B, 2.0)],  # (the empty category: none)
        [(A, NAN), (RED, 1.0)],  # (b's zero: none)
        [(B, NAN)],  # (a's zero and the category ?: none)
        [(A, NAN), (B, NAN)],  # (a quoted blank cell, an empty quoted category, nan)
        [(A, NAN), (RED, 1.0), (B, NAN)],
    ]
    assert parsed.batch.names == {A: "a", B: "b", RED: "c=red"}


def test_a_csv_nan_is_missing_without_spellings_but_infinity_and_text_are_refused():
    data = b"y,a\n1,nan\n1,NaN\n1,NA\n1,inf\n1,1e39\n1,\n"
    parsed = CsvFormat(label_column="y", na_values=()).parse(data)
    assert entries(parsed.batch) == [[(A, NAN)], [(A, NAN)], [(A, NAN)]]
    assert [letter.reason for letter in parsed.dead_letters] == [
        "column 'a': not a number: 'NA'",
        "column 'a': non-finite value: 'inf'",
        "column 'a': feature value beyond +-3.4e+38 (rescale it): '1e39'",
    ]


def test_a_csv_block_of_nothing_but_empty_cells_fits():
    """Every empty numeric cell is an entry: a line of n columns gives n entries from n bytes."""
    names = [f"x{i}" for i in range(40)]
    data = (",".join(names) + "\n" + "\n".join(["," * 39] * 500)).encode()  # (no final line break)
    batch = CsvFormat(label_column="y", labels="any").parse(data).batch  # (no label column: every column a feature)
    assert len(batch) == 500 and batch.nnz == 500 * 40 and np.isnan(batch.values).all()
    assert batch.indices[:40].tolist() == [feature_slot(name) for name in names]
    one = CsvFormat(label_column="y", labels="any").parse(b"a,b\n,").batch
    assert entries(one) == [[(A, NAN), (B, NAN)]]


def test_a_missing_label_weight_and_category_are_as_before():
    data = b"y,w,a,c\n,,1,\n"
    parsed = CsvFormat(label_column="y", weight_column="w", categorical_columns=("c",), labels="any").parse(data)
    assert np.isnan(parsed.batch.labels).all() and parsed.batch.weights.tolist() == [1.0]
    assert entries(parsed.batch) == [[(A, 1.0)]]


# -- LIBSVM -----------------------------------------------------------------------


@pytest.mark.parametrize("spelling", [b"nan", b"NaN", b"NAN", b"-nan", b"+NaN"])
def test_a_libsvm_nan_is_a_missing_value(spelling):
    parsed = LibsvmFormat().parse(b"1 1:2 3:" + spelling + b" 5:1\n")
    assert parsed.dead_letters == [] and entries(parsed.batch) == [[(1, 2.0), (3, NAN), (5, 1.0)]]


@pytest.mark.parametrize("spelling", [b"inf", b"-Infinity", b"1e999"])
def test_a_libsvm_infinity_is_still_a_dead_letter(spelling):
    parsed = LibsvmFormat().parse(b"1 3:" + spelling + b"\n1 2:1\n")
    assert [letter.reason for letter in parsed.dead_letters] == [f"non-finite feature value: '3:{spelling.decode()}'"]
    assert len(parsed.batch) == 1


def test_libsvm_and_the_sparse_lists_of_parquet_agree_on_missing_values():
    libsvm = LibsvmFormat().parse(b"1 1:2 3:nan 5:1\n0 2:nan\n").batch
    for missing in (None, math.nan):
        table = pa.table({"label": [1.0, 0.0], "indices": [[1, 3, 5], [2]], "values": [[2.0, missing, 1.0], [missing]]})
        parsed = ParquetFormat().parse_table(table)
        assert parsed.dead_letters == [] and entries(parsed.batch) == entries(libsvm)


# -- Parquet, Avro, JSON Lines ----------------------------------------------------------


def test_parquet_nulls_and_nans_of_numbers_are_nan_entries():
    table = pa.table(
        {
            "label": [1.0, 1.0, 1.0],
            "a": [None, math.nan, 0.0],
            "c": ["red", None, ""],
            "m": pa.array([None, True, False]),
            "n": pa.nulls(3),  # (no type: no feature)
        }
    )
    batch = ParquetFormat().parse_table(table).batch
    m = feature_slot("m")
    assert entries(batch) == [[(A, NAN), (RED, 1.0), (m, NAN)], [(A, NAN), (m, 1.0)], []]


def test_avro_nulls_of_numbers_are_nan_entries():
    import fastavro

    schema = {
        "type": "record",
        "name": "R",
        "fields": [
            {"name": "label", "type": "double"},
            {"name": "a", "type": ["null", "double"]},
            {"name": "c", "type": ["null", "string"]},
        ],
    }
    sink = io.BytesIO()
    fastavro.writer(sink, schema, [{"label": 1.0, "a": None, "c": None}, {"label": 1.0, "a": 2.0, "c": "red"}])
    batch = AvroFormat().parse(sink.getvalue()).batch
    assert entries(batch) == [[(A, NAN)], [(A, 2.0), (RED, 1.0)]]


def test_a_json_lines_null_or_field_left_out_is_no_feature_unless_feature_columns_name_it():
    """A JSON null has no type, and a line must read alike whichever lines share its block: no feature. Named
    in feature_columns, the field is a number: its null, or its absence, is missing."""
    data = b'{"label": 1, "a": null, "b": 2}\n{"label": 1, "a": 3}\n'
    assert entries(JsonLinesFormat().parse(data).batch) == [[(B, 2.0)], [(A, 3.0)]]
    named = JsonLinesFormat(feature_columns=("a", "b")).parse(data).batch
    assert entries(named) == [[(A, NAN), (B, 2.0)], [(A, 3.0), (B, NAN)]]


# -- rows of dicts, Beam rows ---------------------------------------------------------------


CSV = CsvFormat(label_column="y", categorical_columns=("c",))
CSV_SETTINGS = InputSettings.of(CSV).replace(columns=("y", "a", "c", "b"))


@pytest.mark.parametrize("missing", [None, math.nan, np.float32("nan"), "", "  ", "NA", "?"])
def test_a_dict_rows_missing_value_is_what_its_csv_cell_is(missing):
    """pandas' NA too; the model's na_values are missing in text."""
    rows = [{"y": 1, "a": missing, "c": missing, "b": 2.0}, {"y": 0, "a": 0.0, "c": "red", "b": pd.NA}]
    read = RowReading(CSV_SETTINGS).examples(rows, bits=18, seed=0, labels="binary")
    assert entries(read.batch) == [[(A, NAN), (B, 2.0)], [(RED, 1.0), (B, NAN)]]
    assert entries(read.batch) == entries(CSV.parse(b"y,a,c,b\n1,,,2\n0,0,red,\n").batch)
    # The same through a model's recorded columns (RunInference's dicts) and without them (a CSV model's fields).
    roles = ColumnRoles.of(CSV_SETTINGS)
    assert entries(batch_from_mappings([roles.features_of(row) for row in rows], bits=18)) == entries(read.batch)
    mapper = RowReading(InputSettings.of(CSV), features=("a", "c", "b")).feature_mapper(["y", "a", "c", "b"])
    assert entries(batch_from_mappings([mapper(row) for row in rows], bits=18)) == entries(read.batch)


def test_allowed_absent_columns_are_missing_in_every_row():
    rows = [{"y": 1, "b": 2.0}, {"y": 0, "b": 0.0}]
    read = RowReading(CSV_SETTINGS, missing_columns="allow").examples(rows, bits=18, seed=0, labels="binary")
    assert entries(read.batch) == [[(A, NAN), (B, 2.0)], [(A, NAN)]]  # (c, a category: none)
    with pytest.raises(ValueError, match="lacks the model's columns 'a', 'c'"):
        RowReading(CSV_SETTINGS).examples(rows, bits=18, seed=0, labels="binary")
    allowed = ColumnRoles.of(CSV_SETTINGS, missing_columns="allow")
    assert entries(batch_from_mappings([allowed.features_of(row) for row in rows], bits=18)) == entries(read.batch)


def test_a_scoring_file_without_some_columns_reads_them_as_missing_in_every_row():
    model = ScoringColumns(("y", "a", "c", "b"), label="y", optional=("label",), missing="allow")
    fmt = ScoringFormat(CsvFormat(label_column="y", categorical_columns=("c",), labels="any"), model)
    batch = fmt.parse(b"y,b\n1,2\n0,0\n").batch
    assert entries(batch) == [[(B, 2.0), (A, NAN)], [(A, NAN)]]  # (after the row's own features)
    assert batch.names == {A: "a", B: "b"}
    table = ScoringFormat(ParquetFormat(label_column="y", labels="any", categorical_columns=("c",)), model)
    assert entries(table.parse_table(pa.table({"y": [1.0, 0.0], "b": [2.0, 0.0]})).batch) == entries(batch)
    refusing = ScoringFormat(CsvFormat(label_column="y", labels="any"), ScoringColumns(("y", "a"), label="y"))
    with pytest.raises(ValueError, match="lacks 1 of the model's 1 feature columns: a"):
        refusing.parse(b"y\n1\n")


# -- matrices and pandas frames -----------------------------------------------------------


def test_a_matrix_nan_is_a_missing_value_and_a_zero_none():
    from scipy import sparse

    matrix = np.array([[np.nan, 0.0, 2.0], [0.0, np.nan, 0.0]])
    expected = [[(1, NAN), (3, 2.0)], [(2, NAN)]]
    assert entries(batch_from_arrays(matrix, bits=18)) == expected
    assert entries(batch_from_arrays(sparse.csr_matrix(matrix), bits=18)) == expected
    assert entries(batch_from_arrays(pd.DataFrame(matrix), bits=18)) == expected  # (unnamed columns: by position)
    with pytest.raises(ValueError, match="features must be finite"):
        batch_from_arrays(np.array([[np.inf, np.nan]]), bits=18)


def test_a_pandas_table_reads_as_its_csv_file():
    frame = pd.DataFrame(
        {
            "a": pd.array([None, 1, 0], dtype="Int64"),
            "c": pd.array(["red", None, " "], dtype="string"),
            "b": [2.0, np.nan, 0.0],
        }
    )
    batch = batch_from_arrays(frame, bits=18)
    assert entries(batch) == [[(A, NAN), (RED, 1.0), (B, 2.0)], [(A, 1.0), (B, NAN)], []]
    csv = CsvFormat(label_column="y", categorical_columns=("c",), labels="any").parse(b"a,c,b\n,red,2\n1,,\n0, ,0\n")
    assert entries(batch) == entries(csv.batch)


# -- every door alike --------------------------------------------------------------------

COLUMN_NAMES = ["a", "b", "size", "x 1", "名"]
NUMBERS = st.one_of(st.integers(-1000, 1000).map(float), st.sampled_from([0.25, -1.5, 1e-3, 12345.678, 3e20]))
CELLS = st.one_of(NUMBERS, st.sampled_from([0.0, None, math.nan]))
SPELLINGS = ["", "NA", "NaN", "nan", "NAN", "-nan", "?", "null", "#N/A", '"NA"', " NA ", '""', '"  "']


@PROPERTY_SETTINGS
@given(st.data())
def test_a_table_of_numbers_reads_alike_at_every_door(data):
    """Random numbers, zeros and missing values as a CSV file (missing values in random spellings), a Parquet
    table, rows of dicts and a pandas frame: each row's entries are its columns' in order, a missing value the
    entry NaN, a zero none."""
    names = data.draw(st.lists(st.sampled_from(COLUMN_NAMES), min_size=1, max_size=5, unique=True))
    n = data.draw(st.integers(1, 8))
    columns = {name: data.draw(st.lists(CELLS, min_size=n, max_size=n)) for name in names}
    rows = [{name: columns[name][i] for name in names} for i in range(n)]
    expected = [
        [
            (feature_slot(name), NAN if value is None or value != value else value)
            for name, value in row.items()
            if value != 0.0
        ]
        for row in rows
    ]

    # (a line of one empty cell is a blank line, skipped, as pandas skips it: one column needs another spelling)
    spellings = SPELLINGS if len(names) > 1 else SPELLINGS[1:]

    def cell(value) -> str:
        if value is None or value != value:
            return data.draw(st.sampled_from(spellings))
        return repr(value)

    header = ",".join(f'"{name}"' if " " in name else name for name in names)
    text = "\n".join([header] + [",".join(cell(value) for value in row.values()) for row in rows]) + "\n"
    fmt = CsvFormat(label_column="y", labels="any")
    csv = fmt.parse(text.encode("utf-8"))
    assert csv.dead_letters == [] and entries(csv.batch) == expected, text
    parquet = ParquetFormat(labels="any").parse_table(
        pa.table({name: pa.array(columns[name], pa.float64()) for name in names})
    )
    assert entries(parquet.batch) == expected
    settings = InputSettings.of(fmt).replace(columns=tuple(names))
    assert entries(RowReading(settings).examples(rows, bits=18, seed=0).batch) == expected
    frame = pd.DataFrame({name: pd.array(columns[name], dtype="Float64") for name in names})
    assert entries(batch_from_arrays(frame, bits=18)) == expected
