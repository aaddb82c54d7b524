"""A shuffle buffer over ExampleBatches: examples held, and emitted in a random order.

An online learner given examples sorted by label learns mostly the last
labels (see :mod:`polybeam.learners.label_order`). Shuffling a large input
whole needs it all in one place; a shuffle buffer (tf.data's
``Dataset.shuffle(buffer_size)``; VW has none) mixes a stream in bounded
memory: each example leaves the buffer at a random time, so an example can
move up to about the buffer's size from its place.

:class:`RowBuffer` holds from ``size`` to ``2 * size`` examples as the
batches they came in: once it holds ``2 * size`` or more, it joins them,
draws a random permutation, emits all but ``size`` of them (in batches the
size of the largest batch it was given) and keeps the rest, so each example
is copied a few times at most whatever the size (no Python per example), and
an example leaves with equal chances among all those held with it. At the
end of the stream, :meth:`RowBuffer.drain` emits what is left, permuted.

Examples keep their holdout (see :func:`polybeam.learners.holdout.placed`):
the same examples are held out of training whatever the order.

>>> from polybeam.learners.batch import ExampleBatch
>>> buffer = RowBuffer(100, np.random.default_rng(0))
>>> batch = ExampleBatch.from_rows([(float(row // 100), {1: 1.0}) for row in range(300)])
>>> out = buffer.add(batch.rows_between(0, 150)) + buffer.add(batch.rows_between(150, 300)) + buffer.drain()
>>> sorted(np.concatenate([part.labels for part in out]).tolist()) == batch.labels.tolist()
True
>>> [len(part) for part in out]
[150, 50, 100]
"""

from __future__ import annotations

import zlib

import numpy as np

from polybeam.learners.batch import ExampleBatch


class RowBuffer:
    """Holds examples and gives them back in a random order (see the module docstring).

    Parameters
    ----------
    size : int
        Examples kept back at least (>= 1) once the buffer has filled.
    random : numpy.random.Generator
        The order's randomness.
    """

    def __init__(self, size: int, random: np.random.Generator):
        if size < 1:
            raise ValueError(f"a shuffle buffer holds at least 1 example, not {size}")
        self.size = int(size)
        self.random = random
        self.parts: list[ExampleBatch] = []
        self.held = 0
        self.emit_rows = 1  # examples per emitted batch: the largest batch given

    def add(self, batch: ExampleBatch) -> list[ExampleBatch]:
        """Take ``batch``'s examples; return the batches the buffer lets go of (often none)."""
        if len(batch) == 0:
            return []
        self.parts.append(batch)
        self.held += len(batch)
        self.emit_rows = max(self.emit_rows, len(batch))
        if self.held < 2 * self.size:
            return []
        return self._release(self.held - self.size)

    def drain(self) -> list[ExampleBatch]:
        """Every example still held, in a random order (the buffer is then empty)."""
        return self._release(self.held) if self.held else []

    def _release(self, count: int) -> list[ExampleBatch]:
        pool = self.parts[0] if len(self.parts) == 1 else ExampleBatch.concat(self.parts)
        order = self.random.permutation(len(pool))
        kept = order[count:]
        self.parts = [pool.take(kept)] if len(kept) else []
        self.held = len(kept)
        leaving = order[:count]
        return [pool.take(leaving[start : start + self.emit_rows]) for start in range(0, len(leaving), self.emit_rows)]


def stream_random(seed: int, salt: int, first: ExampleBatch) -> np.random.Generator:
    """The randomness of one buffer: from ``seed``, a ``salt`` (the pass) and the first batch it
    is given (its labels and positions), so that the same input gives the same order however
    the runner schedules it, and two buffers of one job (two bundles) draw different orders.

    >>> batch = ExampleBatch.from_rows([(1.0, {1: 1.0}), (2.0, {})])
    >>> int(stream_random(7, 1, batch).integers(1000)) == int(stream_random(7, 1, batch).integers(1000))
    True
    """
    fingerprint = zlib.crc32(np.ascontiguousarray(first.labels).tobytes())
    if first.row_ids is not None:
        fingerprint = zlib.crc32(np.ascontiguousarray(first.row_ids).tobytes(), fingerprint)
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, int(salt) & 0xFFFFFFFF, fingerprint, len(first)])
