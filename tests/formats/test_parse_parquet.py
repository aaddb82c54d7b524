"""Parquet / Arrow parsing: both layouts, dead letters, row numbering."""

from __future__ import annotations

import io
import json
import pickle

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st
from parsing_strategies import PROPERTY_SETTINGS

from polybeam.formats import ParquetFormat
from polybeam.learners.hashing import feature_slot, hash_string, libsvm_slot


def category_slot(column: str, value: str, seed: int = 0, bits: int = 18) -> int:
    return hash_string(value, hash_string(column, seed)) & ((1 << bits) - 1)


def sparse_table(**extra):
    columns = {
        "label": [1.0, -1.0, 0.5, 2.0],
        "indices": [[1, 7], [], [3, 3, 300000], [2]],
        "values": [[0.5, 2.0], [], [1.0, 0.0, 4.0], [1.5]],
    }
    columns.update(extra)
    return pa.table(columns)


def test_sparse_layout_builds_csr_from_the_lists():
    parsed = ParquetFormat().parse_table(sparse_table(), source="t.parquet", first_row=100)
    batch = parsed.batch
    assert (parsed.records, parsed.skipped, parsed.dead_letters) == (4, 0, [])
    assert batch.labels.tolist() == [1.0, -1.0, 0.5, 2.0]
    assert batch.indptr.tolist() == [0, 2, 2, 4, 5]
    assert batch.indices.tolist() == [1, 7, 3, libsvm_slot(300000, 18), 2]  # the explicit zero is dropped
    assert batch.values.tolist() == [0.5, 2.0, 1.0, 4.0, 1.5]
    assert batch.row_ids.tolist() == [100, 101, 102, 103]
    assert batch.source == "t.parquet" and batch.names is None and batch.weights.tolist() == [1.0] * 4


def test_sparse_layout_without_values_means_ones():
    table = pa.table({"label": [1.0, 0.0], "indices": pa.array([[4, 5], None], type=pa.list_(pa.int32()))})
    batch = ParquetFormat().parse_table(table).batch
    assert batch.indptr.tolist() == [0, 2, 2] and batch.values.tolist() == [1.0, 1.0]


def test_sparse_layout_dead_letters():
    table = pa.table(
        {
            "label": [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
            "indices": [[1], [0, 2], [1, 2], [1], [1, 2], [5], [-4]],
            "values": [[1.0], [1.0, 1.0], [float("nan"), 1.0], [1.0, 2.0], [1.0, None], [float("inf")], [1.0]],
        }
    )
    parsed = ParquetFormat().parse_table(table, source="s", first_row=10)
    # A NaN or null value is a missing value (the entry NaN, as LIBSVM's 3:nan), not a dead letter.
    assert parsed.batch.row_ids.tolist() == [10, 12, 14]
    np.testing.assert_array_equal(parsed.batch.values, [1.0, np.nan, 1.0, 1.0, np.nan])
    assert parsed.batch.indices.tolist() == [1, 1, 2, 1, 2]
    assert [(letter.line, letter.offset, letter.reason) for letter in parsed.dead_letters] == [
        (12, 11, "feature index must be >= 1"),
        (14, 13, "'indices' and 'values' have different lengths"),
        (16, 15, "non-finite feature value"),
        (17, 16, "feature index must be >= 1"),
    ]
    assert json.loads(parsed.dead_letters[0].raw) == {"label": 1.0, "indices": [0, 2], "values": [1.0, 1.0]}
    assert parsed.dead_letters[0].source == "s"


def test_labels_weights_and_missing_labels():
    table = sparse_table(label=[1.0, None, float("nan"), 1.0], weight=[2.0, 1.0, 1.0, -1.0])
    parsed = ParquetFormat(weight_column="weight").parse_table(table)
    assert parsed.batch.weights.tolist() == [2.0]
    reasons = {letter.offset: letter.reason for letter in parsed.dead_letters}
    assert reasons == {
        1: "missing label",
        2: "missing label",  # NaN is missing, as null (and as NaN in a CSV cell)
        3: "importance weight must be finite and >= 0",
    }
    assert parsed.records == 4
    inf = sparse_table(label=[1.0, float("inf"), 1.0, 1.0], weight=[None, float("nan"), 0.5, 1.0])
    parsed = ParquetFormat(weight_column="weight").parse_table(inf)
    assert parsed.batch.weights.tolist() == [1.0, 0.5, 1.0]  # a missing weight (null, NaN) is 1
    assert [letter.reason for letter in parsed.dead_letters] == ["label must be a finite number"]


def test_label_kinds():
    table = sparse_table()
    assert ParquetFormat(labels="binary").parse_table(table).batch.labels.tolist() == [1.0, -1.0]
    assert ParquetFormat(labels="multiclass").parse_table(table).batch.labels.tolist() == [1.0, 2.0]


def test_unlabelled_tables_for_prediction():
    table = pa.table({"indices": [[1], [2]]})
    batch = ParquetFormat(labels="any").parse_table(table).batch
    assert len(batch) == 2 and np.isnan(batch.labels).all()
    with pytest.raises(ValueError, match="label column 'label' not found"):
        ParquetFormat().parse_table(table)


def test_named_layout_reads_numbers_and_categories():
    table = pa.table(
        {
            "label": [1, 0, 1],
            "age": [30, None, 0],
            "income": [0.5, 2.0, 0.0],
            "city": ["a", "b", None],
            "member": [True, False, True],
        }
    )
    parsed = ParquetFormat().parse_table(table)
    batch = parsed.batch
    age, income, member = (feature_slot(name) for name in ("age", "income", "member"))
    a, b = category_slot("city", "a"), category_slot("city", "b")
    # A null number is missing (the entry NaN, in its column's place); a null category is none; zeros are none.
    assert batch.indptr.tolist() == [0, 4, 7, 8]
    assert batch.indices.tolist() == [age, income, a, member, age, income, b, member]
    np.testing.assert_array_equal(batch.values, [30.0, 0.5, 1.0, 1.0, np.nan, 2.0, 1.0, 1.0])
    assert batch.names == {age: "age", income: "income", member: "member", a: "city=a", b: "city=b"}
    # Read as models recorded before Parquet had categories: the text column is left out.
    before = ParquetFormat(infer_categorical=False).parse_table(table).batch
    assert before.indices.tolist() == [age, income, member, age, income, member]


def test_named_layout_with_chosen_columns_and_dead_letters():
    nan, inf = float("nan"), float("inf")
    table = pa.table({"y": [1.0, 1.0, 1.0], "a": [1.0, nan, 2.0], "b": [1.0, 1.0, -inf], "c": [5, 5, 5]})
    parsed = ParquetFormat(label_column="y", feature_columns=("a", "b")).parse_table(table)
    a, b = feature_slot("a"), feature_slot("b")
    assert parsed.batch.indices.tolist() == [a, b, a, b]  # NaN is a missing value, as null: the entry NaN
    assert np.isnan(parsed.batch.values[2]) and not np.isnan(parsed.batch.values[[0, 1, 3]]).any()
    assert [letter.reason for letter in parsed.dead_letters] == ["non-finite value in column 'b'"]
    assert parsed.dead_letters[0].raw == '{"y": 1.0, "a": 2.0, "b": -Infinity, "c": 5}'


def test_record_batches_and_chunked_tables():
    table = sparse_table()
    chunked = pa.concat_tables([table.slice(0, 1), table.slice(1, 3)])
    assert chunked.column("indices").num_chunks == 2
    expected = ParquetFormat().parse_table(table).batch
    for source in (chunked, table.to_batches()[0]):
        batch = ParquetFormat().parse_table(source).batch
        assert batch.indptr.tolist() == expected.indptr.tolist()
        assert batch.indices.tolist() == expected.indices.tolist()
        assert batch.values.tolist() == expected.values.tolist()


def test_sliced_list_arrays_respect_their_offsets():
    table = sparse_table().slice(2, 2)
    batch = ParquetFormat().parse_table(table, first_row=2).batch
    assert batch.indices.tolist() == [3, libsvm_slot(300000, 18), 2]
    assert batch.row_ids.tolist() == [2, 3]


def test_parse_reads_a_whole_parquet_file():
    buffer = io.BytesIO()
    pq.write_table(sparse_table(), buffer)
    parsed = ParquetFormat().parse(buffer.getvalue(), source="f.parquet")
    assert len(parsed.batch) == 4 and parsed.batch.source == "f.parquet"
    with pytest.raises(ValueError, match="mid-file"):
        ParquetFormat().parse(buffer.getvalue(), offset=10)


def test_empty_table():
    table = pa.table({"label": pa.array([], pa.float64()), "indices": pa.array([], pa.list_(pa.int64()))})
    parsed = ParquetFormat().parse_table(table)
    assert parsed.records == 0 and len(parsed.batch) == 0


@pytest.mark.parametrize(
    "table, options, message",
    [
        (pa.table({"label": ["a"], "x": [1]}), {}, "label column 'label' must be numeric"),
        (pa.table({"label": [1], "x": [1]}), {"feature_columns": ("z",)}, "feature column 'z' not found"),
        (pa.table({"label": [1], "x": [[1.0]]}), {"feature_columns": ("x",)}, "column 'x' holds list<item: double>"),
        (pa.table({"label": [1], "indices": [1]}), {}, "must be a list column"),
        (pa.table({"label": [1], "indices": [["a"]]}), {}, "lists of integers"),
        (pa.table({"label": [1], "x": [1]}), {"weight_column": "w"}, "weight column 'w' not found"),
    ],
)
def test_configuration_errors(table, options, message):
    with pytest.raises(ValueError, match=message):
        ParquetFormat(**options).parse_table(table)


# -- class names ---------------------------------------------------------------------

ANIMALS = ParquetFormat(labels="multiclass", label_names=("cat", "dog", "名前", "k15599"))
LABELS = ["dog", "cat", "3", None, "", "cow", "k97211", "5", "名前", "2.5", "k15599"]


def animal_table(labels):
    return pa.table({"label": labels, "indices": [[i + 1] for i in range(len(labels))]})


def expected_animals(parsed):
    assert parsed.batch.labels.tolist() == [2.0, 1.0, 3.0, 3.0, 4.0]
    assert parsed.batch.row_ids.tolist() == [0, 1, 2, 8, 10]
    known = "known classes are cat, dog, 名前, k15599"
    assert [(letter.offset, letter.reason) for letter in parsed.dead_letters] == [
        (3, "missing label"),
        (4, "missing label"),
        (5, f"unknown class label 'cow'; {known}"),
        (6, f"unknown class label 'k97211'; {known}"),
        (7, "label 5 is not a class of this task: the classes are cat, dog, 名前, k15599"),
        (9, "label 2.5 is not a class of this task: the classes are cat, dog, 名前, k15599"),
    ]


@pytest.mark.slow
@pytest.mark.parametrize(
    "label_type", [pa.string(), pa.large_string(), pa.string_view(), pa.binary(), pa.dictionary(pa.int8(), pa.string())]
)
def test_string_label_columns_map_through_the_names(label_type):
    binary = pa.types.is_binary(label_type)
    labels = [label.encode() if binary and label is not None else label for label in LABELS]
    expected_animals(ANIMALS.parse_table(animal_table(pa.array(labels, type=label_type))))


def test_string_labels_in_chunked_sliced_and_dictionary_chunks():
    table = animal_table(pa.array(LABELS))
    chunked = pa.concat_tables([table.slice(0, 4), table.slice(4, 3), table.slice(7)])
    assert chunked.column("label").num_chunks == 3
    expected_animals(ANIMALS.parse_table(chunked))
    encoded = pa.chunked_array([pa.array(LABELS[:5]).dictionary_encode(), pa.array(LABELS[5:]).dictionary_encode()])
    expected_animals(ANIMALS.parse_table(table.set_column(0, "label", encoded)))
    sliced = ANIMALS.parse_table(table.slice(5, 4), first_row=5)
    assert sliced.batch.labels.tolist() == [3.0] and sliced.batch.row_ids.tolist() == [8]


def test_a_parquet_file_with_string_labels():
    buffer = io.BytesIO()
    pq.write_table(animal_table(pa.array(LABELS).dictionary_encode()), buffer)
    expected_animals(ANIMALS.parse(buffer.getvalue()))


def test_numeric_label_columns_with_names_and_classes():
    table = sparse_table(label=[1.0, 2.0, 3.0, 4.0])
    assert ANIMALS.parse_table(table).batch.labels.tolist() == [1.0, 2.0, 3.0, 4.0]
    parsed = ParquetFormat(labels="multiclass", classes=2).parse_table(table)
    assert parsed.batch.labels.tolist() == [1.0, 2.0]
    assert {letter.reason for letter in parsed.dead_letters} == {
        "label 3 is not a class of this task: the classes are 1 to 2",
        "label 4 is not a class of this task: the classes are 1 to 2",
    }


def test_unknown_class_labels_yield_to_feature_problems():
    table = pa.table({"label": ["cow", "cow"], "indices": [[0], [1]]})
    reasons = [letter.reason for letter in ANIMALS.parse_table(table).dead_letters]
    assert reasons[0] == "feature index must be >= 1" and reasons[1].startswith("unknown class label 'cow'")


def test_string_labels_without_names_are_a_configuration_error():
    with pytest.raises(ValueError, match="must be numeric, got string; to read class names, pass label_names"):
        ParquetFormat().parse_table(animal_table(["dog"]))


def test_format_pickles():
    fmt = ParquetFormat(feature_columns=["a", "b"], weight_column="w")
    assert fmt.feature_columns == ("a", "b")
    assert pickle.loads(pickle.dumps(fmt)) == fmt
    assert (fmt.name, fmt.header_lines) == ("parquet", 0)
    with pytest.raises(ValueError, match="same column"):
        ParquetFormat(weight_column="label")


# -- IDs and ignored columns -------------------------------------------------------


def test_an_id_column_is_each_examples_tag_and_no_feature():
    table = pa.table(
        {
            "label": [1.0, 0.0, float("nan"), 1.0],
            "uid": [17, None, 19, 20],
            "age": [3.0, 4.0, 5.0, 0.0],
            "note": [1, 2, 3, 4],
        }
    )
    parsed = ParquetFormat(id_column="uid", ignore_columns=("note",)).parse_table(table)
    batch = parsed.batch
    assert batch.tags.tolist() == ["17", None, "20"]  # row 3's label is a dead letter, its ID goes with it
    assert batch.names == {feature_slot("age"): "age"}  # neither the ID nor the ignored column is a feature
    assert batch.indptr.tolist() == [0, 1, 2, 2]
    sparse = ParquetFormat(id_column="uid").parse_table(sparse_table(uid=["a", "b", "c", "d"]))
    assert sparse.batch.tags.tolist() == ["a", "b", "c", "d"]


@pytest.mark.parametrize(
    "options,message",
    [
        ({"id_column": "label"}, "the ID column 'label' cannot also be"),
        ({"id_column": "a", "feature_columns": ("a",)}, "the ID column 'a' cannot also be"),
        ({"id_column": "a", "ignore_columns": ("a",)}, "the ID column 'a' cannot also be"),
        ({"ignore_columns": ("label",)}, "the label column 'label' cannot also be ignored"),
    ],
)
def test_the_id_and_ignored_columns_have_no_other_role(options, message):
    with pytest.raises(ValueError, match=message):
        ParquetFormat(**options)


def test_a_missing_id_column_names_the_columns():
    with pytest.raises(ValueError, match="ID column 'uid' not found; the columns are"):
        ParquetFormat(id_column="uid").parse_table(sparse_table(), source="t.parquet")


@PROPERTY_SETTINGS
@given(
    st.lists(st.one_of(st.none(), st.integers(-(10**12), 10**12), st.text(max_size=12)), min_size=1, max_size=40),
    st.integers(1, 5),
    st.booleans(),
)
def test_ids_of_any_kind_arrive_as_their_text_in_any_chunking(ids, chunks, numeric):
    """IDs (strings, or integers, with nulls) in a table of any chunking: each example's tag is its ID as text
    (None for a null), in row order, whatever rows the labels drop."""
    values = [value if value is None or isinstance(value, int) == numeric else None for value in ids]
    labels = [float(i % 3 != 2) for i in range(len(values))]
    labels = [label if i % 5 else float("nan") for i, label in enumerate(labels)]  # every 5th row a dead letter
    table = pa.table(
        {
            "label": labels,
            "uid": pa.array(values, type=pa.int64() if numeric else pa.string()),
            "x": [1.0] * len(values),
        }
    )
    size = -(-len(values) // chunks)
    chunked = pa.concat_tables([table.slice(start, size) for start in range(0, len(values), size)])
    batch = ParquetFormat(id_column="uid").parse_table(chunked).batch
    kept = [i for i in range(len(values)) if i % 5]
    assert batch.tags.tolist() == [None if values[i] is None else str(values[i]) for i in kept]
    assert batch.row_ids.tolist() == kept


# -- categories ----------------------------------------------------------------------


def test_text_and_dictionary_columns_are_categories_as_csv_reads_them():
    """string, large_string, string_view and dictionary-encoded columns (of text or numbers): feature
    ``column=value`` at the slot CSV gives the cell; null, empty and blank values are missing."""
    values = ["red", None, "", "  ", "dark, blue", "10115"]
    expected = [category_slot("c", "red"), category_slot("c", "dark, blue"), category_slot("c", "10115")]
    for column in (
        pa.array(values, pa.string()),
        pa.array(values, pa.large_string()),
        pa.array(values, pa.string_view()),
        pa.array(values, pa.string()).dictionary_encode(),
        pa.array(values, pa.large_string()).dictionary_encode(),
        pa.DictionaryArray.from_arrays(
            pa.array([0, None, 1, 1, 2, 3], pa.int8()), values[:1] + ["", "dark, blue", "10115"]
        ),
    ):
        batch = ParquetFormat().parse_table(pa.table({"label": [1.0] * 6, "c": column})).batch
        assert batch.indptr.tolist() == [0, 1, 1, 1, 1, 2, 3], column.type
        assert batch.indices.tolist() == expected and batch.values.tolist() == [1.0] * 3
        assert sorted(batch.names.values()) == ["c=10115", "c=dark, blue", "c=red"]
    integers = pa.array([7, None, 10115], pa.int64()).dictionary_encode()  # pandas' category dtype of numbers
    batch = ParquetFormat().parse_table(pa.table({"label": [1.0] * 3, "zip": integers})).batch
    assert batch.indices.tolist() == [category_slot("zip", "7"), category_slot("zip", "10115")]


def test_chunks_with_their_own_dictionaries():
    first = pa.array(["a", "b"]).dictionary_encode()
    second = pa.array(["b", "c", "a"]).dictionary_encode()
    table = pa.table({"label": [1.0] * 5, "c": pa.chunked_array([first, second])})
    batch = ParquetFormat().parse_table(table).batch
    assert batch.indices.tolist() == [category_slot("c", value) for value in "abbca"]


@pytest.mark.parametrize(
    "column, cells",
    [
        (pa.array([10115, None, -3, 0], pa.int32()), ["10115", None, "-3", "0"]),
        (pa.array([1.0, 2.5, None, float("nan"), 1e-05, float("inf")]), ["1.0", "2.5", None, None, "1e-05", "inf"]),
        (pa.array([1.1, 0.5], pa.float32()), ["1.1", "0.5"]),  # as a float32 column's CSV spells it
        (pa.array([True, False, None]), ["True", "False", None]),  # as pandas and Python write them
    ],
)
def test_categorical_columns_read_numbers_as_a_csv_file_spells_them(column, cells):
    table = pa.table({"label": [1.0] * len(column), "n": column})
    batch = ParquetFormat(categorical_columns=("n",)).parse_table(table).batch
    expected = [category_slot("n", cell) for cell in cells if cell is not None]
    assert batch.indices.tolist() == expected
    assert np.diff(batch.indptr).tolist() == [int(cell is not None) for cell in cells]


def test_a_column_that_cannot_be_a_feature_is_refused_naming_it():
    table = pa.table({"label": [1.0], "x": [2.0], "tags": [["a", "b"]]})
    with pytest.raises(ValueError, match=r"t.parquet: column 'tags' holds list<item: string>: it is no feature; "):
        ParquetFormat().parse_table(table, source="t.parquet")
    assert ParquetFormat(ignore_columns=("tags",)).parse_table(table).batch.values.tolist() == [2.0]
    stamped = pa.table({"label": [1.0], "x": [2.0], "when": pa.array([0], pa.timestamp("s"))})
    with pytest.raises(ValueError, match=r"--timestamp column:when"):
        ParquetFormat().parse_table(stamped)
    nested = pa.table({"label": [1.0], "s": [{"a": 1}]})
    with pytest.raises(ValueError, match="column 's' holds struct<a: int64>: its values cannot be categories"):
        ParquetFormat(categorical_columns=("s",)).parse_table(nested)
    # A column of nulls only (a writer's type for a column of Nones) is all missing: nothing to read.
    empty = pa.table({"label": [1.0], "x": [2.0], "nothing": pa.array([None], pa.null())})
    assert ParquetFormat().parse_table(empty).batch.values.tolist() == [2.0]
    # Read as models recorded before Parquet had categories: anything but numbers is left out.
    assert ParquetFormat(infer_categorical=False).parse_table(table).batch.values.tolist() == [2.0]


@pytest.mark.parametrize(
    "options, table, message",
    [
        ({"categorical_columns": ("label",)}, None, "the label column 'label' cannot also be categorical"),
        ({"categorical_columns": ("k",), "key_column": "k"}, None, "the key column 'k' cannot also be categorical"),
        ({"categorical_columns": ("a",), "ignore_columns": ("a",)}, None, "both categorical and ignored"),
        ({"categorical_columns": ("z",)}, pa.table({"label": [1.0], "x": [1]}), "categorical column 'z' not found"),
        ({"categorical_columns": ("x",)}, sparse_table(x=[1, 2, 3, 4]), "this table holds sparse features"),
    ],
)
def test_categorical_columns_errors(options, table, message):
    with pytest.raises(ValueError, match=message):
        ParquetFormat(**options).parse_table(table if table is not None else pa.table({"label": [1.0]}))


def test_feature_columns_may_be_text_and_categorical_columns_are_features():
    table = pa.table({"label": [1.0, 1.0], "x": [1.0, 2.0], "c": ["a", "b"], "n": [3, 4]})
    batch = ParquetFormat(feature_columns=("c",), categorical_columns=("n",)).parse_table(table).batch
    assert batch.indices.tolist() == [
        category_slot("c", "a"),
        category_slot("n", "3"),
        category_slot("c", "b"),
        category_slot("n", "4"),
    ]


def test_slots_are_named_by_the_rows_kept():
    """Two categories in one slot (4 bits): the name is the first kept row's, as in a CSV block."""
    values = [f"v{i}" for i in range(40)]
    slots = [category_slot("c", value, bits=4) for value in values]
    first, second = next((i, j) for i in range(40) for j in range(i + 1, 40) if slots[i] == slots[j])
    table = pa.table({"label": [float("nan"), 1.0], "c": [values[first], values[second]]})
    parsed = ParquetFormat(bits=4).parse_table(table)  # the first row has no label: a dead letter
    assert parsed.batch.names == {slots[second]: f"c={values[second]}"}
