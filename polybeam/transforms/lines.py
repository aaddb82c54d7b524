"""ParseLines: examples from a PCollection of text lines (Pub/Sub messages, ``beam.Create``, another step).

:class:`~polybeam.transforms.read.ReadExamples` reads files; examples that
arrive as lines in a pipeline (a Pub/Sub subscription of LIBSVM, VW or CSV
lines, a Kafka topic, lines made by an earlier step) are parsed by
:class:`ParseLines` into the same :class:`~polybeam.transforms.read.ReadResult`:
ExampleBatch elements (up to ``block_lines`` lines each, parsed at once by the
readers' numba parsers), dead letters and the read's counts, counted as a
file read is counted (``records == examples + dead_letters + skipped``, and
the ``polybeam.read`` counters). ``Train``, ``Evaluate``, ``Predict`` and
:class:`~polybeam.transforms.dead_letters.WriteDeadLetters` take its outputs
as they take those of a file read.

Each element is one line (``str`` or ``bytes``; a trailing line ending is
dropped), or several lines joined by newlines, which count as that many
records. Lines have no place in a file, so a dead letter's ``source`` is the
``source`` given (default ``"<lines>"``), its ``line`` None and its ``offset``
-1; its ``raw`` text and ``reason`` say what was wrong.

CSV lines come without their header: name the columns (``columns=[...]``) or
read them as headerless (``has_header=False``, columns ``"1"`` ... ``"d"``).

>>> import apache_beam as beam
>>> with beam.Pipeline(runner="FnApiRunner") as p:
...     read = p | beam.Create(["1 1:0.5 3:1", "-1 2:1", "oops 1:1"]) | ParseLines(
...         "libsvm", labels="binary", max_dead_letter_fraction=0.5)
...     _ = read.examples | beam.Map(lambda batch: print(len(batch), "examples"))
...     _ = read.dead_letters | beam.Map(lambda letter: print(letter.source, letter.raw, "-", letter.reason))
2 examples
<lines> oops 1:1 - label is not a number: 'oops'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import apache_beam as beam
from apache_beam.utils.windowed_value import WindowedValue

from polybeam.formats.acceptance import DEFAULT_MAX_DEAD_LETTER_FRACTION, InputPolicy
from polybeam.formats.formats import formats_where, is_file_format
from polybeam.formats.records import DeadLetter
from polybeam.transforms.input_check import CheckInput
from polybeam.transforms.read import COUNTS, DEAD_LETTERS, EXAMPLES, ParseBlocks, ReadResult, SumCounts, resolve_format
from polybeam.transforms.sources import DEFAULT_BLOCK_LINES, TextBlock
from polybeam.transforms.windows import combine_globally, is_global

__all__ = ["ParseLines", "lines_block"]

LINES_SOURCE = "<lines>"


def _line_bytes(line) -> bytes:
    """A line as bytes, without its own line ending (the block adds one)."""
    data = line.encode("utf-8") if isinstance(line, str) else bytes(line)
    if data.endswith(b"\n"):
        data = data[:-2] if data.endswith(b"\r\n") else data[:-1]
    return data


def lines_block(lines: Sequence, *, source: str = LINES_SOURCE, header: bytes | None = None) -> TextBlock:
    """One :class:`~polybeam.transforms.sources.TextBlock` of ``lines`` (``str`` or ``bytes``), as a file
    read would give the parsers. With a CSV ``header``, the block starts after it, as a block in the middle
    of a file does, so the parser takes the header as given and reads every line as a record.

    >>> block = lines_block(["1 1:1\\n", b"-1 2:1"])
    >>> block.data, block.first_line
    (b'1 1:1\\n-1 2:1\\n', 1)
    """
    data = b"".join(_line_bytes(line) + b"\n" for line in lines)
    if header is None:
        return TextBlock(source, 0, 1, data)
    return TextBlock(source, len(header) + 1, 2, data, header)


def _placeless(letter: DeadLetter) -> DeadLetter:
    """A dead letter of lines without a file: no line number, no offset (its place in a block means nothing)."""
    return dataclasses.replace(letter, line=None, offset=-1)


class StampedBlocks(beam.DoFn):
    """Lists of up to ``block_lines`` elements of a bundle, each in its elements' window and stamped with the
    latest of their timestamps (a bundle's elements are not yet behind the watermark when it ends, so the
    lists are on time)."""

    def __init__(self, block_lines: int):
        self.block_lines = block_lines
        self._open: dict = {}

    def start_bundle(self):
        self._open = {}  # window -> (elements, latest timestamp)

    def process(self, element, timestamp=beam.DoFn.TimestampParam, window=beam.DoFn.WindowParam):
        elements, latest = self._open.get(window, ([], timestamp))
        elements.append(element)
        latest = max(latest, timestamp)
        if len(elements) >= self.block_lines:
            self._open.pop(window, None)
            yield WindowedValue(elements, latest, [window])
        else:
            self._open[window] = (elements, latest)

    def finish_bundle(self):
        for window, (elements, latest) in self._open.items():
            yield WindowedValue(elements, latest, [window])
        self._open = {}


class ParseLines(beam.PTransform):
    """Parse a PCollection of text lines into ExampleBatches, with bad lines as dead letters (module docstring).

    Parameters
    ----------
    format : str or format object, default "libsvm"
        "libsvm", "vw" or "csv", or a text format object of ``polybeam.formats``.
    columns : sequence of str, optional
        CSV: the header's column names (the lines have no header line).
    source : str, default "<lines>"
        The name the batches and dead letters carry as their source.
    block_lines : int, default 4096
        Most lines per ExampleBatch (Beam's ``BatchElements`` groups them, within a bundle and window).
    allow_empty, max_dead_letter_fraction : as :class:`~polybeam.transforms.read.ReadExamples`
        What the input check accepts.
    check_input : bool, default True
        Fail the job as ``ReadExamples`` does on no example or too many dead letters. The check needs
        the whole read, so it takes bounded lines in the global window; give ``check_input=False`` for
        a stream or windowed lines.
    **format_options
        Passed to ``make_format`` with the format name: ``bits``, ``seed``, ``labels``,
        ``label_column``, ``key_column``, ``id_column``, ``timestamp_column``, ...

    Returns
    -------
    ReadResult
        ``examples`` (ExampleBatch), ``dead_letters`` (DeadLetter), ``counts`` (one ReadCounts per
        window; None for an unbounded stream in the global window, which never ends: its counts are
        the ``polybeam.read`` counters) and ``checked``.

    Examples
    --------
    CSV lines with a key column, whose values become each example's key (``ParsedKeys("column:store")``):

    >>> with beam.Pipeline(runner="FnApiRunner") as p:
    ...     read = p | beam.Create(["1,eu,0.5", "-1,us,2", "1,,1"]) | ParseLines(
    ...         "csv", columns=["y", "store", "x"], label_column="y", key_column="store", labels="binary")
    ...     _ = read.examples | beam.Map(lambda batch: print(len(batch), batch.key_names))
    3 ('eu', 'us', '')
    """

    def __init__(
        self,
        format="libsvm",
        *,
        columns: Sequence[str] | None = None,
        source: str = LINES_SOURCE,
        block_lines: int = DEFAULT_BLOCK_LINES,
        allow_empty: bool = False,
        max_dead_letter_fraction: float = DEFAULT_MAX_DEAD_LETTER_FRACTION,
        check_input: bool = True,
        **format_options,
    ):
        super().__init__()
        if block_lines < 1:
            raise ValueError(f"block_lines must be >= 1, got {block_lines}")
        self.format = resolve_format(format, format_options)
        if not hasattr(self.format, "parse") or is_file_format(self.format):
            lines = ", ".join(formats_where(layout="lines"))
            raise ValueError(f"ParseLines reads text lines ({lines}), not {getattr(self.format, 'name', format)}")
        self.header = self._header(columns)
        self.columns = tuple(columns or ())  # (RecordOrigin records them: a model's CSV lines need no columns)
        self.source = source
        self.block_lines = block_lines
        self.policy = None
        if check_input:
            self.policy = InputPolicy(
                allow_empty=allow_empty,
                max_dead_letter_fraction=max_dead_letter_fraction,
                format=getattr(self.format, "name", "libsvm"),
                spelling="python",
            )

    def _header(self, columns) -> bytes | None:
        name = getattr(self.format, "name", None)
        if columns is None:
            if name == "csv" and self.format.has_header:
                raise ValueError(
                    "CSV lines have no header line: give columns=[...] (the header's names), or has_header=False"
                )
            return None
        if name != "csv":
            raise ValueError(f"columns is for CSV lines, not {name}")
        if isinstance(columns, str):
            raise TypeError("columns is a sequence of column names, not a string")
        return self.format.delimiter.join(columns).encode("utf-8")

    # No return annotation: Beam takes it for the output's type hint and warns that a ReadResult is none.
    def expand(self, lines):
        unbounded = not lines.is_bounded
        if self.policy is not None and (unbounded or not is_global(lines)):
            raise ValueError(
                "ParseLines' input check needs the whole read: bounded lines in the global window; "
                "for a stream or windowed lines give check_input=False"
            )
        source, header = self.source, self.header
        # Full blocks, as a file read makes them (a bundle's or window's last block may be smaller):
        # BatchElements' adaptive sizes start at min_batch_size, and a block of one line costs as much to
        # parse and learn from as one of thousands. A stream's blocks keep their lines' time (the latest
        # of them): BatchElements stamps every batch with its window's end, which in the global window
        # is the end of time, and a stream's learner makes its versions by its examples' times.
        batch = (
            beam.ParDo(StampedBlocks(self.block_lines))
            if unbounded
            else beam.BatchElements(min_batch_size=self.block_lines, max_batch_size=self.block_lines)
        )
        parsed = (
            lines
            | "Batch" >> batch
            | "ToBlocks" >> beam.Map(lambda batch: lines_block(batch, source=source, header=header))
            | "Parse" >> beam.ParDo(ParseBlocks(self.format)).with_outputs(DEAD_LETTERS, COUNTS, main=EXAMPLES)
        )
        letters = parsed[DEAD_LETTERS] | "Placeless" >> beam.Map(_placeless)
        # (nor do their examples: a block's offsets start again at 0 in every block, and what orders rows
        # by source and row id, or skips rows a stream's version already learned, would take them for places)
        examples = parsed[EXAMPLES] | "PlacelessExamples" >> beam.Map(
            lambda batch: dataclasses.replace(batch, row_ids=None)
        )
        counts = None
        if not (unbounded and is_global(lines)):  # a stream that never ends has no total
            counts = parsed[COUNTS] | "SumCounts" >> combine_globally(SumCounts(), parsed[COUNTS])
        read = ReadResult(examples, letters, counts, counts)
        if self.policy is None:
            return read
        return read._replace(checked=read | "CheckInput" >> CheckInput(self.policy))

    def display_data(self):
        return {
            "format": getattr(self.format, "name", type(self.format).__name__),
            "source": self.source,
            "block_lines": self.block_lines,
        }
