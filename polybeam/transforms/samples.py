"""What the launcher reads of an input before it builds a pipeline: the start and the end of a few files.

A training job decides how to read its labels (are they -1/+1, 0/1, 1/2,
yes/no, class numbers from 0?) and whether a LIBSVM file numbers its
features from 0 before any worker reads a record, so that every worker reads
alike and the model records the decision. The decision rests on a sample:
the first and the last :data:`SAMPLE_BYTES` of up to :data:`SAMPLED_FILES`
files (the first, the last, and some between, by name). The end of a file
matters: data sorted by label show one class at the top and the other at the
bottom. Compressed files are sampled at their start only (their end costs a
full decompression). Whatever the sample missed, the read itself refuses
(see :mod:`polybeam.formats.labels`), so a sample can make a job fail early,
never learn wrongly.

>>> import os, tempfile
>>> from polybeam.formats.csv import CsvFormat
>>> path = os.path.join(tempfile.mkdtemp(), "sorted.csv")
>>> _ = open(path, "w").write("y,x\\n" + "1,0.5\\n" * 20000 + "2,0.7\\n" * 20000)
>>> sample = InputSample.of(path, CsvFormat(label_column="y"))
>>> sorted(set(sample.label_texts())), sample.files
(['1', '2'], 1)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from polybeam.formats.acceptance import guess_format
from polybeam.formats.formats import is_file_format
from polybeam.formats.labels import infer_classes
from polybeam.formats.text import record_lines
from polybeam.transforms.sources import open_decompressed

SAMPLE_BYTES = 64 << 10
SAMPLED_FILES = 8
# Row groups of a Parquet file sampled at each end.
SAMPLED_ROW_GROUPS = 1


@dataclass(frozen=True)
class TextPiece:
    """Complete lines of one file: its start (``header`` is None) or a later piece (then ``header`` holds the
    file's first line, which a CSV reader needs to know its columns)."""

    data: bytes
    header: bytes | None = None


@dataclass(frozen=True)
class InputSample:
    """The sampled pieces of an input, and the format that reads them."""

    fmt: object
    pieces: tuple = ()
    tables: tuple = ()
    files: int = 0
    unreadable: list = field(default_factory=list)

    @classmethod
    def of(cls, pattern: str, fmt, *, limit: int = SAMPLE_BYTES, max_files: int = SAMPLED_FILES) -> InputSample:
        """Sample the files ``pattern`` matches (none matched: an empty sample; the read says so)."""
        paths = sampled_paths(pattern, max_files)
        pieces, tables, unreadable = [], [], []
        for path, size in paths:
            try:
                if is_file_format(fmt):
                    tables.extend(_table_ends(path, fmt))
                else:
                    pieces.extend(text_ends(path, size, limit))
            except Exception as error:  # a file the read will report on (permissions, damage)
                unreadable.append((path, str(error)))
        return cls(fmt, tuple(pieces), tuple(tables), len(paths), unreadable)

    def own_format_share(self) -> float:
        """The share of the sampled text records that look like the format's own (1 for binary files, or no
        record): a low one means the input is of another format, which the job's input check diagnoses."""
        name = getattr(self.fmt, "name", None)
        records = [line for piece in self.pieces for line in record_lines(piece.data)]
        if not records:
            return 1.0
        guesses = [guess_format(line[:4096].decode("utf-8", "replace")) for line in records]
        return sum(guess in (None, name) for guess in guesses) / len(guesses)

    def label_texts(self) -> list[str]:
        """The sampled records' labels, as written."""
        texts = []
        for piece in self.pieces:
            try:
                texts.extend(self.fmt.label_texts(piece.data, piece.header))
            except ValueError:  # a header without the label column: the job's own checks say so
                continue
        for table in self.tables:
            try:
                texts.extend(self.fmt.table_label_texts(table))
            except (KeyError, ValueError):  # a schema the read refuses, naming the file
                continue
        return texts


def number_fields(pattern: str, fmt) -> tuple[str, ...]:
    """For rows that may leave fields out (JSON Lines): the fields that hold numbers in the first lines of
    the first file ``pattern`` matches, by name (see
    :meth:`~polybeam.formats.tables.TableFormat.number_fields`); empty when there is no such file or it
    cannot be read (the read itself reports that). The command line and ``ReadExamples`` both settle a
    JSON Lines input's ``number_columns`` here, so that they read the same nulls as missing numbers.

    >>> import os, tempfile
    >>> from polybeam.formats.jsonl import JsonLinesFormat
    >>> path = os.path.join(tempfile.mkdtemp(), "rows.jsonl")
    >>> _ = open(path, "w").write('{"y": 1, "a": 2.5, "c": "red"}\\n{"y": 0, "a": null, "b": 4}\\n')
    >>> number_fields(path, JsonLinesFormat(label_column="y"))
    ('a', 'b')
    """
    first = InputSample.of(pattern, fmt, max_files=1).pieces
    if not first:
        return ()
    try:
        return tuple(fmt.number_fields(fmt.sample_table(first[0].data)))
    except Exception:  # (a first file the read refuses says so itself)
        return ()


def sampled_paths(pattern: str, max_files: int = SAMPLED_FILES) -> list[tuple[str, int | None]]:
    """``(path, size)`` of the first and the last file ``pattern`` matches, by name, and of evenly spaced ones
    between them: ``max_files`` at most."""
    try:
        matched = FileSystems.match([pattern])[0].metadata_list
    except Exception:  # Beam wraps file-system errors in its own types; the read reports them
        return []
    files = sorted((metadata.path, metadata.size_in_bytes) for metadata in matched)
    if len(files) <= max_files:
        return files
    step = (len(files) - 1) / (max_files - 1)
    return [files[round(i * step)] for i in range(max_files)]


def is_compressed(path: str) -> bool:
    return CompressionTypes.detect_compression_type(path) != CompressionTypes.UNCOMPRESSED


def text_ends(path: str, size: int | None, limit: int = SAMPLE_BYTES) -> list[TextPiece]:
    """The complete lines of the first ``limit`` bytes of ``path`` and, for an uncompressed file larger than
    twice that, of its last ``limit`` bytes (a smaller uncompressed file: all of it)."""
    compressed = is_compressed(path)
    if not compressed and size is not None and size <= 2 * limit:
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
            return [TextPiece(handle.read())]
    with open_decompressed(path) as handle:  # (gzip: at most limit + 1 bytes decompressed, whatever it expands to)
        head = handle.read(limit + 1)
    if len(head) <= limit:
        return [TextPiece(head)]
    head = head[: head.rfind(b"\n", 0, limit) + 1]
    if compressed or size is None:
        return [TextPiece(head)]
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
        handle.seek(size - limit)
        tail = handle.read()
    tail = tail[tail.find(b"\n") + 1 :]
    return [TextPiece(head), TextPiece(tail, header=head.split(b"\n", 1)[0])]


def _table_ends(path: str, fmt) -> list:
    """Tables of rows from the start (and, where the format can reach it cheaply, the end) of a file."""
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as stream:
        return fmt.sample_tables(stream)


# Below this share of sampled records that look like the format's own, the input is left to the read's checks.
OWN_FORMAT_SHARE = 0.5


@dataclass(frozen=True)
class Decided:
    """What a sample settles about reading a training input (see :func:`decide`): the class ``names`` of its
    labels (empty: the task's own labels), whether a LIBSVM input counts its features from 0, and a line
    for people per decision."""

    names: tuple[str, ...] = ()
    zero_based: bool = False
    notes: tuple[str, ...] = ()


def decide(sample: InputSample, kind: str, classes: int, names: tuple[str, ...], *, detect_zero_based: bool) -> Decided:
    """How to read the sampled input for a task of ``kind`` (see :func:`polybeam.formats.labels.infer_classes`,
    which raises :class:`~polybeam.formats.labels.LabelEncodingError` for labels that need telling), and,
    with ``detect_zero_based``, whether LIBSVM indices count from 0 (an index 0 sampled)."""
    if sample.own_format_share() < OWN_FORMAT_SHARE:  # another format: the read's check names it
        return Decided()
    notes = []
    zero_based = False
    if detect_zero_based and getattr(sample.fmt, "name", None) == "libsvm":
        lines = sum(sample.fmt.zero_index_lines(piece.data) for piece in sample.pieces)
        if lines:
            zero_based = True
            notes.append(f"input: LIBSVM feature indices count from 0 ({lines} sampled records hold an index 0)")
    found = infer_classes(kind, classes, names, sample.label_texts())
    if found.names:
        notes.append(found.note)
    return Decided(found.names, zero_based, tuple(notes))
