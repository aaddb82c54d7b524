"""Arrow tables' rows as examples, without a Python loop over rows: what every format of
rows with named columns (Parquet, Avro, JSON Lines, rows of dicts) shares.

Two layouts are understood:

* **Sparse lists**: an ``indices`` list column (and optionally a ``values`` list
  column of the same lengths; without it every value is 1) holds each row's
  features with LIBSVM's conventions: indices start at 1 and an index below
  ``2**bits`` is its own slot. The CSR arrays come straight from the Arrow
  list offsets.
* **Named columns**: otherwise every numeric (integer, floating, decimal or
  boolean) column other than the label and weight -- or just
  ``feature_columns`` -- is a feature named after its column, at slot
  ``feature_slot(name, bits, seed=seed)``. A null or NaN is a missing value,
  the entry NaN (which the learners fill with the feature's mean over the
  training examples), and zeros are dropped; a column of nulls only has no
  type, and no feature. In rows that may leave fields out (JSON Lines), a
  null or a field left out is no feature, unless ``feature_columns`` name
  the column: such a value has no type, and a line must read alike whichever
  lines are read with it. Other columns (strings, lists, structs, ...) are
  left out; a table with no feature column at all is refused, as it is
  surely not what was meant (features in a struct, or sparse lists under
  another name). Two feature columns of the same name are two features of
  that name (their values add up, like repeated LIBSVM indices).

A row with an infinite value, an index below 1, or an impossible weight
becomes a dead letter whose ``raw`` is the row as JSON; its ``line`` is the
1-based row number and its ``offset`` the 0-based one. A null label is a
missing label, which only ``labels="any"`` (prediction) accepts.

A table the format cannot read as a whole -- no label column, a label column
of strings without ``label_names`` or of lists, a column the format uses
appearing twice, indices that are not lists of integers, no feature column --
raises ``ValueError`` naming ``source`` and the problem.

The label column is numeric, or, with ``label_names``, may hold strings
(plain or dictionary-encoded): a name is its class (the i-th name is class
i + 1), a string that reads as a number is that number, an empty string is a
missing label and anything else a dead letter naming the known classes (see
:mod:`polybeam.formats.classes`).

Examples
--------
>>> import pyarrow as pa
>>> table = pa.table({"label": [1.0, 0.0, 1.0], "indices": [[1, 5], [], [0]], "values": [[0.5, 2.0], [], [1.0]]})
>>> parsed = TableFormat().parse_table(table, source="t.arrow", first_row=10)
>>> parsed.batch.row(0), parsed.batch.row_ids.tolist()
((array([1, 5], dtype=int32), array([0.5, 2. ])), [10, 11])
>>> letter = parsed.dead_letters[0]
>>> letter.line, letter.offset, letter.reason
(13, 12, 'feature index must be >= 1')
>>> named = TableFormat().parse_table(pa.table({"label": [1.0], "age": [30], "income": [0.0]}))
>>> named.batch.names
{165201: 'age'}
>>> fmt = TableFormat(labels="multiclass", label_names=("cat", "dog"))
>>> animals = fmt.parse_table(pa.table({"label": ["dog", "2", "cow", None], "indices": [[1], [2], [3], [4]]}))
>>> animals.batch.labels.tolist(), [letter.reason for letter in animals.dead_letters]
([2.0, 2.0], ["unknown class label 'cow'; known classes are cat, dog", 'missing label'])
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import ClassVar

import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from polybeam.formats.classes import string_labels
from polybeam.formats.labels import apply_labels
from polybeam.formats.libsvm import libsvm_slots
from polybeam.formats.missing import is_blank_value
from polybeam.formats.records import DeadLetter, InputFileError, ParsedBlock, reject_examples
from polybeam.formats.settings import HashedFormat
from polybeam.formats.text import first_occurrences
from polybeam.formats.timestamps import (
    TIME_MISSING,
    TIME_OK,
    TIME_OUT_OF_RANGE,
    UNITS,
    check_unit,
    out_of_range,
    parse_timestamps,
    problem,
    reject_untimed,
)
from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernels below)
from polybeam.learners.batch import INDEX_DTYPE, ExampleBatch
from polybeam.learners.hashing import feature_slot, hash_string, hash_token, slot_mask
from polybeam.learners.values import NON_FINITE_REASON, TOO_LARGE_REASON, unlearnable


@dataclass(frozen=True)
class TableFormat(HashedFormat):
    """Parse Arrow tables into example batches (the formats of rows with named columns build on it).

    Parameters
    ----------
    bits, seed : int
        Hashed feature space of ``2**bits`` slots, and the hash seed.
    labels : {"real", "binary", "multiclass", "any"}
        Which labels are acceptable; others become dead letters. With ``"any"``
        the label column may be absent (prediction input).
    classes : int
        With ``labels="multiclass"``, labels outside 1 ... ``classes`` are dead
        letters (0: no bound, or the number of ``label_names``).
    label_names : tuple of str
        Class names a string label column holds; the i-th name is class i + 1.
    label_column, weight_column : str
        The label column and the optional importance weight column.
    indices_column, values_column : str
        The list columns of the sparse layout.
    feature_columns : tuple of str, optional
        The feature columns of the named layout (default: every numeric one).
    number_columns : tuple of str
        Rows that may leave fields out (JSON Lines): the fields whose null or
        absence is a missing number, the value NaN (``polybeam train`` records
        the fields that hold numbers in its input's first lines). Elsewhere a
        numeric column's null is a missing number anyway.
    key_column : str, optional
        A column whose value (as text) is each example's key
        (``batch.key_codes``; ``--key column:NAME``), never a feature; a null
        is the empty key.
    id_column : str, optional
        A column whose value (as text) is each example's ID (``batch.tags``,
        as VW's tags: predictions carry it), never a feature; a null is no ID.
    timestamp_column : str, optional
        A column of each example's event time (``batch.timestamps``;
        ``--timestamp column:NAME``), never a feature: an Arrow timestamp or
        date, a number since the epoch, or ISO-8601 text (see
        :mod:`polybeam.formats.timestamps`). A row whose time is null,
        unreadable or outside the years 1 to 9999 is a dead letter.
    timestamp_unit : {None, "s", "ms", "us", "ns"}
        The unit of a numeric timestamp column (``--timestamp-unit``); None is
        seconds. Arrow timestamps and dates carry their own.
    ignore_columns : tuple of str
        Columns that are never features (named layout).
    categorical_columns : tuple of str
        Columns whose values are categories (named layout), whatever their
        type: a numeric column's values as a CSV file of the table spells
        them (``10115``, ``2.5``, ``True``). Text and dictionary-encoded
        columns are categories anyway.
    infer_categorical : bool
        Whether text and dictionary-encoded columns are categorical features
        (the default). False reads as models recorded before Parquet had
        categories did: only numeric columns are features, and columns of any
        other type are left out.
    """

    name: ClassVar[str] = "table"
    header_lines: ClassVar[int] = 0
    # Whether a row may leave any column out (JSON Lines): a table without feature columns then holds rows
    # without features, rather than being refused as surely not what was meant.
    partial_rows: ClassVar[bool] = False

    label_column: str = "label"
    weight_column: str | None = None
    indices_column: str = "indices"
    values_column: str = "values"
    feature_columns: tuple[str, ...] | None = None
    number_columns: tuple[str, ...] = ()
    key_column: str | None = None
    id_column: str | None = None
    ignore_columns: tuple[str, ...] = ()
    timestamp_column: str | None = None
    categorical_columns: tuple[str, ...] = ()
    infer_categorical: bool = True
    timestamp_unit: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        check_unit(self.timestamp_unit)
        if self.feature_columns is not None:
            columns = (self.feature_columns,) if isinstance(self.feature_columns, str) else tuple(self.feature_columns)
            object.__setattr__(self, "feature_columns", columns)
        numbers = (self.number_columns,) if isinstance(self.number_columns, str) else tuple(self.number_columns)
        object.__setattr__(self, "number_columns", numbers)
        ignored = (self.ignore_columns,) if isinstance(self.ignore_columns, str) else tuple(self.ignore_columns)
        object.__setattr__(self, "ignore_columns", ignored)
        categorical = self.categorical_columns
        categorical = (categorical,) if isinstance(categorical, str) else tuple(categorical)
        object.__setattr__(self, "categorical_columns", categorical)
        for column in categorical:
            if not isinstance(column, str):
                raise TypeError(f"categorical_columns must name columns (str), got {column!r}")
        roles = {
            "label": self.label_column,
            "weight": self.weight_column,
            "key": self.key_column,
            "ID": self.id_column,
            "timestamp": self.timestamp_column,
        }
        for role, column in roles.items():
            if column is not None and column in categorical:
                raise ValueError(f"the {role} column {column!r} cannot also be categorical")
        if set(categorical) & set(ignored):
            raise ValueError(f"columns {sorted(set(categorical) & set(ignored))} are both categorical and ignored")
        roles = {"label": self.label_column, "weight": self.weight_column, "key": self.key_column}
        for role, column in roles.items():
            if column is not None and column in ignored:
                raise ValueError(f"the {role} column {column!r} cannot also be ignored")
        if self.id_column is not None:
            if self.id_column in (*roles.values(), *ignored, *(self.feature_columns or ())):
                raise ValueError(
                    f"the ID column {self.id_column!r} cannot also be the label, the weight, the key, "
                    "a feature or ignored"
                )
        if self.weight_column is not None and self.weight_column == self.label_column:
            raise ValueError(f"label_column and weight_column are the same column, {self.label_column!r}")
        if self.key_column is not None and self.key_column in (self.label_column, self.weight_column):
            raise ValueError(f"the key column {self.key_column!r} cannot also be the label or weight column")
        if self.key_column is not None and self.feature_columns and self.key_column in self.feature_columns:
            raise ValueError(f"the key column {self.key_column!r} cannot also be a feature column")
        if self.timestamp_column is not None and self.timestamp_column in (
            *roles.values(),
            self.id_column,
            *ignored,
            *(self.feature_columns or ()),
        ):
            raise ValueError(
                f"the timestamp column {self.timestamp_column!r} cannot also be the label, the weight, "
                "the key, the ID, a feature or ignored"
            )

    def number_fields(self, table: pa.Table) -> tuple[str, ...]:
        """The columns of ``table`` (a sample of the input's first rows) that hold numbers and are features:
        the ``number_columns`` a reader of rows that may leave fields out records, so that every block, and
        every door that scores the model's rows, reads their nulls as missing numbers."""
        roles = {self.label_column, self.weight_column, self.key_column, self.id_column, self.timestamp_column}
        roles |= {*self.ignore_columns, *self.categorical_columns, self.indices_column, self.values_column}
        return tuple(
            field.name
            for field in table.schema
            if (pa.types.is_integer(field.type) or pa.types.is_floating(field.type) or pa.types.is_boolean(field.type))
            and field.name not in roles
            and (self.feature_columns is None or field.name in self.feature_columns)
        )

    def table_label_texts(self, table: pa.Table | pa.RecordBatch) -> list[str]:
        """The labels of ``table``'s rows as text (missing ones left out), for a launcher's sample (see
        :func:`polybeam.formats.labels.infer_classes`).

        >>> TableFormat().table_label_texts(pa.table({"label": [2, 1, None], "x": [1.0, 2.0, 3.0]}))
        ['2', '1']
        """
        if self.label_column not in table.column_names:
            return []
        values = table.column(self.label_column).to_pylist()
        return [_label_as_text(value) for value in values if value is not None]

    def parse_table(
        self, table: pa.Table | pa.RecordBatch, *, source: str = "<memory>", first_row: int = 0
    ) -> ParsedBlock:
        """Parse rows ``first_row``, ``first_row + 1``, ... of ``source`` held in ``table``.

        Raises :class:`~polybeam.formats.records.InputFileError` (a ``ValueError``) naming ``source``
        when the table lacks what the format needs.
        """
        if isinstance(table, pa.RecordBatch):
            table = pa.Table.from_batches([table])
        if first_row < 0:
            raise ValueError(f"first_row must be >= 0, got {first_row}")
        try:
            return self._parse_table(table, source, first_row)
        except ValueError as error:
            # A file with the wrong schema cannot be read at all: say which file.
            raise InputFileError(f"{source}: {error}") from error

    def with_absent_columns(self, table: pa.Table) -> pa.Table:
        """For rows that may leave fields out (``partial_rows``): ``table`` with a typed column of nulls for
        each column the format names that no row has (or has only as nulls, which Arrow types as nothing),
        so that a field left out is missing whichever rows are read together; other tables as they are."""
        if not self.partial_rows:
            return table
        numbers, texts = pa.float64(), pa.string()
        wanted = {
            self.label_column if self.labels != "any" else None: numbers,
            self.weight_column: numbers,
            self.key_column: texts,
            self.id_column: texts,
            self.timestamp_column: numbers,
            **{name: texts for name in self.categorical_columns},
            **{name: numbers for name in self.feature_columns or ()},
            **{name: numbers for name in self.number_columns},
        }
        for name, kind in wanted.items():
            if name is None:
                continue
            if name not in table.column_names:
                table = table.append_column(name, pa.nulls(table.num_rows, kind))
            elif pa.types.is_null(table.schema.field(name).type):
                table = table.set_column(table.column_names.index(name), name, pa.nulls(table.num_rows, kind))
        return table

    def _parse_table(self, table: pa.Table, source: str, first_row: int) -> ParsedBlock:
        table = self.with_absent_columns(table)
        self._check_unique_columns(table)
        n = table.num_rows
        labels, has_label, unknown_classes = self._labels(table)
        weights = self._weights(table)
        reasons = np.full(n, None, dtype=object)
        # Reasons are filled from the least to the most basic problem, so the
        # most basic one is what a row's dead letter reports.
        for row, reason in unknown_classes.items():
            reasons[row] = reason
        if self.indices_column in table.column_names:
            if self.categorical_columns:
                raise ValueError(
                    f"categorical_columns are columns of named features, but this table holds sparse features in "
                    f"its {self.indices_column!r} list column"
                )
            indptr, slots, values, names_of = self._sparse_features(table, reasons)
        else:
            indptr, slots, values, names_of = self._named_features(table, reasons)
        bad_weight = ~(np.isfinite(weights) & (weights >= 0))
        reasons[bad_weight] = "importance weight must be finite and >= 0"
        good = np.equal(reasons, None).astype(bool)
        row_numbers = first_row + np.arange(n, dtype=np.int64)
        timestamps, time_problems = self._timestamps(table)
        batch = ExampleBatch(
            labels=labels,
            weights=weights,
            indptr=indptr,
            indices=slots,
            values=values,
            bits=self.bits,
            row_ids=row_numbers,
            source=source,
            tags=self._ids(table),
            timestamps=timestamps,
            **self._keys(table),
        ).take(good)

        def raw_of(row: int) -> tuple[bytes, int, int]:
            return _row_json(table, row).encode("utf-8"), first_row + row + 1, first_row + row

        letters = []
        for row in np.flatnonzero(~good):
            raw, line, offset = raw_of(int(row))
            refused = reasons[row] if row in unknown_classes and reasons[row] == unknown_classes[row] else None
            letters.append(
                DeadLetter.from_bytes(
                    raw, source=source, line=line, offset=offset, reason=reasons[row], refused=refused
                )
            )
        parsed = ParsedBlock(batch=batch, dead_letters=letters, records=n, skipped=0)

        def raw_finder(batch: ExampleBatch):
            return lambda example: raw_of(int(batch.row_ids[example]) - first_row)

        if self.labels != "any":
            parsed = reject_examples(parsed, ~has_label[good], "missing label", raw_finder(parsed.batch))
        parsed = apply_labels(parsed, self.labels, self.classes, self.label_names, raw_finder(parsed.batch))
        by_row = {first_row + row: why for row, why in time_problems.items()}
        parsed = reject_untimed(parsed, by_row, raw_finder(parsed.batch))
        parsed.dead_letters.sort(key=lambda letter: letter.offset)
        if names_of is not None:  # (named only for the rows kept, as a CSV block's features are)
            batch = replace(parsed.batch, names=names_of(parsed.batch.row_ids - first_row) or None)
            parsed = replace(parsed, batch=batch)
        return parsed

    # -- columns ---------------------------------------------------------------

    def _check_unique_columns(self, table: pa.Table) -> None:
        """Refuse a table where a column the format takes by name appears more than once
        (Arrow allows it; which one would be meant?)."""
        names = table.column_names
        used = {
            self.label_column,
            self.weight_column,
            self.key_column,
            self.id_column,
            self.timestamp_column,
            *(self.feature_columns or ()),
        }
        if self.indices_column in names:  # (otherwise "values" may well name two features)
            used |= {self.indices_column, self.values_column}
        for name in sorted(used - {None}):
            count = names.count(name)
            if count > 1:
                raise ValueError(f"column {name!r} appears {count} times; the columns are {names}")

    def _keys(self, table: pa.Table) -> dict:
        """Key codes and names of the key column, by Arrow's dictionary encoding (no Python per row)."""
        if self.key_column is None:
            return {}
        if self.key_column not in table.column_names:
            raise ValueError(f"key column {self.key_column!r} not found; the columns are {table.column_names}")
        text = pc.fill_null(pc.cast(table.column(self.key_column), pa.string()), "")
        encoded = pc.dictionary_encode(text).combine_chunks()
        return {
            "key_codes": encoded.indices.to_numpy(zero_copy_only=False).astype(np.int32),
            "key_names": tuple(encoded.dictionary.to_pylist()),
        }

    def _timestamps(self, table: pa.Table) -> tuple[np.ndarray | None, dict[int, str]]:
        """Seconds since the epoch of each row (NaN where there is none) and why rows have none."""
        name, unit = self.timestamp_column, self.timestamp_unit or "s"
        if name is None:
            return None, {}
        if name not in table.column_names:
            raise ValueError(f"timestamp column {name!r} not found; the columns are {table.column_names}")
        column = table.column(name).combine_chunks()
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        if pa.types.is_timestamp(column.type) or pa.types.is_date(column.type):
            micros = pc.cast(pc.cast(column, pa.timestamp("us")), pa.int64())
            seconds, status = _to_float(micros, missing=np.nan) / 1e6, None
        elif _is_numeric(column.type):
            seconds, status = _to_float(column, missing=np.nan) / UNITS[unit], None
        elif _is_text(column.type):
            array, data, offsets = _text_buffers(column)
            spans = np.stack([offsets[:-1], offsets[1:]], axis=1)
            spans[_null_mask(array)] = -1
            seconds, status = parse_timestamps(data, spans, UNITS[unit])
        else:
            raise ValueError(f"timestamp column {name!r} must be a timestamp, a number or text, got {column.type}")
        if status is None:
            status = np.where(np.isfinite(seconds), TIME_OK, TIME_MISSING).astype(np.int8)
            status[out_of_range(seconds)] = TIME_OUT_OF_RANGE
            seconds = np.where(status == TIME_OK, seconds, np.nan)
        bad = np.flatnonzero(status != TIME_OK)
        cells = column.take(pa.array(bad, type=pa.int64())).to_pylist()
        return seconds, {int(row): problem(int(status[row]), name, str(cell), unit) for row, cell in zip(bad, cells)}

    def _ids(self, table: pa.Table) -> np.ndarray | None:
        """The ID column as an object array of str (None where null), converted by Arrow (no Python per row)."""
        if self.id_column is None:
            return None
        if self.id_column not in table.column_names:
            raise ValueError(f"ID column {self.id_column!r} not found; the columns are {table.column_names}")
        text = pc.cast(table.column(self.id_column), pa.string()).combine_chunks()
        return text.to_numpy(zero_copy_only=False).astype(object, copy=False)

    def _labels(self, table: pa.Table) -> tuple[np.ndarray, np.ndarray, dict[int, str]]:
        """Labels (NaN where missing), which rows have one, and why rows with unknown class names are bad."""
        n = table.num_rows
        if self.label_column not in table.column_names:
            if self.labels == "any":
                return np.full(n, np.nan), np.zeros(n, dtype=bool), {}
            raise ValueError(
                f"label column {self.label_column!r} not found; the columns are {table.column_names}: name the "
                "label column (--label-column, label_column=), or read unlabelled rows to predict (labels='any')"
            )
        column = table.column(self.label_column)
        if pa.types.is_null(column.type):  # all null (a writer's type for a column of Nones): all missing
            return np.full(n, np.nan), np.zeros(n, dtype=bool), {}
        if self.label_names and _is_text(column.type):
            return self._named_labels(column)
        if not _is_numeric(column.type):
            hint = "" if self.label_names or not _is_text(column.type) else "; to read class names, pass label_names"
            raise ValueError(f"label column {self.label_column!r} must be numeric, got {column.type}{hint}")
        labels = _to_float(column, missing=np.nan)
        return labels, ~np.isnan(labels), {}  # (NaN is a missing label, as null is)

    def _named_labels(self, column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray, dict[int, str]]:
        """Class names (or numbers) from a string column, read in numba from the Arrow buffers."""
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        array, data, offsets = _text_buffers(column)
        labels, unknown, empty = string_labels(data, offsets[:-1], offsets[1:], *self.class_names.arrays)
        missing = _null_mask(array) | empty
        labels[missing] = np.nan
        rows = np.flatnonzero(unknown & ~missing)
        texts = array.take(pa.array(rows, type=pa.int64())).to_pylist()
        reasons = {
            int(row): self.class_names.unknown_reason(
                text.decode("utf-8", errors="replace") if isinstance(text, bytes) else text
            )
            for row, text in zip(rows, texts)
        }
        return labels, ~missing, reasons

    def _weights(self, table: pa.Table) -> np.ndarray:
        if self.weight_column is None:
            return np.ones(table.num_rows)
        if self.weight_column not in table.column_names:
            raise ValueError(f"weight column {self.weight_column!r} not found; the columns are {table.column_names}")
        weights = _to_float(_numeric(table, self.weight_column, "weight column"), missing=1.0)
        weights[np.isnan(weights)] = 1.0  # a missing weight (NaN as null) is 1
        return weights

    def _sparse_features(self, table: pa.Table, reasons: np.ndarray):
        """CSR arrays from the list columns, flagging bad rows in ``reasons``."""
        n = table.num_rows
        indices_list = _list_column(table, self.indices_column)
        if not pa.types.is_integer(indices_list.type.value_type):
            raise ValueError(f"{self.indices_column!r} must hold lists of integers, got {indices_list.type}")
        lengths = _list_lengths(indices_list)
        flat_indices = pc.list_flatten(indices_list)
        indices = flat_indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        entry_row = np.repeat(np.arange(n), lengths)
        has_values = self.values_column in table.column_names
        if has_values and pa.types.is_null(table.schema.field(self.values_column).type):
            has_values = False  # (no row gives values: every value is 1)
        if has_values:
            values_list = _list_column(table, self.values_column)
            value_type = values_list.type.value_type
            if not _is_numeric(value_type):
                raise ValueError(f"{self.values_column!r} must hold lists of numbers, got {values_list.type}")
            value_lengths = _list_lengths(values_list)
            flat_values = pc.list_flatten(values_list)
            all_values = _to_float(flat_values, missing=np.nan)
            mismatched = value_lengths != lengths
            # Entry j of row r sits at value_starts[r] + (j - index_starts[r]) in the values;
            # rows whose lengths differ are rejected, so clip their positions.
            index_starts = np.concatenate([[0], np.cumsum(lengths)])[:-1]
            value_starts = np.concatenate([[0], np.cumsum(value_lengths)])[:-1]
            positions = value_starts[entry_row] + np.arange(len(indices)) - index_starts[entry_row]
            positions = np.clip(positions, 0, max(len(all_values) - 1, 0))
            values = all_values[positions] if len(all_values) else np.zeros(len(indices))
            values[mismatched[entry_row]] = 0.0
            unvalued = _null_mask(values_list)  # a row without a values list: every value is 1, as without the column
            mismatched &= ~unvalued
            values[unvalued[entry_row]] = 1.0
        else:
            mismatched = np.zeros(n, dtype=bool)
            values = np.ones(len(indices))
        # A null or NaN value is a missing one (the entry NaN, as LIBSVM's ``3:nan``); infinity is refused.
        _flag(reasons, entry_row[np.isinf(values)], NON_FINITE_REASON.rstrip(": "))
        _flag(reasons, entry_row[unlearnable(values) & np.isfinite(values)], TOO_LARGE_REASON.rstrip(": "))
        _flag(reasons, entry_row[indices < 1], "feature index must be >= 1")
        _flag(reasons, entry_row[_null_mask(flat_indices)], "null feature index")
        reasons[mismatched] = f"{self.indices_column!r} and {self.values_column!r} have different lengths"
        keep = values != 0
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(entry_row[keep], minlength=n), out=indptr[1:])
        kept_indices = indices[keep]
        slots = libsvm_slots(np.maximum(kept_indices, 1), np.int64(slot_mask(self.bits)), np.int64(self.seed))
        return indptr, slots, values[keep], None  # (numbered features have no names)

    def _named_features(self, table: pa.Table, reasons: np.ndarray):
        """CSR arrays from the feature columns (a numeric column's value, a category of each other one) and
        what names the slots, flagging bad rows. Each row's features come in column order, as a CSV line's."""
        n = table.num_rows
        mask = np.int64(slot_mask(self.bits))
        names = _FeatureNames()
        parts = []  # per feature column: (rows, slots, values, name ids), each row at most once
        for position, name, categorical in self._feature_plan(table):
            column = table.column(position)
            if categorical:
                rows, slots, ids = _category_features(column, name, np.int64(hash_string(name, self.seed)), mask, names)
                parts.append((rows, slots, np.ones(len(rows)), ids))
                continue
            numbers = _to_float(column, missing=np.nan)  # NaN: a missing value, as null
            infinite = np.isinf(numbers)
            if infinite.any():
                _flag(reasons, np.flatnonzero(infinite), f"non-finite value in column {name!r}")
            too_large = unlearnable(numbers) & np.isfinite(numbers)
            if too_large.any():
                _flag(reasons, np.flatnonzero(too_large), f"column {name!r}: {TOO_LARGE_REASON.rstrip(': ')}")
            # A missing value (NaN) is the entry NaN, which the learners fill with the feature's mean; a zero is
            # no entry. (Infinite values are their rows' dead letters, whatever they give.)
            present = ~infinite & (numbers != 0.0)
            if not self._missing_is_number(name):
                present &= ~np.isnan(numbers)
            rows = np.flatnonzero(present)
            slot = feature_slot(name, self.bits, "", self.seed)
            parts.append((rows, np.full(len(rows), slot, dtype=INDEX_DTYPE), numbers[rows], names.name(name, rows)))
        counts = np.zeros(n, dtype=np.int64)
        for rows, *_ in parts:
            counts[rows] += 1
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        nnz = int(indptr[-1])
        slots = np.empty(nnz, dtype=INDEX_DTYPE)
        values = np.empty(nnz, dtype=np.float64)
        name_ids = np.empty(nnz, dtype=np.int64)
        cursor = indptr[:-1].copy()
        for rows, column_slots, column_values, ids in parts:  # column by column, so each row's in column order
            places = cursor[rows]
            slots[places], values[places], name_ids[places] = column_slots, column_values, ids
            cursor[rows] += 1

        def names_of(kept_rows: np.ndarray) -> dict[int, str]:
            kept = np.zeros(n, dtype=bool)
            kept[kept_rows] = True
            features = np.flatnonzero(np.repeat(kept, counts))
            first = features[first_occurrences(slots[features], self.bits)]
            return dict(zip(slots[first].tolist(), names.names(name_ids[first])))

        return indptr, slots, values, names_of

    def _missing_is_number(self, name: str) -> bool:
        """Whether a null of numeric column ``name`` is a missing number (the entry NaN). In rows that may leave
        fields out (JSON Lines) a null or a field left out has no type of its own, and whether the block holds
        the column at all depends on the other rows: it is no feature, unless ``feature_columns`` or
        ``number_columns`` name it."""
        return not self.partial_rows or name in (self.feature_columns or ()) or name in self.number_columns

    def _feature_plan(self, table: pa.Table) -> list[tuple[int, str, bool]]:
        """``(position, name, categorical)`` of every feature column of the named layout, in table order."""
        column_names = table.column_names
        for name in self.categorical_columns:
            if name not in column_names:
                raise ValueError(f"categorical column {name!r} not found; the columns are {column_names}")
        plan = []
        if self.feature_columns is not None:
            chosen = [*self.feature_columns, *(c for c in self.categorical_columns if c not in self.feature_columns)]
            for name in chosen:
                if name not in column_names:
                    raise ValueError(f"feature column {name!r} not found; the columns are {column_names}")
                position = column_names.index(name)
                plan.append((position, name, self._is_categorical(name, table.schema.types[position], chosen=True)))
            return sorted(plan)
        skip = {
            self.label_column,
            self.weight_column,
            self.key_column,
            self.id_column,
            self.timestamp_column,
            *self.ignore_columns,
        }
        # By position: two columns may share a name (Arrow allows it), and then are two features.
        for position, (name, column_type) in enumerate(zip(column_names, table.schema.types)):
            if name in skip:
                continue
            categorical = self._is_categorical(name, column_type, chosen=False)
            if categorical is not None:
                plan.append((position, name, categorical))
        # Rows that may leave fields out give a block's columns in the order the block first meets them, which
        # differs from block to block: by name instead, so a row's features come alike in every block.
        if self.partial_rows:
            plan.sort(key=lambda entry: (entry[1], entry[0]))
        if not plan and not self.partial_rows:
            described = ", ".join(f"{name}: {kind}" for name, kind in zip(column_names, table.schema.types))
            raise ValueError(
                f"no feature columns: sparse features need an {self.indices_column!r} list column "
                f"(indices_column), named features numeric or text columns; the columns are {described}"
            )
        return plan

    def _is_categorical(self, name: str, column_type: pa.DataType, *, chosen: bool) -> bool | None:
        """Whether a column's values are categories (True), numbers (False) or no feature at all (None: a column
        of nulls only, or, reading as models recorded before there were Parquet categories did, anything but
        numbers). A column that cannot be a feature is refused, naming it: nothing is left out silently."""
        if _is_nested(column_type):
            what = "its values cannot be categories" if name in self.categorical_columns else "it is no feature"
            if not chosen and not self.infer_categorical:
                return None
            raise ValueError(f"column {name!r} holds {column_type}: {what}; {_unreadable_hint(name, column_type)}")
        if name in self.categorical_columns:
            return True
        if pa.types.is_dictionary(column_type) or _is_text(column_type):
            return True if (chosen or self.infer_categorical) else None
        if _is_numeric(column_type):
            return False
        if pa.types.is_null(column_type):
            return None  # (all missing)
        if not chosen and not self.infer_categorical:
            return None
        raise ValueError(
            f"column {name!r} holds {column_type}: it is no feature; {_unreadable_hint(name, column_type)}"
        )


@dataclass(frozen=True)
class FileTableFormat(TableFormat):
    """A format of whole binary files of rows (Parquet, Avro): ``parse`` takes a whole file's bytes, as a
    file cannot be split at byte offsets; a subclass gives ``table_of(data)`` and ``record_batches(stream,
    rows)``."""

    def parse(
        self,
        data: bytes,
        *,
        source: str = "<memory>",
        offset: int = 0,
        first_line: int | None = 1,
        header: bytes | None = None,
    ) -> ParsedBlock:
        """Parse the bytes of a whole file."""
        if offset != 0:
            raise ValueError(f"{self.name} data cannot start mid-file; read its record batches and use parse_table")
        return self.parse_table(self.table_of(data), source=source, first_row=0)


class _FeatureNames:
    """What names each feature of a table's named layout: an id per feature, resolved to its name (the
    column's, or ``column=value``) only for the slots a batch keeps."""

    def __init__(self) -> None:
        self._bases: list[int] = []
        self._sources: list[tuple[str, pa.Array | None]] = []
        self._size = 0

    def name(self, column: str, rows: np.ndarray) -> np.ndarray:
        """The ids of a numeric column's features (in ``rows``): one name, the column's."""
        return np.full(len(rows), self._add(column, None, 1), dtype=np.int64)

    def categories(self, column: str, texts: pa.Array) -> int:
        """The id of the first of ``texts`` (a dictionary's values as text), the others following it."""
        return self._add(column, texts, len(texts))

    def _add(self, column: str, texts: pa.Array | None, size: int) -> int:
        base = self._size
        self._bases.append(base)
        self._sources.append((column, texts))
        self._size += size
        return base

    def names(self, ids: np.ndarray) -> list[str]:
        which = np.searchsorted(np.asarray(self._bases), ids, side="right") - 1
        names = []
        for feature, source in zip(ids.tolist(), which.tolist()):
            column, texts = self._sources[source]
            if texts is None:
                names.append(column)
                continue
            value = texts[feature - self._bases[source]].as_py()
            names.append(f"{column}={value.decode('utf-8', errors='replace') if isinstance(value, bytes) else value}")
        return names


def _category_features(column: pa.ChunkedArray, name: str, seed: np.int64, mask: np.int64, names: _FeatureNames):
    """``(rows, slots, name ids)`` of a categorical column's features: each distinct value (a chunk's
    dictionary entry) is turned into text and hashed once, as CSV hashes the cell ``name=value``; a null, a
    NaN, an empty or blank value is missing."""
    rows, slots, ids = [], [], []
    first_row = 0
    for chunk in column.chunks:
        if pa.types.is_string_view(chunk.type) or pa.types.is_binary_view(chunk.type):
            chunk = chunk.cast(pa.large_string() if pa.types.is_string_view(chunk.type) else pa.large_binary())
        encoded = chunk if pa.types.is_dictionary(chunk.type) else pc.dictionary_encode(chunk)
        texts = _category_texts(encoded.dictionary, name)
        _, data, offsets = _text_buffers(texts)
        value_slots, missing = _category_slots(data, offsets, seed, mask)
        missing |= _null_mask(texts)
        codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        present = np.flatnonzero(codes >= 0)
        present = present[~missing[codes[present]]]
        rows.append(first_row + present)
        slots.append(value_slots[codes[present]])
        ids.append(names.categories(name, texts) + codes[present])
        first_row += len(chunk)
    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=INDEX_DTYPE), np.zeros(0, dtype=np.int64)
    return np.concatenate(rows), np.concatenate(slots).astype(INDEX_DTYPE), np.concatenate(ids)


def _category_texts(values: pa.Array, name: str) -> pa.Array:
    """Distinct values of a categorical column as the text a CSV file of the table holds (as pandas and
    Python write them): text as it is, ``True``/``False``, whole numbers in digits, floating-point numbers
    by Python's shortest repr (``1.0``, ``2.5``, ``1e-05``; NaN: missing). Python per distinct value only."""
    if _is_text(values.type):
        return values
    if pa.types.is_boolean(values.type):
        return pc.if_else(values, "True", "False")
    if pa.types.is_floating(values.type):
        numbers = values.to_numpy(zero_copy_only=False)  # (NaN where null)
        return pa.array([None if number != number else str(number) for number in numbers], type=pa.large_string())
    try:
        return pc.cast(values, pa.large_string())
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        raise ValueError(f"the values of column {name!r} ({values.type}) cannot be read as categories") from None


@numba.njit(cache=True, nogil=True)
def _category_slots(data, offsets, seed, mask):
    """The slot of each text ``data[offsets[i]:offsets[i + 1]]`` as a category (CSV's ``hash_token``), and
    whether it is blank (no category at all)."""
    n = len(offsets) - 1
    slots = np.zeros(n, dtype=np.int64)
    blank = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        if is_blank_value(data, offsets[i], offsets[i + 1]):
            blank[i] = True
        else:
            slots[i] = hash_token(data, offsets[i], offsets[i + 1], seed) & mask
    return slots, blank


def _is_nested(column_type: pa.DataType) -> bool:
    """Lists, structs, maps and unions: many values per row, never one feature."""
    return pa.types.is_nested(column_type)


def _unreadable_hint(name: str, column_type: pa.DataType) -> str:
    """What to do with a column that cannot be a feature."""
    ignore = f"leave it out with --ignore-columns {name} (ignore_columns=)"
    if pa.types.is_list(column_type) or pa.types.is_large_list(column_type) or pa.types.is_fixed_size_list(column_type):
        return f"{ignore}, or give sparse features as the list columns 'indices' and 'values' (indices_column=)"
    if pa.types.is_temporal(column_type):
        return (
            f"name it as the event time (--timestamp column:{name}), read its values as categories "
            f"(--categorical-columns {name}), or {ignore}"
        )
    return f"{ignore}, or make it numeric or text columns"


def _flag(reasons: np.ndarray, rows: np.ndarray, reason: str) -> None:
    reasons[np.unique(rows)] = reason


def _is_numeric(column_type: pa.DataType) -> bool:
    return (
        pa.types.is_integer(column_type)
        or pa.types.is_floating(column_type)
        or pa.types.is_boolean(column_type)
        or pa.types.is_decimal(column_type)  # exact numbers: read as the nearest double
    )


def _label_as_text(value) -> str:
    """A label cell as a file would write it (whole numbers without a point)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _is_text(column_type: pa.DataType) -> bool:
    """Strings or bytes, plain or dictionary-encoded."""
    if pa.types.is_dictionary(column_type):
        column_type = column_type.value_type
    return (
        pa.types.is_string(column_type)
        or pa.types.is_large_string(column_type)
        or pa.types.is_string_view(column_type)
        or pa.types.is_binary(column_type)
        or pa.types.is_large_binary(column_type)
    )


def _numeric(table: pa.Table, name: str, role: str) -> pa.ChunkedArray:
    column = table.column(name)
    if not _is_numeric(column.type):
        raise ValueError(f"{role} {name!r} must be numeric, got {column.type}")
    return column


def _to_float(column, *, missing: float) -> np.ndarray:
    """A numeric Arrow column as float64, nulls replaced by ``missing``."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_boolean(column.type):
        column = pc.cast(column, pa.int8())
    values = pc.cast(column, pa.float64()).to_numpy(zero_copy_only=False)
    values = np.array(values, dtype=np.float64)  # writable, NaN where null
    if column.null_count:
        values[_null_mask(column)] = missing
    return values


def _text_buffers(column) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """``(array, data, offsets)``: a text column as one Arrow array, and its bytes and ``n + 1`` offsets
    (views of Arrow's buffers, for numba kernels)."""
    binary = pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type)
    array = column.cast(pa.large_binary() if binary else pa.large_string())
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    n = len(array)
    _, offsets_buffer, data_buffer = array.buffers()
    offsets = np.zeros(n + 1, dtype=np.int64)
    if offsets_buffer is not None and n:
        offsets = np.frombuffer(offsets_buffer, dtype=np.int64)[array.offset : array.offset + n + 1]
    data = np.zeros(0, dtype=np.uint8) if data_buffer is None else np.frombuffer(data_buffer, dtype=np.uint8)
    return array, data, offsets


def _null_mask(column) -> np.ndarray:
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if column.null_count == 0:
        return np.zeros(len(column), dtype=bool)
    return column.is_null().to_numpy(zero_copy_only=False)


def _list_column(table: pa.Table, name: str) -> pa.Array:
    column = table.column(name).combine_chunks()
    kind = column.type
    if not (pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind)):
        raise ValueError(f"column {name!r} must be a list column, got {column.type}")
    return column


def _list_lengths(column: pa.Array) -> np.ndarray:
    """Entries per row; a null list has none."""
    return pc.list_value_length(column).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)


def _row_json(table: pa.Table, row: int) -> str:
    record = table.slice(row, 1).to_pylist()[0]
    return json.dumps(record, default=str, ensure_ascii=False)
