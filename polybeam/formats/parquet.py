"""Parquet files as examples: their rows read as :class:`~polybeam.formats.tables.TableFormat` reads
Arrow tables (sparse list columns, or named numeric and text columns).

A Parquet file cannot be split at byte offsets: it is read whole, by record
batches (:meth:`ParquetFormat.record_batches`), each becoming one block of
examples whose dead letters are numbered by row.

>>> import io, pyarrow as pa, pyarrow.parquet as pq
>>> sink = io.BytesIO()
>>> pq.write_table(pa.table({"label": [1.0, 0.0], "age": [30, 40]}), sink)
>>> parsed = ParquetFormat().parse(sink.getvalue(), source="a.parquet")
>>> parsed.batch.labels.tolist(), parsed.batch.names
([1.0, 0.0], {165201: 'age'})
>>> [batch.num_rows for batch in ParquetFormat.record_batches(io.BytesIO(sink.getvalue()), rows=1)]
[1, 1]
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO, ClassVar

import pyarrow as pa

from polybeam.formats.tables import FileTableFormat


@dataclass(frozen=True)
class ParquetFormat(FileTableFormat):
    """Parse Parquet files (see :class:`~polybeam.formats.tables.TableFormat` for the settings)."""

    name: ClassVar[str] = "parquet"

    @staticmethod
    def table_of(data: bytes) -> pa.Table:
        """The table of a whole file's bytes."""
        import pyarrow.parquet as pq

        return pq.read_table(io.BytesIO(bytes(data)))

    @staticmethod
    def record_batches(stream: BinaryIO, rows: int) -> Iterator[pa.RecordBatch]:
        """The file's rows, ``rows`` at a time (one record batch in memory at once)."""
        import pyarrow.parquet as pq

        return pq.ParquetFile(stream).iter_batches(batch_size=rows)

    @staticmethod
    def schema(stream: BinaryIO) -> pa.Schema:
        """The file's columns and their types, from its footer."""
        import pyarrow.parquet as pq

        return pq.ParquetFile(stream).schema_arrow

    @staticmethod
    def sample_tables(stream: BinaryIO) -> list[pa.Table]:
        """The file's first and last row groups (a sample of its start and end)."""
        import pyarrow.parquet as pq

        parquet = pq.ParquetFile(stream)
        groups = parquet.num_row_groups
        return [parquet.read_row_group(group) for group in sorted({0, groups - 1} if groups else set())]
