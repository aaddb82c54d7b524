"""Sufficient statistics of least squares over feature groups, accumulated batch by batch.

Group sequencing needs, over the design's D columns (the groups' slots, see
:mod:`polybeam.selection.groups`), only::

    n (importance weight total), sum x, sum y, X'X, X'y, y'y

all importance-weighted. They add up over batches and over workers, so a
Beam CombineFn accumulates them per bundle and merges by summation; everything
after (standardisation, whitening, CS-G-OMP, CS-G-FR, ...) is computed from
them, never from the rows again. A batch becomes a sparse matrix over the D
columns and X'X is one sparse product, or a dense BLAS product for dense
rows (blocks of rows densified, at least 5% non-zeros); the
D x D matrix is the memory that counts, so :func:`estimate_bytes` checks it
against a limit before anything is allocated.

>>> import numpy as np
>>> from polybeam.learners.batch import ExampleBatch
>>> batch = ExampleBatch.from_rows([(1.0, {1: 1.0, 2: 2.0}), (3.0, {2: 1.0})], bits=4)
>>> stats = GramStatistics.for_columns(np.array([1, 2]), bits=4).add(batch)
>>> stats.xtx.tolist(), stats.xty.tolist(), stats.n
([[1.0, 2.0], [2.0, 5.0]], [1.0, 5.0], 2.0)
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy import sparse

from polybeam.learners.batch import ExampleBatch

DEFAULT_MEMORY_LIMIT = 2 << 30  # bytes of statistics (X'X dominates) a worker may hold
# Batches at least this dense go through dense BLAS products, in blocks of at most this many entries.
DENSE_FRACTION = 0.05
DENSE_BLOCK_ENTRIES = 1 << 22


class UnassignedFeatureError(ValueError):
    """Examples have features that no group names."""


def estimate_bytes(columns: int) -> int:
    """Memory of one accumulator over ``columns`` columns (X'X plus the vectors), in bytes."""
    return 8 * (columns * columns + 3 * columns + 4)


def check_memory(columns: int, limit: int = DEFAULT_MEMORY_LIMIT) -> None:
    """Refuse, with a message saying so, statistics that would not fit ``limit`` bytes."""
    needed = estimate_bytes(columns)
    if needed > limit:
        raise MemoryError(
            f"Gram statistics over {columns} features need {needed / 2**20:.3g} MiB, above the limit of "
            f"{limit / 2**20:.3g} MiB: use fewer features (or groups), or raise the memory limit"
        )


@dataclasses.dataclass
class GramStatistics:
    """Importance-weighted sums over the examples seen (see the module docstring).

    ``column_of_slot`` maps each weight slot to its column (-1: in no group).
    """

    column_of_slot: np.ndarray
    xtx: np.ndarray
    xty: np.ndarray
    sum_x: np.ndarray
    n: float = 0.0
    sum_y: float = 0.0
    yty: float = 0.0
    examples: int = 0

    @classmethod
    def for_columns(cls, slots: np.ndarray, *, bits: int, memory_limit: int = DEFAULT_MEMORY_LIMIT) -> GramStatistics:
        """Empty statistics over the columns ``slots`` (in that order)."""
        columns = len(slots)
        check_memory(columns, memory_limit)
        lookup = np.full(1 << bits, -1, dtype=np.int64)
        lookup[np.asarray(slots, dtype=np.int64)] = np.arange(columns)
        return cls(lookup, np.zeros((columns, columns)), np.zeros(columns), np.zeros(columns))

    @property
    def columns(self) -> int:
        return len(self.xty)

    def add(self, batch: ExampleBatch) -> GramStatistics:
        """Add ``batch``'s examples; a feature in no group raises :class:`UnassignedFeatureError`."""
        if len(batch) == 0:
            return self
        if len(self.column_of_slot) != 1 << batch.bits:
            raise ValueError(
                f"batch is hashed into {batch.bits} bits but the statistics use "
                f"{len(self.column_of_slot).bit_length() - 1}"
            )
        batch = batch.missing_as_zero()
        columns = self.column_of_slot[batch.indices]
        unknown = columns < 0
        if unknown.any():
            slots = np.unique(batch.indices[unknown])
            raise UnassignedFeatureError(
                f"{len(slots)} feature slot(s) of the input are in no group (first: {slots[:10].tolist()}); "
                "add them to a group, or gather them in a default group"
            )
        x = sparse.csr_matrix((batch.values, columns, batch.indptr), shape=(len(batch), self.columns))
        w, y = batch.weights, batch.labels
        if batch.nnz >= DENSE_FRACTION * len(batch) * self.columns:
            self._add_dense(x, w, y)
        else:
            weighted = sparse.diags(w) @ x
            # X'WX as a sparse product, densified: the D x D block is the only dense part.
            self.xtx += (x.T @ weighted).toarray()
            self.xty += weighted.T @ y
            self.sum_x += np.asarray(weighted.sum(axis=0)).ravel()
        self.n += float(w.sum())
        self.sum_y += float(w @ y)
        self.yty += float(w @ (y * y))
        self.examples += len(batch)
        return self

    def _add_dense(self, x: sparse.csr_matrix, w: np.ndarray, y: np.ndarray) -> None:
        """Dense-ish rows: densify a block of rows at a time and let BLAS form X'WX (~100x the sparse product)."""
        rows = max(1, DENSE_BLOCK_ENTRIES // max(self.columns, 1))
        for start in range(0, x.shape[0], rows):
            block = x[start : start + rows].toarray()
            weighted = block * w[start : start + rows, None]
            self.xtx += block.T @ weighted
            self.xty += weighted.T @ y[start : start + rows]
            self.sum_x += weighted.sum(axis=0)

    def merge(self, others) -> GramStatistics:
        """Add others' sums into these (same columns)."""
        for other in others:
            if other is self:
                continue
            if other.columns != self.columns:
                raise ValueError(f"cannot merge statistics over {other.columns} columns into {self.columns}")
            self.xtx += other.xtx
            self.xty += other.xty
            self.sum_x += other.sum_x
            self.n += other.n
            self.sum_y += other.sum_y
            self.yty += other.yty
            self.examples += other.examples
        return self

    def __getstate__(self) -> dict:
        # The slot lookup (2**bits entries) is rebuilt from the column slots, not shipped.
        state = dict(self.__dict__)
        lookup = state.pop("column_of_slot")
        slots = np.flatnonzero(lookup >= 0)
        state["_slots"] = slots[np.argsort(lookup[slots])]
        state["_bits"] = len(lookup).bit_length() - 1
        return state

    def __setstate__(self, state: dict) -> None:
        slots, bits = state.pop("_slots"), state.pop("_bits")
        lookup = np.full(1 << bits, -1, dtype=np.int64)
        lookup[slots] = np.arange(len(slots))
        self.__dict__.update(state, column_of_slot=lookup)
