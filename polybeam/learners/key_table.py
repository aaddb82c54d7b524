"""Many keys' learners as one table: the per-key learners of keys with few rows, trained by one compiled pass.

A learner per key (:class:`~polybeam.learners.linear.LinearLearner` with a
sparse state) costs about a hundred microseconds of Python to learn a key's
rows and as much again to become a model, whatever the key holds. A million
keys of ten rows then cost minutes where one model of the same ten million
rows costs seconds. Here the keys' learners live in shared arrays instead: a
key's rows of the table hold the slots it touched (row 0 of a key its bias,
the rest its slots in order), ``stats`` holds a row of
:mod:`~polybeam.learners.kernels` statistics per key, and one compiled call
fills each key's missing values (:func:`~polybeam.learners.missing.fill_rows`)
and learns its examples (:func:`~polybeam.learners.kernels.learn_batch`) on
the key's views of those arrays: the same kernels, on the same numbers, in the
same order as the key's own learner. The models come out as arrays too
(:class:`KeyTableModels`), a slice per key.

What a key's own learner would do and the table does not, it does not need
to do for the keys the table takes (:func:`table_keys`):

* a learner per key learns its first :data:`~polybeam.learners.centring.RAW_ROWS`
  rows raw and only then centres and races an uncentred twin; a key of at
  most that many rows never centres, and its race, of one block, shows no
  gain, so its model is its raw learner's, with that verdict;
* a missing value brings its indicator after
  :data:`~polybeam.learners.missing.INDICATED_AFTER` missing ones, more
  than such a key has;
* one pass, a linear model of one output, no truncation, no warm start and no
  shared per-key offsets (:func:`learns_as_table`): other settings keep their
  learners.

A key with more rows keeps its own learner, whose Python cost its rows share.
``tests/learners/test_key_table.py`` holds every model to its key's own
learner's.

>>> from polybeam.learners.batch import ExampleBatch
>>> from polybeam.learners.config import LearnerConfig
>>> from polybeam.learners.polynomial import make_learner
>>> config = LearnerConfig(loss="logistic", bits=8)
>>> rows = [(1.0, {1: 0.5, 2: 1.0}), (-1.0, {1: -1.0}), (1.0, {3: 2.0, 1: 0.25})]
>>> by_key = ExampleBatch.from_rows(rows, bits=8)
>>> models = train_table(config, by_key, np.array([0, 2, 3]), ["a", "b"])
>>> alone = make_learner(config, sparse=True).learn(by_key.rows_between(0, 2)).to_model()
>>> key, model = models.pair(0)
>>> key, model.slots.tolist() == alone.slots.tolist(), np.allclose(model.weights, alone.weights)
('a', True, True)
>>> model.metadata["centring"]["kept"], models.pair(1)[1].metadata["examples"]
(False, 1)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence

import numba
import numpy as np

from polybeam.learners import kernel_cache, kernels  # noqa: F401  (kernel_cache first: where numba caches the kernels below)
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.centring import RAW_ROWS
from polybeam.learners.config import LearnerConfig
from polybeam.learners.kernel_settings import settings_of
from polybeam.learners.linear import check_values, label_moments_of
from polybeam.learners.missing import INDICATED_AFTER, fill_rows
from polybeam.learners.model import Model
from polybeam.learners.race import BLOCK, GAIN_STANDARD_ERRORS

# The most rows a key may have to learn in the table: a learner per key learns that many raw (see the
# module docstring), fewer than a missing value's indicator needs and than one block of centring's race.
TABLE_ROWS = min(RAW_ROWS, INDICATED_AFTER, BLOCK)


def learns_as_table(config: LearnerConfig) -> bool:
    """Whether keys' learners with ``config`` can learn as a table (see the module docstring)."""
    return (
        config.expand == "none"
        and config.outputs == 1
        and config.passes == 1
        and config.sparsity == "none"
        and not config.offset_prior
    )


def table_keys(config: LearnerConfig, rows_per_key: np.ndarray) -> np.ndarray:
    """Which keys (of ``rows_per_key`` rows each) learn in the table: all or none by ``config``, then by rows."""
    if not learns_as_table(config):
        return np.zeros(len(rows_per_key), dtype=bool)
    return np.asarray(rows_per_key) <= TABLE_ROWS


@numba.njit(cache=True, nogil=True)
def lay_out_keys(indptr, indices, bounds):
    """``(row_starts, slots, rows)``: key ``k``'s table rows ``row_starts[k]:row_starts[k + 1]`` hold its
    slots ``slots[...]`` in order, slot 0 (the bias) first; ``rows`` gives each entry of the batch the
    row of its slot within its key's rows (what a key's own sparse learner indexes its state by, up to
    the order of rows, which the arithmetic does not see)."""
    keys = bounds.shape[0] - 1
    row_starts = np.zeros(keys + 1, dtype=np.int64)
    slots = np.empty(indices.shape[0] + keys, dtype=np.int64)
    rows = np.empty(indices.shape[0], dtype=indices.dtype)
    used = 0
    for key in range(keys):
        first, last = indptr[bounds[key]], indptr[bounds[key + 1]]
        present = np.unique(indices[first:last].astype(np.int64))
        start = used
        slots[used] = 0
        used += 1
        for slot in present:
            if slot != 0:
                slots[used] = slot
                used += 1
        own = slots[start:used]
        for entry in range(first, last):
            rows[entry] = np.searchsorted(own, indices[entry])
        row_starts[key + 1] = used
    return row_starts, slots[:used], rows


@numba.njit(cache=True, nogil=True)
def learn_keys(
    labels,
    importances,
    indptr,
    rows,
    values,
    bounds,
    row_starts,
    raw,
    sums,
    scales,
    stats,
    fill_sums,
    fill_missing,
    settings,
):
    """Each key's examples (``bounds[k]:bounds[k + 1]``), their missing values filled with the key's
    means so far, learned by the key's rows of the state (``row_starts``) and its ``stats`` row: what
    the key's own learner's ``learn`` does, key after key. Returns the filled values and each key's
    examples counted for its means."""
    keys = bounds.shape[0] - 1
    filled = np.empty_like(values)
    indicated = np.zeros(values.shape[0], dtype=np.bool_)
    counted = np.zeros(keys)
    synced = np.zeros(0)  # (no truncation: no time stamps)
    for key in range(keys):
        first, last = bounds[key], bounds[key + 1]
        start, stop = row_starts[key], row_starts[key + 1]
        counted[key] = fill_rows(
            indptr[first : last + 1],
            rows,
            values,
            fill_sums[start:stop],
            fill_missing[start:stop],
            0.0,
            True,
            filled,
            indicated,
            float(INDICATED_AFTER),
        )
        kernels.learn_batch(
            labels[first:last],
            importances[first:last],
            indptr[first : last + 1],
            rows,
            filled,
            raw[start:stop],
            sums[start:stop] if sums.shape[0] else sums,
            scales[start:stop] if scales.shape[0] else scales,
            synced,
            stats[key],
            settings,
        )
    return filled, counted


@dataclasses.dataclass
class KeyTableModels:
    """The models of many keys learned as a table: key ``k`` (``key_list[k]``)'s weighted slots are
    ``slots[starts[k]:starts[k + 1]]`` (with ``weights``, and ``clip_low``/``clip_high`` when the
    learner clips values), its fills ``fill_slots[fill_starts[k]:fill_starts[k + 1]]``, and its figures
    a row of ``stats`` (see :mod:`polybeam.learners.kernels`). ``metadata``: what every key's model
    carries besides its own figures (as the ``metadata`` of ``to_model``)."""

    config: LearnerConfig
    key_list: list
    starts: np.ndarray
    slots: np.ndarray
    weights: np.ndarray
    clip_low: np.ndarray | None
    clip_high: np.ndarray | None
    fill_starts: np.ndarray
    fill_slots: np.ndarray
    fill_values: np.ndarray
    stats: np.ndarray
    metadata: Mapping[str, object] = dataclasses.field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.key_list)

    def examples(self) -> np.ndarray:
        """Each key's count of examples learned."""
        return self.stats[:, kernels.EXAMPLES].astype(np.int64)

    def nonzero_weights(self) -> np.ndarray:
        """Each key's count of weighted slots (the model's non-zero weights)."""
        return np.diff(self.starts)

    def figures(self, key: int) -> dict:
        """Key ``key``'s model metadata: what its own learner's ``to_model`` records (but its learning
        curve, empty: per-key models keep none)."""
        stats = self.stats[key]
        weight = float(stats[kernels.WEIGHT_SUM])
        loss = float(stats[kernels.LOSS_SUM] / weight) if weight > 0 else float("nan")
        examples = int(stats[kernels.EXAMPLES])
        info = {
            "examples": examples,
            "importance_weight": weight,
            "progressive_loss": loss,
            "passes": [{"examples": examples, "importance_weight": weight, "loss": loss}],
            "label_min": float(stats[kernels.LABEL_MIN]),
            "label_max": float(stats[kernels.LABEL_MAX]),
        }
        if stats[kernels.GREEDY_WEIGHT] > 0:
            info["greedy_step"] = float(stats[kernels.GREEDY_SUM] / stats[kernels.GREEDY_WEIGHT])
        if self.config.scale_labels:
            info.update(zip(("label_weight", "label_mean", "label_variance"), label_moments_of(stats)))
        if self.config.center and self.config.bias:
            # Centring's race of one block between a learner and its twin, which learned alike: no gain shown.
            info["centring"] = {
                "kept": False,
                "decided_on": "progressive loss",
                "examples": weight,
                "progressive_loss": loss,
                "uncentred_progressive_loss": loss,
                "standard_error": float("nan"),
                "standard_errors_needed": GAIN_STANDARD_ERRORS,
            }
        info.update(self.metadata)
        return info

    def pair(self, key: int) -> tuple[object, Model]:
        """``(key, its Model)``, as its own learner's ``to_model`` makes it."""
        start, stop = self.starts[key], self.starts[key + 1]
        fills = slice(self.fill_starts[key], self.fill_starts[key + 1])
        return self.key_list[key], Model(
            config=self.config,
            slots=self.slots[start:stop],
            weights=self.weights[start:stop],
            metadata=self.figures(key),
            clip_low=None if self.clip_low is None else self.clip_low[start:stop],
            clip_high=None if self.clip_high is None else self.clip_high[start:stop],
            fill_slots=self.fill_slots[fills],
            fill_values=self.fill_values[fills],
            fill_indicated=np.zeros(fills.stop - fills.start, dtype=bool),
        )

    def __iter__(self) -> Iterator[tuple[object, Model]]:
        for key in range(len(self.key_list)):
            yield self.pair(key)

    def entry(self, key: int) -> dict:
        """What a shard's index says of key ``key``'s model (as ``model_shards.entry_of`` of its Model)."""
        stats = self.stats[key]
        weight = float(stats[kernels.WEIGHT_SUM])
        return {
            "kind": "linear",
            "examples": int(stats[kernels.EXAMPLES]),
            "progressive_loss": float(stats[kernels.LOSS_SUM] / weight) if weight > 0 else float("nan"),
            "nonzero_weights": int(self.starts[key + 1] - self.starts[key]),
        }

    def arrays(self) -> dict[str, np.ndarray]:
        """The table's arrays by name, as a shard file stores them (:meth:`from_arrays` reads them back)."""
        arrays = {
            "starts": self.starts,
            "slots": self.slots,
            "weights": self.weights,
            "fill_starts": self.fill_starts,
            "fill_slots": self.fill_slots,
            "fill_values": self.fill_values,
            "stats": self.stats,
        }
        if self.clip_low is not None:
            arrays.update(clip_low=self.clip_low, clip_high=self.clip_high)
        return arrays

    @classmethod
    def from_arrays(
        cls, config: LearnerConfig, keys: list, arrays: Mapping[str, np.ndarray], metadata: Mapping[str, object]
    ) -> KeyTableModels:
        return cls(
            config=config,
            key_list=keys,
            starts=arrays["starts"].astype(np.int64),
            slots=arrays["slots"].astype(np.int64),
            weights=arrays["weights"].astype(np.float64),
            clip_low=arrays["clip_low"].astype(np.float64) if "clip_low" in arrays else None,
            clip_high=arrays["clip_high"].astype(np.float64) if "clip_high" in arrays else None,
            fill_starts=arrays["fill_starts"].astype(np.int64),
            fill_slots=arrays["fill_slots"].astype(np.int64),
            fill_values=arrays["fill_values"].astype(np.float64),
            stats=arrays["stats"].astype(np.float64),
            metadata=dict(metadata),
        )


def train_table(
    config: LearnerConfig,
    by_key: ExampleBatch,
    bounds: np.ndarray,
    keys: Sequence,
    metadata: Mapping[str, object] | None = None,
) -> KeyTableModels:
    """The models of ``keys``, key ``k`` learning rows ``bounds[k]:bounds[k + 1]`` of ``by_key`` (in
    order) as its own learner (``make_learner(config, sparse=True)``) would, each with ``metadata``.
    Every key must be one the table takes (:func:`table_keys`)."""
    if not learns_as_table(config):
        raise ValueError("these settings' per-key learners do not learn as a table (see learns_as_table)")
    bounds = np.asarray(bounds, dtype=np.int64)
    if len(bounds) != len(keys) + 1 or (np.diff(bounds) > TABLE_ROWS).any() or (np.diff(bounds) < 1).any():
        raise ValueError(f"each key learns 1 to {TABLE_ROWS} consecutive rows in the table")
    check_values(by_key)
    if by_key.bits != config.bits:
        raise ValueError(f"batch is hashed into {by_key.bits} bits but the learner uses {config.bits}")
    row_starts, slots, rows = lay_out_keys(by_key.indptr, by_key.indices, bounds)
    size = len(slots)
    adaptive = config.step == "adaptive"
    scaled = adaptive or (config.step == "gsa" and config.normalized)
    raw = np.zeros(size)
    sums = np.zeros(size if adaptive else 0)
    scales = np.zeros(size if scaled else 0)
    stats = np.tile(kernels.new_stats(), (len(keys), 1))
    fill_sums, fill_missing = np.zeros(size), np.zeros(size)
    _, counted = learn_keys(
        by_key.labels,
        by_key.weights,
        by_key.indptr,
        rows,
        by_key.values,
        bounds,
        row_starts,
        raw,
        sums,
        scales,
        stats,
        fill_sums,
        fill_missing,
        settings_of(config),
    )
    key_of_row = np.repeat(np.arange(len(keys)), np.diff(row_starts))
    weights = stats[key_of_row, kernels.SCALE] * raw
    _check_finite(config, by_key, bounds, weights, stats)
    weighted = weights != 0.0
    starts = np.concatenate([[0], np.cumsum(np.add.reduceat(weighted, row_starts[:-1]) if size else [])])
    starts = starts.astype(np.int64)
    low = high = None
    if adaptive and config.normalized:
        scale = scales[weighted]
        bounded = (scale > 0.0) & (np.arange(size)[weighted] != row_starts[key_of_row[weighted]])
        low, high = np.where(bounded, -scale, -np.inf), np.where(bounded, scale, np.inf)
    # Each weighted slot's mean over its key's examples (a missing value's fill), kept where it is not 0.
    present = counted[key_of_row] - fill_missing
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(present > 0, fill_sums / np.where(present > 0, present, 1.0), 0.0)
    filled = weighted & (means != 0.0)
    fill_starts = np.concatenate([[0], np.cumsum(np.add.reduceat(filled, row_starts[:-1]) if size else [])])
    return KeyTableModels(
        config=config,
        key_list=list(keys),
        starts=starts,
        slots=slots[weighted],
        weights=weights[weighted],
        clip_low=low,
        clip_high=high,
        fill_starts=fill_starts.astype(np.int64),
        fill_slots=slots[filled],
        fill_values=means[filled],
        stats=stats,
        metadata=dict(metadata or {}),
    )


def _check_finite(config: LearnerConfig, by_key: ExampleBatch, bounds, weights, stats) -> None:
    """A key whose state overflowed fails as its own learner would, with its message."""
    figures = stats[:, [kernels.LOSS_SUM, kernels.LABEL_SUM, kernels.LABEL_SQUARES]]
    if np.isfinite(weights).all() and np.isfinite(figures).all():
        return
    from polybeam.learners.polynomial import make_learner  # (a key's own learner, for its error)

    for key in range(len(bounds) - 1):
        make_learner(config, sparse=True).learn(by_key.rows_between(int(bounds[key]), int(bounds[key + 1]))).to_model()
