"""The order of examples: a shuffle buffer over ExampleBatches, and what their labels' order looks like.

``ShuffleExamples(size, seed)`` mixes the examples of a PCollection of
ExampleBatches through a :class:`~polybeam.learners.shuffle_buffer.RowBuffer`
of ``size`` examples per bundle (per window), emitting batches of mixed
examples as the buffer fills and the rest when the bundle ends. Batches stay
the elements (no Beam element per example); examples of different batches
and files mix within a bundle, and keep their holdout
(:func:`~polybeam.learners.holdout.placed`). The order depends on the seed,
a ``salt`` (``Train`` gives each pass its own) and the input: on the local
runner, the same input and seed give the same order. It runs on any runner:
its state lives in one bundle.

``LabelOrderOf()`` counts what the order of the labels looks like
(:class:`~polybeam.learners.label_order.LabelOrder`): one element per
window, which says whether the labels come sorted.

>>> import numpy as np
>>> from polybeam.learners.batch import ExampleBatch
>>> batches = [ExampleBatch.from_rows([(float(label), {1: 1.0})] * 500) for label in (1, 2, 3)]
>>> with beam.Pipeline(runner="FnApiRunner") as p:
...     sorted_input = p | beam.Create(batches, reshuffle=False)
...     before = sorted_input | "Before" >> LabelOrderOf() | "Read" >> beam.Map(lambda o: ("read", o.sorted))
...     mixed = sorted_input | ShuffleExamples(2000, seed=1)
...     after = mixed | "After" >> LabelOrderOf() | "Mixed" >> beam.Map(lambda o: ("mixed", o.sorted))
...     _ = (before, after) | beam.Flatten() | beam.combiners.ToList() | beam.Map(lambda found: print(sorted(found)))
[('mixed', False), ('read', True)]
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.metrics import Metrics

from polybeam.learners.batch import ExampleBatch
from polybeam.learners.holdout import placed
from polybeam.learners.label_order import LabelOrder
from polybeam.learners.shuffle_buffer import RowBuffer, stream_random
from polybeam.transforms.windows import combine_globally, in_window


class ShuffleExamples(beam.PTransform):
    """Examples of ExampleBatches in a random order, through a buffer of ``size`` examples (see the
    module docstring).

    Parameters
    ----------
    size : int
        Examples the buffer holds back (from ``size`` to twice that are held at a time); an example
        moves up to about this far from its place. 0 passes the batches through unchanged.
    seed : int, default 0
        The order's seed.
    salt : int, default 0
        Another number the order depends on (``Train``: the pass), so that each use draws its own.
    """

    def __init__(self, size: int, seed: int = 0, salt: int = 0):
        super().__init__()
        if size < 0:
            raise ValueError(f"a shuffle buffer holds 0 (none) or more examples, not {size}")
        self.size = int(size)
        self.seed = int(seed)
        self.salt = int(salt)

    def expand(self, batches):
        if self.size == 0:
            return batches
        return batches | "MixExamples" >> beam.ParDo(_MixExamples(self.size, self.seed, self.salt))


class _MixExamples(beam.DoFn):
    """One RowBuffer per window per bundle."""

    def __init__(self, size: int, seed: int, salt: int):
        self.size = size
        self.seed = seed
        self.salt = salt

    def setup(self):
        self._held = Metrics.distribution("polybeam.train", "shuffle_buffer_examples")

    def start_bundle(self):
        self._buffers: dict = {}

    def process(self, batch: ExampleBatch, window=beam.DoFn.WindowParam):
        buffer = self._buffers.get(window)
        if buffer is None:
            buffer = self._buffers[window] = RowBuffer(self.size, stream_random(self.seed, self.salt, batch))
        yield from buffer.add(placed(batch))

    def finish_bundle(self):
        for window, buffer in self._buffers.items():
            self._held.update(buffer.held)
            for part in buffer.drain():
                yield in_window(part, window)
        self._buffers = {}


class LabelOrderOf(beam.PTransform):
    """One :class:`~polybeam.learners.label_order.LabelOrder` of the ExampleBatches' labels per window."""

    def expand(self, batches):
        return batches | "CountLabelOrder" >> combine_globally(_LabelOrderFn(), batches)


class _LabelOrderFn(beam.CombineFn):
    def create_accumulator(self) -> LabelOrder:
        return LabelOrder()

    def add_input(self, order: LabelOrder, batch: ExampleBatch) -> LabelOrder:
        return order.add(batch.labels)

    def merge_accumulators(self, orders) -> LabelOrder:
        orders = iter(orders)
        return next(orders).merge(orders)

    def extract_output(self, order: LabelOrder) -> LabelOrder:
        return order
