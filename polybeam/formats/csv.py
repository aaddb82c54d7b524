"""Delimited text with named columns (CSV), one record per line.

Columns are found by their header names (without a header, by the names
``"1"`` ... ``"d"``, or by 0-based position). Every column other than the label,
the weight and the ignored ones becomes a feature:

* a **numeric** column ``x`` gives feature ``x`` at slot
  ``feature_slot("x", bits, seed=seed)`` with the cell's value; a missing cell
  (and a NaN, ``nan`` in any case) gives it with the value NaN, a missing
  value the learners fill with the feature's mean over the training examples;
  a zero is dropped, and a cell that is neither a number nor missing, an
  infinite one or one too large rejects the line;
* a **categorical** column ``c`` gives feature ``c=value`` with value 1, at slot
  ``hash_token(value, hash_string("c", seed)) & (2**bits - 1)``, as if ``c``
  were a VW namespace holding the feature ``value``; a missing or blank cell
  is no feature.

A cell is **missing** when it is empty or one of ``na_values`` (by default
pandas' spellings ``NA``, ``NaN``, ``null``, ``#N/A``, ... and ``?``; see
:mod:`polybeam.formats.missing`), quoted or not. A missing label is a
missing label (only prediction accepts it), a missing weight is 1.

Blank lines and lines that start with ``#`` (comments) are skipped, but a line
whose first cell is a missing value spelled with ``#`` (``#N/A``) is a record.
Fields follow RFC 4180 within a line: double quotes protect delimiters, ``""``
is a literal quote, and blank space around fields is trimmed. A record must fit
on one line, so an unbalanced quote rejects the line. ``batch.names`` always
names the slots of the block.

With ``label_names``, a label cell whose value (trimmed and unquoted, as for
any cell) is one of the names is that class, the i-th name being class i + 1;
a number is still its number (see :mod:`polybeam.formats.classes`).

Examples
--------
>>> fmt = CsvFormat(label_column="y", categorical_columns=("color",))
>>> parsed = fmt.parse(b'y,size,color\\n1,2.5,red\\n0,,"dark, blue"\\n1,x,red\\n')
>>> parsed.records, parsed.skipped, parsed.batch.labels.tolist()
(4, 1, [1.0, 0.0])
>>> sorted(parsed.batch.names.values())
['color=dark, blue', 'color=red', 'size']
>>> parsed.dead_letters[0].reason
"column 'size': not a number: 'x'"
>>> parsed = fmt.parse(b'y,size,color\\n1,NA,?\\n"NA",2,red\\n')
>>> parsed.batch.values.tolist(), [letter.reason for letter in parsed.dead_letters]
([nan], ['missing label'])
>>> fmt = CsvFormat(labels="multiclass", label_names=("cat", "dog", "dark, blue"))
>>> parsed = fmt.parse(b'y,size\\ndog,1\\n"dark, blue",2\\n1,3\\ncow,4\\n')
>>> parsed.batch.labels.tolist(), parsed.dead_letters[0].reason
([2.0, 3.0, 1.0], "label column 'y': unknown class label 'cow'; known classes are cat, dog, dark, blue")
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import ClassVar

import numba
import numpy as np

from polybeam.formats.classes import NO_CLASS, find_class, short_text
from polybeam.formats.keys import key_codes
from polybeam.formats.missing import (
    DEFAULT_NA_VALUES,
    MissingSpellings,
    check_na_values,
    is_blank_value,
    is_missing_cell,
    missing_spellings,
)
from polybeam.formats.numbers import scan_number
from polybeam.formats.pointers import array_pointer, byte_pointer
from polybeam.formats.records import InputFileError, ParsedBlock
from polybeam.formats.settings import HashedFormat
from polybeam.formats.text import (
    EXAMPLE,
    FIRST_ERROR,
    SKIPPED,
    LineBlock,
    as_bytes_array,
    check_position,
    count_lines,
    decode_spans,
    finish_block,
    first_occurrences,
    is_skippable,
    line_spans,
    line_stop,
    record_lines,
    skip_blanks,
    token_text,
)
from polybeam.formats.timestamps import TIME_OK, UNITS, check_unit, parse_timestamps, problem, reject_untimed
from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernels below)
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.hashing import feature_slot, hash_string, hash_token, slot_mask
from polybeam.learners.values import TOO_LARGE_REASON, learnable

# What each column is for.
IGNORED = 0
NUMERIC = 1
CATEGORICAL = 2
LABEL = 3
WEIGHT = 4

QUOTE = 34

UNBALANCED_QUOTE = FIRST_ERROR
TEXT_AFTER_QUOTE = FIRST_ERROR + 1
WRONG_COLUMN_COUNT = FIRST_ERROR + 2
BAD_NUMBER = FIRST_ERROR + 3
NON_FINITE_NUMBER = FIRST_ERROR + 4
BAD_LABEL = FIRST_ERROR + 5
BAD_WEIGHT = FIRST_ERROR + 6
INVALID_WEIGHT = FIRST_ERROR + 7
UNKNOWN_CLASS = FIRST_ERROR + 8
TOO_LARGE_NUMBER = FIRST_ERROR + 9


@numba.njit(cache=True)
def _is_padding(c, delimiter):
    # Blank space around a field, unless it is the delimiter itself.
    return (c == 32 or c == 13 or c == 9) and c != delimiter


@numba.njit(cache=True)
def _copy(source, start, stop, target, pos, unescape):
    """Copy ``source[start:stop]`` to ``target[pos:]``, turning ``""`` into ``"``; returns the new end."""
    i = start
    while i < stop:
        target[pos] = source[i]
        pos += 1
        if unescape and source[i] == QUOTE:
            i += 1  # skip the second quote of the pair
        i += 1
    return pos


@numba.njit(cache=True)
def _is_skipped(text, start, stop, delimiter, na_count, na_text, na_offsets, na_first):
    """Whether a line is blank or a ``#`` comment; a line whose first text is a missing value spelled with
    a ``#`` (``#N/A``, as spreadsheets write one) is a record, not a comment."""
    if not is_skippable(text, start, stop):
        return False
    pos = skip_blanks(text, start, stop)  # (where the '#' is, if any)
    end = pos
    while end < stop and text[end] != delimiter:
        end += 1
    while end > pos and _is_padding(text[end - 1], delimiter):
        end -= 1
    return not is_missing_cell(text, pos, end, na_count, na_text, na_offsets, na_first)


@numba.njit(cache=True)
def _is_missing(text, start, stop, escaped, scratch, scratch_pos, na_count, na_text, na_offsets, na_first):
    """Whether the cell ``text[start:stop]`` (unescaped first when ``escaped``) is a missing-value spelling.
    An escaped cell is compared as a copy past ``scratch_pos``, needed only until the lookup."""
    if escaped:
        stop = _copy(text, start, stop, scratch, scratch_pos, escaped)
        return is_missing_cell(scratch, scratch_pos, stop, na_count, na_text, na_offsets, na_first)
    return is_missing_cell(text, start, stop, na_count, na_text, na_offsets, na_first)


@numba.njit(cache=True)
def _emit_number(column, value, column_slots, slots, values, feature_columns, first_use, nnz):
    """Write numeric column ``column``'s feature (its number, or NaN for a missing one) as entry ``nnz``;
    returns the next entry."""
    slots[nnz] = column_slots[column]
    values[nnz] = value
    feature_columns[nnz] = column
    if first_use[column] < 0:
        first_use[column] = nnz
    return nnz + 1


@numba.njit(cache=True)
def _parse_record(
    text,
    start,
    stop,
    delimiter,
    kinds,
    column_slots,
    column_seeds,
    mask,
    slots,
    values,
    feature_columns,
    value_spans,
    first_use,
    nnz,
    scratch,
    scratch_pos,
    class_count,
    class_hashes,
    class_ids,
    class_text,
    class_offsets,
    na_count,
    na_text,
    na_offsets,
    na_first,
    na_numeric,
):
    """One CSV line: ``(status, bad column, bad start, bad stop, label, weight, has label, nnz, scratch end)``.

    For a wrong column count, ``bad stop`` holds the number of fields found.
    Categorical values are copied (unescaped) to ``scratch`` for hashing and naming.
    A label that is not a number may name one of ``class_count`` classes. A cell
    that is one of the ``na_count`` missing-value spellings is missing, as an empty
    cell is; ``na_numeric`` says a spelling reads as a number.
    """
    n_columns = len(kinds)
    label = np.nan
    weight = 1.0
    labelled = False
    pending = EXAMPLE  # a bad cell is reported once the column count is known right
    bad_column = -1
    bad_start = bad_stop = 0
    column = 0
    pos = start
    while True:
        field_start = pos
        while pos < stop and _is_padding(text[pos], delimiter):
            pos += 1
        escaped = False
        if pos < stop and text[pos] == QUOTE:
            inner_start = pos + 1
            pos = inner_start
            closed = False
            while pos < stop:
                if text[pos] == QUOTE:
                    if pos + 1 < stop and text[pos + 1] == QUOTE:
                        escaped = True
                        pos += 2
                        continue
                    closed = True
                    break
                pos += 1
            if not closed:
                return UNBALANCED_QUOTE, column, field_start, stop, 0.0, 1.0, False, nnz, scratch_pos
            inner_stop = pos
            pos += 1
            while pos < stop and _is_padding(text[pos], delimiter):
                pos += 1
            if pos < stop and text[pos] != delimiter:
                return TEXT_AFTER_QUOTE, column, field_start, pos + 1, 0.0, 1.0, False, nnz, scratch_pos
        else:
            inner_start = pos
            while pos < stop and text[pos] != delimiter:
                pos += 1
            inner_stop = pos
            while inner_stop > inner_start and _is_padding(text[inner_stop - 1], delimiter):
                inner_stop -= 1
        field_stop = pos
        if pending == EXAMPLE and column < n_columns:
            kind = kinds[column]
            if inner_stop == inner_start:
                # An empty cell: a missing number (an empty label is a missing label, an empty weight 1, an empty
                # category none).
                if kind == NUMERIC:
                    nnz = _emit_number(column, np.nan, column_slots, slots, values, feature_columns, first_use, nnz)
            elif kind == CATEGORICAL:
                value_start = scratch_pos
                value_stop = _copy(text, inner_start, inner_stop, scratch, scratch_pos, escaped)
                # A blank value (hashed as nothing) or a missing-value spelling is no category.
                if not (
                    is_blank_value(scratch, value_start, value_stop)
                    or is_missing_cell(scratch, value_start, value_stop, na_count, na_text, na_offsets, na_first)
                ):
                    scratch_pos = value_stop
                    slots[nnz] = hash_token(scratch, value_start, scratch_pos, column_seeds[column]) & mask
                    values[nnz] = 1.0
                    feature_columns[nnz] = column
                    value_spans[nnz, 0] = value_start
                    value_spans[nnz, 1] = scratch_pos
                    nnz += 1
            elif kind != IGNORED:
                # Quoted numbers with "" inside are not numbers, so parsing the raw bytes is enough.
                number, end = scan_number(text, inner_start, inner_stop)
                parsed = end == inner_stop and not escaped
                # Only a cell that is no finite number can be a missing-value spelling, unless one is a number.
                missing = False
                if na_count > 0 and (na_numeric or not parsed or not np.isfinite(number)):
                    missing = _is_missing(
                        text,
                        inner_start,
                        inner_stop,
                        escaped,
                        scratch,
                        scratch_pos,
                        na_count,
                        na_text,
                        na_offsets,
                        na_first,
                    )
                if kind == NUMERIC:
                    # A missing spelling, a NaN (nan, any case) and a blank quoted cell are a missing number: the
                    # entry NaN, which the learners fill with the feature's mean.
                    blank = not parsed and is_blank_value(text, inner_start, inner_stop)  # (quoted blanks)
                    if missing or blank or (parsed and np.isnan(number)):
                        nnz = _emit_number(column, np.nan, column_slots, slots, values, feature_columns, first_use, nnz)
                    elif not parsed:
                        pending = BAD_NUMBER
                    elif not np.isfinite(number):
                        pending = NON_FINITE_NUMBER
                    elif not learnable(number):  # (polybeam.learners.values)
                        pending = TOO_LARGE_NUMBER
                    elif number != 0.0:
                        nnz = _emit_number(column, number, column_slots, slots, values, feature_columns, first_use, nnz)
                elif missing:
                    pass  # as an empty cell: no label, weight 1
                elif kind == LABEL:
                    label = number
                    labelled = True
                    if not parsed:
                        if class_count == 0:
                            pending = BAD_LABEL
                        else:
                            # Names are compared unescaped; the copy past scratch_pos is
                            # only needed until the lookup, so scratch_pos stays.
                            value, value_start, value_stop = text, inner_start, inner_stop
                            if escaped:
                                value, value_start = scratch, scratch_pos
                                value_stop = _copy(text, inner_start, inner_stop, scratch, scratch_pos, escaped)
                            class_id = find_class(
                                value,
                                value_start,
                                value_stop,
                                class_count,
                                class_hashes,
                                class_ids,
                                class_text,
                                class_offsets,
                            )
                            if class_id == NO_CLASS:
                                pending = UNKNOWN_CLASS
                            label = np.float64(class_id)
                else:  # WEIGHT
                    if not parsed:
                        pending = BAD_WEIGHT
                    elif not (np.isfinite(number) and number >= 0.0):
                        pending = INVALID_WEIGHT
                    weight = number
                if pending != EXAMPLE:
                    bad_column = column
                    bad_start = field_start
                    bad_stop = field_stop
        column += 1
        if pos >= stop:
            break
        pos += 1  # past the delimiter; a trailing delimiter opens one more (empty) field
    if column != n_columns:
        return WRONG_COLUMN_COUNT, -1, 0, column, 0.0, 1.0, False, nnz, scratch_pos
    if pending != EXAMPLE:
        return pending, bad_column, bad_start, bad_stop, 0.0, 1.0, False, nnz, scratch_pos
    return EXAMPLE, -1, 0, 0, label, weight, labelled, nnz, scratch_pos


# nogil: Beam runs several bundles per worker process in threads.
@numba.njit(cache=True, nogil=True)
def scan_csv(
    data,
    delimiter,
    kinds,
    column_slots,
    column_seeds,
    mask,
    header_first,
    class_hashes,
    class_ids,
    class_text,
    class_offsets,
    na_text,
    na_offsets,
    na_first,
    na_numeric,
):
    """Parse a block of CSV lines (``data`` a uint8 array) in one pass.

    ``kinds``, ``column_slots`` and ``column_seeds`` describe the columns;
    ``header_first`` says the block's first line is the header (skipped). The
    ``class_*`` arrays are the format's :class:`~polybeam.formats.classes.ClassNames`
    (empty without class names), the ``na_*`` ones its
    :class:`~polybeam.formats.missing.MissingSpellings`.
    """
    n = len(data)
    n_lines = count_lines(data)
    n_columns = len(kinds)
    status = np.empty(n_lines, dtype=np.int8)
    starts = np.empty(n_lines, dtype=np.int64)
    stops = np.empty(n_lines, dtype=np.int64)
    bad_columns = np.full(n_lines, -1, dtype=np.int64)
    bad_starts = np.zeros(n_lines, dtype=np.int64)
    bad_stops = np.zeros(n_lines, dtype=np.int64)
    example_lines = np.empty(n_lines, dtype=np.int64)
    labels = np.empty(n_lines, dtype=np.float64)
    weights = np.empty(n_lines, dtype=np.float64)
    has_label = np.empty(n_lines, dtype=np.bool_)
    indptr = np.empty(n_lines + 1, dtype=np.int64)
    indptr[0] = 0
    # A line emits at most one entry per column, and an empty numeric cell emits one (NaN): every entry's field
    # ends at a byte of its own (a delimiter or the line's end; the last line may lack one), so the bytes bound
    # the entries, as do columns x lines (the smaller bound on any file but one of empty fields).
    capacity = min(n, n_columns * n_lines) + 1
    slots = np.empty(capacity, dtype=np.int32)
    values = np.empty(capacity, dtype=np.float64)
    feature_columns = np.empty(capacity, dtype=np.int32)
    value_spans = np.empty((capacity, 2), dtype=np.int64)
    first_use = np.full(n_columns, -1, dtype=np.int64)
    scratch = np.empty(n, dtype=np.uint8)
    text = byte_pointer(data)
    scratch_text = byte_pointer(scratch)
    # Pointers, so that handing the class names to the per-line helper costs no reference counting.
    class_count = len(class_hashes)
    hashes_pointer = array_pointer(class_hashes)
    ids_pointer = array_pointer(class_ids)
    names_pointer = array_pointer(class_text)
    offsets_pointer = array_pointer(class_offsets)
    na_count = len(na_offsets) - 1
    na_text_pointer = array_pointer(na_text)
    na_offsets_pointer = array_pointer(na_offsets)
    na_first_pointer = array_pointer(na_first)
    n_examples = 0
    nnz = 0
    scratch_pos = 0
    pos = 0
    for line in range(n_lines):
        start = pos
        stop = line_stop(text, pos, n)
        pos = stop + 1
        starts[line] = start
        stops[line] = stop
        if (line == 0 and header_first) or _is_skipped(
            text, start, stop, delimiter, na_count, na_text_pointer, na_offsets_pointer, na_first_pointer
        ):
            status[line] = SKIPPED
            continue
        code, bad_column, bad_start, bad_stop, label, weight, labelled, line_nnz, line_scratch = _parse_record(
            text,
            start,
            stop,
            delimiter,
            kinds,
            column_slots,
            column_seeds,
            mask,
            slots,
            values,
            feature_columns,
            value_spans,
            first_use,
            nnz,
            scratch_text,
            scratch_pos,
            class_count,
            hashes_pointer,
            ids_pointer,
            names_pointer,
            offsets_pointer,
            na_count,
            na_text_pointer,
            na_offsets_pointer,
            na_first_pointer,
            na_numeric,
        )
        status[line] = code
        if code != EXAMPLE:
            # Roll the line back; a first use recorded by it is past the kept features.
            for column in range(n_columns):
                if first_use[column] >= nnz:
                    first_use[column] = -1
            bad_columns[line] = bad_column
            bad_starts[line] = bad_start
            bad_stops[line] = bad_stop
            continue
        example_lines[n_examples] = line
        labels[n_examples] = label
        weights[n_examples] = weight
        has_label[n_examples] = labelled
        nnz = line_nnz
        scratch_pos = line_scratch
        n_examples += 1
        indptr[n_examples] = nnz
    return (
        (status, starts, stops, bad_columns, bad_starts, bad_stops),
        (
            example_lines[:n_examples].copy(),
            labels[:n_examples].copy(),
            weights[:n_examples].copy(),
            has_label[:n_examples].copy(),
            indptr[: n_examples + 1].copy(),
        ),
        (
            slots[:nnz].copy(),
            values[:nnz].copy(),
            feature_columns[:nnz].copy(),
            value_spans[:nnz].copy(),
            first_use,
            scratch[:scratch_pos].copy(),
        ),
    )


@dataclass(frozen=True)
class CsvColumns:
    """What a CSV format makes of a file's columns (resolved once per header)."""

    names: tuple[str, ...]
    kinds: np.ndarray
    slots: np.ndarray
    seeds: np.ndarray
    label: int  # the label column, or -1 (prediction input without one)
    weight: int  # the weight column, or -1
    key: int = -1  # the key column (read as a category, then taken out of the features), or -1
    id: int = -1  # the ID column (read as a category, then taken out of the features), or -1
    time: int = -1  # the timestamp column (read as a category, then taken out of the features), or -1

    @property
    def count(self) -> int:
        return len(self.names)


def split_fields(line: bytes, delimiter: str) -> list[str]:
    """The fields of one CSV line (the header), by the same rules as the records.

    >>> split_fields(b' a , "b, c" ,"say ""hi"" now"\\r', ",")
    ['a', 'b, c', 'say "hi" now']
    """
    text = line.decode("utf-8", errors="replace").removeprefix("\ufeff").rstrip("\r\n")
    if not text.strip():
        return []
    padding = "".join(c for c in " \r\t" if c != delimiter)
    fields, pos = [], 0
    while True:
        while pos < len(text) and text[pos] in padding:
            pos += 1
        if text.startswith('"', pos):
            value, pos = [], pos + 1
            while True:
                close = text.find('"', pos)
                if close < 0:
                    raise ValueError(f"unbalanced double quote in CSV line {line[:200]!r}")
                value.append(text[pos:close])
                if text.startswith('"', close + 1):
                    value.append('"')
                    pos = close + 2
                    continue
                pos = close + 1
                break
            while pos < len(text) and text[pos] in padding:
                pos += 1
            if pos < len(text) and text[pos] != delimiter:
                raise ValueError(f"text after a closing double quote in CSV line {line[:200]!r}")
            fields.append("".join(value))
        else:
            end = text.find(delimiter, pos)
            end = len(text) if end < 0 else end
            fields.append(text[pos:end].rstrip(padding))
            pos = end
        if pos >= len(text):
            return fields
        pos += 1


@dataclass(frozen=True)
class CsvFormat(HashedFormat):
    """Parse CSV text blocks into example batches.

    Parameters
    ----------
    bits, seed : int
        Hashed feature space of ``2**bits`` slots, and the hash seed.
    labels : {"real", "binary", "multiclass", "any"}
        Which labels are acceptable; others become dead letters. An empty label
        cell is a missing label, which only ``"any"`` (prediction) accepts.
    classes : int
        With ``labels="multiclass"``, labels outside 1 ... ``classes`` are dead
        letters (0: no bound, or the number of ``label_names``).
    label_names : tuple of str
        Class names the label cells may hold instead of class numbers; the
        i-th name is class i + 1. Cells are compared after unquoting.
    label_column, weight_column : str or int, optional
        The label column (default: the first) and the importance weight column
        (default: none, weight 1), by header name or 0-based position. Without a
        header the columns are named ``"1"`` ... ``"d"`` (or ``column_names``).
        With ``labels="any"`` (prediction input) a label column named by name
        that the file lacks is no label: every example's label is missing, as
        Parquet reads a table without its label column.
    delimiter : str
        One character between fields.
    has_header : bool
        Whether the file's first line names the columns. Blocks after the first
        need that line passed as ``header``.
    categorical_columns, ignore_columns : tuple of str or int
        Columns whose values are categories, and columns to leave out.
    na_values : tuple of str
        Spellings of a missing value besides the empty cell (default
        :data:`~polybeam.formats.missing.DEFAULT_NA_VALUES`: pandas' ``NA``,
        ``NaN``, ``null``, ``#N/A``, ... and ``?``). A cell is compared trimmed
        and unquoted, so ``"NA"`` is missing too; a missing cell is what an
        empty cell is: a missing number (the value NaN) in a numeric column, no
        category in a categorical one, a missing label, a weight of 1 (see
        :mod:`polybeam.formats.missing`). ``()``: only the empty cell (and, in
        a numeric column, a NaN) is missing.
    key_column : str or int, optional
        A column whose value is each example's key (``batch.key_codes``;
        ``--key column:NAME``), not a feature. An empty cell is the empty key.
    id_column : str or int, optional
        A column whose value is each example's ID (``batch.tags``, as VW's
        tags: predictions carry it), not a feature. An empty cell is no ID
        (None).
    timestamp_column : str or int, optional
        A column whose value is each example's event time (``batch.timestamps``;
        ``--timestamp column:NAME``), not a feature: a number since the epoch or
        ISO-8601 (see :mod:`polybeam.formats.timestamps`). A record whose time
        is missing, unreadable or outside the years 1 to 9999 is a dead letter.
    timestamp_unit : {None, "s", "ms", "us", "ns"}
        The unit of the timestamp column's numbers (``--timestamp-unit``);
        None is seconds.
    column_names : tuple of str
        Without a header: the names of the columns, in order (default: ``"1"``
        ... ``"d"``); a file with another number of columns cannot be read.

    Without a header, the number of columns comes from ``header`` (the file's
    first line, which the reader passes to every block: see ``carried_lines``)
    when it is a record, else from the block's first record. So every block of
    a file counts the columns alike, and a bad line at the start of a block
    is one dead letter, not the reason every other line of the block is one.
    Header problems (a missing label column, ...) are errors naming ``source``.
    """

    name: ClassVar[str] = "csv"

    label_column: str | int | None = None
    weight_column: str | int | None = None
    delimiter: str = ","
    has_header: bool = True
    categorical_columns: tuple[str | int, ...] = field(default=())
    ignore_columns: tuple[str | int, ...] = field(default=())
    key_column: str | int | None = None
    id_column: str | int | None = None
    timestamp_column: str | int | None = None
    na_values: tuple[str, ...] = DEFAULT_NA_VALUES
    timestamp_unit: str | None = None
    column_names: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        super().__post_init__()
        check_unit(self.timestamp_unit)
        object.__setattr__(self, "na_values", check_na_values(self.na_values))
        clash = [name for name in self.label_names if self.missing_spellings.is_missing(name)]
        if clash:
            raise ValueError(
                f"label name {clash[0]!r} is also a spelling of a missing value (na_values): a label {clash[0]!r} "
                "would be a missing label; leave it out of na_values (--na-values)"
            )
        names = (self.column_names,) if isinstance(self.column_names, str) else tuple(self.column_names)
        if any(not isinstance(name, str) for name in names) or len(set(names)) != len(names):
            raise ValueError(f"column_names must be distinct strings, got {self.column_names!r}")
        if names and self.has_header:
            raise ValueError("column_names names the columns of files without a header (has_header=False)")
        object.__setattr__(self, "column_names", names)
        if not isinstance(self.delimiter, str) or len(self.delimiter.encode("utf-8")) != 1:
            raise ValueError(f"delimiter must be a single ASCII character, got {self.delimiter!r}")
        if self.delimiter in '"\r\n':
            raise ValueError(f"delimiter cannot be a double quote or a line break, got {self.delimiter!r}")
        for option in ("categorical_columns", "ignore_columns"):
            value = getattr(self, option)
            if isinstance(value, (str, int)):
                value = (value,)
            object.__setattr__(self, option, tuple(value))
            for column in getattr(self, option):
                _check_column_reference(column, option)
        for option in ("label_column", "weight_column", "key_column", "id_column", "timestamp_column"):
            if getattr(self, option) is not None:
                _check_column_reference(getattr(self, option), option)

    @property
    def missing_spellings(self) -> MissingSpellings:
        """The lookup table of ``na_values`` (built once per tuple of spellings)."""
        return missing_spellings(self.na_values)

    @property
    def header_lines(self) -> int:
        """How many lines at the top of a file are not records."""
        return 1 if self.has_header else 0

    @property
    def carried_lines(self) -> int:
        """How many lines at the top of a file every block needs as ``header``: the header, or
        without one the first record, whose number of fields is the number of columns."""
        return 1

    def columns(self, header: bytes | None = None, first_record: bytes | None = None) -> CsvColumns:
        """Resolve the columns from the header line (or, without one, a record); raises ``ValueError``."""
        if self.has_header:
            if header is None:
                raise ValueError("this CSV format has a header: pass the file's first line as header")
            names = header_fields(header, self.delimiter)
            if not names:
                raise ValueError("the CSV header line is empty")
        else:
            sample = header if header is not None else first_record
            if sample is None:
                raise ValueError("cannot tell the number of CSV columns without a record")
            count = len(split_fields(sample, self.delimiter))
            if self.column_names and count != len(self.column_names):
                raise ValueError(
                    f"the records have {count} columns but column_names names {len(self.column_names)}: "
                    f"{list(self.column_names)}"
                )
            names = list(self.column_names) or [str(i + 1) for i in range(count)]
        return _resolve_columns(self, tuple(names))

    def label_texts(self, data: bytes, header: bytes | None = None) -> list[str]:
        """The label cells of the records in ``data`` (trimmed and unquoted; empty ones left out), for a
        launcher's sample; ``data`` starts with the header unless ``header`` is given.

        >>> CsvFormat(label_column="y").label_texts(b'a,y\\n1,yes\\n2,\\n3," no"\\n')
        ['yes', ' no']
        """
        lines = record_lines(data)
        if self.has_header and header is None:
            if not lines:
                return []
            header, lines = lines[0], lines[1:]
        if not lines:
            return []
        label = self.columns(header, lines[0]).label
        if label < 0:  # (prediction input without its label column)
            return []
        texts = []
        for line in lines:
            try:
                fields = split_fields(line, self.delimiter)
            except ValueError:  # a damaged record: the read makes it a dead letter
                continue
            if label < len(fields) and fields[label].strip():
                texts.append(fields[label])
        return texts

    def _is_skipped(self, data: np.ndarray, start: int, stop: int) -> bool:
        """Whether the line ``data[start:stop]`` is blank or a comment (as the kernel decides)."""
        spellings = self.missing_spellings
        delimiter = np.uint8(ord(self.delimiter))
        return bool(_is_skipped(data, start, stop, delimiter, len(spellings.values), *spellings.arrays))

    def parse(
        self,
        data: bytes,
        *,
        source: str = "<memory>",
        offset: int = 0,
        first_line: int | None = 1,
        header: bytes | None = None,
    ) -> ParsedBlock:
        """Parse a block of complete lines starting at byte ``offset`` (line ``first_line``) of ``source``.

        The block's first line is the header (and skipped) when the format has a
        header and ``offset`` is 0; other blocks need ``header``.
        """
        check_position(offset, first_line)
        data = bytes(data)
        array = as_bytes_array(data)
        header_first = self.has_header and offset == 0
        starts, stops = line_spans(array)
        if header_first and header is None and len(starts):
            header = data[starts[0] : stops[0]]
        first_record = next(
            (
                i
                for i in range(1 if header_first else 0, len(starts))
                if not self._is_skipped(array, starts[i], stops[i])
            ),
            None,
        )
        if first_record is None:  # nothing but a header, blank lines and comments
            block = LineBlock(data, starts, stops, source, offset, first_line)
            empty = replace(ExampleBatch.empty(self.bits), row_ids=np.zeros(0, dtype=np.int64), source=source)
            return finish_block(block, np.full(len(starts), SKIPPED, dtype=np.int8), None, empty, labels="any")
        if not self.has_header and header is not None and self._is_skipped(as_bytes_array(header), 0, len(header)):
            header = None  # a file that starts with a comment: count the columns of the block's first record
        sample = None
        if header is None:  # (sliced only when needed: a record may be 100 MB)
            sample = data[starts[first_record] : stops[first_record]]
        try:
            columns = self.columns(header, sample)
        except ValueError as error:
            # A header without the configured columns makes the whole file unreadable: say which file, and
            # when its first line is a record (a file of a glob without the header the others have), that too.
            said = isinstance(error, RecordAsHeaderError)
            raise InputFileError(f"{source}: {error}{'' if said else _headerless(header, self)}") from None
        (
            (status, starts, stops, bad_columns, bad_starts, bad_stops),
            (example_lines, labels, weights, has_label, indptr),
            (slots, values, feature_columns, value_spans, first_use, scratch),
        ) = scan_csv(
            array,
            np.uint8(ord(self.delimiter)),
            columns.kinds,
            columns.slots,
            columns.seeds,
            np.int64(slot_mask(self.bits)),
            header_first,
            *self.class_names.arrays,
            *self.missing_spellings.arrays,
            self.missing_spellings.numeric,
        )
        block = LineBlock(data, starts, stops, source, offset, first_line)
        taken = {}
        if columns.key >= 0 or columns.id >= 0 or columns.time >= 0:
            (indptr, slots, values, feature_columns, value_spans, first_use), taken = _take_out(
                columns, scratch, indptr, slots, values, feature_columns, value_spans, first_use, self.timestamp_unit
            )
        time_problems = taken.pop("time_problems", None)
        batch = ExampleBatch(
            labels=labels,
            weights=weights,
            indptr=indptr,
            indices=slots,
            values=values,
            bits=self.bits,
            row_ids=offset + starts[example_lines],
            source=source,
            **taken,
        )

        def reason_of(line: int, code: int) -> str:
            if code == WRONG_COLUMN_COUNT:
                return f"expected {columns.count} columns, found {bad_stops[line]}"
            if code == UNBALANCED_QUOTE:
                return "unbalanced double quote (a CSV record must fit on one line)"
            column = int(bad_columns[line])
            cell = token_text(data, bad_starts[line], bad_stops[line])
            if code == TEXT_AFTER_QUOTE:
                where = repr(columns.names[column]) if column < columns.count else f"number {column + 1}"
                return f"text after the closing double quote in column {where}: {cell}"
            if code == BAD_NUMBER:
                return f"column {columns.names[column]!r}: not a number: {cell}"
            if code == NON_FINITE_NUMBER:
                return f"column {columns.names[column]!r}: non-finite value: {cell}"
            if code == TOO_LARGE_NUMBER:
                return f"column {columns.names[column]!r}: {TOO_LARGE_REASON}{cell}"
            if code == BAD_LABEL:
                return f"label column {columns.names[column]!r}: not a number: {cell}"
            if code == UNKNOWN_CLASS:
                # (a cell may be 100 MB: the reason quotes its start only)
                cell_stop = min(bad_stops[line], bad_starts[line] + 4096)
                value = _cell_value(data[bad_starts[line] : cell_stop], self.delimiter)
                return f"label column {columns.names[column]!r}: {self.class_names.unknown_reason(value)}"
            if code == BAD_WEIGHT:
                return f"weight column {columns.names[column]!r}: not a number: {cell}"
            return f"weight column {columns.names[column]!r}: importance weight must be finite and >= 0, got {cell}"

        def names(features: np.ndarray | None) -> dict[int, str]:
            return _names(columns, slots, feature_columns, value_spans, first_use, scratch, self.bits, features)

        parsed = finish_block(
            block,
            status,
            reason_of,
            batch,
            labels=self.labels,
            classes=self.classes,
            label_names=self.label_names,
            refused_codes={UNKNOWN_CLASS: None},
            has_label=has_label,
            names=names,
        )
        if time_problems is None:
            return parsed
        by_row = {int(batch.row_ids[example]): why for example, why in time_problems.items()}
        return reject_untimed(parsed, by_row, block.raw_finder(parsed.batch))


def _take_out(columns, scratch, indptr, slots, values, feature_columns, value_spans, first_use, time_unit=None):
    """Move the key and ID columns' features (read as categories) out of the features: the key
    into key codes, the ID into ``tags`` (None where the cell is empty).

    All numpy over whole arrays: no Python per example.
    """
    n = len(indptr) - 1
    example_of = np.repeat(np.arange(n), np.diff(indptr))
    taken = [column for column in (columns.key, columns.id, columns.time) if column >= 0]
    keep = ~np.isin(feature_columns, taken)
    spans = {}
    for column in taken:
        spans[column] = np.full((n, 2), -1, dtype=np.int64)
        is_column = feature_columns == column
        spans[column][example_of[is_column]] = value_spans[is_column]
    kept_indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(example_of[keep], minlength=n), out=kept_indptr[1:])
    renumbered = np.cumsum(keep) - 1  # a kept feature's index once the taken features are gone
    if len(renumbered):  # (a block whose records all failed has no feature at all)
        first_use = np.where(first_use >= 0, renumbered[np.maximum(first_use, 0)], -1)
    first_use[taken] = -1
    arrays = (kept_indptr, slots[keep], values[keep], feature_columns[keep], value_spans[keep], first_use)
    out = {}
    if columns.key >= 0:
        out["key_codes"], out["key_names"] = key_codes(scratch, spans[columns.key])
    if columns.id >= 0:
        out["tags"] = span_texts(scratch, spans[columns.id])
    if columns.time >= 0:
        unit = time_unit or "s"
        out["timestamps"], status = parse_timestamps(scratch, spans[columns.time], UNITS[unit])
        out["time_problems"] = _time_problems(scratch, spans[columns.time], status, columns.names[columns.time], unit)
    return arrays, out


def _time_problems(scratch, spans, status, column: str, unit: str = "s") -> dict:
    """Example index -> why its time is not one (Python only for the examples that have such a problem)."""
    bad = np.flatnonzero(status != TIME_OK)
    cells = span_texts(scratch, spans[bad])
    return {
        int(example): problem(int(status[example]), column, (cell or "").strip(), unit)
        for example, cell in zip(bad, cells)
    }


class RecordAsHeaderError(ValueError):
    """A CSV format with a header read a first line whose every field is a number."""


def header_fields(header: bytes, delimiter: str) -> list[str]:
    """The column names of a CSV header line; a line whose every field is a number is refused
    (:class:`RecordAsHeaderError`): read as names, the first record would be lost and its columns renamed.

    >>> header_fields(b"y,10,b", ",")
    ['y', '10', 'b']
    """
    names = split_fields(header, delimiter)
    if names and all(map(_is_number, names)):
        raise RecordAsHeaderError(
            "its first line looks like a record, not a header (every field a number: "
            f"{short_text(header.decode('utf-8', 'replace').strip(), 60)}): every file of a CSV input must start with "
            "the same header line (--no-csv-header, has_header=False, if none has one)"
        )
    return names


def _is_number(text: str) -> bool:
    """Whether a header field reads as a number (``"1.5"``, ``" -2"``, ``"nan"``).

    >>> _is_number(" -2"), _is_number("x1")
    (True, False)
    """
    try:
        float(text)
    except ValueError:
        return False
    return True


def _headerless(header: bytes | None, fmt: CsvFormat) -> str:
    """``"; its first line looks like a record, ..."`` when most fields of a header line are numbers, else ``""``.

    >>> _headerless(b"1,1700536400,0.5,x", CsvFormat(label_column="y"))[:45]
    '; its first line looks like a record, not a h'
    >>> _headerless(b"y,ts,a,b", CsvFormat(label_column="y"))
    ''
    """
    if not fmt.has_header or not header:
        return ""
    fields = split_fields(header, fmt.delimiter)
    if 2 * sum(map(_is_number, fields)) <= len(fields):
        return ""
    return (
        "; its first line looks like a record, not a header: every file of a CSV input must start with the "
        "same header line (--no-csv-header if none has one)"
    )


def span_texts(buffer: np.ndarray, spans: np.ndarray) -> np.ndarray:
    """The text of each ``(start, stop)`` span of ``buffer`` as an object array, None where ``start < 0``
    (decoded at once, not per example).

    >>> span_texts(np.frombuffer(b"r1r22", np.uint8), np.array([[0, 2], [-1, -1], [2, 5]])).tolist()
    ['r1', None, 'r22']
    """
    texts = np.full(len(spans), None, dtype=object)
    present = np.flatnonzero(spans[:, 0] >= 0)
    if len(present):
        texts[present] = decode_spans(buffer, spans[present, 0], spans[present, 1])
    return texts


def _cell_value(field: bytes, delimiter: str) -> str:
    """The value of one field of a record (its padding trimmed, its quotes undone)."""
    value = field.strip(bytes(c for c in b" \r\t" if c != ord(delimiter)))
    if value.startswith(b'"'):
        value = value[1:-1].replace(b'""', b'"')
    return value.decode("utf-8", errors="replace")


def _check_column_reference(column, option: str) -> None:
    if isinstance(column, bool) or not isinstance(column, (str, int, np.integer)):
        raise TypeError(f"{option} must name columns by header name (str) or 0-based position (int), got {column!r}")
    if not isinstance(column, str) and column < 0:
        raise ValueError(f"{option} positions are 0-based and >= 0, got {column}")


@functools.lru_cache(maxsize=64)
def _resolve_columns(fmt: CsvFormat, names: tuple[str, ...]) -> CsvColumns:
    """Map the format's column options onto the names of a file's columns."""

    def position(column, option: str) -> int:
        if isinstance(column, str):
            matches = [i for i, name in enumerate(names) if name == column]
            if not matches:
                raise ValueError(f"{option} {column!r} is not a column; the columns are {list(names)}")
            if len(matches) > 1:
                raise ValueError(f"{option} {column!r} names {len(matches)} columns; column names must be unique")
            return matches[0]
        if column >= len(names):
            raise ValueError(f"{option} {column} is out of range for {len(names)} columns")
        return int(column)

    if fmt.labels == "any" and isinstance(fmt.label_column, str) and fmt.label_column not in names:
        label = -1  # prediction input without its label column: no label
    else:
        label = 0 if fmt.label_column is None else position(fmt.label_column, "label_column")
    weight = -1 if fmt.weight_column is None else position(fmt.weight_column, "weight_column")
    if weight >= 0 and weight == label:
        raise ValueError(f"the label and weight columns are the same column, {names[label]!r}")
    categorical = {position(c, "categorical_columns") for c in fmt.categorical_columns}
    ignored = {position(c, "ignore_columns") for c in fmt.ignore_columns}
    key = -1 if fmt.key_column is None else position(fmt.key_column, "key_column")
    for role, column in (("label", label), ("weight", weight)):
        if column >= 0 and (column in categorical or column in ignored):
            raise ValueError(f"the {role} column {names[column]!r} cannot also be categorical or ignored")
    if key >= 0 and (key in (label, weight) or key in categorical or key in ignored):
        raise ValueError(f"the key column {names[key]!r} cannot also be the label, the weight, categorical or ignored")
    identity = -1 if fmt.id_column is None else position(fmt.id_column, "id_column")
    if identity >= 0 and (identity in (label, weight, key) or identity in categorical or identity in ignored):
        raise ValueError(
            f"the ID column {names[identity]!r} cannot also be the label, the weight, the key, categorical or ignored"
        )
    time = -1 if fmt.timestamp_column is None else position(fmt.timestamp_column, "timestamp_column")
    if time >= 0 and (time in (label, weight, key, identity) or time in categorical or time in ignored):
        raise ValueError(
            f"the timestamp column {names[time]!r} cannot also be the label, the weight, the key, "
            "the ID, categorical or ignored"
        )
    if categorical & ignored:
        both = sorted(names[c] for c in categorical & ignored)
        raise ValueError(f"columns {both} are both categorical and ignored")
    kinds = np.full(len(names), NUMERIC, dtype=np.int8)
    kinds[sorted(ignored)] = IGNORED
    # The key and the ID are read as categories (their text is kept), then taken out of the features.
    kinds[sorted(categorical | {column for column in (key, identity, time) if column >= 0})] = CATEGORICAL
    if label >= 0:
        kinds[label] = LABEL
    if weight >= 0:
        kinds[weight] = WEIGHT
    slots = np.array([feature_slot(name, fmt.bits, "", fmt.seed) for name in names], dtype=np.int32)
    seeds = np.array([hash_string(name, fmt.seed) for name in names], dtype=np.int64)
    for array in (kinds, slots, seeds):
        array.setflags(write=False)
    return CsvColumns(names, kinds, slots, seeds, label, weight, key, identity, time)


def _names(columns, slots, feature_columns, value_spans, first_use, scratch, bits, features=None) -> dict[int, str]:
    """Slot -> ``column`` or ``column=value`` for the block, the first name of a slot winning.

    ``features`` masks the features of the examples kept (None: all of them).
    """
    is_categorical = columns.kinds[feature_columns] == CATEGORICAL
    # (first feature index, slot, name) for numeric columns: the kernel knows
    # each column's first use, unless examples were dropped since...
    if features is None:
        used = np.flatnonzero(first_use >= 0)
        firsts = first_use[used]
    else:
        numeric = np.flatnonzero(features & ~is_categorical)
        used, first = np.unique(feature_columns[numeric], return_index=True)
        firsts = numeric[first]
    candidates = [(int(f), int(columns.slots[c]), columns.names[c]) for f, c in zip(firsts, used)]
    # ...and for categorical values, one numpy pass to find each slot's first feature.
    categorical = np.flatnonzero(is_categorical if features is None else is_categorical & features)
    if len(categorical):
        features = categorical[first_occurrences(slots[categorical], bits)]
        texts = decode_spans(scratch, value_spans[features, 0], value_spans[features, 1])
        candidates += [
            (int(f), int(s), f"{columns.names[c]}={text}")
            for f, s, c, text in zip(features, slots[features].tolist(), feature_columns[features].tolist(), texts)
        ]
    names: dict[int, str] = {}
    for _, slot, name in sorted(candidates):
        names.setdefault(slot, name)
    return names
