"""Avro object container files as examples: their records read as
:class:`~polybeam.formats.tables.TableFormat` reads Arrow tables (the same
options, layouts and rules as Parquet and JSON Lines).

Avro is what Beam pipelines write every day (``WriteToAvro``), and its files
carry their schema: a field of numbers (``int``, ``long``, ``float``,
``double``, ``boolean``, ``decimal``) is a numeric feature, a field of text
(``string``, ``enum``, ``bytes``) a categorical one, ``null`` a missing value;
an ``array`` of integers named ``indices`` (with an ``array`` named
``values``) holds numbered features, as in LIBSVM. Timestamps
(``timestamp-millis``, ``timestamp-micros``, ``date``) are event times for
``timestamp_column``. A union of numbers and text gives each record what its
own value is (see :mod:`polybeam.formats.row_tables`); its null is a missing
number, as a null of a field of numbers is (the value NaN, which the
learners fill with the feature's mean).

A file is read whole, by blocks of ``rows`` records, with ``fastavro`` (which
Beam depends on); dead letters are numbered by record, from 1.

>>> import io, fastavro
>>> schema = {"type": "record", "name": "Row", "fields": [
...     {"name": "label", "type": "double"}, {"name": "age", "type": ["null", "long"]},
...     {"name": "city", "type": "string"}]}
>>> sink = io.BytesIO()
>>> fastavro.writer(sink, schema, [{"label": 1.0, "age": 30, "city": "Paris"}, {"label": 0.0, "age": None, "city": "Oslo"}])
>>> parsed = AvroFormat().parse(sink.getvalue(), source="a.avro")
>>> parsed.batch.labels.tolist(), sorted(parsed.batch.names.values())
([1.0, 0.0], ['age', 'city=Oslo', 'city=Paris'])
>>> AvroFormat.schema(io.BytesIO(sink.getvalue())).types
[DataType(double), DataType(int64), DataType(string)]
"""

from __future__ import annotations

import io
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO, ClassVar

import pyarrow as pa

from polybeam.formats.row_tables import table_of_records
from polybeam.formats.tables import FileTableFormat

# Rows a launcher samples from a file's start.
SAMPLE_ROWS = 1000

_PRIMITIVES = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int64(),
    "long": pa.int64(),
    "float": pa.float64(),
    "double": pa.float64(),
    "string": pa.string(),
    "bytes": pa.binary(),
}
_LOGICAL = {
    "timestamp-millis": pa.timestamp("us", tz="UTC"),
    "timestamp-micros": pa.timestamp("us", tz="UTC"),
    "date": pa.date32(),
}


@dataclass(frozen=True)
class AvroFormat(FileTableFormat):
    """Parse Avro files (see :class:`~polybeam.formats.tables.TableFormat` for the settings)."""

    name: ClassVar[str] = "avro"

    @classmethod
    def table_of(cls, data: bytes) -> pa.Table:
        """The table of a whole file's bytes."""
        tables = list(cls.record_batches(io.BytesIO(bytes(data)), rows=2**31))
        return tables[0] if tables else pa.table({})

    @staticmethod
    def record_batches(stream: BinaryIO, rows: int) -> Iterator[pa.Table]:
        """The file's records as tables of ``rows`` records (one in memory at once)."""
        import fastavro

        reader = fastavro.reader(stream)
        schema = arrow_schema(reader.writer_schema)
        return _chunks(reader, rows, schema, number_fields(reader.writer_schema))

    @staticmethod
    def schema(stream: BinaryIO) -> pa.Schema:
        """The file's fields and their Arrow types, from its header (a field of no one type: ``null``)."""
        import fastavro

        writer_schema = fastavro.reader(stream).writer_schema
        return pa.schema([(name, kind or pa.null()) for name, kind in _field_types(writer_schema)])

    @classmethod
    def sample_tables(cls, stream: BinaryIO) -> list[pa.Table]:
        """The first records of the file (Avro has no index to reach its end cheaply)."""
        return list(itertools.islice(cls.record_batches(stream, SAMPLE_ROWS), 1))


def _chunks(reader, rows: int, schema: pa.Schema | None, numbers: tuple[str, ...] = ()) -> Iterator[pa.Table]:
    while True:
        records = list(itertools.islice(reader, rows))
        if not records:
            return
        # A schema of one type per field: Arrow converts the records in C++; else each value is typed by itself.
        if schema is not None:
            yield pa.Table.from_pylist(records, schema=schema)
        else:
            yield table_of_records(records, number_fields=numbers)


def number_fields(avro_schema: dict) -> tuple[str, ...]:
    """The fields whose type is, or whose union holds, a number: their nulls are missing numbers.

    >>> number_fields({"type": "record", "name": "R", "fields": [{"name": "zip", "type": ["null", "long", "string"]},
    ...                                                          {"name": "city", "type": ["null", "string"]}]})
    ('zip',)
    """
    numeric = {"boolean", "int", "long", "float", "double"}

    def holds_number(kind) -> bool:
        if isinstance(kind, list):
            return any(holds_number(member) for member in kind)
        if isinstance(kind, dict):
            return kind.get("logicalType") == "decimal" or (
                kind.get("type") in numeric and kind.get("logicalType") not in _LOGICAL
            )
        return kind in numeric

    if not isinstance(avro_schema, dict) or avro_schema.get("type") != "record":
        return ()
    return tuple(field["name"] for field in avro_schema.get("fields", []) if holds_number(field["type"]))


def arrow_schema(avro_schema: dict) -> pa.Schema | None:
    """The Arrow schema of a record schema whose every field has one Arrow type (None if one has not)."""
    fields = _field_types(avro_schema)
    if not fields or any(kind is None for _, kind in fields):
        return None
    return pa.schema(fields)


def _field_types(avro_schema: dict) -> list[tuple[str, pa.DataType | None]]:
    if not isinstance(avro_schema, dict) or avro_schema.get("type") != "record":
        return []
    return [(field["name"], _arrow_type(field["type"])) for field in avro_schema.get("fields", [])]


def _arrow_type(kind) -> pa.DataType | None:
    """The Arrow type of an Avro type (None: no one type, e.g. a union of numbers and text)."""
    if isinstance(kind, list):  # a union: nullable if it holds null, one type if the rest are one
        types = {_arrow_type(member) for member in kind if member != "null"}
        return types.pop() if len(types) == 1 else (pa.null() if not types else None)
    if isinstance(kind, str):
        return _PRIMITIVES.get(kind)
    if not isinstance(kind, dict):
        return None
    logical = kind.get("logicalType")
    if logical in _LOGICAL:
        return _LOGICAL[logical]
    if logical == "decimal":
        return pa.decimal128(int(kind["precision"]), int(kind.get("scale", 0)))
    base = kind.get("type")
    if base == "enum":
        return pa.string()
    if base == "fixed":
        return pa.binary()
    if base == "array":
        item = _arrow_type(kind.get("items"))
        return None if item is None else pa.list_(item)
    if base in _PRIMITIVES:
        return _PRIMITIVES[base]
    return None  # records and maps: no feature
