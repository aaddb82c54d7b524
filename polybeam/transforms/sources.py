"""A splittable Beam source that reads line-oriented files as blocks of lines.

Beam pays about a microsecond per element, so reading a million lines as a
million elements costs seconds before any parsing starts. :class:`TextBlockSource`
instead emits :class:`TextBlock` elements of up to a few thousand complete lines,
which the parsers turn into one :class:`~polybeam.learners.batch.ExampleBatch`
each.

Splitting follows Beam's ``_TextSource``: a line belongs to the byte range that
contains its first byte, and a reader that starts inside a file skips to the
first line that starts at or after its start offset. A block is claimed through
the start offset of its *last* line; on an ``OffsetRangeTracker`` that claim
covers every earlier line of the block, so one claim per block keeps dynamic
splitting exact at a per-block cost.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from apache_beam.io import filebasedsource, iobase
from apache_beam.io.filesystem import CompressionTypes

__all__ = ["TextBlock", "TextBlockSource", "DEFAULT_BLOCK_LINES", "DEFAULT_BLOCK_BYTES"]

DEFAULT_BLOCK_LINES = 4096
DEFAULT_BLOCK_BYTES = 4 << 20

# Reads from the file are at least this big, so tiny blocks don't mean tiny
# reads, and at most this big, so a reader near the end of its range reads
# little past it.
_MIN_READ = 64 << 10
_MAX_READ = 1 << 20

_NEWLINE = 10  # b"\n"; "\r\n" ends a line too, its "\r" stays with the line


@dataclass(frozen=True, slots=True)
class TextBlock:
    """Complete lines read from one file: the element :class:`TextBlockSource` emits.

    Parameters
    ----------
    source : str
        The file the lines come from.
    offset : int
        Byte offset of ``data[0]`` in the (decompressed) file; always a line start.
    first_line : int or None
        1-based line number of the first line of ``data``, or None when the
        reader started in the middle of a file and did not count the lines
        before it.
    data : bytes
        One or more complete lines; only the last line of a file may lack its
        newline.
    header : bytes or None
        The file's first line without its line ending, for formats with a
        header line (CSV); None otherwise.
    """

    source: str
    offset: int
    first_line: int | None
    data: bytes
    header: bytes | None = None

    def lines(self) -> list[bytes]:
        """The lines of the block, each with its line ending (for tests and debugging)."""
        return _split_on_newline(self.data)

    def __repr__(self) -> str:
        where = "?" if self.first_line is None else self.first_line
        return (
            f"TextBlock(source={self.source!r}, offset={self.offset}, first_line={where}, "
            f"bytes={len(self.data)})"
        )


def _split_on_newline(data: bytes) -> list[bytes]:
    # bytes.splitlines also breaks on a lone "\r"; lines here end only at "\n".
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _newline_ends(chunk, base: int) -> np.ndarray:
    """Offsets just past each newline in ``chunk``, shifted by ``base``."""
    found = np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == _NEWLINE)
    return found + (base + 1)


class _BlockScanner:
    """Cuts a byte stream, positioned at a line start, into blocks of complete lines.

    The buffer is a ``bytearray`` that is compacted only when more data is
    read, so a line far longer than a read costs linear, not quadratic, time.
    """

    def __init__(self, stream, offset: int, *, block_lines: int, block_bytes: int, initial: bytes = b""):
        self._stream = stream
        self._block_lines = block_lines
        self._block_bytes = block_bytes
        self._read_size = min(max(block_bytes, _MIN_READ), _MAX_READ)
        self._buffer = bytearray(initial)
        self._buffer_offset = offset  # file offset of _buffer[0]
        self._position = 0  # next unconsumed byte in _buffer, always a line start
        self._ends = _newline_ends(self._buffer, 0)  # line ends in _buffer, ascending
        self._next_end = 0  # index in _ends of the first line end past _position
        self._eof = False

    @property
    def next_offset(self) -> int:
        """File offset of the next line the scanner would return."""
        return self._buffer_offset + self._position

    def next_block(self) -> tuple[int, bytes, np.ndarray] | None:
        """``(offset, data, line_starts)`` of the next block, or None at the end of the file."""
        while True:
            ends = self._ends[self._next_end :] - self._position
            unread = len(self._buffer) - self._position
            # A block is decided once it cannot grow: enough lines, or more
            # bytes buffered than a block may hold, or nothing more to read.
            if len(ends) >= self._block_lines or (len(ends) and unread > self._block_bytes) or self._eof:
                break
            self._read_more()
        if len(ends) == 0:
            return None
        count = min(len(ends), self._block_lines, int(np.searchsorted(ends, self._block_bytes, side="right")))
        count = max(count, 1)  # a line longer than block_bytes is a block of its own
        size = int(ends[count - 1])
        offset = self.next_offset
        data = bytes(self._buffer[self._position : self._position + size])
        starts = np.empty(count, dtype=np.int64)
        starts[0] = offset
        starts[1:] = ends[: count - 1] + offset
        self._position += size
        self._next_end += count
        return offset, data, starts

    def _read_more(self) -> None:
        if self._position:
            del self._buffer[: self._position]
            self._ends = self._ends[self._next_end :] - self._position
            self._buffer_offset += self._position
            self._position = self._next_end = 0
        chunk = self._stream.read(self._read_size)
        if not chunk:
            self._eof = True
            # A last line without a newline still is a line; an empty tail is not.
            last_end = int(self._ends[-1]) if len(self._ends) else 0
            if len(self._buffer) > last_end:
                self._ends = np.append(self._ends, len(self._buffer))
            return
        base = len(self._buffer)
        self._buffer += chunk
        self._ends = np.concatenate([self._ends, _newline_ends(chunk, base)])


def _read_header(stream, header_lines: int) -> tuple[bytes | None, bytes]:
    """The first ``header_lines`` lines of a stream at offset 0, and every byte read.

    The header comes back without its final line ending.
    """
    read = bytearray()
    while read.count(b"\n") < header_lines:
        chunk = stream.read(_MIN_READ)
        if not chunk:
            break
        read += chunk
    end = 0
    for _ in range(header_lines):
        newline = read.find(b"\n", end)
        end = len(read) if newline < 0 else newline + 1
    header = bytes(read[:end]).rstrip(b"\r\n")
    return (header if end else None), bytes(read)


def _skip_to_line_start(stream, start: int) -> tuple[int, bytes] | None:
    """Seek to the first line that starts at or after ``start`` (> 0).

    Reads from ``start - 1`` so that a line starting exactly at ``start`` (the
    byte before it is a newline) belongs to this range, as in Beam's
    ``_TextSource``. Returns the line's offset and the bytes read past it, or
    None if no line starts at or after ``start``.
    """
    stream.seek(start - 1)
    position = start - 1
    while True:
        chunk = stream.read(_MIN_READ)
        if not chunk:
            return None
        newline = chunk.find(b"\n")
        if newline >= 0:
            return position + newline + 1, chunk[newline + 1 :]
        position += len(chunk)


class TextBlockSource(filebasedsource.FileBasedSource):
    """Reads the files matching a glob as :class:`TextBlock` elements of complete lines.

    Parameters
    ----------
    file_pattern : str
        A file or glob (local, ``gs://``, ... anything Beam's ``FileSystems``
        reads). Each file becomes its own sub-source, read in parallel.
    block_lines : int, default 4096
        Most lines in one block.
    block_bytes : int, default 4 MiB
        About the most bytes in one block; a longer line forms a block alone.
    header_lines : int, default 0
        Lines at the start of each file that every block carries as
        ``header`` (1 for CSV with a header row).
    min_bundle_size : int, default 0
        Smallest byte range the initial split makes.
    compression_type : str, default ``CompressionTypes.AUTO``
        Compressed files (detected from the extension by default) are read
        whole by one reader, as Beam cannot seek inside them.
    validate : bool, default True
        Fail at construction if nothing matches ``file_pattern``.

    Examples
    --------
    >>> import os, tempfile
    >>> from apache_beam.io.range_trackers import OffsetRangeTracker
    >>> path = os.path.join(tempfile.mkdtemp(), "a.txt")
    >>> _ = open(path, "wb").write(b"1 a\\n2 b\\n3 c\\n")
    >>> source = TextBlockSource(path, block_lines=2)
    >>> [(b.offset, b.first_line, b.data) for b in source.read(source.get_range_tracker(None, None))]
    [(0, 1, b'1 a\\n2 b\\n'), (8, 3, b'3 c\\n')]

    A reader of the range ``[5, 12)`` starts at the next line start, 8, and
    does not know its line number:

    >>> (bundle,) = source.split(desired_bundle_size=1 << 20)
    >>> [(b.offset, b.first_line) for b in bundle.source.read(OffsetRangeTracker(5, 12))]
    [(8, None)]
    """

    def __init__(
        self,
        file_pattern: str,
        *,
        block_lines: int = DEFAULT_BLOCK_LINES,
        block_bytes: int = DEFAULT_BLOCK_BYTES,
        header_lines: int = 0,
        min_bundle_size: int = 0,
        compression_type: str = CompressionTypes.AUTO,
        validate: bool = True,
    ):
        if block_lines < 1:
            raise ValueError(f"block_lines must be >= 1, got {block_lines}")
        if block_bytes < 1:
            raise ValueError(f"block_bytes must be >= 1, got {block_bytes}")
        if header_lines < 0:
            raise ValueError(f"header_lines must be >= 0, got {header_lines}")
        super().__init__(
            file_pattern,
            min_bundle_size=min_bundle_size,
            compression_type=compression_type,
            splittable=True,
            validate=validate,
        )
        self.block_lines = block_lines
        self.block_bytes = block_bytes
        self.header_lines = header_lines

    def read_records(self, file_name, range_tracker):
        start = range_tracker.start_position()
        next_start = start  # offset of the first line not yet read

        def split_points_unclaimed(stop_position):
            return 0 if stop_position <= next_start else iobase.RangeTracker.SPLIT_POINTS_UNKNOWN

        range_tracker.set_split_points_unclaimed_callback(split_points_unclaimed)

        with self.open_file(file_name) as stream:
            header, read = None, b""
            if self.header_lines:
                header, read = _read_header(stream, self.header_lines)
            if start == 0:
                scanner_start, initial = 0, read
            else:
                found = _skip_to_line_start(stream, start)
                if found is None:
                    return
                scanner_start, initial = found
            scanner = _BlockScanner(
                stream,
                scanner_start,
                block_lines=self.block_lines,
                block_bytes=self.block_bytes,
                initial=initial,
            )
            # Counting the newlines before a mid-file start would make reading
            # quadratic in the number of splits; the dead-letter path counts
            # them instead, for the few records that need a line number.
            line = 1 if start == 0 else None
            while True:
                if scanner.next_offset >= range_tracker.stop_position():
                    return
                block = scanner.next_block()
                if block is None:
                    return
                offset, data, starts = block
                next_start = scanner.next_offset
                kept = self._claim(range_tracker, starts)
                if kept:
                    end = len(data) if kept == len(starts) else int(starts[kept] - offset)
                    yield TextBlock(file_name, offset, line, data[:end], header)
                if kept < len(starts):
                    return
                if line is not None:
                    line += len(starts)

    @staticmethod
    def _claim(range_tracker, starts: np.ndarray) -> int:
        """Claim the lines of a block that belong to the range; returns how many do.

        The lines kept are those starting before the stop position. Claiming
        the last of them claims them all. The claim fails only if another
        thread split the range between reading its stop position and the
        claim; attempted claims must increase, so the lines of this block that
        still belong to the range are then protected with
        ``set_current_position`` (a split can no longer cut before it) and the
        stop position, now final, is read again.
        """
        kept = int(np.searchsorted(starts, range_tracker.stop_position(), side="left"))
        if kept == 0:
            return 0
        if range_tracker.try_claim(int(starts[kept - 1])):
            return kept
        kept = int(np.searchsorted(starts, range_tracker.stop_position(), side="left"))
        if kept == 0:
            return 0
        range_tracker.set_current_position(int(starts[kept - 1]))
        return int(np.searchsorted(starts, range_tracker.stop_position(), side="left"))
