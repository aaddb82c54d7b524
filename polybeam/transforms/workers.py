"""Which worker processes ran a job, and how much memory each needed at most.

:class:`NoteWorkers` passes elements through unchanged and, at the end of
each bundle, also emits the worker process's host, process id and peak
resident memory so far. By then every element of the bundle has gone through
the steps fused after it (Beam pushes each output downstream at once), so
the peak includes, say, the learner those elements trained. The job's report
keeps the largest figure per process (:func:`peak_per_worker`).

>>> import apache_beam as beam
>>> with beam.Pipeline(runner="FnApiRunner") as p:
...     noted = p | beam.Create([1, 2, 3]) | NoteWorkers()
...     _ = noted.workers | beam.Map(lambda w: print(w.peak_rss_bytes > 0))
True
"""

from __future__ import annotations

import os
import resource
import socket
import sys
from typing import NamedTuple

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

WORKERS = "workers"


class WorkerNote(NamedTuple):
    host: str
    pid: int
    peak_rss_bytes: int


def peak_rss_bytes() -> int:
    """This process's peak resident memory (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


class _NoteWorkersFn(beam.DoFn):
    def process(self, element):
        yield element

    def finish_bundle(self):
        note = WorkerNote(socket.gethostname(), os.getpid(), peak_rss_bytes())
        yield beam.pvalue.TaggedOutput(WORKERS, WindowedValue(note, MIN_TIMESTAMP, [GlobalWindow()]))


class NoteWorkers(beam.PTransform):
    """Elements unchanged (``main``), plus one :class:`WorkerNote` per bundle (``workers``)."""

    def expand(self, elements):
        return elements | "Note" >> beam.ParDo(_NoteWorkersFn()).with_outputs(WORKERS, main="main")


def peak_per_worker(notes) -> list[dict]:
    """The largest peak of each (host, pid), largest first."""
    peaks: dict[tuple[str, int], int] = {}
    for note in notes:
        key = (note.host, note.pid)
        peaks[key] = max(peaks.get(key, 0), note.peak_rss_bytes)
    ordered = sorted(peaks.items(), key=lambda item: -item[1])
    return [{"host": host, "pid": pid, "peak_rss_bytes": peak} for (host, pid), peak in ordered]
