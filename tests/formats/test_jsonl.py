"""JSON Lines: the same rows as a Parquet table give the same examples; each line reads alike whichever block
holds it (Arrow's fast path or the line-by-line one); bad lines are dead letters with their line and offset;
counts reconcile. A reference reader in plain Python (json + the table reader) checks the fast path."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polybeam.formats.jsonl import JsonLinesFormat
from polybeam.formats.row_tables import table_of_records
from polybeam.formats.tables import TableFormat


def lines(*records) -> bytes:
    return b"".join((json.dumps(r) if not isinstance(r, str) else r).encode() + b"\n" for r in records)


def same_batch(a, b) -> None:
    for name in ("labels", "weights", "indptr", "indices", "values"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


def test_rows_read_as_the_same_rows_in_an_arrow_table():
    records = [
        {"label": 1, "age": 30, "income": 2.5, "city": "Paris", "member": True},
        {"label": 0, "age": None, "income": 0.0, "city": "Oslo", "member": False},
        {"label": 1, "age": 41, "city": None},
    ]
    parsed = JsonLinesFormat().parse(lines(*records))
    # (a line's features come in the order of their names, alike in every block)
    table = pa.Table.from_pylist(records).select(["label", "age", "city", "income", "member"])
    reference = TableFormat().parse_table(table)
    # But for nulls: a table's null number is missing (NaN), a JSON null or field left out no feature.
    assert np.isnan(reference.batch.values).sum() == 3  # (age of row 1; income and member of row 2)
    same_batch(parsed.batch, without_missing(reference.batch))
    assert parsed.batch.names == reference.batch.names
    assert parsed.counts.records == 3 and parsed.counts.reconciles


def without_missing(batch):
    """``batch`` without its NaN entries (missing numbers)."""
    kept = ~np.isnan(batch.values)
    rows = np.repeat(np.arange(len(batch)), np.diff(batch.indptr))
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows[kept], minlength=len(batch)))])
    return replace(batch, indptr=indptr, indices=batch.indices[kept], values=batch.values[kept])


def test_bad_lines_are_dead_letters_with_line_offset_and_reason():
    data = lines(
        {"label": 1, "x": 1.0},
        "",
        "# a comment",
        '{"label": 0, "x": }',
        "[1, 2]",
        '{"label": 1, "x": 1, "x": 2}',
        '{"label": 1}{"label": 0}',
        {"label": None, "x": 3.0},
        {"label": 0, "x": 2.0},
    )
    parsed = JsonLinesFormat(labels="binary").parse(data, source="f.jsonl", offset=100, first_line=7)
    reasons = {letter.line: letter.reason for letter in parsed.dead_letters}
    assert parsed.batch.labels.tolist() == [1.0, 0.0]
    assert parsed.records == 9 and parsed.skipped == 2 and parsed.counts.reconciles
    assert reasons[10].startswith("not valid JSON")
    assert reasons[11] == "not a JSON object but an array"
    assert reasons[12] == "field 'x' appears twice"
    assert reasons[13].startswith("not valid JSON: Extra data")
    assert reasons[14] == "missing label"
    starts = [100 + i for i in np.flatnonzero(np.frombuffer(b"\n" + data[:-1], np.uint8) == 10)]
    for letter in parsed.dead_letters:
        assert letter.offset == starts[letter.line - 7]
        assert data[letter.offset - 100 :].startswith(letter.raw.encode())
    # Examples are identified by their line's byte offset, as every text format's are.
    assert parsed.batch.row_ids.tolist() == [starts[0], starts[8]]


def test_a_field_of_numbers_and_text_gives_each_line_its_own_kind_in_any_block():
    records = [{"y": 1, "zip": 10115}, {"y": 0, "zip": "10115-B"}, {"y": 1, "zip": 7}]
    together = JsonLinesFormat(label_column="y").parse(lines(*records))
    assert sorted(together.batch.names.values()) == ["zip", "zip=10115-B"]
    alone = [JsonLinesFormat(label_column="y").parse(lines(record)).batch for record in records]
    for i, batch in enumerate(alone):
        row = slice(together.batch.indptr[i], together.batch.indptr[i + 1])
        np.testing.assert_array_equal(batch.indices, together.batch.indices[row])
        np.testing.assert_array_equal(batch.values, together.batch.values[row])


def test_iso_dates_stay_categories_and_timestamps_read_as_event_times():
    data = lines({"y": 1, "day": "2024-01-02", "t": "2024-01-02T03:04:05Z"}, {"y": 0, "day": "2024-01-03", "t": 0})
    parsed = JsonLinesFormat(label_column="y", timestamp_column="t").parse(data)
    assert sorted(parsed.batch.names.values()) == ["day=2024-01-02", "day=2024-01-03"]
    assert parsed.batch.timestamps.tolist() == [1704164645.0, 0.0]


def test_fields_left_out_are_missing_values_never_errors():
    fmt = JsonLinesFormat(label_column="y", weight_column="w", categorical_columns=("c",))
    parsed = fmt.parse(lines({"y": 1}, {"y": 0, "x": 2.0}))
    assert parsed.batch.weights.tolist() == [1.0, 1.0] and np.diff(parsed.batch.indptr).tolist() == [0, 1]
    unlabelled = JsonLinesFormat(labels="binary").parse(lines({"x": 1.0}))
    assert [letter.reason for letter in unlabelled.dead_letters] == ["missing label"]
    assert JsonLinesFormat(labels="any").parse(lines({"x": 1.0})).batch.indptr.tolist() == [0, 1]


def test_sparse_lists_read_as_libsvm_indices():
    from polybeam.formats.libsvm import LibsvmFormat

    parsed = JsonLinesFormat().parse(
        lines({"label": 1, "indices": [3, 7], "values": [0.5, 2.0]}, {"label": 0, "indices": [1]})
    )
    same_batch(parsed.batch, LibsvmFormat().parse(b"1 3:0.5 7:2\n0 1:1\n").batch)


def test_nul_bytes_and_non_finite_values_are_dead_letters():
    data = b'{"label": 1, "x": 1}\n{"label": 1, "x\x00": 1}\n{"label": 1, "x": NaN}\n{"label": 1, "x": 1e999}\n'
    parsed = JsonLinesFormat().parse(data)
    reasons = [letter.reason for letter in parsed.dead_letters]
    assert len(parsed.batch) == 1 and parsed.counts.reconciles, reasons
    assert reasons == [
        "NUL byte at position 16 of the line (binary data, or a damaged file?)",
        "not valid JSON: NaN is no JSON value",
        "non-finite value in column 'x'",
    ]


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(-1e6, 1e6, allow_nan=False),
    st.text(alphabet="abcxyz-=", min_size=0, max_size=4),
)
record = st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), scalars, max_size=4).map(lambda r: {"label": 1, **r})


@settings(max_examples=60, deadline=None)
@given(st.lists(record, min_size=1, max_size=12), st.integers(1, 5))
def test_any_split_into_blocks_reads_each_line_alike(records, size):
    """The examples of a file do not depend on how it is cut into blocks (nor on which path a block took)."""
    fmt = JsonLinesFormat()
    whole = fmt.parse(lines(*records)).batch
    for start in range(0, len(records), size):
        part = fmt.parse(lines(*records[start : start + size])).batch
        for i in range(len(part)):
            j = start + i
            mine = slice(part.indptr[i], part.indptr[i + 1])
            theirs = slice(whole.indptr[j], whole.indptr[j + 1])
            np.testing.assert_array_equal(part.indices[mine], whole.indices[theirs])
            np.testing.assert_array_equal(part.values[mine], whole.values[theirs])


@settings(max_examples=40, deadline=None)
@given(st.lists(record, min_size=1, max_size=12))
def test_the_fast_path_agrees_with_a_reference_reader(records):
    """Reference: json.loads per line, the rows typed value by value, the table reader."""
    fmt = JsonLinesFormat()
    parsed = fmt.parse(lines(*records))
    rows = [json.loads(json.dumps(r)) for r in records]
    same_batch(parsed.batch, fmt.parse_table(table_of_records(rows)).batch)
    assert parsed.counts.reconciles and len(parsed.batch) == len(records)


def test_a_label_of_text_without_class_names_is_refused_naming_the_fix():
    with pytest.raises(ValueError, match="pass label_names"):
        JsonLinesFormat().parse(lines({"label": "cat", "x": 1}))
    named = JsonLinesFormat(labels="multiclass", label_names=("cat", "dog")).parse(lines({"label": "dog", "x": 1}))
    assert named.batch.labels.tolist() == [2.0]


def test_rows_of_dicts_for_a_json_lines_model_may_leave_fields_out_as_its_lines_may():
    """The dict door reads a JSON Lines model's rows as its reader reads lines: a weight or a field left out is
    missing (a weight of 1), as in a file, never an error."""
    from polybeam.formats.fields import RowReading
    from polybeam.formats.input_settings import InputSettings

    fmt = JsonLinesFormat(label_column="y", weight_column="w")
    settings = InputSettings.of(fmt).replace(columns=("y", "w", "x", "c"))
    rows = [{"y": 1, "x": 2.0, "c": "red"}, {"y": 0, "x": 1.0, "c": "blue"}]
    read = RowReading(settings).examples(rows, bits=18, seed=0, labels="binary")
    parsed = fmt.parse(lines(*rows))
    same_batch(read.batch, parsed.batch)
