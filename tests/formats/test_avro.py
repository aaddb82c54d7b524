"""Avro: records of a schema read as the same rows in an Arrow table (Parquet) do; unions of numbers and text
read value by value; timestamps are event times; a damaged file is refused naming it."""

from __future__ import annotations

import datetime
import io

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from polybeam.formats.avro import AvroFormat, arrow_schema
from polybeam.formats.parquet import ParquetFormat

SCHEMA = {
    "type": "record",
    "name": "Row",
    "fields": [
        {"name": "label", "type": "int"},
        {"name": "age", "type": ["null", "long"]},
        {"name": "income", "type": "double"},
        {"name": "city", "type": ["null", "string"]},
        {"name": "member", "type": "boolean"},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
        {"name": "seen", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    ],
}
ROWS = [
    {"label": 1, "age": 30, "income": 2.5, "city": "Paris", "member": True, "kind": "A", "seen": 1000},
    {"label": 0, "age": None, "income": 0.0, "city": None, "member": False, "kind": "B", "seen": 2000},
    {"label": 1, "age": 41, "income": -1.5, "city": "Oslo", "member": True, "kind": "A", "seen": 3000},
]


def avro_bytes(schema=SCHEMA, rows=ROWS, **options) -> bytes:
    sink = io.BytesIO()
    fastavro.writer(sink, schema, rows, **options)
    return sink.getvalue()


def parquet_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def test_records_read_as_the_same_table_in_parquet():
    fmt = AvroFormat(timestamp_column="seen")
    parsed = fmt.parse(avro_bytes(), source="a.avro")
    table = pa.Table.from_pylist(
        [{**row, "seen": datetime.datetime.fromtimestamp(row["seen"] / 1000, datetime.UTC)} for row in ROWS]
    )
    reference = ParquetFormat(timestamp_column="seen").parse(parquet_bytes(table))
    for name in ("labels", "weights", "indptr", "indices", "values", "timestamps"):
        np.testing.assert_array_equal(getattr(parsed.batch, name), getattr(reference.batch, name), err_msg=name)
    assert parsed.batch.names == reference.batch.names
    assert parsed.batch.timestamps.tolist() == [1.0, 2.0, 3.0]


def test_blocks_of_rows_number_dead_letters_by_record():
    rows = [{**row, "income": value} for row, value in zip(ROWS * 2, [1.0, float("inf"), 2.0, 3.0, float("nan"), 4.0])]
    tables = list(AvroFormat.record_batches(io.BytesIO(avro_bytes(rows=rows)), rows=4))
    assert [table.num_rows for table in tables] == [4, 2]
    letters = AvroFormat(ignore_columns=("seen",)).parse_table(tables[0], source="a.avro", first_row=0).dead_letters
    assert [(letter.line, letter.reason) for letter in letters] == [(2, "non-finite value in column 'income'")]


def test_a_union_of_numbers_and_text_reads_each_record_as_its_value():
    schema = {"type": "record", "name": "R", "fields": [{"name": "label", "type": "double"},
                                                        {"name": "zip", "type": ["null", "long", "string"]}]}  # fmt: skip
    rows = [{"label": 1.0, "zip": 10115}, {"label": 0.0, "zip": "10115-B"}, {"label": 1.0, "zip": None}]
    assert arrow_schema(schema) is None
    parsed = AvroFormat().parse(avro_bytes(schema, rows))
    assert sorted(parsed.batch.names.values()) == ["zip", "zip=10115-B"]
    # The null of a union holding numbers is a missing number (NaN), whichever records are read together.
    assert np.diff(parsed.batch.indptr).tolist() == [1, 1, 1] and np.isnan(parsed.batch.values[2])
    alone = AvroFormat().parse(avro_bytes(schema, rows[1:])).batch
    np.testing.assert_array_equal(alone.indices, parsed.batch.indices[1:])
    np.testing.assert_array_equal(alone.values, parsed.batch.values[1:])


def test_sparse_arrays_read_as_libsvm_indices():
    from polybeam.formats.libsvm import LibsvmFormat

    schema = {"type": "record", "name": "R", "fields": [
        {"name": "label", "type": "double"}, {"name": "indices", "type": {"type": "array", "items": "long"}},
        {"name": "values", "type": {"type": "array", "items": "double"}}]}  # fmt: skip
    rows = [{"label": 1.0, "indices": [3, 7], "values": [0.5, 2.0]}, {"label": 0.0, "indices": [1], "values": [1.0]}]
    parsed = AvroFormat().parse(avro_bytes(schema, rows))
    expected = LibsvmFormat().parse(b"1 3:0.5 7:2\n0 1:1\n").batch
    for name in ("labels", "indptr", "indices", "values"):
        np.testing.assert_array_equal(getattr(parsed.batch, name), getattr(expected, name))


def test_the_schema_gives_the_columns_and_their_types():
    schema = AvroFormat.schema(io.BytesIO(avro_bytes(codec="deflate")))
    assert schema.names == [field["name"] for field in SCHEMA["fields"]]
    assert schema.field("city").type == pa.string() and schema.field("seen").type == pa.timestamp("us", tz="UTC")


def test_a_file_that_is_not_avro_cannot_be_read():
    with pytest.raises((ValueError, EOFError)):
        AvroFormat().parse(b"label,x\n1,2\n")
