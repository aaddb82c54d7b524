"""Scoring input held against the columns a model was trained on.

A model trained on CSV or named Parquet columns records them (its training
input's header or schema: ``columns`` of
:class:`~polybeam.formats.input_settings.InputSettings`). ``evaluate`` and
``predict`` read their input through :class:`ScoringColumns`, which looks at
each file's header (or schema, or, without a header, its number of columns)
and reads that file as the model needs:

* a **feature column of the model that the file lacks** is refused, in one error
  naming the missing columns (``missing="refuse"``, the default), or read as
  missing in every row, as an empty cell (``missing="allow"``): a numeric
  column is the value NaN in every row (after the row's other features),
  which the model predicts at the feature's training mean; a categorical one
  is no category;
* a **column the model never saw** is left out (read as an ignored column): a
  feature the model has no weight for could only move predictions through a
  hash collision, so a file's extra columns never change a prediction;
* for prediction, the **label and weight columns are optional** (``optional``):
  a file without the label column is read without labels (every label
  missing), a file without the weight column with weight 1. Without a header
  the number of columns says which: the model's own count, or that count less
  the label's (and the weight's); a count that fits none of these, or more
  than one, is refused.

Examples
--------
>>> from polybeam.formats.csv import CsvFormat
>>> model = ScoringColumns(("y", "a", "b", "c"), label="y", optional=("label", "weight"))
>>> reader = ScoringFormat(CsvFormat(label_column="y", labels="any"), model)
>>> parsed = reader.parse(b"a,b,c,extra\\n1,2,3,9\\n")
>>> parsed.batch.labels.tolist(), sorted(parsed.batch.names.values())
([nan], ['a', 'b', 'c'])
>>> try:
...     reader.parse(b"y,a\\n1,2\\n", source="new.csv")
... except ValueError as error:
...     print(error)
new.csv: lacks 2 of the model's 3 feature columns: b, c (the model was trained with them: give the file those columns, or read each as missing in every row with --missing-columns allow, missing_columns='allow' in Python)

With ``missing="allow"``, a numeric column the file lacks is missing in every row:

>>> lenient = ScoringFormat(CsvFormat(label_column="y", labels="any"), dataclasses.replace(model, missing="allow"))
>>> batch = lenient.parse(b"y,a,c\\n1,2,3\\n").batch
>>> batch.values.tolist(), batch.names[batch.indices[-1]]
([2.0, 3.0, nan], 'b')

Without a header, the count of columns tells a file with its label from one without:

>>> headerless = ScoringColumns(("1", "2", "3"), label="1", header=False, optional=("label",))
>>> reader = ScoringFormat(CsvFormat(has_header=False, labels="any"), headerless)
>>> reader.parse(b"1,5,6\\n").batch.labels.tolist(), reader.parse(b"5,6\\n").batch.labels.tolist()
([1.0], [nan])
>>> reader.parse(b"5,6\\n").batch.names == reader.parse(b"1,5,6\\n").batch.names
True
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from polybeam.formats.columns import check_missing_columns
from polybeam.formats.formats import is_file_format, spec_of
from polybeam.formats.records import InputFileError, ParsedBlock
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.choices import MISSING_COLUMNS
from polybeam.learners.hashing import feature_slot

# Roles a scoring file may lack (prediction needs neither a label nor a weight).
OPTIONAL_ROLES = ("label", "weight")
# Format settings that name columns (by header name or 0-based position).
_COLUMN_SETTINGS = ("label_column", "weight_column", "key_column", "id_column", "timestamp_column")
_COLUMN_LISTS = ("categorical_columns", "ignore_columns")


class ColumnsMismatch(InputFileError):
    """A scoring file whose columns cannot be what the model reads (the message names the file, what it
    lacks and what to do)."""


@dataclass(frozen=True)
class ScoringColumns:
    """What a model expects of a scoring file's columns.

    Parameters
    ----------
    columns : tuple of str
        The columns of the model's training input (its header or schema; for
        CSV without a header, ``"1"`` ... ``"d"``).
    label, weight : str, optional
        The model's label and weight columns, by name (one of ``columns``).
    roles : tuple of str
        The other columns that were not features (key, ID, timestamp, ignored).
    header : bool
        Whether files name their columns (a header, a schema); without, a
        file's number of columns says which are there.
    optional : tuple of {"label", "weight"}
        The roles a file may lack (prediction: both; evaluation: none).
    missing : {"refuse", "allow"}
        What a file lacking some of the model's feature columns gets: an error
        naming them, or those features missing in every row.
    """

    columns: tuple[str, ...]
    label: str | None = None
    weight: str | None = None
    roles: tuple[str, ...] = ()
    header: bool = True
    optional: tuple[str, ...] = ()
    missing: str = "refuse"

    def __post_init__(self) -> None:
        check_missing_columns(self.missing)
        for role in self.optional:
            if role not in OPTIONAL_ROLES:
                raise ValueError(f"optional roles are {', '.join(OPTIONAL_ROLES)}, got {role!r}")
        for name in (self.label, self.weight):
            if name is not None and name not in self.columns:
                raise ValueError(f"{name!r} is not one of the model's columns {list(self.columns)}")
        for name in ("columns", "roles", "optional"):
            object.__setattr__(self, name, tuple(getattr(self, name)))

    @property
    def features(self) -> tuple[str, ...]:
        """The model's feature columns: its columns other than the label, the weight and the other roles."""
        others = {self.label, self.weight, *self.roles}
        return tuple(name for name in self.columns if name not in others)

    def lacking(self, names) -> tuple[str, ...]:
        """The model's feature columns that a file with columns ``names`` lacks."""
        present = set(names)
        return tuple(name for name in self.features if name not in present)

    def changes(self, names: tuple[str, ...], fmt) -> dict[str, Any]:
        """The settings of ``fmt`` to change to read a file whose columns are ``names`` (by header or schema;
        without a header ``"1"`` ... ``"d"``); raises ``ValueError`` saying what is wrong with the file."""
        if not self.header:
            return self._by_count(len(names), fmt)
        changes: dict[str, Any] = {}
        absent = [role for role in ("label", "weight") if getattr(self, role) is not None]
        absent = [role for role in absent if getattr(self, role) not in names]
        for role in absent:
            if role not in self.optional:
                raise ValueError(
                    f"lacks the model's {role} column {getattr(self, role)!r} (its columns: {_listed(names)})"
                    + ("; evaluate needs the labels (predict reads files without them)" if role == "label" else "")
                )
            if role == "weight":
                changes["weight_column"] = None  # (an absent label column is no label: see CsvFormat)
        lacking = self.lacking(names)
        if lacking and self.missing == "refuse":
            raise ValueError(
                f"lacks {len(lacking)} of the model's {len(self.features)} feature columns: {_listed(lacking, 20)} "
                "(the model was trained with them: give the file those columns, or read each as missing in every "
                "row with --missing-columns allow, missing_columns='allow' in Python)"
            )
        categorical = tuple(getattr(fmt, "categorical_columns", ()) or ())
        if lacking and any(column in lacking for column in categorical):
            # (a categorical column the file lacks is missing in every row: no category, nothing to read)
            changes["categorical_columns"] = tuple(column for column in categorical if column not in lacking)
        named = _named_columns(fmt)
        extra = tuple(name for name in names if name not in self.columns and name not in named)
        sparse = getattr(fmt, "indices_column", None) in names  # (Parquet's sparse lists: features by index)
        if extra and getattr(fmt, "feature_columns", None) is None and not sparse:
            changes["ignore_columns"] = tuple(fmt.ignore_columns) + tuple(dict.fromkeys(extra))
        return changes

    def absent_numbers(self, names, fmt) -> tuple[str, ...]:
        """The model's numeric feature columns that a file with columns ``names``, read by ``fmt``, lacks and
        reads as missing in every row (``missing="allow"``): not its categorical columns, which are then no
        category, and not columns that ``fmt``'s ``feature_columns`` leave out."""
        if self.missing != "allow" or not self.header or getattr(fmt, "partial_rows", False):
            return ()  # (JSON Lines: a field no line of a block has is no feature there, as a field left out)
        categorical = {
            self.columns[column] if isinstance(column, (int, np.integer)) and column < len(self.columns) else column
            for column in getattr(fmt, "categorical_columns", ()) or ()
        }
        chosen = getattr(fmt, "feature_columns", None)
        return tuple(
            name for name in self.lacking(names) if name not in categorical and (chosen is None or name in chosen)
        )

    def _by_count(self, count: int, fmt) -> dict[str, Any]:
        """Header-less CSV: which of the optional label and weight columns a file of ``count`` columns has."""
        droppable = [getattr(self, role) for role in self.optional if getattr(self, role) is not None]
        fits = [
            set(dropped)
            for size in range(len(droppable) + 1)
            for dropped in combinations(droppable, size)
            if len(self.columns) - size == count
        ]
        expected = len(self.columns)
        if not fits:
            if count == expected - 1 and self.label is not None and "label" not in self.optional:
                raise ValueError(
                    f"has {count} columns, one fewer than the model's {expected}: the label column, it seems; "
                    "evaluate needs the labels (predict reads files without them)"
                )
            without = "".join(
                f" or {expected - len(dropped)} without the {' and '.join(_role_names(self, dropped))}"
                for size in range(1, len(droppable) + 1)
                for dropped in combinations(droppable, size)
            )
            raise ValueError(
                f"has {count} columns, but the model's rows had {expected}: without a header a file's columns are "
                f"known by their count only; give it the model's {expected} columns{without}, or train and score "
                "with header lines naming the columns"
            )
        if len(fits) > 1:
            raise ValueError(
                f"has {count} columns, one fewer than the model's {expected}: without a header it cannot be "
                f"told whether the label column ({self.label}) or the weight column ({self.weight}) is absent; "
                "give the file a header line naming its columns"
            )
        (dropped,) = fits
        if not dropped:
            return {}
        kept = tuple(name for name in self.columns if name not in dropped)
        # The file's columns are the model's less the dropped ones: every setting names its column by the
        # model's name (a position would now point at another column).
        changes = _by_name(fmt, self.columns)
        changes["column_names"] = kept
        if self.weight in dropped:
            changes["weight_column"] = None
        # A label column named but absent is no label (CsvFormat with labels="any").
        return changes


def _listed(names, shown: int = 8) -> str:
    """``a, b, c`` -- or the first ``shown`` names and how many there are."""
    names = list(names)
    if len(names) <= shown:
        return ", ".join(names)
    return f"{', '.join(names[:shown])}, ... ({len(names)} columns)"


def _role_names(columns: ScoringColumns, dropped) -> list[str]:
    return ["label" if name == columns.label else "weight" for name in dropped]


def _named_columns(fmt) -> set:
    """The columns ``fmt``'s settings name (those are never a model's unknown extra columns)."""
    named = {getattr(fmt, setting, None) for setting in _COLUMN_SETTINGS}
    for setting in _COLUMN_LISTS:
        named.update(getattr(fmt, setting, ()) or ())
    named.update(getattr(fmt, "feature_columns", None) or ())
    return named - {None}


def _by_name(fmt, names: tuple[str, ...]) -> dict[str, Any]:
    """``fmt``'s column settings with each 0-based position replaced by the column's name in ``names``."""

    def name_of(column):
        if isinstance(column, (int, np.integer)) and not isinstance(column, bool):
            if column >= len(names):
                raise ValueError(f"column {column} is out of range for the model's {len(names)} columns")
            return names[column]
        return column

    changes = {}
    for setting in _COLUMN_SETTINGS:
        value = getattr(fmt, setting, None)
        changes[setting] = name_of(value) if value is not None else None
    if changes["label_column"] is None:
        changes["label_column"] = names[0]  # (the default label column is the first)
    for setting in _COLUMN_LISTS:
        changes[setting] = tuple(name_of(column) for column in getattr(fmt, setting, ()))
    return changes


@functools.lru_cache(maxsize=256)
def _variant(fmt, columns: ScoringColumns, names: tuple[str, ...]):
    """``fmt`` with the changes that read a file of columns ``names`` (cached per header: every block of a file
    has the same)."""
    changes = columns.changes(names, fmt)
    return dataclasses.replace(fmt, **changes) if changes else fmt


@dataclass(frozen=True)
class ScoringFormat:
    """A format of named columns (CSV, Parquet, JSON Lines, Avro) that reads each file as
    :class:`ScoringColumns` say (see the module docstring).

    It parses as the format it wraps does (``parse`` for text, ``parse_table`` for tables); a file that
    cannot be what the model reads raises :class:`~polybeam.formats.records.InputFileError` naming it.
    """

    format: Any
    columns: ScoringColumns

    def __post_init__(self) -> None:
        spec = spec_of(self.format)
        if spec is None or not spec.columns:
            raise ValueError(f"scoring columns apply to input of named columns, not {self.format.name}")

    def __getattr__(self, name: str):  # bits, labels, header_lines, carried_lines, ...: the format's own
        if name in ("format", "columns") or name.startswith("__"):
            raise AttributeError(name)
        if name == "parse_table":
            if not hasattr(self.format, "parse_table"):
                raise AttributeError(name)
            return self._parse_table
        return getattr(self.format, name)

    @property
    def name(self) -> str:
        return self.format.name

    def reader_for(self, names, source: str = "<memory>"):
        """The format that reads a file whose columns are ``names``; InputFileError when it cannot be read."""
        try:
            return _variant(self.format, self.columns, tuple(names))
        except ValueError as error:
            raise ColumnsMismatch(f"{source}: {error}") from None

    def parse(self, data: bytes, *, source: str = "<memory>", offset: int = 0, first_line=1, header=None):
        """Parse a block as the wrapped format does, read as the file's columns need (see ``reader_for``)."""
        if is_file_format(self.format):  # a whole file's bytes
            if offset != 0:
                raise ValueError(f"{self.format.name} data cannot start mid-file; read its records and use parse_table")
            return self._parse_table(self.format.table_of(data), source=source)
        if hasattr(self.format, "parse_lines"):  # rows of fields, each block a table of its own fields
            return self.format.parse_lines(
                data, source=source, offset=offset, first_line=first_line, parse_table=self._parse_table
            )
        names = self._csv_names(bytes(data), offset, header)
        fmt = self.format if names is None else self.reader_for(names, source)
        parsed = fmt.parse(data, source=source, offset=offset, first_line=first_line, header=header)
        return parsed if names is None else self._with_absent(parsed, names)

    def _parse_table(self, table, *, source: str = "<memory>", first_row: int = 0):
        parsed = self.reader_for(table.column_names, source).parse_table(table, source=source, first_row=first_row)
        return self._with_absent(parsed, table.column_names)

    def _with_absent(self, parsed: ParsedBlock, names) -> ParsedBlock:
        """``parsed`` with the numeric columns the file lacks missing in every row (``missing="allow"``)."""
        absent = self.columns.absent_numbers(tuple(names), self.format)
        if not absent or not len(parsed.batch):
            return parsed
        slots = [feature_slot(name, self.format.bits, "", self.format.seed) for name in absent]
        return dataclasses.replace(parsed, batch=missing_in_every_row(parsed.batch, slots, absent))

    def _csv_names(self, data: bytes, offset: int, header: bytes | None) -> tuple[str, ...] | None:
        """The names of a CSV file's columns (``"1"`` ... ``"d"`` without a header), or None when the block
        holds no record to count them by."""
        from polybeam.formats.csv import header_fields, split_fields

        fmt = self.format
        if fmt.has_header:
            line = data[: _line_end(data, 0)] if offset == 0 else header
            if line is None or not line.strip():
                return None  # (an empty file: nothing to hold against the model)
            return tuple(header_fields(line, fmt.delimiter))
        record = header if header is not None and _is_record(header) else _first_record(data)
        if record is None:
            return None
        return tuple(str(i + 1) for i in range(len(split_fields(record, fmt.delimiter))))


def missing_in_every_row(batch: ExampleBatch, slots, names) -> ExampleBatch:
    """``batch`` with the features at ``slots`` (named ``names``) missing in every row: each row gets the
    entries ``(slot, NaN)`` after its own.

    >>> batch = ExampleBatch.from_rows([(1.0, {3: 1.0}), (0.0, {})])
    >>> more = missing_in_every_row(batch, [5, 9], ["b", "c"])
    >>> more.indptr.tolist(), more.indices.tolist(), more.values.tolist(), more.names
    ([0, 3, 5], [3, 5, 9, 5, 9], [1.0, nan, nan, nan, nan], {5: 'b', 9: 'c'})
    """
    n, added = len(batch), len(slots)
    counts = np.diff(batch.indptr)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts + added, out=indptr[1:])
    indices = np.empty(indptr[-1], dtype=batch.indices.dtype)
    values = np.empty(indptr[-1], dtype=np.float64)
    own = np.arange(batch.nnz) + added * np.repeat(np.arange(n), counts)  # (each earlier row adds ``added``)
    indices[own], values[own] = batch.indices, batch.values
    extra = (indptr[1:, None] - added + np.arange(added)).ravel()
    indices[extra] = np.tile(np.asarray(slots, dtype=batch.indices.dtype), n)
    values[extra] = np.nan
    names = {**dict(zip((int(slot) for slot in slots), names)), **(batch.names or {})}  # (the batch's own first)
    namespaces = batch.namespaces
    if namespaces is not None:
        namespaces = np.full(indptr[-1], ord(" "), dtype=namespaces.dtype)
        namespaces[own] = batch.namespaces
    return dataclasses.replace(batch, indptr=indptr, indices=indices, values=values, names=names, namespaces=namespaces)


def _line_end(data: bytes, start: int) -> int:
    end = data.find(b"\n", start)
    return len(data) if end < 0 else end


def _first_record(data: bytes) -> bytes | None:
    """The first line of ``data`` that is neither blank nor a comment."""
    start = 0
    while start < len(data):
        end = _line_end(data, start)
        if _is_record(data[start:end]):
            return data[start:end]
        start = end + 1
    return None


def _is_record(line: bytes) -> bool:
    text = line.strip()
    return bool(text) and not text.startswith(b"#")


__all__ = ["MISSING_COLUMNS", "ColumnsMismatch", "ScoringColumns", "ScoringFormat", "missing_in_every_row"]
