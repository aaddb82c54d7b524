"""Reading examples: files in, ExampleBatch and DeadLetter PCollections out.

``ReadExamples`` reads files of every input format (LIBSVM, VW text, CSV, JSON Lines, Parquet,
Avro; see :mod:`polybeam.formats.formats`) into a PCollection of
:class:`~polybeam.learners.batch.ExampleBatch` (a few thousand examples per
element) and a PCollection of :class:`~polybeam.formats.records.DeadLetter`
for the records that could not be parsed. Every record read is counted once,
in the Beam counters of namespace ``polybeam.read`` (for the runner's UI) and
in a PCollection holding one :class:`~polybeam.formats.records.ReadCounts`
(for the job's own report, which a worker writes: a launcher that does not
wait for the job never sees its metrics)::

    records == examples + dead_letters + skipped

Text files are read by the splittable :class:`~polybeam.transforms.sources.TextBlockSource`
as blocks of lines; binary table files (Parquet, Avro) by record batch, one file per task.

Hostile input (see ``tests/transforms/test_input_torture.py``) never crashes a
read nor loses a record silently. Every bad record is a dead letter with its
source, line (row) and offset, and a reason: lines with NUL bytes, lines
longer than ``max_line_bytes`` (read past in bounded memory), the incomplete
last line of a truncated gzip file (the lines before it are read), labels and
values that are not finite numbers. Only input that cannot be read as a whole
stops the job, with an error naming the file: a gzip file whose data is
corrupt (:class:`~polybeam.transforms.sources.CorruptInputError`), a CSV
header the format cannot use, and a Parquet or Avro file that is not one or
lacks the columns the format needs.
"""

from __future__ import annotations

import dataclasses
import os
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import apache_beam as beam
import pyarrow as pa
from apache_beam.io import fileio
from apache_beam.io.filesystem import CompressionTypes, FileMetadata
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics
from apache_beam.transforms.util import ReshufflePerKey
from apache_beam.utils.windowed_value import WindowedValue

from polybeam.formats.acceptance import DEFAULT_MAX_DEAD_LETTER_FRACTION, InputPolicy
from polybeam.formats.formats import is_file_format, make_format, spec_of
from polybeam.formats.input_settings import InputSettings
from polybeam.formats.labels import LabelEncodingError
from polybeam.formats.records import DeadLetter, ParsedBlock, ReadCounts
from polybeam.learners.batch import ExampleBatch
from polybeam.transforms.dead_letters import FillLineNumbers
from polybeam.transforms.files import absolute_path
from polybeam.transforms.input_check import CheckInput
from polybeam.transforms.samples import InputSample, decide, number_fields
from polybeam.transforms.sources import (
    DEFAULT_BLOCK_BYTES,
    DEFAULT_BLOCK_LINES,
    DEFAULT_MAX_LINE_BYTES,
    CorruptInputError,
    TextBlock,
    TextBlockSource,
)

__all__ = [
    "COUNTER_NAMESPACE",
    "COUNTS",
    "EXAMPLES",
    "DEAD_LETTERS",
    "ParseBlocks",
    "ReadTableFiles",
    "ReadExamples",
    "ReadResult",
    "SumCounts",
]

COUNTER_NAMESPACE = "polybeam.read"
EXAMPLES = "examples"
DEAD_LETTERS = "dead_letters"
COUNTS = "counts"


class _ReadCounters:
    """The ``polybeam.read`` counters, and how a parsed block feeds them and the outputs."""

    def __init__(self):
        self.records = Metrics.counter(COUNTER_NAMESPACE, "records")
        self.examples = Metrics.counter(COUNTER_NAMESPACE, "examples")
        self.dead_letters = Metrics.counter(COUNTER_NAMESPACE, "dead_letters")
        self.skipped = Metrics.counter(COUNTER_NAMESPACE, "skipped")

    def emit(self, parsed: ParsedBlock):
        """Count a parsed block; yield its batch (if not empty), its tagged dead letters and its counts."""
        self.records.inc(parsed.records)
        self.examples.inc(len(parsed.batch))
        self.dead_letters.inc(len(parsed.dead_letters))
        self.skipped.inc(parsed.skipped)
        if len(parsed.batch):
            yield parsed.batch
        for letter in parsed.dead_letters:
            yield beam.pvalue.TaggedOutput(DEAD_LETTERS, letter)
        yield beam.pvalue.TaggedOutput(COUNTS, parsed.counts)


class ParseBlocks(beam.DoFn):
    """Parse :class:`~polybeam.transforms.sources.TextBlock` elements with a text format.

    The main output holds one ExampleBatch per block (blocks with no examples
    produce none); the ``dead_letters`` output holds the bad records.

    With ``prefetch`` (the default), a block is parsed on a second thread while
    the fused steps downstream (usually learning) work on the previous block's
    examples: the numba kernels release the GIL, so parsing and learning use
    two cores, as Vowpal Wabbit's parser thread does. Outputs keep the window
    and timestamp of the block they came from, and a bundle's last block is
    flushed in ``finish_bundle``.

    Parameters
    ----------
    text_format : object
        A text format of ``polybeam.formats`` (anything with
        ``parse(data, *, source, offset, first_line, header)``).
    prefetch : bool
        Parse one block ahead on a helper thread.
    """

    def __init__(self, text_format, prefetch: bool = True):
        self.text_format = text_format
        self.prefetch = prefetch
        self._counters = _ReadCounters()
        self._pool = None
        self._pending = None

    def setup(self):
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="polybeam-parse") if self.prefetch else None

    def teardown(self):
        if self._pool is not None:
            self._pool.shutdown(wait=False)

    def start_bundle(self):
        self._pending = None

    def _parse(self, block: TextBlock) -> ParsedBlock:
        return parse_block(self.text_format, block)

    def _emit(self, pending):
        future, timestamp, window = pending
        for output in self._counters.emit(future.result()):
            if isinstance(output, beam.pvalue.TaggedOutput):
                yield beam.pvalue.TaggedOutput(output.tag, WindowedValue(output.value, timestamp, [window]))
            else:
                yield WindowedValue(output, timestamp, [window])

    def process(self, block: TextBlock, timestamp=beam.DoFn.TimestampParam, window=beam.DoFn.WindowParam):
        if self._pool is None:
            yield from self._counters.emit(self._parse(block))
            return
        previous, self._pending = self._pending, (self._pool.submit(self._parse, block), timestamp, window)
        if previous is not None:
            yield from self._emit(previous)

    def finish_bundle(self):
        if self._pending is not None:
            pending, self._pending = self._pending, None
            yield from self._emit(pending)


def parse_block(text_format, block: TextBlock) -> ParsedBlock:
    """One block parsed by ``text_format`` (a block the source marked unparsable: its one dead letter)."""
    if block.error is not None:
        return unparsable_record(block, getattr(text_format, "bits", 18))
    return text_format.parse(
        block.data, source=block.source, offset=block.offset, first_line=block.first_line, header=block.header
    )


def unparsable_record(block: TextBlock, bits: int) -> ParsedBlock:
    """One dead letter for a block the source marked as an unparsable record (a too long line,
    the tail of a truncated file): ``block.data`` is the record's start, ``block.error`` why."""
    letter = DeadLetter.from_bytes(
        block.data, source=block.source, line=block.first_line, offset=block.offset, reason=block.error
    )
    return ParsedBlock(batch=ExampleBatch.empty(bits), dead_letters=[letter], records=1)


class ReadTableFiles(beam.DoFn):
    """Read each matched file of a binary table format (Parquet, Avro) by record batches and parse them.

    Files are opened with Beam's ``FileSystems`` (so ``gs://`` and friends
    work) and read with the format's ``record_batches(stream, rows)``, which
    keeps one record batch in memory at a time.

    A file that is not of the format, or truncated, or damaged, raises
    :class:`~polybeam.transforms.sources.CorruptInputError` naming it; a file
    without the columns the format needs, a ``ValueError`` naming it.

    Parameters
    ----------
    table_format : object
        The format (``record_batches(stream, rows)`` and
        ``parse_table(table, *, source, first_row)``).
    batch_rows : int
        Rows per record batch, so per output ExampleBatch.
    """

    def __init__(self, table_format, batch_rows: int = DEFAULT_BLOCK_LINES):
        self.table_format = table_format
        self.batch_rows = batch_rows
        self._counters = _ReadCounters()

    def process(self, file: FileMetadata | str):
        path = file.path if isinstance(file, FileMetadata) else file
        title = _title(self.table_format)
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as stream:
            # The readers' own messages ("Parquet magic bytes not found in footer") do not say which file.
            try:
                batches = iter(self.table_format.record_batches(stream, self.batch_rows))
            except (pa.ArrowException, OSError, ValueError, EOFError) as error:
                raise CorruptInputError(
                    f"{path}: not a readable {title} file (truncated, damaged or not {title}?): {error}"
                ) from error
            first_row = 0
            while True:
                try:
                    record_batch = next(batches, None)
                except (pa.ArrowException, OSError, ValueError, EOFError) as error:
                    raise CorruptInputError(f"{path}: damaged {title} data after row {first_row}: {error}") from error
                if record_batch is None:
                    return
                parsed = self.table_format.parse_table(record_batch, source=path, first_row=first_row)
                first_row += record_batch.num_rows
                yield from self._counters.emit(parsed)


def _title(table_format) -> str:
    spec = spec_of(table_format)
    return spec.title if spec is not None else type(table_format).__name__


class SumCounts(beam.CombineFn):
    """Adds up the :class:`ReadCounts` of every block (an empty input counts nothing)."""

    def create_accumulator(self) -> ReadCounts:
        return ReadCounts()

    def add_input(self, total: ReadCounts, counts: ReadCounts) -> ReadCounts:
        return total + counts

    def merge_accumulators(self, totals) -> ReadCounts:
        merged = ReadCounts()
        for total in totals:
            merged = merged + total
        return merged

    def extract_output(self, total: ReadCounts) -> ReadCounts:
        return total


class SpreadRead(beam.PTransform):
    """``beam.io.Read(source)`` whose splits are spread over the workers by a shuffle, on every runner.

    ``Read`` is a splittable DoFn whose initial splits are processed where
    they were made: Beam's Flink and Spark runners make them all in the one
    task that got the impulse, so that task read (and polybeam trained on)
    the whole input, whatever the parallelism (measured on a Flink cluster of
    two TaskManagers: 8 files, all read by one; the in-process runner breaks
    fusion there itself). So the splits are made first, with ``Read``'s own
    sizes, and reshuffled by their index before they are read: a runner hands
    them out to its workers, and the in-process runner hands them out in
    order and round robin, as it does ``Read``'s splits (the same blocks, in
    the same order, on the same workers). Only the splits' descriptions cross
    the shuffle, never the data.
    """

    def __init__(self, source):
        super().__init__()
        self.source = source

    def expand(self, pbegin):
        return (
            pbegin
            | "Impulse" >> beam.Impulse()
            | "Split" >> beam.FlatMap(_numbered_splits, self.source)
            # Not a plain GroupByKey: its output would be timestamped at the end of the global window, and
            # a runner that keeps watermarks (Prism) then drops every example later windowed by event time
            # as late. ReshufflePerKey keeps each element's timestamp and emits as soon as it can.
            | "Spread" >> ReshufflePerKey()
            | "Read" >> beam.FlatMap(_read_split)
        )


def _numbered_splits(_, source):
    """``(index, split)`` of each of ``source``'s initial splits, sized as ``beam.io.Read`` sizes them."""
    try:
        size = source.estimate_size()
    except NotImplementedError:
        size = None
    bundles = source.split(beam.io.Read.get_desired_chunk_size(size))
    return enumerate((bundle.source, bundle.start_position, bundle.stop_position) for bundle in bundles)


def _read_split(numbered):
    source, start, stop = numbered[1]
    return source.read(source.get_range_tracker(start, stop))


class ReadResult(NamedTuple):
    """What :class:`ReadExamples` produces: ``examples`` (ExampleBatch), ``dead_letters``
    (DeadLetter), ``counts`` (one :class:`ReadCounts` for everything read) and
    ``checked`` (the same ReadCounts, once the input check passed; without
    the check, ``counts`` itself). ``read | Train(...)`` trains on
    ``examples`` and emits its model only once the check passed.

    Like a ParDo's outputs, it can be indexed by attribute or tag name:
    ``read.examples``, ``read["dead_letters"]``.
    """

    examples: beam.PCollection
    dead_letters: beam.PCollection
    counts: beam.PCollection | None = None
    checked: beam.PCollection | None = None

    def __getitem__(self, key):
        return getattr(self, key) if isinstance(key, str) else tuple.__getitem__(self, key)


def resolve_format(format, options: dict):
    """A format object from a format name and options, or the format object given."""
    if isinstance(format, str):
        return make_format(format, **options)
    if options:
        raise TypeError(
            f"format options {sorted(options)} only apply when the format is given by name; "
            f"configure the {type(format).__name__} object instead"
        )
    return format


# How the settings that say how to read labels are spelled in Python, for messages.
PYTHON_LABEL_SETTINGS = (
    "label_names=(NEGATIVE, POSITIVE) (or, for more classes, labels='multiclass' with classes=K or label_names)"
)


def input_settings_of(parsing_format) -> InputSettings | None:
    """How ``parsing_format`` reads, as a model records it (None for a format of another kind)."""
    try:
        return InputSettings.of(parsing_format)
    except (TypeError, ValueError, KeyError):
        return None


def require_match(file_pattern: str) -> None:
    """Fail early, naming the pattern, when no file matches it, or when it names a local folder (whose files a
    worker would otherwise fail to open as one file)."""
    if "://" not in file_pattern and os.path.isdir(file_pattern):
        raise IsADirectoryError(
            f"{file_pattern} is a folder: give a pattern of its files, such as {os.path.join(file_pattern, '*')}"
        )
    try:
        matched = FileSystems.match([file_pattern], limits=[1])[0].metadata_list
    except Exception as error:  # Beam raises BeamIOError for some missing paths
        raise FileNotFoundError(f"no file matches {file_pattern!r}: {error}") from error
    if not matched:
        raise FileNotFoundError(f"no file matches {file_pattern!r}")


class ReadExamples(beam.PTransform):
    """Read example files into ExampleBatch elements, with bad records as dead letters.

    Parameters
    ----------
    file_pattern : str
        A file or glob, local or on any filesystem Beam knows (``gs://`` ...);
        a relative local path is taken relative to the launcher's folder.
        Each file is read in parallel; uncompressed text files are also split
        into byte ranges. Compressed text (``.gz``, ``.bz2``, ...) is
        decompressed on the fly, each file by one reader.
    format : str or format object, default "libsvm"
        "libsvm", "vw", "csv", "jsonl", "parquet" or "avro" (see
        :data:`~polybeam.formats.formats.FORMATS`), or a format object from
        ``polybeam.formats``.
    block_lines : int, default 4096
        Most records per ExampleBatch (rows per record batch for Parquet).
    block_bytes : int, default 4 MiB
        About the most bytes of text per block.
    max_line_bytes : int, default 64 MiB
        A longer line is a dead letter, never parsed nor held whole (the
        reader streams past it): parsing a line costs up to about 8 times its
        size (its features as arrays), so the limit bounds a worker's memory.
    allow_empty : bool, default False
        Accept a read that yields no example; without it the job fails
        (``InputRejected``), as ``polybeam train`` does without ``--allow-empty``.
    max_dead_letter_fraction : float, default 0.1
        The job fails when more of the records (blank, comment and header
        lines aside) than this are dead letters: the files are probably of
        another format, or read with the wrong options. 1 accepts any share.
    check_input : bool, default True
        Make the input check (see :mod:`polybeam.transforms.input_check`)
        at all; ``polybeam``'s own jobs make it themselves, with their report.
    infer : bool, default True
        Settle what the settings leave open from a sample of the input, as
        ``polybeam train`` does (see :mod:`polybeam.transforms.samples`):
        binary or multiclass labels without ``label_names`` that are two
        other values (1/2, yes/no) or class numbers from 0 get class names,
        and LIBSVM given by name without ``zero_based`` counts its features
        from 0 when the sample holds an index 0. The decisions are in
        ``notes``, and the format read with is ``format``; the examples carry
        it (``read.examples.polybeam_input``, an
        :class:`~polybeam.formats.input_settings.InputSettings`), so that
        ``Train`` learns the class names and records the input in its models.
        Labels that cannot be read without being told (three values for a
        binary task) raise ``ValueError`` here, saying what to pass.
    **format_options
        Passed to ``make_format`` with the format name: ``bits``, ``seed``,
        ``labels`` ("any", "real", "binary", "multiclass") and format-specific
        options such as ``label_column``.

    Returns
    -------
    ReadResult
        ``examples``, a PCollection of ExampleBatch, and ``dead_letters``, a
        PCollection of DeadLetter with line numbers (row numbers for Parquet).

    Raises
    ------
    FileNotFoundError
        When nothing matches ``file_pattern``.
    InputRejected
        When the pipeline runs, if the read yields no example or too many
        dead letters (see ``allow_empty`` and ``max_dead_letter_fraction``):
        the message says how many, the first reasons, and the likely cause.

    Bad records are dead letters and never stop the read: lines with NUL
    bytes, lines longer than ``max_line_bytes``, the incomplete last line of a
    truncated gzip file (every complete line before it is read), labels and
    values that are not finite numbers, ... A file that cannot be read as a
    whole fails the job with an error naming it: corrupt gzip data
    (:class:`~polybeam.transforms.sources.CorruptInputError`: lines already
    read may be wrong), a CSV header without the configured columns, a
    Parquet file that is not Parquet or lacks the columns the format needs
    (``ValueError``).

    Examples
    --------
    >>> import os, tempfile
    >>> from polybeam.formats.libsvm import LibsvmFormat
    >>> path = os.path.join(tempfile.mkdtemp(), "train.libsvm")
    >>> _ = open(path, "w").write("1 1:0.5 3:1\\n-1 2:1\\nnot-a-label 1:1\\n")
    >>> with beam.Pipeline(runner="FnApiRunner") as p:
    ...     read = p | ReadExamples(path, LibsvmFormat(labels="binary"), max_dead_letter_fraction=0.5)
    ...     _ = read.examples | beam.Map(lambda batch: print(len(batch), "examples"))
    ...     _ = read.dead_letters | beam.Map(lambda letter: print("line", letter.line, letter.reason))
    2 examples
    line 3 label is not a number: 'not-a-label'

    The same file with the default ``max_dead_letter_fraction`` (0.1) fails
    the job: a third of its records are dead letters.

    >>> from polybeam.formats.acceptance import InputRejected
    >>> try:
    ...     with beam.Pipeline(runner="FnApiRunner") as p:
    ...         _ = p | ReadExamples(path, LibsvmFormat(labels="binary"))
    ... except InputRejected as error:
    ...     print(str(error).splitlines()[0])
    1 of 3 records (33.3%) are dead letters, more than max_dead_letter_fraction=0.1 allows; the first reason:
    """

    def __init__(
        self,
        file_pattern: str,
        format="libsvm",
        *,
        block_lines: int = DEFAULT_BLOCK_LINES,
        block_bytes: int = DEFAULT_BLOCK_BYTES,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        allow_empty: bool = False,
        max_dead_letter_fraction: float = DEFAULT_MAX_DEAD_LETTER_FRACTION,
        check_input: bool = True,
        infer: bool = True,
        **format_options,
    ):
        super().__init__()
        if block_lines < 1 or block_bytes < 1 or max_line_bytes < 1:
            raise ValueError(
                f"block_lines, block_bytes and max_line_bytes must be >= 1, "
                f"got {block_lines}, {block_bytes} and {max_line_bytes}"
            )
        # A worker elsewhere resolves a relative path in its own folder: pin it to the launcher's.
        self.file_pattern = absolute_path(file_pattern)
        self.format = resolve_format(format, format_options)
        self.infer = infer
        self.notes: tuple[str, ...] = ()
        # Only a LIBSVM format the call configured leaves its numbering open (an object says what it is).
        self._numbering_open = isinstance(format, str) and "zero_based" not in format_options
        self.block_lines = block_lines
        self.block_bytes = block_bytes
        self.max_line_bytes = max_line_bytes
        # Built now, so that a bad fraction fails here rather than in the running job.
        self.policy = None
        if check_input:
            self.policy = InputPolicy(
                allow_empty=allow_empty,
                max_dead_letter_fraction=max_dead_letter_fraction,
                format=getattr(self.format, "name", "libsvm"),
                spelling="python",
            )

    # No return annotation: Beam takes it for the output's type hint and warns that a ReadResult is none.
    def expand(self, pbegin):
        require_match(self.file_pattern)
        if self.infer:
            self._settle_format()
        read = self._read_files(pbegin) if is_file_format(self.format) else self._read_text(pbegin)
        read.examples.polybeam_input = input_settings_of(self.format)
        read = read._replace(checked=read.counts)  # (Beam takes no None among a transform's inputs)
        if self.policy is None:
            return read
        return read._replace(checked=read | "CheckInput" >> CheckInput(self.policy))

    def _settle_format(self) -> None:
        """Read the class names and the LIBSVM numbering a sample of the input shows (see ``infer``), and for
        JSON Lines the fields that hold numbers (as ``polybeam train`` records them)."""
        self._settle_number_fields()
        fmt = self.format
        kind = getattr(fmt, "labels", "any")
        if kind not in ("binary", "multiclass") and not self._numbering_open:
            return
        try:
            decided = decide(
                InputSample.of(self.file_pattern, fmt),
                kind,
                getattr(fmt, "classes", 0),
                getattr(fmt, "label_names", ()),
                detect_zero_based=self._numbering_open,
            )
        except LabelEncodingError as error:
            raise ValueError(f"{self.file_pattern}: {error}: pass {PYTHON_LABEL_SETTINGS}") from None
        changes = {}
        if decided.names:
            changes["label_names"] = decided.names
        if decided.zero_based:
            changes["zero_based"] = True
        if changes:
            self.format = dataclasses.replace(fmt, **changes)
        self.notes = decided.notes

    def _settle_number_fields(self) -> None:
        """Rows that may leave fields out (JSON Lines): the fields holding numbers in the first lines of the
        first file are ``number_columns``, whose null or absence is a missing number on every line (see
        :meth:`~polybeam.formats.tables.TableFormat.number_fields`)."""
        fmt = self.format
        if not getattr(fmt, "partial_rows", False) or fmt.number_columns:
            return
        numbers = number_fields(self.file_pattern, fmt)
        if numbers:
            self.format = dataclasses.replace(fmt, number_columns=numbers)

    def _read_text(self, pbegin) -> ReadResult:
        source = TextBlockSource(
            self.file_pattern,
            block_lines=self.block_lines,
            block_bytes=self.block_bytes,
            # The lines every block needs; headerless CSV carries its first record
            # (its fields count the columns) so that each block counts them alike.
            header_lines=getattr(self.format, "carried_lines", getattr(self.format, "header_lines", 0)),
            max_line_bytes=self.max_line_bytes,
            validate=False,  # require_match did, with a clearer message
        )
        parsed = (
            pbegin
            | "ReadBlocks" >> SpreadRead(source)
            | "Parse" >> beam.ParDo(ParseBlocks(self.format)).with_outputs(DEAD_LETTERS, COUNTS, main=EXAMPLES)
        )
        # Readers that start mid-file leave line numbers to this (rare) path.
        letters = parsed[DEAD_LETTERS] | "FillLineNumbers" >> beam.ParDo(FillLineNumbers())
        return ReadResult(parsed[EXAMPLES], letters, parsed[COUNTS] | "SumCounts" >> beam.CombineGlobally(SumCounts()))

    def _read_files(self, pbegin) -> ReadResult:
        parsed = (
            pbegin
            | "Match" >> fileio.MatchFiles(self.file_pattern, empty_match_treatment=fileio.EmptyMatchTreatment.DISALLOW)
            # One file is one task; the reshuffle spreads files over workers.
            | "Spread" >> beam.Reshuffle()
            | "ReadTables"
            >> beam.ParDo(ReadTableFiles(self.format, self.block_lines)).with_outputs(
                DEAD_LETTERS, COUNTS, main=EXAMPLES
            )
        )
        counts = parsed[COUNTS] | "SumCounts" >> beam.CombineGlobally(SumCounts())
        return ReadResult(parsed[EXAMPLES], parsed[DEAD_LETTERS], counts)

    def display_data(self):
        return {
            "file_pattern": self.file_pattern,
            "format": getattr(self.format, "name", type(self.format).__name__),
            "block_lines": self.block_lines,
            "block_bytes": self.block_bytes,
            "max_line_bytes": self.max_line_bytes,
        }
