"""Per-example keys read by the parsers (--key namespace:NAME, column:NAME): codes, names, and no key features."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st
from parsing_strategies import PROPERTY_SETTINGS, strings

from polybeam.formats.csv import CsvFormat
from polybeam.formats.keys import key_codes
from polybeam.formats.parquet import ParquetFormat
from polybeam.formats.vw import VWFormat


@PROPERTY_SETTINGS
@given(st.lists(strings("abé/", max_size=4), max_size=30))
def test_key_codes_number_distinct_keys_in_order_of_first_appearance(keys):
    data = "".join(keys).encode()
    spans, position = [], 0
    for key in keys:
        size = len(key.encode())
        spans.append([position, position + size] if key else [-1, -1])
        position += size
    codes, names = key_codes(np.frombuffer(data, dtype=np.uint8), np.array(spans, dtype=np.int64).reshape(-1, 2))
    assert [names[c] for c in codes] == keys
    assert list(names) == list(dict.fromkeys(keys))


def test_vw_key_namespace_names_each_example_and_is_no_feature():
    block = b"1 |store s1 |f a b\n0 |f c |store s2 x\n1 |f a\n-1 'tag |store s1 |f b\n"
    plain = VWFormat(bits=10).parse(block).batch
    keyed = VWFormat(bits=10, key_namespace="store").parse(block).batch
    assert keyed.keys.tolist() == ["s1", "s2", "", "s1"]
    without_store = VWFormat(bits=10).parse(b"1 |f a b\n0 |f c\n1 |f a\n-1 'tag |f b\n").batch
    assert np.array_equal(keyed.indptr, without_store.indptr) and np.array_equal(keyed.indices, without_store.indices)
    assert plain.nnz > keyed.nnz
    assert [(key, part.labels.tolist()) for key, part in keyed.split_by_key_codes()] == [
        ("s1", [1.0, -1.0]),
        ("s2", [0.0]),
        ("", [1.0]),
    ]


def test_vw_keys_survive_dead_letters_and_label_filtering():
    block = b"1 |k a |f x\nbad|k b |f y\n2 |k c |f z\n-1 |k d |f w\n"
    parsed = VWFormat(bits=10, labels="binary", key_namespace="k").parse(block)
    assert parsed.batch.keys.tolist() == ["a", "d"]
    assert len(parsed.dead_letters) == 2


def test_csv_key_column_names_each_example_and_is_no_feature():
    block = b'y,store,a,color\n1,s1,2,red\n0,s2,,blue\n1,,3,red\n0,"s1",1,\n'
    keyed = CsvFormat(bits=10, key_column="store", categorical_columns=("color",)).parse(block)
    plain = CsvFormat(bits=10, categorical_columns=("color",), ignore_columns=("store",)).parse(block)
    batch = keyed.batch
    assert batch.keys.tolist() == ["s1", "s2", "", "s1"]
    assert np.array_equal(batch.indptr, plain.batch.indptr) and np.array_equal(batch.indices, plain.batch.indices)
    assert np.array_equal(batch.values, plain.batch.values, equal_nan=True)  # (a's empty cell: NaN)
    assert batch.names == plain.batch.names  # names of the remaining features are unchanged


def test_csv_key_column_cannot_have_another_role():
    for options in ({"label_column": "store"}, {"categorical_columns": ("store",)}):
        try:
            CsvFormat(key_column="store", **options).parse(b"y,store\n1,a\n")
        except ValueError as error:
            assert "key column" in str(error)
        else:  # pragma: no cover
            raise AssertionError(f"{options} accepted")


def test_parquet_key_column_by_dictionary_encoding():
    table = pa.table(
        {"label": [1.0, 0.0, 1.0, 0.0], "store": ["a", "b", None, "a"], "x": [1.0, 2.0, 0.0, 3.0], "shop": [7, 8, 7, 9]}
    )
    batch = ParquetFormat(bits=10, key_column="store").parse_table(table).batch
    assert batch.keys.tolist() == ["a", "b", "", "a"]
    assert set(batch.names.values()) == {"x", "shop"}  # the key column is no feature
    numbers = ParquetFormat(bits=10, key_column="shop").parse_table(table).batch
    assert numbers.keys.tolist() == ["7", "8", "7", "9"]
    # (text is a category when not the key; at 10 bits store=b shares x's slot, named x, the first seen there)
    assert set(numbers.names.values()) == {"x", "store=a"} and len(numbers.indices) == 6
