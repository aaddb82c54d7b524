"""Watching a file pattern: each file that appears, once, when it is complete, until told to stop.

:class:`WatchFiles` polls ``pattern`` every ``interval`` seconds (a splittable DoFn that defers itself
between polls, as Beam's ``PeriodicImpulse`` does, so any streaming runner runs it) and emits each file's
path once its size was the same at two polls in a row (a file still being written is not read half),
timestamped at the poll that saw it complete: its arrival. The watermark follows the clock, so the
event-time timers of :class:`~polybeam.transforms.stream_train.TrainStream` fire on time.

It stops, and with it the stream (the watermark goes to the end, every pending version is made), when
the ``stop_file`` exists (what ``polybeam train --watch`` writes on SIGTERM or SIGINT) or when no new
file appeared for ``stop_after_idle`` seconds. Files arrive in the order of their modification time,
then path.
"""

from __future__ import annotations

import hashlib
import time

import apache_beam as beam
from apache_beam.coders import PickleCoder
from apache_beam.io.filesystems import FileSystems
from apache_beam.io.restriction_trackers import OffsetRange, OffsetRestrictionTracker
from apache_beam.io.watermark_estimators import ManualWatermarkEstimator
from apache_beam.transforms.core import RestrictionProvider
from apache_beam.transforms.userstate import ReadModifyWriteStateSpec
from apache_beam.transforms.window import TimestampedValue
from apache_beam.utils.timestamp import Duration, Timestamp

from polybeam.formats.formats import is_file_format
from polybeam.formats.records import ReadCounts
from polybeam.transforms.files import absolute_path, read_json, write_atomically, write_json
from polybeam.transforms.read import DEAD_LETTERS, EXAMPLES, input_settings_of, parse_block, resolve_format
from polybeam.transforms.sources import DEFAULT_BLOCK_LINES, DEFAULT_MAX_LINE_BYTES, TextBlockSource

# A file is emitted at the second poll that sees it at one size: the idle stop waits at least that long.
CONFIRMING_POLLS = 2
# An unbounded sequence of polls (the restriction's end is never reached).
POLLS = 1 << 62


class _Polls(RestrictionProvider):
    def initial_restriction(self, element):
        return OffsetRange(0, POLLS)

    def create_tracker(self, restriction):
        return OffsetRestrictionTracker(restriction)

    def restriction_size(self, element, restriction):
        return 1

    def truncate(self, element, restriction):  # (drained: poll no more)
        return None


def should_stop(stop_file: str | None, stop_after_idle: float | None, last_arrival: float, now: float) -> str | None:
    """Why the watch ends now (the stop file exists; idle too long), None when it goes on.

    >>> should_stop(None, 10.0, last_arrival=100.0, now=105.0), should_stop(None, 10.0, 100.0, 111.0)
    (None, 'no new file for 10 s')
    """
    if stop_file is not None and FileSystems.exists(stop_file):
        return f"{stop_file} exists"
    if stop_after_idle is not None and now - last_arrival >= stop_after_idle:
        return f"no new file for {stop_after_idle:g} s"
    return None


# The splittable DoFn's parameters (module-level: Beam reads them from the defaults).
POLL_TRACKER = beam.DoFn.RestrictionParam(_Polls())
POLL_WATERMARK = beam.DoFn.WatermarkEstimatorParam(ManualWatermarkEstimator.default_provider())


class PollFiles(beam.DoFn):
    """The splittable DoFn of :class:`WatchFiles`: every poll, every matching file as ``(path, size,
    modified)``, timestamped at the poll."""

    def __init__(self, pattern: str, interval: float, stop_file: str | None, stop_after_idle: float | None):
        self.pattern = pattern
        self.interval = float(interval)
        self.stop_file = stop_file
        self.stop_after_idle = stop_after_idle

    def process(
        self,
        started,
        tracker=POLL_TRACKER,
        watermark=POLL_WATERMARK,
    ):
        poll = tracker.current_restriction().start
        if not tracker.try_claim(poll):
            return
        now = time.time()
        matched = FileSystems.match([self.pattern])[0].metadata_list
        files = sorted((m.last_updated_in_seconds, m.path, m.size_in_bytes) for m in matched)
        for modified, path, size in files:
            yield TimestampedValue((path, size, modified), now)
        watermark.set_watermark(Timestamp(now))
        # Idle since the newest file, or since the watch began polling (``poll`` polls ago at the latest:
        # the runner may start it well after the job was built), never before a file seen has had the two
        # polls that confirm it complete (a file the stop file leaves unconfirmed is the next run's).
        began = max(float(started), now - poll * self.interval)
        last_arrival = max([began, *(modified for modified, _, _ in files)])
        if poll >= CONFIRMING_POLLS and should_stop(self.stop_file, self.stop_after_idle, last_arrival, now):
            tracker.try_claim(POLLS - 1)  # (the rest of the polls claimed: the watch is done)
            return
        tracker.defer_remainder(Duration(seconds=self.interval))


# The size a path had at its last poll, and whether it was emitted (module-level specs: see stream_train).
SEEN = ReadModifyWriteStateSpec("seen", PickleCoder())
SEEN_STATE = beam.DoFn.StateParam(SEEN)


class OnceComplete(beam.DoFn):
    """``(path, (size, modified))`` per poll in, each path out once: at the first poll where its size is
    what it was at the poll before (a file still growing waits)."""

    def process(self, element, seen=SEEN_STATE):
        path, (size, _modified) = element
        before = seen.read()
        if before == "emitted":
            return
        if before is not None and before == size:
            seen.write("emitted")
            yield path
            return
        seen.write(size)


class WatchFiles(beam.PTransform):
    """The paths of the files matching ``pattern`` as they appear (see the module's docstring).

    Parameters
    ----------
    pattern : str
        A file or glob on any Beam file system.
    interval : float
        Seconds between polls.
    stop_file : str, optional
        The watch ends once this file exists.
    stop_after_idle : float, optional
        The watch ends once no file newer than the job's start (``started``) or the newest seen appeared
        for this many seconds.
    started : float, optional
        The wall-clock time idleness is counted from before any file arrives (default: now).
    """

    def __init__(
        self,
        pattern: str,
        *,
        interval: float = 1.0,
        stop_file: str | None = None,
        stop_after_idle: float | None = None,
        started: float | None = None,
    ):
        super().__init__()
        if not interval > 0:
            raise ValueError(f"interval must be > 0 seconds; got {interval}")
        if stop_after_idle is not None and not stop_after_idle >= CONFIRMING_POLLS * interval:
            raise ValueError(
                f"stop_after_idle must be at least {CONFIRMING_POLLS} polls ({CONFIRMING_POLLS * interval:g} s): a file "
                f"is read once two polls saw it whole; got {stop_after_idle}"
            )
        self.pattern = pattern
        self.interval = interval
        self.stop_file = stop_file
        self.stop_after_idle = stop_after_idle
        self.started = time.time() if started is None else started

    def expand(self, pbegin):
        return (
            pbegin
            | "Start" >> beam.Create([self.started])
            | "Poll" >> beam.ParDo(PollFiles(self.pattern, self.interval, self.stop_file, self.stop_after_idle))
            # (typed: a str key's coder is deterministic, as a stateful DoFn's key must be)
            | "ByPath"
            >> beam.Map(lambda found: (found[0], (found[1], found[2]))).with_output_types(tuple[str, tuple[int, float]])
            | "OnceComplete" >> beam.ParDo(OnceComplete())
        )


class ReadWatchedFile(beam.DoFn):
    """A path in, its example batches out (the whole file by one reader, block by block in order; they keep
    the path's timestamp: its arrival) and its dead letters on the ``dead_letters`` output. With
    ``records_folder``, the file's :class:`~polybeam.formats.records.ReadCounts` and dead letters are also
    written there once it is read (``<digest>.json`` and ``<digest>.dead_letters.jsonl``, the digest of its
    path: a file read again writes the same), for the job's report."""

    def __init__(self, text_format, header_lines: int, block_lines: int, max_line_bytes: int, records_folder=None):
        self.text_format = text_format
        self.header_lines = header_lines
        self.block_lines = block_lines
        self.max_line_bytes = max_line_bytes
        self.records_folder = records_folder

    def process(self, path: str):
        source = TextBlockSource(
            path,
            block_lines=self.block_lines,
            header_lines=self.header_lines,
            max_line_bytes=self.max_line_bytes,
            validate=False,
        )
        counts, letters = ReadCounts(), []
        for block in source.read(source.get_range_tracker(None, None)):
            parsed = parse_block(self.text_format, block)
            counts = counts + parsed.counts
            letters += parsed.dead_letters
            if len(parsed.batch):
                yield parsed.batch
            for letter in parsed.dead_letters:
                yield beam.pvalue.TaggedOutput(DEAD_LETTERS, letter)
        if self.records_folder is not None:
            write_file_record(self.records_folder, path, counts, letters)


def file_digest(path: str) -> str:
    """A short stable name for ``path`` in a records folder."""
    return hashlib.sha1(path.encode("utf-8")).hexdigest()[:16]


def write_file_record(folder: str, path: str, counts: ReadCounts, letters: list) -> None:
    """A read file's counts (and its dead letters, when any) in ``folder`` (see :class:`ReadWatchedFile`)."""
    digest = file_digest(path)
    if letters:
        text = "".join(letter.to_json() + "\n" for letter in letters)
        write_atomically(FileSystems.join(folder, f"{digest}.dead_letters.jsonl"), text.encode("utf-8"))
    write_json(FileSystems.join(folder, f"{digest}.json"), {"path": path, **counts.to_dict()})


def read_file_records(folder: str) -> list[dict]:
    """Every file record of ``folder`` (see :func:`write_file_record`), by path."""
    if not FileSystems.exists(folder):
        return []
    found = FileSystems.match([FileSystems.join(folder, "*.json")])[0].metadata_list
    return sorted((read_json(m.path) for m in found), key=lambda record: record["path"])


class ReadWatched(beam.PTransform):
    """The examples of the text files that appear under ``pattern`` (see :class:`WatchFiles` for the
    watch's settings): example batches and dead letters carrying each file's arrival as their timestamp
    (the ``examples`` and ``dead_letters`` of the result); ``records_folder``: see :class:`ReadWatchedFile`."""

    def __init__(
        self,
        pattern: str,
        format="libsvm",
        *,
        interval: float = 1.0,
        stop_file: str | None = None,
        stop_after_idle: float | None = None,
        started: float | None = None,
        records_folder: str | None = None,
        block_lines: int = DEFAULT_BLOCK_LINES,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        **format_options,
    ):
        super().__init__()
        self.watch = WatchFiles(
            absolute_path(pattern),
            interval=interval,
            stop_file=stop_file,
            stop_after_idle=stop_after_idle,
            started=started,
        )
        self.format = resolve_format(format, format_options)
        if is_file_format(self.format):
            raise ValueError(f"watching reads text formats; {getattr(self.format, 'name', format)} files are not")
        self.records_folder = records_folder
        self.block_lines = block_lines
        self.max_line_bytes = max_line_bytes

    def expand(self, pbegin):
        header_lines = getattr(self.format, "carried_lines", getattr(self.format, "header_lines", 0))
        read = ReadWatchedFile(self.format, header_lines, self.block_lines, self.max_line_bytes, self.records_folder)
        parsed = (
            pbegin | "Watch" >> self.watch | "ReadFiles" >> beam.ParDo(read).with_outputs(DEAD_LETTERS, main=EXAMPLES)
        )
        parsed[EXAMPLES].polybeam_input = input_settings_of(self.format)  # (as ReadExamples tells Train)
        return parsed
