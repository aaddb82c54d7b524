"""Event-time windows: putting ExampleBatches into windows, and what windowed training needs of Beam.

:class:`WindowExamples` splits each batch by the panes its examples' timestamps
fall in (:func:`polybeam.learners.windows.split_by_pane`: numpy over the
batch, no Python per example) and lets Beam's ``WindowInto`` put each part in
its windows, so an example lands in every window that contains its time.
``Train`` and ``Evaluate`` then learn and score every window on its own. A
PCollection the user windowed already (``beam.WindowInto`` over batches
with Beam timestamps) needs none of this: each batch stays in its window.

>>> import apache_beam as beam
>>> import numpy as np
>>> from polybeam.learners.batch import ExampleBatch
>>> batch = ExampleBatch.from_rows([(1.0, {1: 1.0})] * 3)
>>> batch = dataclasses.replace(batch, timestamps=np.array([10.0, 3700.0, 20.0]))
>>> with beam.Pipeline(runner="FnApiRunner") as p:
...     _ = (p | beam.Create([batch]) | WindowExamples(parse_window("fixed:1h"))
...          | beam.ParDo(KeyByWindow()) | beam.MapTuple(lambda name, part: print(name, len(part))))
window-19700101T000000Z-19700101T010000Z 2
window-19700101T010000Z-19700101T020000Z 1
"""

from __future__ import annotations

import dataclasses

import apache_beam as beam
from apache_beam.transforms import window as beam_window
from apache_beam.utils.timestamp import MIN_TIMESTAMP, Duration, Timestamp
from apache_beam.utils.windowed_value import WindowedValue

from polybeam.learners.batch import ExampleBatch
from polybeam.learners.model import Model
from polybeam.learners.windows import WindowSpec, parse_window, split_by_pane, to_micros, window_name, window_record
from polybeam.transforms.keyed_files import join

__all__ = [
    "WindowExamples",
    "KeyByWindow",
    "RecordWindow",
    "parse_window",
    "is_global",
    "combine_globally",
    "in_window",
    "window_fn",
]


def window_fn(spec: WindowSpec) -> beam_window.WindowFn:
    """Beam's WindowFn of ``spec``."""
    # (whole microseconds, as the splitter counts them: Beam would truncate float seconds * 1e6)
    size, period, offset = (Duration(micros=micros) for micros in spec.micros())
    if spec.kind == "fixed":
        return beam_window.FixedWindows(size, Timestamp(micros=offset.micros))
    return beam_window.SlidingWindows(size, period, Timestamp(micros=offset.micros))


def is_global(pcollection) -> bool:
    """Whether ``pcollection`` is in the global window (the default): training makes one model of it all."""
    return isinstance(pcollection.windowing.windowfn, beam_window.GlobalWindows)


def combine_globally(combine_fn, pcollection) -> beam.PTransform:
    """``CombineGlobally(combine_fn)`` of ``pcollection``: in windows, one output per window that has input
    (Beam has no default value for a window without input)."""
    combine = beam.CombineGlobally(combine_fn)
    return combine if is_global(pcollection) else combine.without_defaults()


def in_window(value, window) -> WindowedValue:
    """``value`` as an output of ``finish_bundle`` in ``window`` (the window of the inputs it sums up)."""
    if isinstance(window, beam_window.GlobalWindow):
        return WindowedValue(value, MIN_TIMESTAMP, [window])
    return WindowedValue(value, window.max_timestamp(), [window])


class _SplitByPane(beam.DoFn):
    """Emits each pane's examples of a batch with the pane's start as their Beam timestamp."""

    def __init__(self, spec: WindowSpec):
        self.spec = spec

    def process(self, batch: ExampleBatch):
        if batch.timestamps is None:
            raise ValueError(
                "WindowExamples needs batches with timestamps: read them with a timestamp column "
                "(--timestamp column:NAME, timestamp_column=), or window the batches yourself "
                "(beam.WindowInto over timestamped elements) and train without WindowExamples"
            )
        for start, rows in split_by_pane(to_micros(batch.timestamps), self.spec):
            part = batch if len(rows) == len(batch) else batch.take(rows)
            yield beam_window.TimestampedValue(part, Timestamp(micros=start))


class WindowExamples(beam.PTransform):
    """Puts the examples of ExampleBatches into event-time windows (``spec``: a
    :class:`~polybeam.learners.windows.WindowSpec` or its ``--window`` text) by their ``timestamps``."""

    def __init__(self, spec: WindowSpec | str):
        super().__init__()
        self.spec = parse_window(spec) if isinstance(spec, str) else spec

    def expand(self, batches):
        return (
            batches
            | "SplitByPane" >> beam.ParDo(_SplitByPane(self.spec))
            | "IntoWindows" >> beam.WindowInto(window_fn(self.spec))
        )


def bounds(window) -> tuple[int, int]:
    """``(start, end)`` of an interval window in microseconds since the epoch."""
    return window.start.micros, window.end.micros


def window_folder(folder: str, window) -> str:
    """Where what belongs to ``window`` goes inside ``folder``: ``folder`` itself for the global window,
    else its subfolder named after the window."""
    if isinstance(window, beam_window.GlobalWindow):
        return folder
    return join(folder, window_name(*bounds(window)))


def window_facts(window) -> dict:
    """``{"window": record}`` of an interval window (:func:`~polybeam.learners.windows.window_record`), ``{}``
    of the global window."""
    if isinstance(window, beam_window.GlobalWindow):
        return {}
    return {"window": window_record(*bounds(window))}


class KeyByWindow(beam.DoFn):
    """``(window name, element)`` for each element, in its window (see :func:`polybeam.learners.windows.window_name`)."""

    def process(self, element, window=beam.DoFn.WindowParam):
        yield window_name(*bounds(window)), element


class RecordWindow(beam.DoFn):
    """Records the window in what training produced: a Model, ``(key, Model)`` or a KeyShard of models gets
    ``metadata["window"] = {"start", "end", ...}`` (see :func:`polybeam.learners.windows.window_record`)."""

    def process(self, element, window=beam.DoFn.WindowParam):
        if isinstance(window, beam_window.GlobalWindow):
            yield element
            return
        record = window_facts(window)["window"]

        def stamped(model: Model) -> Model:
            return dataclasses.replace(model, metadata={**model.metadata, "window": record})

        if isinstance(element, Model):
            yield stamped(element)
        elif isinstance(element, tuple):
            yield element[0], stamped(element[1])
        else:  # a KeyShard
            yield element.with_metadata(lambda metadata: {**metadata, "window": record})
