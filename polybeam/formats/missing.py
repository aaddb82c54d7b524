"""Missing values in delimited text: which spellings of a cell mean "no value".

An empty cell is always missing. Beyond it, text files spell a missing value in
many ways (R's ``NA``, pandas' ``NaN``, a spreadsheet's ``#N/A``, UCI's ``?``),
and a reader that took them for text would turn every one into a dead letter
(``not a number: 'NA'``) or, in a categorical column, into a category ``NA``
that the model learns. So CSV takes a list of spellings, ``na_values``, whose
default :data:`DEFAULT_NA_VALUES` is pandas' ``read_csv`` default plus ``?``.

A cell is compared after its padding is trimmed and its quotes undone, so a
quoted ``"NA"`` is missing too (as in pandas and Arrow's CSV reader); to keep
``NA`` as text, leave it out of ``na_values``. Comparisons are exact, byte
for byte (``na`` is not ``NA``).

A missing cell is a missing number in a numeric column (the value NaN, which
the learners fill with the feature's mean over the training examples), no
category in a categorical one, a missing label (only prediction accepts it), a
weight of 1, no key (the empty key), no ID and no time (a dead letter when
event times are needed), exactly as an empty cell.

The text kernels look a cell up without leaving numba: the spellings sit in
one byte array, and a table of the bytes they start with rejects most cells
at once.

Examples
--------
>>> spellings = missing_spellings(("NA", "?", "n/a"))
>>> spellings.is_missing("NA"), spellings.is_missing("na"), spellings.is_missing("?")
(True, False, True)
>>> "NA" in DEFAULT_NA_VALUES and "?" in DEFAULT_NA_VALUES and "" not in DEFAULT_NA_VALUES
True
>>> check_na_values("NA")
Traceback (most recent call last):
...
TypeError: na_values must be a sequence of spellings, not a single string: 'NA'
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numba
import numpy as np

from polybeam.formats.classes import sequence_of_texts
from polybeam.formats.numbers import parse_number
from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernels below)

# pandas.read_csv's default na_values (pandas 2.x, without the empty string, which is always missing),
# and "?", how the UCI repository's data sets mark a missing value.
DEFAULT_NA_VALUES = (
    "#N/A",
    "#N/A N/A",
    "#NA",
    "-1.#IND",
    "-1.#QNAN",
    "-NaN",
    "-nan",
    "1.#IND",
    "1.#QNAN",
    "<NA>",
    "N/A",
    "NA",
    "NULL",
    "NaN",
    "None",
    "n/a",
    "nan",
    "null",
    "?",
)

# Blank space a cell's value is trimmed of: what the CSV reader trims around a field.
_PADDING = " \t\r"


def check_na_values(na_values) -> tuple[str, ...]:
    """Validate ``na_values`` (strings without line breaks); returns them trimmed, without the empty one
    (an empty cell is always missing) and without repeats, in their order."""
    values = sequence_of_texts(na_values, "na_values", "spellings")
    kept: list[str] = []
    for value in values:
        if not isinstance(value, str):
            raise TypeError(f"na_values must be strings, got {value!r}")
        if "\n" in value:
            raise ValueError(f"na_values cannot contain a line break, got {value!r}")
        value = value.strip(_PADDING)  # (cells are compared trimmed: a padded spelling would never match)
        if value and value not in kept:
            kept.append(value)
    return tuple(kept)


@dataclass(frozen=True, eq=False)
class MissingSpellings:
    """The lookup table of ``na_values`` (see :func:`missing_spellings`).

    Spelling ``i`` is ``text[offsets[i]:offsets[i + 1]]`` in UTF-8; ``first_bytes[c]`` is 1 when a
    spelling starts with byte ``c``; ``numeric`` whether a spelling reads as a finite number (``-999``), so
    that a cell that parses as a number must still be looked up.
    """

    values: tuple[str, ...]
    text: np.ndarray
    offsets: np.ndarray
    first_bytes: np.ndarray
    numeric: bool

    @property
    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(text, offsets, first_bytes)``, the arguments of :func:`is_missing_cell`."""
        return self.text, self.offsets, self.first_bytes

    def is_missing(self, value: str | bytes) -> bool:
        """Whether a cell's value (trimmed and unquoted) is one of the spellings (a Python helper)."""
        raw = np.frombuffer(value.encode("utf-8") if isinstance(value, str) else bytes(value), dtype=np.uint8)
        return bool(is_missing_cell(raw, 0, len(raw), len(self.values), *self.arrays))


@functools.lru_cache(maxsize=64)
def missing_spellings(na_values: tuple[str, ...]) -> MissingSpellings:
    """The lookup table of ``na_values`` (validated), built once per tuple of spellings."""
    values = check_na_values(na_values)
    encoded = [value.encode("utf-8") for value in values]
    text = np.frombuffer(b"".join(encoded), dtype=np.uint8).copy()
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum([len(raw) for raw in encoded], out=offsets[1:])
    first_bytes = np.zeros(256, dtype=np.uint8)  # (uint8, not bool: kernels read it through a raw pointer)
    first_bytes[[raw[0] for raw in encoded]] = 1
    numeric = any(_is_finite_number(value) for value in values)
    table = MissingSpellings(values, text, offsets, first_bytes, numeric)
    for array in table.arrays:
        array.setflags(write=False)
    return table


def _is_finite_number(text: str) -> bool:
    try:
        return bool(np.isfinite(parse_number(text)))
    except ValueError:
        return False


NO_SPELLINGS = missing_spellings(())


@numba.njit(cache=True)
def is_missing_cell(data, start, stop, count, text, offsets, first_bytes):
    """Whether ``data[start:stop]`` is exactly one of ``count`` spellings (the arrays of a
    :class:`MissingSpellings`, or raw pointers to them). An empty cell is not looked up: it is missing
    anyway."""
    if count == 0 or stop <= start or first_bytes[data[start]] == 0:
        return False
    length = stop - start
    for spelling in range(count):
        spelling_start = offsets[spelling]
        if offsets[spelling + 1] - spelling_start != length:
            continue
        same = True
        for i in range(length):
            if data[start + i] != text[spelling_start + i]:
                same = False
                break
        if same:
            return True
    return False


@numba.njit(cache=True)
def is_blank_value(data, start, stop):
    """Whether ``data[start:stop]`` holds nothing but bytes the hashing ignores (space and control bytes),
    so that as a category it would be no value at all."""
    for i in range(start, stop):
        if data[i] > 32:
            return False
    return True
