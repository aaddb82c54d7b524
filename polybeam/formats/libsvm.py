"""LIBSVM / SVMlight text: ``label [qid:N] index:value ... [# comment]``.

One numba kernel scans a whole block of lines and writes labels, slots and
values into preallocated arrays; Python only touches the rare bad lines.

* The label is a number (checked against the task by ``labels``).
* Indices are positive integers; an index below ``2**bits`` is its own slot,
  larger ones are hashed (see :mod:`polybeam.learners.hashing`).
* Values are finite numbers; explicit zeros are dropped. Repeated indices are
  kept, and the learners sum them. ``nan`` (in any case: ``NaN``, ``NAN``) is
  a missing value, kept as the value NaN, which the learners fill with the
  feature's mean over the training examples; an infinite value rejects the
  line.
* ``qid:N`` right after the label is accepted and ignored; ``#`` starts a
  comment anywhere in a line.

Examples
--------
>>> parsed = LibsvmFormat(bits=18).parse(b"1 3:0.5 7:2 # first\\n-1 qid:4 3:1\\n0 -2:1\\n")
>>> parsed.records, len(parsed.batch), parsed.batch.labels.tolist()
(3, 2, [1.0, -1.0])
>>> parsed.batch.row(0)
(array([3, 7], dtype=int32), array([0.5, 2. ]))
>>> parsed.batch.row_ids.tolist()
[0, 20]
>>> letter = parsed.dead_letters[0]
>>> letter.line, letter.offset, letter.raw, letter.reason
(3, 33, '0 -2:1', 'feature index must be >= 1')
>>> LibsvmFormat(bits=18, zero_based=True).parse(b"1 0:0.5 6:2\\n").batch.row(0)  # the same features
(array([1, 7], dtype=int32), array([0.5, 2. ]))
>>> missing = LibsvmFormat(bits=18).parse(b"1 3:nan 7:2\\n1 3:inf\\n")
>>> missing.batch.row(0), missing.dead_letters[0].reason
((array([3, 7], dtype=int32), array([nan,  2.])), "non-finite feature value: '3:inf'")
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numba
import numpy as np

from polybeam.formats.numbers import scan_number
from polybeam.formats.pointers import byte_pointer
from polybeam.formats.records import ParsedBlock
from polybeam.formats.settings import HashedFormat
from polybeam.formats.text import (
    EXAMPLE,
    FIRST_ERROR,
    HASH,
    SKIPPED,
    LineBlock,
    as_bytes_array,
    check_position,
    count_lines,
    finish_block,
    is_blank,
    line_stop,
    record_lines,
    skip_blanks,
    token_text,
)
from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernels below)
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.hashing import libsvm_slot_kernel, slot_mask
from polybeam.learners.values import NON_FINITE_REASON, TOO_LARGE_REASON, learnable

# Longer indices would overflow the 64-bit integer they are read into.
MAX_INDEX_DIGITS = 18

MISSING_LABEL = FIRST_ERROR
BAD_LABEL = FIRST_ERROR + 1
BAD_FEATURE = FIRST_ERROR + 2
INDEX_TOO_SMALL = FIRST_ERROR + 3
INDEX_TOO_LONG = FIRST_ERROR + 4
BAD_VALUE = FIRST_ERROR + 5
NON_FINITE_VALUE = FIRST_ERROR + 6
BAD_QID = FIRST_ERROR + 7
ZERO_INDEX = FIRST_ERROR + 8
TOO_LARGE_VALUE = FIRST_ERROR + 9

# The reasons quoting the offending token say so with a trailing ": ".
REASONS = {
    MISSING_LABEL: "missing label",
    BAD_LABEL: "label is not a number: ",
    BAD_FEATURE: "feature must be index:value, got ",
    INDEX_TOO_SMALL: "feature index must be >= 1",
    ZERO_INDEX: "feature index 0 in a file numbered from 1: the file numbers its features from 0 (as "
    "scikit-learn's dump_svmlight_file writes them); read it as numbered from 0 (--zero-based, zero_based=True)",
    INDEX_TOO_LONG: f"feature index has more than {MAX_INDEX_DIGITS} digits",
    BAD_VALUE: "feature value is not a number: ",
    NON_FINITE_VALUE: NON_FINITE_REASON,
    TOO_LARGE_VALUE: TOO_LARGE_REASON,
    BAD_QID: "qid must be a non-negative integer, got ",
}


@numba.njit(cache=True)
def _ends_token(data, pos, stop):
    return pos == stop or is_blank(data[pos]) or data[pos] == HASH


@numba.njit(cache=True)
def _token_stop(data, pos, stop):
    while not _ends_token(data, pos, stop):
        pos += 1
    return pos


@numba.njit(cache=True)
def _starts_qid(data, pos, stop):
    # b"qid:" byte by byte
    return (
        stop - pos >= 4 and data[pos] == 113 and data[pos + 1] == 105 and data[pos + 2] == 100 and data[pos + 3] == 58
    )


@numba.njit(cache=True)
def _parse_line(data, start, stop, mask, seed, first_index, slots, values, nnz):
    """One line: ``(status, bad token start, bad token stop, label, nnz after)``.

    ``first_index`` is the number of the first feature (1, or 0 for a file numbered from 0): index ``i`` is
    feature ``i - first_index + 1``, so that both numberings give a feature the same slot.

    Features go to ``slots[nnz:]`` / ``values[nnz:]``; on a bad line the caller
    keeps its old ``nnz``, which rolls the line's features back.
    """
    pos = skip_blanks(data, start, stop)
    if pos == stop or data[pos] == HASH:
        return SKIPPED, 0, 0, 0.0, nnz
    label, end = scan_number(data, pos, stop)
    if end == pos or not _ends_token(data, end, stop):
        token_stop = _token_stop(data, pos, stop)
        for i in range(pos, token_stop):
            if data[i] == 58:  # ':' -- the line starts with a feature
                return MISSING_LABEL, pos, token_stop, 0.0, nnz
        return BAD_LABEL, pos, token_stop, 0.0, nnz
    pos = end
    first_feature = True
    while True:
        pos = skip_blanks(data, pos, stop)
        if pos == stop or data[pos] == HASH:
            break
        token = pos
        if first_feature and _starts_qid(data, pos, stop):
            # Ranking query ids (SVMlight) carry no feature.
            pos += 4
            digits_start = pos
            while pos < stop and 48 <= data[pos] <= 57:
                pos += 1
            if pos == digits_start or not _ends_token(data, pos, stop):
                return BAD_QID, token, _token_stop(data, token, stop), 0.0, nnz
            first_feature = False
            continue
        first_feature = False
        negative = data[pos] == 45  # '-'
        if negative:
            pos += 1
        index = np.int64(0)
        digits = 0
        any_digit = False
        while pos < stop and 48 <= data[pos] <= 57:
            any_digit = True
            if digits < MAX_INDEX_DIGITS:
                index = index * 10 + (data[pos] - 48)
            if index != 0:
                digits += 1  # leading zeros do not count
            pos += 1
        if not any_digit or pos == stop or data[pos] != 58:
            return BAD_FEATURE, token, _token_stop(data, token, stop), 0.0, nnz
        if digits > MAX_INDEX_DIGITS:
            return INDEX_TOO_LONG, token, _token_stop(data, token, stop), 0.0, nnz
        if negative:
            return INDEX_TOO_SMALL, token, _token_stop(data, token, stop), 0.0, nnz
        if index < first_index:
            return ZERO_INDEX, token, _token_stop(data, token, stop), 0.0, nnz
        pos += 1
        # Most values are short integers (binary features are '1'): reading
        # those here rather than in scan_number is ~15% faster overall.
        end = pos
        whole = 0
        while end < stop and end - pos < 15 and 48 <= data[end] <= 57:
            whole = whole * 10 + (data[end] - 48)
            end += 1
        if end > pos and _ends_token(data, end, stop):
            value = np.float64(whole)  # below 10**15, so exact
        else:
            value, end = scan_number(data, pos, stop)
        if end == pos or not _ends_token(data, end, stop):
            return BAD_VALUE, token, _token_stop(data, token, stop), 0.0, nnz
        if np.isinf(value):
            return NON_FINITE_VALUE, token, end, 0.0, nnz
        # (NaN, ``nan`` in any case, is a missing value: kept as the entry NaN, which learners fill)
        if not (learnable(value) or np.isnan(value)):  # (polybeam.learners.values: its square would overflow)
            return TOO_LARGE_VALUE, token, end, 0.0, nnz
        if value != 0.0:  # (NaN != 0)
            slots[nnz] = libsvm_slot_kernel(index - first_index + 1, mask, seed)
            values[nnz] = value
            nnz += 1
        pos = end
    return EXAMPLE, 0, 0, label, nnz


# nogil: Beam runs several bundles per worker process in threads.
@numba.njit(cache=True, nogil=True)
def scan_libsvm(data, mask, seed, first_index=1):
    """Parse a block of LIBSVM lines (``data`` a uint8 array) in one pass.

    Returns per-line arrays ``(status, starts, stops, bad_starts, bad_stops)``
    and per-example arrays ``(example_lines, labels, indptr, slots, values)``,
    trimmed to size.
    """
    n = len(data)
    n_lines = count_lines(data)
    status = np.empty(n_lines, dtype=np.int8)
    starts = np.empty(n_lines, dtype=np.int64)
    stops = np.empty(n_lines, dtype=np.int64)
    bad_starts = np.zeros(n_lines, dtype=np.int64)
    bad_stops = np.zeros(n_lines, dtype=np.int64)
    example_lines = np.empty(n_lines, dtype=np.int64)
    labels = np.empty(n_lines, dtype=np.float64)
    indptr = np.empty(n_lines + 1, dtype=np.int64)
    indptr[0] = 0
    # Every feature takes at least 'i:v' plus a separator, so this never overflows.
    capacity = n // 2 + 1
    slots = np.empty(capacity, dtype=np.int32)
    values = np.empty(capacity, dtype=np.float64)
    text = byte_pointer(data)
    n_examples = 0
    nnz = 0
    pos = 0
    for line in range(n_lines):
        stop = line_stop(text, pos, n)
        starts[line] = pos
        stops[line] = stop
        code, bad_start, bad_stop, label, line_nnz = _parse_line(
            text, pos, stop, mask, seed, first_index, slots, values, nnz
        )
        status[line] = code
        if code == EXAMPLE:
            example_lines[n_examples] = line
            labels[n_examples] = label
            nnz = line_nnz
            n_examples += 1
            indptr[n_examples] = nnz
        elif code != SKIPPED:
            bad_starts[line] = bad_start
            bad_stops[line] = bad_stop
        pos = stop + 1
    return (
        status,
        starts,
        stops,
        bad_starts,
        bad_stops,
        example_lines[:n_examples].copy(),
        labels[:n_examples].copy(),
        indptr[: n_examples + 1].copy(),
        slots[:nnz].copy(),
        values[:nnz].copy(),
    )


@numba.njit(cache=True)
def libsvm_slots(indices, mask, seed):
    """Slots of an array of positive LIBSVM indices (for columnar inputs)."""
    out = np.empty(len(indices), dtype=np.int32)
    for i in range(len(indices)):
        out[i] = libsvm_slot_kernel(np.int64(indices[i]), mask, seed)
    return out


@dataclass(frozen=True)
class LibsvmFormat(HashedFormat):
    """Parse LIBSVM / SVMlight text blocks into example batches.

    Parameters
    ----------
    bits : int
        The batch's hashed feature space has ``2**bits`` slots.
    seed : int
        Hash seed for indices too large to be their own slot.
    labels : {"real", "binary", "multiclass", "any"}
        Which labels are acceptable; others become dead letters.
    classes : int
        With ``labels="multiclass"``, labels outside 1 ... ``classes`` are dead
        letters (0: no bound).
    label_names : tuple of str
        Class names: LIBSVM labels are numbers, so names are numbers matched
        by value (``("0", "1", ..., "9")``) or, when a name is a word, the
        names only set ``classes`` to their count (see
        :mod:`polybeam.formats.labels`).
    zero_based : bool
        The file numbers its features from 0 (as scikit-learn's
        ``dump_svmlight_file`` and ``load_svmlight_file`` do by default):
        index ``i`` is then the feature numbered ``i + 1`` from 1, so that both
        numberings, and column ``i`` of a matrix (see
        :mod:`polybeam.learners.arrays`), give the same slot. Without it, an
        index 0 is refused: the job fails saying so (never a dropped line).

    >>> LibsvmFormat(labels="multiclass", classes=3).parse(b"3 1:1\\n4 1:1\\n").dead_letters[0].reason
    'label 4 is not a class of this task: the classes are 1 to 3'
    """

    name: ClassVar[str] = "libsvm"
    header_lines: ClassVar[int] = 0

    zero_based: bool = False

    def label_texts(self, data: bytes, header: bytes | None = None) -> list[str]:
        """The labels of the records in ``data`` as written (a launcher's sample, see
        :func:`polybeam.formats.labels.infer_classes`).

        >>> LibsvmFormat().label_texts(b"2 1:1\\n# c\\n1 3:1\\n")
        ['2', '1']
        """
        return [line.split(None, 1)[0].decode("utf-8", "replace") for line in record_lines(data)]

    def largest_index(self, data: bytes) -> int:
        """The largest feature index among the records of ``data`` (0 when none).

        >>> LibsvmFormat().largest_index(b"1 3:1 30:2 # 99:1\\n-1 qid:7 12:1\\n")
        30
        """
        largest = 0
        for line in record_lines(data):
            for token in line.split(b"#", 1)[0].split()[1:]:
                index = token.partition(b":")[0]
                if index.isdigit():
                    largest = max(largest, int(index))
        return largest

    def zero_index_lines(self, data: bytes) -> int:
        """How many records of ``data`` hold a feature index 0 (a file numbered from 0, as scikit-learn's
        ``dump_svmlight_file`` writes them).

        >>> LibsvmFormat().zero_index_lines(b"1 0:1 3:2\\n1 1:1\\n-1 00:2\\n")
        2
        """
        count = 0
        for line in record_lines(data):
            for token in line.split(b"#", 1)[0].split()[1:]:
                index = token.partition(b":")[0]
                if index.isdigit() and int(index) == 0:
                    count += 1
                    break
        return count

    def parse(
        self,
        data: bytes,
        *,
        source: str = "<memory>",
        offset: int = 0,
        first_line: int | None = 1,
        header: bytes | None = None,
    ) -> ParsedBlock:
        """Parse a block of complete lines starting at byte ``offset`` (line ``first_line``) of ``source``."""
        check_position(offset, first_line)
        (status, starts, stops, bad_starts, bad_stops, example_lines, labels, indptr, slots, values) = scan_libsvm(
            as_bytes_array(data),
            np.int64(slot_mask(self.bits)),
            np.int64(self.seed),
            np.int64(0 if self.zero_based else 1),
        )
        block = LineBlock(bytes(data), starts, stops, source, offset, first_line)
        batch = ExampleBatch(
            labels=labels,
            weights=np.ones(len(labels)),
            indptr=indptr,
            indices=slots,
            values=values,
            bits=self.bits,
            row_ids=offset + starts[example_lines],
            source=source,
        )

        def reason_of(line: int, code: int) -> str:
            reason = REASONS[code]
            if reason.endswith(" "):
                reason += token_text(block.data, bad_starts[line], bad_stops[line])
            return reason

        return finish_block(
            block,
            status,
            reason_of,
            batch,
            labels=self.labels,
            classes=self.classes,
            label_names=self.label_names,
            refused_codes={ZERO_INDEX: "feature index 0"},
        )
