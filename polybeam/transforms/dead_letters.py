"""The dead-letter branch of reading: line numbers for late readers, and writing.

A reader that starts in the middle of a file does not count the lines before
its start (that would make reading quadratic in the number of splits), so the
dead letters it finds know their byte offset but not their line number.
:class:`FillLineNumbers` counts newlines up to those offsets. Bad records are
rare, so this path may be slow per record; it reads each file forward once per
worker and remembers where it has been.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections import OrderedDict

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from polybeam.formats.records import MAX_RAW_CHARS, DeadLetter

__all__ = ["LineIndex", "FillLineNumbers", "WriteDeadLetters"]

_READ_SIZE = 1 << 20


class LineIndex:
    """Line numbers at byte offsets of one (decompressed) file, counted on demand.

    It keeps the stream open and remembers ``(offset, line)`` checkpoints about
    every megabyte, so offsets asked in increasing order cost one pass over
    the file, and an earlier offset costs at most a megabyte of re-reading
    (plus a seek, which in a compressed file decompresses from the start).

    Parameters
    ----------
    path : str
        The file, opened with Beam's ``FileSystems`` (so ``gs://`` works) and
        decompressed according to its extension.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "a.txt")
    >>> _ = open(path, "wb").write(b"a\\nbb\\n\\nccc\\n")
    >>> index = LineIndex(path)
    >>> [index.line_at(offset) for offset in (0, 2, 5, 6)]
    [1, 2, 3, 4]
    >>> index.close()
    """

    def __init__(self, path: str):
        self.path = path
        self._stream = None
        self._position = 0  # where the open stream is
        self._line = 1  # line number of the line containing _position
        self._checkpoint_offsets = [0]
        self._checkpoint_lines = [1]

    def line_at(self, offset: int) -> int:
        """The 1-based number of the line containing byte ``offset``."""
        if offset < 0:
            raise ValueError(f"offset must be >= 0, got {offset}")
        at = bisect.bisect_right(self._checkpoint_offsets, offset) - 1
        nearest = self._checkpoint_offsets[at]
        if self._stream is None or offset < self._position or nearest > self._position:
            self._seek(nearest, self._checkpoint_lines[at])
        while self._position < offset:
            chunk = self._stream.read(min(_READ_SIZE, offset - self._position))
            if not chunk:
                raise ValueError(f"{self.path} has no byte at offset {offset} (it ends at {self._position})")
            self._position += len(chunk)
            self._line += chunk.count(b"\n")
            if self._position >= self._checkpoint_offsets[-1] + _READ_SIZE:
                self._checkpoint_offsets.append(self._position)
                self._checkpoint_lines.append(self._line)
        return self._line

    def text_at(self, offset: int, limit: int) -> bytes:
        """The line that starts at byte ``offset`` (at most ``limit`` bytes of it)."""
        self.line_at(offset)
        chunk = self._stream.read(limit)
        self._position += len(chunk)
        self._line += chunk.count(b"\n")
        end = chunk.find(b"\n")
        return chunk if end < 0 else chunk[:end]

    def _seek(self, offset: int, line: int) -> None:
        if self._stream is None:
            self._stream = FileSystems.open(self.path, compression_type=CompressionTypes.AUTO)
        self._stream.seek(offset)
        self._position, self._line = offset, line

    def close(self) -> None:
        """Close the stream; the checkpoints stay, and the next query reopens it."""
        if self._stream is not None:
            self._stream.close()
            self._stream = None


class FillLineNumbers(beam.DoFn):
    """Give dead letters without a line number (``line=None``) the line their offset is on,
    and those without their text (``raw=None``, e.g. examples without a model) the line's text.

    Letters that know both pass through untouched. Line indexes of the
    most recently seen files are kept between bundles; their streams are
    closed at the end of each bundle.

    Parameters
    ----------
    max_files : int, default 16
        How many files' line indexes to keep.
    """

    def __init__(self, max_files: int = 16):
        self.max_files = max_files
        self._indexes: OrderedDict[str, LineIndex] = OrderedDict()

    def setup(self):
        self._indexes = OrderedDict()

    def process(self, letter: DeadLetter):
        if letter.offset < 0 or not letter.source:  # nothing to look up: an example made in memory
            yield letter if letter.raw is not None else dataclasses.replace(letter, raw="")
            return
        if letter.line is None:
            letter = dataclasses.replace(letter, line=self._index(letter.source).line_at(letter.offset))
        if letter.raw is None:
            raw = self._index(letter.source).text_at(letter.offset, MAX_RAW_CHARS * 4)
            letter = DeadLetter.from_bytes(
                raw, source=letter.source, line=letter.line, offset=letter.offset, reason=letter.reason
            )
        yield letter

    def _index(self, path: str) -> LineIndex:
        index = self._indexes.pop(path, None) or LineIndex(path)
        self._indexes[path] = index
        while len(self._indexes) > self.max_files:
            _, evicted = self._indexes.popitem(last=False)
            evicted.close()
        return index

    def finish_bundle(self):
        for index in self._indexes.values():
            index.close()

    def teardown(self):
        self.finish_bundle()


class WriteDeadLetters(beam.PTransform):
    """Write dead letters as JSON lines (:meth:`DeadLetter.to_json`) with ``WriteToText``.

    Parameters
    ----------
    path_prefix : str
        Where the shards go, e.g. ``"out/dead_letters"``.
    file_name_suffix : str, default ".jsonl"
    num_shards : int, default 0
        0 lets the runner choose; 1 writes a single file.
    **write_options
        Further ``WriteToText`` options, e.g. ``shard_name_template=""`` to
        write exactly ``path_prefix + file_name_suffix`` (with one shard).

    Examples
    --------
    >>> import apache_beam as beam, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "bad.jsonl")
    >>> with beam.Pipeline(runner="FnApiRunner") as p:
    ...     _ = (p | beam.Create([DeadLetter("a.txt", 3, 10, "x", "label is not a number: 'x'")])
    ...            | WriteDeadLetters(path, file_name_suffix="", num_shards=1, shard_name_template=""))
    >>> [DeadLetter.from_json(line).line for line in open(path)]
    [3]
    """

    def __init__(self, path_prefix: str, *, file_name_suffix: str = ".jsonl", num_shards: int = 0, **write_options):
        super().__init__()
        self.path_prefix = path_prefix
        self.write_options = dict(file_name_suffix=file_name_suffix, num_shards=num_shards, **write_options)

    def expand(self, letters):
        return (
            letters
            | "ToJson" >> beam.Map(DeadLetter.to_json)
            | "Write" >> beam.io.WriteToText(self.path_prefix, **self.write_options)
        )
