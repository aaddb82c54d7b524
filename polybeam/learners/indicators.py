"""Missing-value indicators: a feature of value 1 after a missing value, at a slot of its own.

Learners add one after each missing value of a feature that was missing often enough, and models where
their learner did (see :mod:`polybeam.learners.missing`): what missing says beyond the feature's mean.

>>> from polybeam.learners.batch import ExampleBatch
>>> batch = ExampleBatch.from_rows([(1.0, {3: 2.5, 7: 1.0})], bits=18)
>>> marked = with_indicators(batch, np.array([True, False]))
>>> marked.indices.tolist(), marked.values.tolist()
([3, 223590, 7], [2.5, 1.0, 1.0])
"""

from __future__ import annotations

import dataclasses

import numpy as np

from polybeam.learners.batch import ExampleBatch


def indicator_slots(slots: np.ndarray, bits: int) -> np.ndarray:
    """The slot of each slot's missing-value indicator: a hash of the slot (never the bias, slot 0).

    >>> indicator_slots(np.array([3, 3, 7]), bits=18).tolist()
    [223590, 223590, 172182]
    """
    mask = np.uint64((1 << bits) - 1)
    mixed = (np.asarray(slots, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(0x5BD1E995)) >> np.uint64(
        29
    )
    out = (mixed & mask).astype(np.int64)
    return np.where(out == 0, int(mask), out)


def with_indicators(batch: ExampleBatch, indicated: np.ndarray) -> ExampleBatch:
    """``batch`` with an indicator (value 1, at :func:`indicator_slots`) right after each entry that
    ``indicated`` marks; the batch itself when none is."""
    if not indicated.any():
        return batch
    repeat = 1 + indicated.astype(np.int64)
    source = np.repeat(np.arange(len(indicated)), repeat)
    places = (np.cumsum(repeat) - 1)[indicated]
    slots = batch.indices[indicated]
    indices, values = batch.indices[source], batch.values[source]
    indices[places] = indicator_slots(slots, batch.bits)
    values[places] = 1.0
    before = np.concatenate([[0], np.cumsum(indicated)])
    names = batch.names
    if names:
        names = dict(names)
        for slot, indicator in zip(slots.tolist(), indices[places].tolist()):
            if slot in batch.names:
                names.setdefault(indicator, f"{batch.names[slot]} missing")
    return dataclasses.replace(
        batch,
        indptr=batch.indptr + before[batch.indptr],
        indices=indices,
        values=values,
        names=names,
        namespaces=None if batch.namespaces is None else batch.namespaces[source],
    )
