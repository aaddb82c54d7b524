"""The CSV and Parquet readers agree: the same table, written as a CSV file and as a Parquet file, gives the
same examples (labels, weights, slots, values, names) and refuses the same rows.

The table holds numbers (floating-point, whole and boolean; NaN and infinite ones too), text (plain, large and
dictionary-encoded), and numbers and booleans read as categories, with missing values: nulls in Parquet, spelled in the CSV file as an
empty cell or one of the default missing-value spellings (``NA``, ``NaN``, ``?``, ``#N/A``, quoted or not).
The CSV file is written as pandas or Python's ``csv`` module would write it: numbers by Python's repr, text
quoted where it must be.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from parsing_strategies import PROPERTY_SETTINGS

from polybeam.formats import CsvFormat, ParquetFormat
from polybeam.formats.missing import DEFAULT_NA_VALUES

# Cells that spell a missing value in the CSV file.
MISSING_CELLS = ["", "NA", "NaN", "nan", "?", "null", "NULL", "#N/A", "None", "<NA>", "n/a", '"NA"', '""', " NA "]
# Text values: delimiters, quotes, blanks around and inside, digits (hashed as numbers), a '#' first, Unicode,
# blank ones (missing); never a missing-value spelling, which only a CSV file cannot tell from a missing value.
TEXTS = ["red", "dark, blue", 'say "hi"', " spaced ", "a;b", "tab\there", "10115", "007", "#hash", "名前", "  ", "x"]
COLUMN_NAMES = ["size", "a b", "x,1", 'q"t', "名", "10", "colour", "c;d", "n"]


@st.composite
def tables(draw):
    """A table as Python columns, what each column is, and the reading options."""
    n = draw(st.integers(0, 12))
    kinds = draw(st.lists(st.sampled_from(sorted(KINDS)), max_size=5))
    names = draw(st.permutations(COLUMN_NAMES))[: len(kinds)]
    finite = st.floats(allow_nan=False, allow_infinity=False)
    number = st.one_of(finite, st.sampled_from([0.0, -0.0, 1.5, 1e-300, 1e300, 5e-324]))
    columns = {}
    for name, kind in zip(names, kinds):
        if kind in ("float", "float_category"):
            special = [None, math.nan] + ([math.inf, -math.inf] if kind == "float" else [])
            value = st.one_of(number, st.sampled_from(special))
        elif kind in ("int", "int_category"):
            value = st.one_of(st.integers(-(10**6), 10**6), st.sampled_from([0, None]))
        elif kind in ("bool", "bool_category"):
            value = st.sampled_from([True, False, None])
        else:
            value = st.one_of(st.sampled_from(TEXTS), st.none())
        columns[name] = draw(st.lists(value, min_size=n, max_size=n))
    labels = draw(st.sampled_from(["real", "binary", "any"]))
    columns["y"] = draw(st.lists(st.sampled_from([1.0, 0.0, -1.0, 2.5, None, math.nan]), min_size=n, max_size=n))
    weighted = draw(st.booleans())
    if weighted:
        columns["w"] = draw(st.lists(st.sampled_from([1.0, 2.5, 0.0, None, math.nan]), min_size=n, max_size=n))
    order = draw(st.permutations(list(columns)))
    kinds = dict(zip(names, kinds), y="label", w="weight")
    options = {
        "bits": draw(st.sampled_from([4, 18])),
        "seed": draw(st.integers(0, 2**32 - 1)),
        "labels": labels,
        "label_column": "y",
        "weight_column": "w" if weighted else None,
    }
    spellings = draw(st.lists(st.sampled_from(MISSING_CELLS), min_size=n * len(order), max_size=n * len(order)))
    delimiter = draw(st.sampled_from([",", ";", "\t"]))
    return {name: columns[name] for name in order}, kinds, options, spellings, delimiter


# Each kind of column: its Arrow type, and whether the CSV reader must be told it is categorical.
KINDS = {
    "float": (pa.float64(), False),
    "int": (pa.int64(), False),
    "bool": (pa.bool_(), False),  # numeric: 1 and 0, as the CSV cells 1 and 0
    "text": (pa.string(), True),
    "large_text": (pa.large_string(), True),
    "dictionary": (pa.dictionary(pa.int32(), pa.string()), True),
    "int_category": (pa.int64(), True),
    "float_category": (pa.float64(), True),
    "bool_category": (pa.bool_(), True),  # the categories True and False, as pandas writes booleans
}


def arrow_column(values: list, kind: str) -> pa.Array:
    if kind in ("label", "weight"):
        return pa.array(values, type=pa.float64())
    if kind == "dictionary":
        return pa.array(values, type=pa.string()).dictionary_encode()
    return pa.array(values, type=KINDS[kind][0])


def csv_cell(value, kind: str, missing: str, delimiter: str) -> str:
    """How a CSV writer spells the value (a missing one as ``missing``)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return missing
    if kind == "bool":
        return str(int(value))
    text = repr(value) if isinstance(value, float) else str(value)
    quote = delimiter in text or '"' in text or text != text.strip(" \t\r") or text.startswith("#")
    return '"' + text.replace('"', '""') + '"' if quote else text


def write_csv(columns: dict, kinds: dict, spellings: list[str], delimiter: str) -> bytes:
    names = list(columns)
    lines = [delimiter.join(csv_cell(name, "text", "", delimiter) for name in names)]
    cells = iter(spellings)
    for row in range(len(columns[names[0]])):
        line = [csv_cell(columns[name][row], kinds[name], next(cells), delimiter) for name in names]
        lines.append(delimiter.join(line))
    return ("\n".join(lines) + "\n").encode("utf-8")


def example_rows(parsed, *, csv_data: bytes | None = None) -> list[int]:
    """The 0-based table row of each example (CSV: from the byte offsets of its lines)."""
    if csv_data is None:
        return parsed.batch.row_ids.tolist()
    starts = [0] + [i + 1 for i, byte in enumerate(csv_data) if byte == ord("\n")]
    line_of = {start: line for line, start in enumerate(starts)}
    return [line_of[int(offset)] - 1 for offset in parsed.batch.row_ids]


def refused_rows(parsed, *, csv: bool) -> list[int]:
    return sorted(letter.line - 2 if csv else letter.offset for letter in parsed.dead_letters)


@pytest.mark.slow
@PROPERTY_SETTINGS
@given(tables())
def test_a_table_as_csv_and_as_parquet_gives_the_same_examples(case):
    columns, kinds, options, spellings, delimiter = case
    assert set(MISSING_CELLS) - {"", '"NA"', '""', " NA "} <= set(DEFAULT_NA_VALUES)
    table = pa.table({name: arrow_column(values, kinds[name]) for name, values in columns.items()})
    csv_data = write_csv(columns, kinds, spellings, delimiter)
    numbers_as_categories = tuple(name for name, kind in kinds.items() if kind.endswith("_category"))
    text = tuple(
        name for name, kind in kinds.items() if kind in KINDS and KINDS[kind][1] and name not in numbers_as_categories
    )
    csv = CsvFormat(delimiter=delimiter, categorical_columns=numbers_as_categories + text, **options)
    parquet = ParquetFormat(categorical_columns=numbers_as_categories, **options)
    from_csv = csv.parse(csv_data, source="t.csv")
    if not [kind for kind in kinds.values() if kind not in ("label", "weight")]:
        with pytest.raises(ValueError, match="no feature columns"):
            parquet.parse_table(table, source="t.parquet")
        return
    from_parquet = parquet.parse_table(table, source="t.parquet")
    a, b = from_csv.batch, from_parquet.batch
    assert (from_csv.records - from_csv.skipped, from_csv.skipped) == (from_parquet.records, 1)
    assert refused_rows(from_csv, csv=True) == refused_rows(from_parquet, csv=False), csv_data
    assert example_rows(from_csv, csv_data=csv_data) == example_rows(from_parquet)
    np.testing.assert_array_equal(a.labels, b.labels)  # (NaN where missing, in both)
    np.testing.assert_array_equal(a.weights, b.weights)
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_array_equal(a.values, b.values)
    assert (a.names or {}) == (b.names or {})
    assert [letter.reason for letter in from_csv.dead_letters if letter.reason == "missing label"] == [
        letter.reason for letter in from_parquet.dead_letters if letter.reason == "missing label"
    ]
