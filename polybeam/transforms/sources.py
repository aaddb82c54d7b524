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

Hostile input is read in bounded memory and never crashes a reader:

* a line longer than ``max_line_bytes`` (64 MiB by default) is never held
  whole: once it passes the limit, the reader keeps its first few kilobytes
  and streams past the rest, and the line becomes one dead letter (a
  :class:`TextBlock` with ``error`` set), so a file without newlines (binary
  data, ``\\r``-only line endings) costs at most the limit, not several times
  its size;
* a gzip file is decompressed by :class:`GzipStream`, which tells a
  truncated file from a complete one (Beam's reader silently reads a cut file
  as a shorter file, its last line cut anywhere). The lines before the cut are
  read as usual; the incomplete last line becomes a dead letter saying the
  file is truncated. Data that is not valid gzip (a flipped bit) raises
  :class:`CorruptInputError` naming the file, since lines already read from it
  may be wrong.
"""

from __future__ import annotations

import io
import zlib
from dataclasses import dataclass

import numpy as np
from apache_beam.io import filebasedsource, iobase
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from polybeam.formats.records import MAX_RAW_CHARS
from polybeam.formats.text import newline_ends

__all__ = [
    "CorruptInputError",
    "DEFAULT_BLOCK_BYTES",
    "DEFAULT_BLOCK_LINES",
    "DEFAULT_MAX_LINE_BYTES",
    "GzipStream",
    "TextBlock",
    "TextBlockSource",
]

DEFAULT_BLOCK_LINES = 4096
DEFAULT_BLOCK_BYTES = 4 << 20
# Longer lines are dead letters, never parsed: parsing a line costs several
# times its size (the kernels' feature arrays), so a limit bounds a worker's
# memory whatever the input. Like protobuf's 64 MB message limit, it is far
# above any real example (a LIBSVM line of a million features is ~10 MB).
DEFAULT_MAX_LINE_BYTES = 64 << 20
# A dead letter keeps MAX_RAW_CHARS characters of its record, at most 4 bytes each.
_RAW_BYTES = MAX_RAW_CHARS * 4

# Reads from the file are at least this big, so tiny blocks don't mean tiny
# reads, and at most this big, so a reader near the end of its range reads
# little past it.
_MIN_READ = 64 << 10
_MAX_READ = 1 << 20
# Compressed bytes per read of a gzip file: small, as a read may expand a thousandfold.
_COMPRESSED_READ = 64 << 10

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
    error : str or None
        Set when the block is one record that cannot be parsed, and why: a
        line longer than ``max_line_bytes``, or the incomplete last line of a
        truncated compressed file. ``data`` then holds only the start of that
        record (at most ``MAX_RAW_CHARS * 4`` bytes), and the reader makes it
        one dead letter.
    """

    source: str
    offset: int
    first_line: int | None
    data: bytes
    header: bytes | None = None
    error: str | None = None

    def lines(self) -> list[bytes]:
        """The lines of the block, each with its line ending (for tests and debugging)."""
        return _split_on_newline(self.data)

    def __repr__(self) -> str:
        where = "?" if self.first_line is None else self.first_line
        error = "" if self.error is None else f", error={self.error!r}"
        return (
            f"TextBlock(source={self.source!r}, offset={self.offset}, first_line={where}, "
            f"bytes={len(self.data)}{error})"
        )


def _split_on_newline(data: bytes) -> list[bytes]:
    # bytes.splitlines also breaks on a lone "\r"; lines here end only at "\n".
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


class _BlockScanner:
    """Cuts a byte stream, positioned at a line start, into blocks of complete lines.

    The buffer is a ``bytearray`` that is compacted when more data is read (or
    a long line was consumed), so a line far longer than a read costs linear,
    not quadratic, time.

    A line longer than ``max_line_bytes`` is never buffered whole: once the
    line in progress exceeds the limit, its first bytes are kept and the rest
    is read past. Such a line, and the incomplete tail of a damaged stream
    (see :class:`GzipStream`), come out as a block of their own with an error.
    """

    def __init__(
        self, stream, offset: int, *, block_lines: int, block_bytes: int, max_line_bytes: int, initial: bytes = b""
    ):
        self._stream = stream
        self._block_lines = block_lines
        self._block_bytes = block_bytes
        self._max_line_bytes = max_line_bytes
        self._read_size = min(max(block_bytes, _MIN_READ), _MAX_READ)
        self._buffer = bytearray(initial)
        self._buffer_offset = offset  # file offset of _buffer[0]
        self._position = 0  # next unconsumed byte in _buffer, always a line start
        self._ends = newline_ends(self._buffer, 0)  # line ends in _buffer, ascending
        self._next_end = 0  # index in _ends of the first line end past _position
        self._eof = False
        self._damage: str | None = None  # why the stream ended early, once it has

    @property
    def next_offset(self) -> int:
        """File offset of the next line the scanner would return."""
        return self._buffer_offset + self._position

    def next_block(self) -> tuple[int, bytes, np.ndarray, str | None] | None:
        """``(offset, data, line_starts, error)`` of the next block, or None at the end of the file.

        ``error`` is None for a block of lines to parse; otherwise the block is
        one record that cannot be parsed, and ``data`` holds its start only.
        """
        while True:
            ends = self._ends[self._next_end :] - self._position
            unread = len(self._buffer) - self._position
            # A block is decided once it cannot grow: enough lines, or more
            # bytes buffered than a block may hold, or nothing more to read.
            if len(ends) >= self._block_lines or (len(ends) and unread > self._block_bytes) or self._eof:
                break
            if not len(ends) and unread > self._max_line_bytes:
                return self._skip_long_line()
            self._read_more()
        if len(ends) == 0:
            return self._damaged_tail()
        count = min(len(ends), self._block_lines, int(np.searchsorted(ends, self._block_bytes, side="right")))
        count = max(count, 1)  # a line longer than block_bytes is a block of its own
        if int(ends[count - 1]) > self._max_line_bytes:
            # Only a block bigger than the limit can hold a line that is (when
            # max_line_bytes < block_bytes): the block stops before that line.
            sizes = np.diff(ends[:count], prepend=0)
            lengths = sizes - 1  # the limit does not count the newline...
            if self._eof and int(ends[count - 1]) == unread and self._buffer[-1] != _NEWLINE:
                lengths[-1] += 1  # ...which the file's last line may lack
            first_long = int(np.argmax(lengths > self._max_line_bytes))
            if lengths[first_long] > self._max_line_bytes:
                if first_long == 0:
                    length = int(lengths[0])
                    return self._error_block(int(sizes[0]), length, _too_long_reason(length, self._max_line_bytes))
                count = first_long
        size = int(ends[count - 1])
        offset = self.next_offset
        # One copy (a bytearray slice would copy twice): a 100 MB line must not cost 300 MB here.
        with memoryview(self._buffer) as view:
            data = bytes(view[self._position : self._position + size])
        starts = np.empty(count, dtype=np.int64)
        starts[0] = offset
        starts[1:] = ends[: count - 1] + offset
        self._position += size
        self._next_end += count
        if self._position > 2 * (self._block_bytes + self._read_size):
            self._compact()  # a long line was consumed: free its bytes now, not at the next read
        return offset, data, starts, None

    def _error_block(self, size: int, length: int, reason: str) -> tuple[int, bytes, np.ndarray, str]:
        """Consume ``size`` buffered bytes as one unparsable record of ``length`` bytes (without its
        newline), keeping its start."""
        offset = self.next_offset
        with memoryview(self._buffer) as view:
            data = bytes(view[self._position : self._position + min(length, _RAW_BYTES)])
        self._position += size
        self._next_end = int(np.searchsorted(self._ends, self._position, side="right"))
        self._compact()
        return offset, data, np.array([offset], dtype=np.int64), reason

    def _skip_long_line(self) -> tuple[int, bytes, np.ndarray, str]:
        """The line in progress is longer than the limit: keep its start, read past the rest."""
        offset = self.next_offset
        with memoryview(self._buffer) as view:
            data = bytes(view[self._position : self._position + _RAW_BYTES])
        length = len(self._buffer) - self._position  # of the line, without its newline
        rest, size = b"", None  # size: with the newline, once found
        while size is None:
            chunk = self._stream.read(self._read_size)
            if not chunk:
                self._end_of_stream()
                size = length
                break
            newline = chunk.find(b"\n")
            if newline >= 0:
                length += newline
                size = length + 1
                rest = chunk[newline + 1 :]
            else:
                length += len(chunk)
        self._buffer = bytearray(rest)
        self._buffer_offset = offset + size
        self._position = self._next_end = 0
        self._ends = newline_ends(self._buffer, 0)
        reason = _too_long_reason(length, self._max_line_bytes)
        if self._eof and self._damage is not None:
            # The stream broke inside the long line: it is also the damaged tail.
            reason, self._damage = f"{self._damage} (the line was already longer than max_line_bytes)", None
        return offset, data, np.array([offset], dtype=np.int64), reason

    def _damaged_tail(self) -> tuple[int, bytes, np.ndarray, str] | None:
        """At the end of a damaged stream, its unterminated tail (maybe empty) as one record; else None."""
        if self._damage is None:
            return None
        reason, self._damage = self._damage, None  # reported once
        size = len(self._buffer) - self._position
        return self._error_block(size, size, reason)

    def _compact(self) -> None:
        if self._position:
            del self._buffer[: self._position]
            self._ends = self._ends[self._next_end :] - self._position
            self._buffer_offset += self._position
            self._position = self._next_end = 0

    def _end_of_stream(self) -> None:
        self._eof = True
        # A GzipStream says when the file stopped before its end (truncated).
        self._damage = getattr(self._stream, "damage", None)

    def _read_more(self) -> None:
        self._compact()
        chunk = self._stream.read(self._read_size)
        if not chunk:
            self._end_of_stream()
            # A last line without a newline still is a line; an empty tail is
            # not. The tail of a damaged stream is no line: it was cut short.
            last_end = int(self._ends[-1]) if len(self._ends) else 0
            if len(self._buffer) > last_end and self._damage is None:
                self._ends = np.append(self._ends, len(self._buffer))
            return
        base = len(self._buffer)
        self._buffer += chunk
        self._ends = np.concatenate([self._ends, newline_ends(chunk, base)])


def _too_long_reason(length: int, limit: int) -> str:
    """Why a line of ``length`` bytes (not counting its newline) is not parsed."""
    return (
        f"line of {length} bytes is longer than max_line_bytes ({limit}): not parsed "
        "(a file without line breaks, or binary data? raise max_line_bytes to read such lines)"
    )


def _read_header(stream, header_lines: int, limit: int, path: str) -> tuple[bytes | None, bytes]:
    """The first ``header_lines`` lines of a stream at offset 0, and every byte read.

    The header comes back without its final line ending. Newlines are counted
    in each chunk as it arrives (counting the whole buffer every time was
    quadratic in a long first line), and a header longer than ``limit`` bytes
    a line is refused: every block carries it, so the file cannot be read.
    """
    too_long = ValueError(
        f"{path}: the first line, which every block of the file needs (the CSV header, or the first "
        f"record that sets the number of columns), is longer than max_line_bytes ({limit})"
    )
    read = bytearray()
    newlines = 0
    while newlines < header_lines:
        chunk = stream.read(_MIN_READ)
        if not chunk:
            break
        newlines += chunk.count(b"\n")
        read += chunk
        if newlines < header_lines and len(read) > limit * header_lines:
            raise too_long
    end = 0
    for _ in range(header_lines):
        newline = read.find(b"\n", end)
        stop = len(read) if newline < 0 else newline
        if stop - end > limit:
            raise too_long
        end = len(read) if newline < 0 else newline + 1
    header = bytes(read[:end]).rstrip(b"\r\n")
    return (header if end else None), bytes(read)


class CorruptInputError(OSError):
    """A compressed input file whose data is damaged, not merely cut short.

    Raised rather than turned into dead letters: the damage is found where the
    data stops making sense (or at the checksum at the end of the file), so
    lines already read from the file may be wrong too.
    """


def open_decompressed(path: str, gzip: bool | None = None):
    """``path`` opened for reading its text: a gzip file (``gzip``, or by its name when None) through
    :class:`GzipStream` (which notices a truncated file, and decompresses no more than each read asks for:
    a file that expands a thousandfold never sits decompressed in memory), other compressions by Beam,
    plain files as they are."""
    if gzip is None:
        gzip = CompressionTypes.detect_compression_type(path) == CompressionTypes.GZIP
    if gzip:
        raw = FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
        return GzipStream(raw, path)
    return FileSystems.open(path)


class GzipStream:
    """A gzip file, decompressed as it is read, that tells a truncated file from a complete one.

    Beam's own reader treats a gzip stream that stops in the middle as a
    normal end, so a truncated file reads as a shorter one whose last line is
    cut anywhere (``2:0.123`` read as ``2:0.1``), and nothing says so. Here:

    * a stream that stops before its end returns what it holds and then ends,
      with ``damage`` saying why; the block scanner makes the unterminated
      tail a dead letter instead of a line;
    * data that is not valid gzip (bad deflate data, a failed CRC or length
      check, garbage after a member) raises :class:`CorruptInputError` naming
      the file;
    * concatenated members (``cat a.gz b.gz``) are read in turn and zero
      padding after the last one is ignored, as ``gzip -d`` does (Beam's
      reader fails on it); an empty file is an empty text;
    * a read decompresses at most the bytes asked for, so a file that
      expands a thousandfold (a 100 MB run of one byte is 100 KB of gzip)
      never sits decompressed in memory.

    Only reading forward is supported (compressed files are never split).

    >>> import gzip, io
    >>> data = gzip.compress(b"1 1:0.5\\n-1 2:0.125\\n")
    >>> stream = GzipStream(io.BytesIO(data[:-12]), "cut.gz")
    >>> stream.read(100), stream.damage is not None
    (b'1 1:0.5\\n-1 2:0.', True)
    """

    def __init__(self, raw, path: str):
        self._raw = raw
        self.path = path
        self._decompressor = zlib.decompressobj(zlib.MAX_WBITS | 16)
        self._input = b""  # compressed bytes the decompressor has yet to take
        self._started = False  # any byte of the current member was read
        self._pending = b""  # decompressed bytes flushed at a truncated end
        self._position = 0  # decompressed bytes returned so far
        self._done = False
        self.damage: str | None = None

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            parts = []
            while part := self.read(_MAX_READ):
                parts.append(part)
            return b"".join(parts)
        out = bytearray(self._pending[:size])
        self._pending = self._pending[size:]
        while len(out) < size and not self._done:
            if self._decompressor.eof:
                self._next_member()
                continue
            if not self._input:
                self._input = self._raw.read(_COMPRESSED_READ)
                if not self._input:
                    self._end_of_file(out, size)
                    break
                self._started = True
            try:
                out += self._decompressor.decompress(self._input, size - len(out))
            except zlib.error as error:
                raise self._corrupt(error, len(out)) from None
            # Input past a member's end is the next member; input past max_length waits.
            eof = self._decompressor.eof
            self._input = self._decompressor.unused_data if eof else self._decompressor.unconsumed_tail
        self._position += len(out)
        return bytes(out)

    def _next_member(self) -> None:
        rest = self._input.lstrip(b"\0")  # gzip allows zero padding after a member
        while not rest:
            chunk = self._raw.read(_COMPRESSED_READ)
            if not chunk:
                self._done = True
                return
            rest = chunk.lstrip(b"\0")
        self._input = rest
        self._decompressor = zlib.decompressobj(zlib.MAX_WBITS | 16)

    def _end_of_file(self, out: bytearray, size: int) -> None:
        self._done = True
        if not self._started:
            return  # an empty file
        try:
            tail = self._decompressor.flush()
        except zlib.error as error:
            raise self._corrupt(error, len(out)) from None
        self._pending = tail[size - len(out) :]
        out += tail[: size - len(out)]
        text_bytes = self._position + len(out) + len(self._pending)
        self.damage = (
            f"truncated gzip file: the compressed data stops mid-stream after {text_bytes} bytes of text; "
            "this record is the cut-off end (its text, if any, is incomplete), and whatever followed it is lost"
        )

    def _corrupt(self, error: zlib.error, extra: int) -> CorruptInputError:
        read = self._position + extra
        if read:
            where = f"found after {read} bytes of its text were read; those lines may be wrong too"
        else:
            where = "found before any of its text was read"
        return CorruptInputError(
            f"{self.path}: corrupt gzip data ({error}), {where}: restore the file or leave it out of the input"
        )

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> None:
        if whence != io.SEEK_SET or offset != self._position:
            raise io.UnsupportedOperation("a gzip stream is read forward from its start")

    def tell(self) -> int:
        return self._position

    def close(self) -> None:
        self._raw.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


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
        ``header`` (1 for CSV).
    max_line_bytes : int, default 64 MiB
        Longer lines are not parsed: each becomes a block of its own with
        ``error`` set and only its first bytes as data, read without holding
        the line in memory.
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
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
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
        if max_line_bytes < 1:
            raise ValueError(f"max_line_bytes must be >= 1, got {max_line_bytes}")
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
        self.max_line_bytes = max_line_bytes

    def open_file(self, file_name):
        """Open a file to read; gzip files through :class:`GzipStream`, which notices truncation."""
        compression = self._compression_type
        if compression == CompressionTypes.AUTO:
            compression = CompressionTypes.detect_compression_type(file_name)
        if compression == CompressionTypes.GZIP:
            return open_decompressed(file_name, gzip=True)
        return super().open_file(file_name)

    def read_records(self, file_name, range_tracker):
        start = range_tracker.start_position()
        next_start = start  # offset of the first line not yet read

        def split_points_unclaimed(stop_position):
            return 0 if stop_position <= next_start else iobase.RangeTracker.SPLIT_POINTS_UNKNOWN

        range_tracker.set_split_points_unclaimed_callback(split_points_unclaimed)

        with self.open_file(file_name) as stream:
            header, read = None, b""
            if self.header_lines:
                header, read = _read_header(stream, self.header_lines, self.max_line_bytes, file_name)
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
                max_line_bytes=self.max_line_bytes,
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
                offset, data, starts, error = block
                next_start = scanner.next_offset
                kept = self._claim(range_tracker, starts)
                if kept:
                    end = len(data) if kept == len(starts) else int(starts[kept] - offset)
                    yield TextBlock(file_name, offset, line, data[:end], header, error)
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
