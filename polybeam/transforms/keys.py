"""Splitting batches by a user's key function, for per-key learners."""

from __future__ import annotations

from typing import Callable, Hashable

import apache_beam as beam
import numpy as np

from polybeam.learners.batch import ExampleBatch

KeyFn = Callable[[ExampleBatch], Hashable]


class SplitByKey(beam.DoFn):
    """Emits ``(key, batch)`` pairs: ``key(batch)`` gives one key per example or one for the batch."""

    def __init__(self, key: KeyFn):
        self.key = key

    def process(self, batch: ExampleBatch):
        keys = self.key(batch)
        if isinstance(keys, (str, bytes, tuple)) or np.ndim(keys) == 0:
            yield keys, batch
        else:
            yield from batch.split_by(keys)


def split_by_key(batches, key: KeyFn | None):
    """``batches`` as ``(key, batch)`` pairs when a key function is given, else unchanged."""
    if key is None:
        return batches
    return batches | "SplitByKey" >> beam.ParDo(SplitByKey(key))
