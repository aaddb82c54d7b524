"""What the line-oriented parsers (LIBSVM, VW, CSV) share.

A block is a run of complete lines of a file. Each format's numba kernel scans
the whole block once and reports, for every line, its span and a status code
(an example, a skipped line, or why the line was rejected). This module holds
the byte-level helpers those kernels use and the Python side that turns the
kernel's output into a :class:`~polybeam.formats.records.ParsedBlock`:
dead letters for the (rare) bad lines, label checks, counts.

Lines end at ``\\n``; a ``\\r`` before it is blank space, so ``\\r\\n`` files parse
like ``\\n`` files. Blank space inside a line is any of space, tab, ``\\r``,
``\\v`` and ``\\f``. Blank lines and lines whose first non-blank byte is ``#``
are skipped.

A line holding a NUL byte is a dead letter, whatever else it holds (even a
comment): no text format has NULs, and they come from binary data or damaged
files, where a run of zeros left by a crash can glue two records into one
line that would otherwise parse (a VW feature name swallowing the NULs and
the next record). Other bytes are taken as they are: invalid UTF-8 in a VW
feature name or a CSV category is hashed byte for byte, as Vowpal Wabbit does,
and shows as U+FFFD in names and dead letters.

Examples
--------
>>> block = LineBlock.scan(b"1 2:3\\r\\n\\n# note\\n", source="a.txt", offset=100, first_line=5)
>>> block.records, block.line_number(2), block.offset_of(2), block.raw(0)
(3, 7, 108, b'1 2:3\\r')
>>> block.dead_letter(0, "bad").line
5
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numba
import numpy as np

from polybeam.formats.labels import apply_labels
from polybeam.formats.records import MAX_RAW_CHARS, DeadLetter, ParsedBlock, reject_examples
from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernels below)
from polybeam.learners.batch import ExampleBatch

# Line status codes shared by every text kernel; each format numbers its own
# rejection reasons from FIRST_ERROR up.
EXAMPLE = 0
SKIPPED = 1
FIRST_ERROR = 2

NEWLINE = 10
HASH = 35


@numba.njit(cache=True)
def is_blank(c):
    """Space, tab, ``\\r``, ``\\v`` or ``\\f``."""
    return c == 32 or (9 <= c <= 13 and c != 10)


@numba.njit(cache=True)
def skip_blanks(data, pos, stop):
    """The first index at or after ``pos`` that is not blank (or ``stop``)."""
    while pos < stop and is_blank(data[pos]):
        pos += 1
    return pos


@numba.njit(cache=True)
def line_stop(data, pos, size):
    """The index of the ``\\n`` ending the line that starts at ``pos`` (or ``size``)."""
    while pos < size and data[pos] != NEWLINE:
        pos += 1
    return pos


@numba.njit(cache=True)
def count_lines(data):
    """Number of lines in ``data``; a last line without its newline counts."""
    n = len(data)
    count = 0
    for i in range(n):
        if data[i] == NEWLINE:
            count += 1
    if n > 0 and data[n - 1] != NEWLINE:
        count += 1
    return count


def newline_ends(chunk: bytes | bytearray, base: int = 0) -> np.ndarray:
    """Offsets just past each newline of ``chunk``, plus ``base`` (int64).

    >>> newline_ends(b"a\\nbc\\n\\nd", base=10).tolist()
    [12, 15, 16]
    """
    return _newline_ends(as_bytes_array(chunk), chunk.count(b"\n"), base)


# (What a reader calls on every chunk it reads: numpy's mask and flatnonzero cost twice the time.)
@numba.njit(cache=True, nogil=True)
def _newline_ends(data, count, base):
    ends = np.empty(count, dtype=np.int64)
    found = 0
    for position in range(data.shape[0]):
        if data[position] == NEWLINE:
            ends[found] = position + 1 + base
            found += 1
    return ends


@numba.njit(cache=True)
def is_skippable(data, start, stop):
    """Whether a line is blank or a ``#`` comment."""
    pos = skip_blanks(data, start, stop)
    return pos == stop or data[pos] == HASH


def record_lines(data: bytes) -> list[bytes]:
    """The lines of ``data`` that are records (not blank, not ``#`` comments), for launcher-side samples.

    >>> record_lines(b"# note\\n1 1:2\\n\\n  \\n-1 3:1\\r\\n")
    [b'1 1:2', b'-1 3:1']
    """
    lines = (line.rstrip(b"\r") for line in data.split(b"\n"))
    return [line for line in lines if line.strip() and not line.lstrip().startswith(b"#")]


@numba.njit(cache=True)
def line_spans(data):
    """Start and stop (exclusive, before ``\\n``) of every line."""
    n_lines = count_lines(data)
    starts = np.empty(n_lines, dtype=np.int64)
    stops = np.empty(n_lines, dtype=np.int64)
    pos = 0
    for line in range(n_lines):
        stop = line_stop(data, pos, len(data))
        starts[line] = pos
        stops[line] = stop
        pos = stop + 1
    return starts, stops


def as_bytes_array(data: bytes | bytearray | memoryview | np.ndarray) -> np.ndarray:
    """A block's bytes as a read-only uint8 array without copying."""
    if isinstance(data, np.ndarray):
        return data.view(np.uint8).reshape(-1)
    return np.frombuffer(data, dtype=np.uint8)


def check_position(offset: int, first_line: int | None) -> None:
    """Reject impossible block positions early, with a message."""
    if offset < 0:
        raise ValueError(f"offset must be >= 0, got {offset}")
    if first_line is not None and first_line < 1:
        raise ValueError(f"first_line is 1-based (or None when unknown), got {first_line}")


@dataclass(frozen=True)
class LineBlock:
    """Where each line of a block is, so that bad lines can be reported.

    ``starts`` and ``stops`` are positions in ``data`` (the block), ``offset``
    the position of ``data[0]`` in the file and ``first_line`` the 1-based
    number of the block's first line, or None when unknown.
    """

    data: bytes
    starts: np.ndarray
    stops: np.ndarray
    source: str
    offset: int
    first_line: int | None

    @classmethod
    def scan(cls, data: bytes, *, source: str, offset: int, first_line: int | None) -> LineBlock:
        """Find the lines of ``data`` (for parsers whose kernel does not report them)."""
        starts, stops = line_spans(as_bytes_array(data))
        return cls(bytes(data), starts, stops, source, offset, first_line)

    @property
    def records(self) -> int:
        return len(self.starts)

    def line_number(self, line: int) -> int | None:
        return None if self.first_line is None else self.first_line + int(line)

    def offset_of(self, line: int) -> int:
        return self.offset + int(self.starts[line])

    def raw(self, line: int, limit: int | None = None) -> bytes:
        """The bytes of a line (its first ``limit`` bytes at most)."""
        start, stop = int(self.starts[line]), int(self.stops[line])
        return self.data[start : stop if limit is None else min(stop, start + limit)]

    def dead_letter(self, line: int, reason: str, refused: str | None = None) -> DeadLetter:
        """The dead letter of ``line``; ``refused``: what the line holds that the task cannot take."""
        # Only what the dead letter keeps is copied: a line may be 100 MB.
        raw = self.raw(line, _RAW_BYTES)
        return DeadLetter.from_bytes(
            raw,
            source=self.source,
            line=self.line_number(line),
            offset=self.offset_of(line),
            reason=reason,
            refused=refused,
        )

    def line_of_row_id(self, row_id: int) -> int:
        """The line whose absolute offset is ``row_id`` (a batch's row id)."""
        return int(np.searchsorted(self.starts, row_id - self.offset))

    def raw_finder(self, batch: ExampleBatch) -> Callable[[int], tuple[bytes, int | None, int]]:
        """``raw_of(i)`` for :func:`reject_examples`: where example ``i`` of ``batch`` came from."""

        def raw_of(example: int) -> tuple[bytes, int | None, int]:
            line = self.line_of_row_id(int(batch.row_ids[example]))
            return self.raw(line, _RAW_BYTES), self.line_number(line), self.offset_of(line)

        return raw_of


# A dead letter keeps MAX_RAW_CHARS characters of its line, at most 4 bytes each.
_RAW_BYTES = MAX_RAW_CHARS * 4


def nul_positions(block: LineBlock) -> np.ndarray | None:
    """For each line, the position in the line of its first NUL byte (-1: none); None when the block has none.

    One ``memchr`` over the block finds out whether there is any (so clean
    input pays microseconds per block); only then are the lines located.

    >>> nul_positions(LineBlock.scan(b"1 1:1\\n1 2\\x00:3 \\x00\\n", source="a", offset=0, first_line=1)).tolist()
    [-1, 3]
    >>> nul_positions(LineBlock.scan(b"1 1:1\\n", source="a", offset=0, first_line=1)) is None
    True
    """
    if b"\x00" not in block.data:
        return None
    found = np.flatnonzero(as_bytes_array(block.data) == 0)
    lines = np.searchsorted(block.starts, found, side="right") - 1
    lines, first = np.unique(lines, return_index=True)
    positions = np.full(block.records, -1, dtype=np.int64)
    positions[lines] = found[first] - block.starts[lines]
    return positions


def nul_reason(position: int) -> str:
    return f"NUL byte at position {int(position) + 1} of the line (binary data, or a damaged file?)"


def finish_block(
    block: LineBlock,
    status: np.ndarray,
    reason_of: Callable[[int, int], str],
    batch: ExampleBatch,
    *,
    labels: str,
    classes: int = 0,
    label_names: tuple[str, ...] = (),
    refused_codes: dict[int, str | None] | None = None,
    has_label: np.ndarray | None = None,
    names: Callable[[np.ndarray | None], dict[int, str]] | None = None,
) -> ParsedBlock:
    """Turn a kernel's per-line statuses and good examples into a :class:`ParsedBlock`.

    ``reason_of(line, code)`` explains a rejected line. ``has_label`` marks the
    examples whose line gave a label at all: the others are rejected as
    "missing label" unless ``labels`` is ``"any"`` (prediction input).
    The labels become the task's targets (``labels``, with ``classes`` classes
    and ``label_names``), and examples whose label the task cannot take become
    dead letters, via :func:`~polybeam.formats.labels.apply_labels`; lines the
    kernel rejected with a code of ``refused_codes`` (an unknown class name, a
    feature index 0) are refused records, as those labels are: the code maps to
    what such a line holds (``"feature index 0"``; None: its reason says it).
    Dead letters come out in line order.

    ``names(features)`` names the slots of the kept examples: ``features`` is a
    mask over ``batch``'s features, or None when every example was kept. It
    runs after the label checks so that a rejected example names nothing.

    A line holding a NUL byte is a dead letter saying so, whatever the kernel
    made of it (see :func:`nul_positions`).
    """
    nuls = nul_positions(block)
    rejected = status >= FIRST_ERROR
    skipped = status == SKIPPED
    if nuls is not None:
        rejected = rejected | (skipped & (nuls >= 0))
        skipped = skipped & (nuls < 0)

    def reason(line: int) -> str:
        if nuls is not None and nuls[line] >= 0:
            return nul_reason(nuls[line])
        return reason_of(line, int(status[line]))

    refused_codes = refused_codes or {}

    def letter(line: int) -> DeadLetter:
        why = reason(line)
        code = int(status[line])
        held = (refused_codes[code] or why) if code in refused_codes and (nuls is None or nuls[line] < 0) else None
        return block.dead_letter(line, why, refused=held)

    letters = [letter(int(line)) for line in np.flatnonzero(rejected)]
    parsed = ParsedBlock(
        batch=batch,
        dead_letters=letters,
        records=len(status),
        skipped=int(np.count_nonzero(skipped)),
    )
    if nuls is not None and len(batch):
        example_lines = np.searchsorted(block.starts, batch.row_ids - block.offset)
        positions = nuls[example_lines]
        parsed = reject_examples(
            parsed, positions >= 0, lambda example: nul_reason(positions[example]), block.raw_finder(parsed.batch)
        )
        if has_label is not None:
            has_label = has_label[positions < 0]  # (per example kept)
    if labels != "any" and has_label is not None and not has_label.all():
        parsed = reject_examples(parsed, ~has_label, "missing label", block.raw_finder(parsed.batch))
    parsed = apply_labels(parsed, labels, classes, label_names, block.raw_finder(parsed.batch))
    if len(parsed.dead_letters) > len(letters):
        parsed.dead_letters.sort(key=lambda letter: letter.offset)
    if names is not None:
        features = None
        if len(parsed.batch) < len(batch):
            kept = np.isin(batch.row_ids, parsed.batch.row_ids)
            features = np.repeat(kept, np.diff(batch.indptr))
        parsed.batch = replace(parsed.batch, names=names(features))
    return parsed


def token_text(data: bytes, start: int, stop: int, limit: int = 40) -> str:
    """A short printable excerpt of a token, for reasons such as ``bad value 'x'``."""
    # Decode only the start (a character is at most 4 bytes): a token may be 100 MB.
    text = data[start : min(stop, start + 4 * limit + 4)].decode("utf-8", errors="replace")
    return repr(text if len(text) <= limit else text[:limit] + "...")


@numba.njit(cache=True)
def _join_spans(buffer, starts, stops):
    size = 0
    for i in range(len(starts)):
        size += stops[i] - starts[i] + 1
    out = np.empty(max(size - 1, 0), dtype=np.uint8)
    pos = 0
    for i in range(len(starts)):
        if i > 0:
            out[pos] = NEWLINE
            pos += 1
        for j in range(starts[i], stops[i]):
            out[pos] = buffer[j]
            pos += 1
    return out


def decode_spans(buffer: np.ndarray, starts: np.ndarray, stops: np.ndarray) -> list[str]:
    """The UTF-8 text of ``buffer[starts[i]:stops[i]]`` for every ``i``, decoded at once.

    The spans must not contain newlines (nothing inside a line does).

    >>> decode_spans(np.frombuffer(b"red,green", np.uint8), np.array([0, 4]), np.array([3, 9]))
    ['red', 'green']
    """
    if len(starts) == 0:
        return []
    joined = _join_spans(buffer, np.asarray(starts, dtype=np.int64), np.asarray(stops, dtype=np.int64))
    return joined.tobytes().decode("utf-8", errors="replace").split("\n")


@numba.njit(cache=True)
def _first_occurrences_dense(slots, size):
    seen = np.zeros(size, dtype=np.bool_)
    first = np.empty(len(slots), dtype=np.int64)
    count = 0
    for i in range(len(slots)):
        if not seen[slots[i]]:
            seen[slots[i]] = True
            first[count] = i
            count += 1
    return first[:count].copy()


def first_occurrences(slots: np.ndarray, bits: int) -> np.ndarray:
    """Positions of the first occurrence of each distinct slot, in increasing order.

    Naming a block's slots needs one name per slot, the first seen. A table of
    ``2**bits`` flags is the fastest way when it is not much larger than the
    block; otherwise sort.

    >>> first_occurrences(np.array([5, 3, 5, 7, 3], dtype=np.int32), bits=3).tolist()
    [0, 1, 3]
    """
    if (1 << bits) <= 16 * max(len(slots), 4096):
        return _first_occurrences_dense(slots, 1 << bits)
    _, first = np.unique(slots, return_index=True)
    return np.sort(first)
