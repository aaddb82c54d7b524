"""Examples as mappings (polybeam.formats.mappings): a missing value (None, NaN, pandas' NA, an empty category) is
an absent feature, as an empty CSV cell is, never a failed job."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polybeam.formats.csv import CsvFormat
from polybeam.formats.mappings import MappingError, batch_from_mappings

pd = pytest.importorskip("pandas")  # (its NA and NaT are among the missing values; the test extra installs it)

KEYS = st.one_of(st.sampled_from(["age", "income", "colour", "ns^word"]), st.integers(1, 40))
PRESENT = st.one_of(
    st.floats(-1e6, 1e6, allow_nan=False).filter(lambda v: v != 0),
    st.sampled_from(["red", "blue"]),
    st.booleans().map(np.bool_).filter(bool),
    st.integers(1, 9).map(np.float32),
)
MISSING = st.sampled_from([None, math.nan, np.float32("nan"), pd.NA, pd.NaT, "", "   ", 0.0, 0])


def same(a, b) -> bool:
    return all(np.array_equal(getattr(a, name), getattr(b, name)) for name in ("indptr", "indices", "values"))


@pytest.mark.slow
@settings(max_examples=300)
@given(st.lists(st.dictionaries(KEYS, st.one_of(PRESENT, MISSING), max_size=8), max_size=6), st.integers(4, 24))
def test_a_missing_value_is_the_key_left_out(examples, bits):
    def present(value) -> bool:
        if value is None or value is pd.NA or value is pd.NaT:
            return False
        if isinstance(value, str):
            return bool(value.strip())
        return bool(value == value and value != 0)

    kept = [{key: value for key, value in example.items() if present(value)} for example in examples]
    assert same(batch_from_mappings(examples, bits=bits), batch_from_mappings(kept, bits=bits))


def test_a_table_row_with_empty_cells_is_the_csv_line():
    csv = CsvFormat(labels="any", categorical_columns=("colour",))
    parsed = csv.parse(b"y,age,income,colour\n1,41,,red\n0,,3.5,\n").batch
    rows = [{"age": 41, "income": None, "colour": "red"}, {"age": np.nan, "income": 3.5, "colour": None}]
    assert same(batch_from_mappings(rows, bits=18), parsed)
    frame = pd.DataFrame(
        {
            "age": pd.array([41, None], dtype="Int64"),
            "income": [None, 3.5],
            "colour": pd.array(["red", None], dtype="string"),
        }
    )
    assert same(batch_from_mappings(frame.to_dict("records"), bits=18), parsed)


def test_what_is_not_a_value_still_fails_saying_so():
    with pytest.raises(MappingError, match=r"feature 'x' has value \[1\], not a number or a category \(None or NaN"):
        batch_from_mappings([{"x": [1]}], bits=10)
    with pytest.raises(MappingError, match="feature 'x': non-finite feature value: inf"):
        batch_from_mappings([{"x": float("inf")}], bits=10)
    # The same bound as every parser's (polybeam.learners.values): a square that overflows an update.
    with pytest.raises(MappingError, match=r"feature 'x': feature value beyond \+-3.4e\+38 \(rescale it\): 1e\+300"):
        batch_from_mappings([{"x": 1e300}], bits=10)
