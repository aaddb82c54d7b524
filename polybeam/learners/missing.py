"""MissingValues: a missing numeric value is learned and predicted at its feature's mean.

Every door reads a missing value of a numeric column (an empty or ``NA`` CSV
cell, a Parquet null, ``None`` in a dict, NaN in a matrix, ``3:nan`` in
LIBSVM) as the entry NaN at the column's slot (a missing category is no
feature). A learner fills each NaN with the mean its slot's values had over
the examples learned before, and its model with the means at the end of
training, so that a missing value counts as an average one: it moves the
prediction by nothing beyond what the average row gets, centred or not, as
scikit-learn's ``SimpleImputer`` and H2O's GLM do by default.

Reading a missing value as absent (0) instead gave a value no row had
wherever a column lies far from 0: the suite's penguins task has two rows
with every measurement missing, and a model that learned weights per gram of
body mass predicted them from a 0-gram penguin; 20 passes of centred
learning, whose weights grew larger, scored 0.33 log loss there against 0.19
without centring, all of it on those rows.

A slot's mean is ``sum of its values / (examples - examples where it was
missing)``: an example that lacks the slot counts as a 0, as sparse formats
mean it (a CSV zero is no entry either), and one where it was missing does
not count. The counts are over examples, not importance weights. The means
are learned in a learner's first pass (later passes see the same rows:
their means are frozen), and merging learners of a first pass adds their
sums and counts.

A mean says that a value is unknown, not that it was missing, and where
missing says something (an income left blank on a credit application) the
mean loses it: read as 0 it had been a signal. So once a feature has been
missing in :data:`INDICATED_AFTER` examples, each later missing value also
brings an indicator, a feature of value 1 at a slot of its own
(:func:`indicator_slots`, named ``NAME missing``), whose weight learns what
missing says beyond the mean. Fewer than that, and its weight would be
learned from a row or two: the suite's penguins have two rows without any
measurement, of two species, and an indicator for each column made one
species' row predict the other's (0.081 log loss against 0.043 with means
alone); credit_data has 414 rows with missing values, and the indicators
took it from 0.461 with means alone to 0.452 (0.458 read as 0).

>>> from polybeam.learners.batch import ExampleBatch
>>> nan = float("nan")
>>> batch = ExampleBatch.from_rows([(1.0, {3: 10.0}), (0.0, {3: 30.0}), (1.0, {3: nan, 5: 2.0})], bits=4)
>>> missing = MissingValues(bits=4)
>>> missing.fill(batch).values.tolist()
[10.0, 30.0, 20.0, 2.0]
>>> missing.means(np.array([3, 5, 7])).tolist()   # slot 3: (10 + 30) / 2; slot 5: 2 / 3 examples
[20.0, 0.6666666666666666, 0.0]
>>> often = MissingValues(bits=4)
>>> filled = often.fill(ExampleBatch.from_rows([(1.0, {3: 4.0})] + [(0.0, {3: nan})] * 11, bits=4))
>>> filled.indices.tolist()[-3:], filled.values.tolist()[-3:]   # the 11th missing value: its indicator
([3, 3, 6], [4.0, 4.0, 1.0])
"""

from __future__ import annotations

import dataclasses

import numba
import numpy as np

from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernels below)
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.indicators import with_indicators
from polybeam.learners.model import Model
from polybeam.learners.slot_table import SlotTable, dense_limit

# A feature missing in this many examples gets an indicator for each later missing value (see above).
INDICATED_AFTER = 10


# nogil: Beam runs several bundles per worker process in threads.
@numba.njit(cache=True, nogil=True)
def fill_rows(indptr, rows, values, sums, missing, examples, learning, out, indicated, after):
    """Fill ``out`` (the batch's values; empty: none to write) row by row: a NaN takes its row's mean over
    the examples before it (0 before any), other values themselves, and is marked in ``indicated`` when
    its row was missing ``after`` times before. While ``learning``, each value adds to its row's sum, each
    NaN to its row's missing count and each example to ``examples``. Returns the examples counted."""
    write = out.shape[0] > 0
    for example in range(indptr.shape[0] - 1):
        for entry in range(indptr[example], indptr[example + 1]):
            row = rows[entry]
            value = values[entry]
            if value != value:  # NaN: a missing value
                present = examples - missing[row]
                indicated[entry] = missing[row] >= after
                if write:
                    out[entry] = sums[row] / present if present > 0.0 else 0.0
                if learning:
                    missing[row] += 1.0
            else:
                if write:
                    out[entry] = value
                if learning:
                    sums[row] += value
        if learning:
            examples += 1.0
    return examples


def has_missing(batch: ExampleBatch) -> bool:
    """Whether ``batch`` holds a missing value (a NaN entry)."""
    return _any_nan(batch.values)


@numba.njit(cache=True, nogil=True)
def _any_nan(values):
    """(Without the temporary mask of ``np.isnan(values).any()``; a count, which the compiler vectorises.)"""
    count = 0
    for entry in range(values.shape[0]):
        count += values[entry] != values[entry]
    return count > 0


@dataclasses.dataclass
class MissingValues:
    """Per slot, the sum of the values learned and the count of missing ones; see the module docstring.

    ``table`` maps slots to rows of ``sums`` and ``missing`` (None: dense, a row per slot, once the slots
    seen pass :func:`~polybeam.learners.slot_table.dense_limit`). ``frozen``: the means no longer change
    (past the first pass).
    """

    bits: int
    table: SlotTable | None = dataclasses.field(default_factory=SlotTable)
    sums: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(16))
    missing: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(16))
    examples: float = 0.0
    frozen: bool = False

    def _rows(self, slots: np.ndarray, *, add: bool) -> np.ndarray:
        """The rows of ``slots`` (new slots get rows when ``add``, else -1)."""
        if self.table is None:  # (a batch's int32 slots as they are: a copy per batch costs)
            return slots if isinstance(slots, np.ndarray) and slots.dtype.kind == "i" else np.asarray(slots, np.int64)
        if not add:
            return self.table.find(slots)
        rows = self.table.rows_of(slots)
        if len(self.table) > len(self.sums):  # (the new slots' rows, zero, before the table may turn dense)
            size = len(self.sums)
            while size < len(self.table):
                size *= 2
            self.sums = np.concatenate([self.sums, np.zeros(size - len(self.sums))])
            self.missing = np.concatenate([self.missing, np.zeros(size - len(self.missing))])
        if len(self.table) > dense_limit(self.bits):
            self._to_dense()
            return np.asarray(slots, dtype=np.int64)
        return rows

    def _to_dense(self) -> None:
        size, used = 1 << self.bits, len(self.table)
        sums, missing = np.zeros(size), np.zeros(size)
        sums[self.table.slots] = self.sums[:used]
        missing[self.table.slots] = self.missing[:used]
        self.table, self.sums, self.missing = None, sums, missing

    def fill(self, batch: ExampleBatch) -> ExampleBatch:
        """``batch`` with each missing value filled, and indicated once its feature was missing
        :data:`INDICATED_AFTER` times (the batch itself when it has none), learning the means from it
        unless frozen."""
        learning = not self.frozen
        nan = has_missing(batch)
        if not (learning or nan) or len(batch) == 0:
            return batch
        rows = self._rows(batch.indices, add=learning)
        if not learning:  # (a slot never seen has no row: its mean is 0)
            rows, batch = self._with_unseen(rows, batch)
        out = np.empty_like(batch.values) if nan else np.empty(0)
        indicated = np.zeros(len(out), dtype=np.bool_)
        arrays = (batch.indptr, rows, batch.values, self.sums, self.missing)
        self.examples = float(fill_rows(*arrays, self.examples, learning, out, indicated, float(INDICATED_AFTER)))
        return with_indicators(dataclasses.replace(batch, values=out), indicated) if nan else batch

    def _with_unseen(self, rows: np.ndarray, batch: ExampleBatch) -> tuple[np.ndarray, ExampleBatch]:
        """Frozen: a missing value of a slot that was never seen is 0 (its rows point past the arrays)."""
        unseen = rows < 0
        if not unseen.any():
            return rows, batch
        values = batch.values.copy()
        values[unseen & np.isnan(values)] = 0.0
        return np.where(unseen, 0, rows), dataclasses.replace(batch, values=values)

    def means(self, slots: np.ndarray) -> np.ndarray:
        """Each slot's mean (0 for a slot never seen, or missing in every example)."""
        rows = self._rows(np.asarray(slots, dtype=np.int64), add=False)
        known = rows >= 0
        rows = np.where(known, rows, 0)
        present = self.examples - self.missing[rows]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(known & (present > 0), self.sums[rows] / np.where(present > 0, present, 1.0), 0.0)

    def indicated(self, slots: np.ndarray) -> np.ndarray:
        """Whether each slot's missing values bring an indicator (it was missing often enough)."""
        rows = self._rows(np.asarray(slots, dtype=np.int64), add=False)
        return (rows >= 0) & (self.missing[np.maximum(rows, 0)] >= INDICATED_AFTER)

    def freeze(self) -> MissingValues:
        """Stop learning the means (the first pass is over: later passes see the same rows)."""
        self.frozen = True
        return self

    def seeded(self, slots: np.ndarray, fills: np.ndarray, indicated: np.ndarray | None = None) -> MissingValues:
        """Start from a model's means and indicators (a warm start), as a few examples that had them: one
        past :data:`INDICATED_AFTER`, an indicated slot missing in all but one. The data's own examples
        soon outweigh them."""
        rows = self._rows(np.asarray(slots, dtype=np.int64), add=True)
        indicated = np.zeros(len(rows), dtype=bool) if indicated is None else np.asarray(indicated, dtype=bool)
        seen = INDICATED_AFTER + 1.0
        self.missing[rows] += np.where(indicated, float(INDICATED_AFTER), 0.0)
        self.sums[rows] += np.asarray(fills, dtype=np.float64) * np.where(indicated, 1.0, seen)
        self.examples += seen
        return self

    @classmethod
    def merged(cls, parts: list[MissingValues]) -> MissingValues:
        """Learners of one first pass add their sums and counts; past it, the means are every learner's
        (frozen alike): the first's are kept."""
        frozen = [part for part in parts if part.frozen]
        if frozen:
            return frozen[0].copy()
        bits = parts[0].bits
        merged = cls(bits)
        for part in parts:
            slots = part._slots()
            rows = merged._rows(slots, add=True)
            own = part._rows(slots, add=False)
            np.add.at(merged.sums, rows, part.sums[own])
            np.add.at(merged.missing, rows, part.missing[own])
            merged.examples += part.examples
        return merged

    def _slots(self) -> np.ndarray:
        """The slots with a row: every slot seen (sparse), or those with a sum or a count (dense)."""
        if self.table is not None:
            return self.table.slots
        return np.flatnonzero((self.sums != 0) | (self.missing != 0))

    def copy(self) -> MissingValues:
        return MissingValues.from_state(self.to_state(), self.bits)

    def to_state(self) -> dict:
        slots = self._slots()
        rows = self._rows(slots, add=False)
        return {
            "slots": slots.copy(),
            "sums": self.sums[rows].copy(),
            "missing": self.missing[rows].copy(),
            "examples": self.examples,
            "frozen": self.frozen,
        }

    @classmethod
    def from_state(cls, state: dict | None, bits: int) -> MissingValues:
        """A state saved by :meth:`to_state` (None: a state saved before missing values had means)."""
        restored = cls(bits)
        if state is None:
            return restored
        slots = np.asarray(state["slots"], dtype=np.int64)
        if len(slots) > dense_limit(bits):  # dense at once (through the table it was most of a copy's time)
            restored.table, restored.sums, restored.missing = None, np.zeros(1 << bits), np.zeros(1 << bits)
            rows = slots
        else:
            rows = restored._rows(slots, add=True)
        restored.sums[rows] = state["sums"]
        restored.missing[rows] = state["missing"]
        restored.examples, restored.frozen = float(state["examples"]), bool(state["frozen"])
        return restored


def with_fills(model: Model, missing: MissingValues, base_slots: np.ndarray | None = None) -> Model:
    """``model`` filling the missing values of its weighted slots (and of ``base_slots``: a polynomial
    model's input features, which its products multiply) with ``missing``'s means, and indicating those
    it indicated (a slot whose mean is 0 and which brings no indicator needs no entry)."""
    slots = model.slots if base_slots is None else np.union1d(model.slots, base_slots)
    means, indicated = missing.means(slots), missing.indicated(slots)
    kept = (means != 0.0) | indicated
    return dataclasses.replace(model, fill_slots=slots[kept], fill_values=means[kept], fill_indicated=indicated[kept])
