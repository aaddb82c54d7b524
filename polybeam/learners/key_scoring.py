"""Many keys' linear models scored at once: one compiled pass over a batch whose rows have different models.

Scoring a folder of per-key models one key at a time costs tens of microseconds
of Python per key and batch (splitting the batch, a model's margins, an
evaluation's sums), far more than the rows themselves when keys have a few rows
each. Here the models of many keys live in one :class:`ScoringTable`: key
``k``'s weighted slots, weights and value ranges end to end, its missing
values' fills beside them, and a compiled kernel (:func:`key_margins`) gives
each row of a batch the margin its own key's model gives it
(:meth:`polybeam.learners.model.Model.margins`: a missing value filled, each
value clipped to its slot's range, ``w . x`` plus the bias, in the same order).

A table takes the models that are linear, of one output, without a shared
key's crossing and whose missing values bring no indicator
(:func:`scorable`); the others are scored by their own ``margins``.

>>> from polybeam.learners.batch import ExampleBatch
>>> from polybeam.learners.config import LearnerConfig
>>> from polybeam.learners.model import Model
>>> config = LearnerConfig(loss="logistic", bits=8)
>>> a = Model(config, np.array([0, 3]), np.array([0.5, 2.0]), fill_slots=np.array([3]), fill_values=np.array([1.5]))
>>> b = Model(config, np.array([4]), np.array([-1.0]))
>>> table = ScoringTable.from_models(config, [a, b])
>>> batch = ExampleBatch.from_rows([(1.0, {3: float("nan")}), (1.0, {3: 1.0, 4: 2.0}), (1.0, {4: 2.0})], bits=8)
>>> table.margins(batch, np.array([0, 1, 1])).tolist(), a.margins(batch.rows_between(0, 1)).tolist()
([3.5, -2.0, -2.0], [3.5])
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numba
import numpy as np

from polybeam.learners import kernel_cache, kernels  # noqa: F401  (kernel_cache first: where numba caches the kernels below)
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.key_table import KeyTableModels
from polybeam.learners.model import Model, finalize_predictions


def scorable(model: Model) -> bool:
    """Whether a :class:`ScoringTable` can hold ``model`` (see the module docstring)."""
    return (
        model.config.outputs == 1
        and model.expansion is None
        and model.shared_keys is None
        and (model.fill_indicated is None or not model.fill_indicated.any())
    )


@numba.njit(cache=True, inline="always")
def _find(sorted_slots, start, stop, slot):
    """The position of ``slot`` in ``sorted_slots[start:stop]`` (ascending), or -1."""
    low, high = start, stop
    while low < high:
        middle = (low + high) // 2
        if sorted_slots[middle] < slot:
            low = middle + 1
        else:
            high = middle
    return low if low < stop and sorted_slots[low] == slot else -1


@numba.njit(cache=True, nogil=True)
def key_margins(
    indptr,
    indices,
    values,
    rows,
    model_of_row,
    starts,
    slots,
    weights,
    low,
    high,
    fill_starts,
    fill_slots,
    fill_values,
    bias,
):
    """The margin of row ``rows[i]`` with model ``model_of_row[i]`` (-1: left at 0), for each ``i``: what
    ``Model.margins`` computes, term by term in the same order."""
    out = np.zeros(rows.shape[0])
    for i in range(rows.shape[0]):
        row = rows[i]
        model = model_of_row[i]
        if model < 0:
            continue
        start, stop = starts[model], starts[model + 1]
        total = 0.0
        if bias:
            at = _find(slots, start, stop, 0)
            total = weights[at] if at >= 0 else 0.0
        for entry in range(indptr[row], indptr[row + 1]):
            slot = indices[entry]
            x = values[entry]
            if x != x:  # a missing value: its slot's fill, else 0
                filled = _find(fill_slots, fill_starts[model], fill_starts[model + 1], slot)
                x = fill_values[filled] if filled >= 0 else 0.0
            at = _find(slots, start, stop, slot)
            if at >= 0:
                x = min(max(x, low[at]), high[at])
                total += weights[at] * x
            else:
                total += 0.0 * x
        out[i] = total
    return out


@dataclasses.dataclass
class ScoringTable:
    """Linear models of one output end to end: model ``m``'s slots ``slots[starts[m]:starts[m + 1]]``
    (ascending) with their ``weights`` and value ranges ``low``/``high``, its fills
    ``fill_slots[fill_starts[m]:fill_starts[m + 1]]``, and its label range (``label_min``,
    ``label_max``, what predictions are clamped to)."""

    config: LearnerConfig
    starts: np.ndarray
    slots: np.ndarray
    weights: np.ndarray
    low: np.ndarray
    high: np.ndarray
    fill_starts: np.ndarray
    fill_slots: np.ndarray
    fill_values: np.ndarray
    label_min: np.ndarray
    label_max: np.ndarray

    def __len__(self) -> int:
        return len(self.starts) - 1

    @classmethod
    def from_models(cls, config: LearnerConfig, models: Sequence[Model]) -> ScoringTable:
        """The table of ``models`` (each :func:`scorable`, with ``config``), in order."""
        if not all(scorable(model) for model in models):
            raise ValueError("a scoring table holds linear models of one output without indicators")
        lengths = [len(model.slots) for model in models]
        fills = [model.fill_slots if model.fill_slots is not None else np.zeros(0, np.int64) for model in models]
        unbounded = [np.full(n, np.inf) for n in lengths]

        def joined(arrays, dtype):
            return np.concatenate(arrays).astype(dtype) if arrays else np.zeros(0, dtype)

        return cls(
            config=config,
            starts=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
            slots=joined([model.slots for model in models], np.int64),
            weights=joined([model.weights for model in models], np.float64),
            low=joined([m.clip_low if m.clip_low is not None else -u for m, u in zip(models, unbounded)], np.float64),
            high=joined([m.clip_high if m.clip_high is not None else u for m, u in zip(models, unbounded)], np.float64),
            fill_starts=np.concatenate([[0], np.cumsum([len(f) for f in fills])]).astype(np.int64),
            fill_slots=joined(fills, np.int64),
            fill_values=joined(
                [m.fill_values if m.fill_values is not None else np.zeros(0) for m in models], np.float64
            ),
            label_min=np.array([float(m.metadata.get("label_min", 0.0)) for m in models]),
            label_max=np.array([float(m.metadata.get("label_max", 0.0)) for m in models]),
        )

    @classmethod
    def from_key_table(cls, table: KeyTableModels) -> ScoringTable:
        """The models of keys learned as a table, without making a Model per key."""
        stats = table.stats
        infinite = np.full(len(table.slots), np.inf)
        return cls(
            config=table.config,
            starts=table.starts,
            slots=table.slots,
            weights=table.weights,
            low=table.clip_low if table.clip_low is not None else -infinite,
            high=table.clip_high if table.clip_high is not None else infinite,
            fill_starts=table.fill_starts,
            fill_slots=table.fill_slots,
            fill_values=table.fill_values,
            label_min=stats[:, kernels.LABEL_MIN].copy(),
            label_max=stats[:, kernels.LABEL_MAX].copy(),
        )

    def margins(self, batch: ExampleBatch, model_of_row: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Each row's margin with model ``model_of_row[row]`` (-1: left at 0); with ``rows``, the margins of
        those rows only, row ``rows[i]`` with model ``model_of_row[i]``."""
        model_of_row = np.asarray(model_of_row, dtype=np.int64)
        return key_margins(
            batch.indptr,
            batch.indices,
            batch.values,
            np.arange(len(batch), dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64),
            model_of_row,
            self.starts,
            self.slots,
            self.weights,
            self.low,
            self.high,
            self.fill_starts,
            self.fill_slots,
            self.fill_values,
            bool(self.config.bias),
        )


def row_values(config: LearnerConfig, margins: np.ndarray, kind: str | None, label_min, label_max) -> np.ndarray:
    """What ``predict`` writes for rows of models of one output with ``config`` whose margins are ``margins``
    and whose models' label ranges are ``label_min``/``label_max`` (arrays, row by row): ``kind`` as
    :func:`polybeam.learners.predictions.values_of` reads it (None: ``Model.predict``'s)."""
    from polybeam.learners.predictions import binary_labels, values_of

    ranges = (np.asarray(label_min), np.asarray(label_max))
    if kind is None:
        return finalize_predictions(config.loss, margins, *ranges)
    return values_of(config, margins, kind, binary=binary_labels(config), label_range=ranges)
