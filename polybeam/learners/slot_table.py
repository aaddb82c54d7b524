"""SlotTable: the rows of a sparse learner's state, one per hashed slot it touched.

A learner used per key sees a few dozen of the ``2**bits`` slots; a dense
state would spend megabytes on each key. A sparse learner keeps its arrays
(weights, AdaGrad sums, scales, time stamps) in *rows*, one per slot touched,
and the table maps the batch's hashed slots to rows before the kernels run:
the kernels' arithmetic is the same, only the indices they read differ. Row 0
is always slot 0, the bias, which the kernels address as row 0.

Rows are handed out as slots are first seen (the new slots of one batch in slot
order), so a row never moves while the learner learns; a merge lays several learners out on the union of
their slots, in slot order (:meth:`SlotTable.union`), whatever order they come in.

>>> table = SlotTable()
>>> table.rows_of(np.array([7, 3, 7], dtype=np.int32)).tolist()
[2, 1, 2]
>>> table.rows_of(np.array([5, 3], dtype=np.int32)).tolist()
[3, 1]
>>> table.slots.tolist(), table.find(np.array([3, 6])).tolist()
([0, 3, 7, 5], [1, -1])
>>> SlotTable.union([table, SlotTable(np.array([0, 9]))]).slots.tolist()
[0, 3, 5, 7, 9]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# A sparse state turns dense once it touches more than this share of the slots: a row
# costs its values plus three table entries, and mapping every batch costs time.
DENSE_SHARE = 1 / 8


class SlotTable:
    """Row ``r`` of a sparse learner's arrays holds slot ``slots[r]``; see the module docstring."""

    def __init__(self, slots: np.ndarray | None = None):
        slots = np.zeros(1, dtype=np.int64) if slots is None else np.asarray(slots, dtype=np.int64)
        if len(slots) == 0 or slots[0] != 0:
            raise ValueError("a slot table's first row is slot 0, the bias")
        self.slots = slots
        self._order = np.argsort(slots, kind="stable")
        self._sorted = slots[self._order]

    def __len__(self) -> int:
        return len(self.slots)

    def find(self, indices: np.ndarray) -> np.ndarray:
        """The rows of ``indices``' slots, -1 for a slot without one."""
        indices = np.asarray(indices, dtype=np.int64)
        position = np.minimum(np.searchsorted(self._sorted, indices), len(self._sorted) - 1)
        found = self._sorted[position] == indices
        return np.where(found, self._order[position], -1)

    def rows_of(self, indices: np.ndarray) -> np.ndarray:
        """The rows of ``indices``' slots, giving new slots the next rows (in the order of their slots)."""
        rows = self.find(indices)
        missing = rows < 0
        if missing.any():
            new = np.unique(np.asarray(indices, dtype=np.int64)[missing])
            self.slots = np.concatenate([self.slots, new])
            self._order = np.argsort(self.slots, kind="stable")
            self._sorted = self.slots[self._order]
            rows = self.find(indices)
        return rows

    @classmethod
    def union(cls, tables: Sequence[SlotTable]) -> SlotTable:
        """The table of every slot of ``tables``, in slot order (so the same whatever their order)."""
        return cls(np.unique(np.concatenate([table.slots for table in tables])))

    def __repr__(self) -> str:
        return f"SlotTable({len(self)} slots)"


def dense_limit(bits: int) -> int:
    """How many rows a sparse state of ``bits`` may hold before it turns dense."""
    return max(int((1 << bits) * DENSE_SHARE), 1)
