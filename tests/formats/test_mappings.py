"""Examples as mappings (polybeam.formats.mappings): a missing value (None, NaN, pandas' NA) is a missing number,
the value NaN, as an empty cell of a numeric CSV column is; an empty category is no feature, as an empty cell of a
categorical column is; never a failed job."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polybeam.formats.columns import ColumnRoles
from polybeam.formats.csv import CsvFormat
from polybeam.formats.input_settings import InputSettings
from polybeam.formats.mappings import MappingError, as_category, batch_from_mappings, is_missing

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
    return all(
        np.array_equal(getattr(a, name), getattr(b, name), equal_nan=name == "values")
        for name in ("indptr", "indices", "values")
    )


@pytest.mark.slow
@settings(max_examples=300)
@given(st.lists(st.dictionaries(KEYS, st.one_of(PRESENT, MISSING), max_size=8), max_size=6), st.integers(4, 24))
def test_a_missing_number_is_nan_and_a_blank_category_or_a_zero_the_key_left_out(examples, bits):
    def spelled(value):
        """The value as the plainest mapping spells it: NaN for a missing number, None for no feature."""
        if value is None or value is pd.NA or value is pd.NaT or (not isinstance(value, str) and value != value):
            return math.nan
        if isinstance(value, str):
            return value if value.strip() else None
        return value if value != 0 else None

    plain = [{key: spelled(value) for key, value in example.items()} for example in examples]
    kept = [{key: value for key, value in example.items() if value is not None} for example in plain]
    batch = batch_from_mappings(examples, bits=bits)
    assert same(batch, batch_from_mappings(kept, bits=bits))
    assert np.isnan(batch.values).sum() == sum(value != value for example in kept for value in example.values())


def test_a_table_row_with_empty_cells_is_the_csv_line():
    csv = CsvFormat(labels="any", categorical_columns=("colour",))
    parsed = csv.parse(b"y,age,income,colour\n1,41,,red\n0,,3.5,\n").batch
    assert np.isnan(parsed.values).sum() == 2  # (income of the first row, age of the second)
    # A categorical column's missing value is "" (no category): a mapping cannot tell which keys are categories.
    rows = [{"age": 41, "income": None, "colour": "red"}, {"age": np.nan, "income": 3.5, "colour": ""}]
    assert same(batch_from_mappings(rows, bits=18), parsed)
    frame = pd.DataFrame(
        {
            "age": pd.array([41, None], dtype="Int64"),
            "income": [None, 3.5],
            "colour": pd.array(["red", None], dtype="string"),
        }
    )
    # Read through the columns a model of the CSV file records, which know colour is categorical.
    settings = InputSettings.of(csv).replace(columns=("y", "age", "income", "colour"))
    roles = ColumnRoles.of(settings)
    mappings = [roles.features_of(record) for record in frame.to_dict("records")]
    assert same(batch_from_mappings(mappings, bits=18), parsed)


def test_missing_values_and_categories_spelled_for_mappings():
    assert [is_missing(value) for value in (None, math.nan, np.float32("nan"), pd.NA, pd.NaT, 0.0, "", "NA")] == [
        *[True] * 5,
        *[False] * 3,
    ]
    assert [as_category(value) for value in (None, pd.NA, math.nan, 10115, 2.5, True, "red")] == [
        *[""] * 3,
        *["10115", "2.5", "True", "red"],
    ]


def test_what_is_not_a_value_still_fails_saying_so():
    with pytest.raises(MappingError, match=r"feature 'x' has value \[1\], not a number or a category \(None or NaN"):
        batch_from_mappings([{"x": [1]}], bits=10)
    with pytest.raises(MappingError, match="feature 'x': non-finite feature value: inf"):
        batch_from_mappings([{"x": float("inf")}], bits=10)
    # The same bound as every parser's (polybeam.learners.values): a square that overflows an update.
    with pytest.raises(MappingError, match=r"feature 'x': feature value beyond \+-3.4e\+38 \(rescale it\): 1e\+300"):
        batch_from_mappings([{"x": 1e300}], bits=10)
