"""LinearLearner: the state of an online linear learner over hashed features.

The state is a handful of numpy arrays (weights, AdaGrad sums, feature scales)
and a small statistics vector. ``learn`` runs one numba kernel per batch,
``merge`` averages states (weighted by the importance weight each saw in the
current pass), and ``to_model`` extracts a sparse :class:`Model`. A Beam
CombineFn only delegates to these methods.

Examples
--------
>>> from polybeam.learners.batch import ExampleBatch
>>> batch = ExampleBatch.from_rows([(1.0, {1: 1.0}), (-1.0, {2: 1.0})] * 50)
>>> learner = LinearLearner(LearnerConfig(loss="logistic")).learn(batch)   # adaptive steps at the default rate
>>> learner.examples_seen, learner.progressive_loss < 0.69
(100, True)
>>> learner.predict(batch)[:2].round(2)
array([0.97, 0.03])
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Iterable, Mapping

import numpy as np

from polybeam.learners import averaging, kernels, sparsity
from polybeam.learners.arrays import training_batches
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.centring import RAW_ROWS, Centring
from polybeam.learners.config import LearnerConfig
from polybeam.learners.curve import LearningCurve
from polybeam.learners.fitting import train_passes
from polybeam.learners.holdout import PassSelection
from polybeam.learners.kernel_settings import KernelSettings, settings_of
from polybeam.learners.missing import MissingValues, with_fills
from polybeam.learners.model import Model
from polybeam.learners.multitask import seed_offset_sums
from polybeam.learners.race import GAIN_STANDARD_ERRORS, RaceBlocks, gain_shown
from polybeam.learners.slot_table import SlotTable, dense_limit
from polybeam.learners.softmax import learn_batch_softmax
from polybeam.learners.values import LARGEST_VALUE, check_finite_weights, first_unlearnable

# Statistics that add up across learners of one pass (the rest are min/max,
# the scale, or the truncation clock, which merging resets).
_ADDITIVE = np.zeros(kernels.N_STATS, dtype=bool)
_ADDITIVE[
    [
        kernels.TIME,
        kernels.EXAMPLES,
        kernels.WEIGHT_SUM,
        kernels.LOSS_SUM,
        kernels.NORM_WEIGHT,
        kernels.NORM_SUM,
        kernels.LIFETIME_EXAMPLES,
        kernels.GREEDY_SUM,
        kernels.GREEDY_WEIGHT,
        kernels.LABEL_WEIGHT,
        kernels.LABEL_SUM,
        kernels.LABEL_SQUARES,
    ]
] = True

# The per-slot arrays of the state (rows of a sparse state; see polybeam.learners.slot_table).
_SLOT_ARRAYS = ("raw_", "sum_sq_grad_", "feature_scale_", "synced_", "slot_mass_")
# The rows a sparse state starts with: a key's learner seldom touches more at first.
_FIRST_ROWS = 32
# Centring's guard (see LinearLearner.centring_verdict): the uncentred learner learns the first pass's
# examples beside the centred one up to this many, then centring goes on where it showed its gain.
# By then the slots that stay centred are the dense columns, and the race costs one more learner for a
# tenth of a pass of a million examples.
CENTRING_RACE_EXAMPLES = 100_000


@functools.lru_cache(maxsize=32)
def uncentred_settings(config: LearnerConfig) -> tuple[LearnerConfig, KernelSettings]:
    """``config`` without centring and its kernel settings: centring's racing twin's (made once per
    config: a learner per key makes a twin per key)."""
    uncentred = dataclasses.replace(config, center=False)
    return uncentred, settings_of(uncentred)


def state_bytes(config: LearnerConfig) -> int:
    """Memory the dense state of ``config`` needs, in bytes."""
    per_slot = config.outputs + 1  # weights and the pass's slot masses (see polybeam.learners.averaging)
    if config.step == "adaptive":
        per_slot += config.outputs + 1  # AdaGrad sums and feature scales
    elif config.step == "gsa" and config.normalized:
        per_slot += 1  # feature scales
    if config.sparsity in sparsity.LAZY:
        per_slot += 1  # truncation time stamps
    return per_slot * 8 << config.bits


def check_memory(config: LearnerConfig) -> None:
    """Refuse a state that cannot fit in this machine's memory, saying what to change."""
    need = state_bytes(config)
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return
    if need > total // 2:
        raise MemoryError(
            f"bits={config.bits} needs {need / 2**30:.1f} GiB of learner state per worker, more "
            f"than half of this machine's {total / 2**30:.1f} GiB; use fewer bits"
        )


def check_values(batch: ExampleBatch) -> None:
    """Refuse ``batch`` in one line when a value of it cannot be learned (see polybeam.learners.values):
    every door's parser makes such rows dead letters, so only a batch built by hand gets here. NaN is a
    missing value, which learners fill (see polybeam.learners.missing).

    >>> check_values(ExampleBatch.from_rows([(1.0, {1: 1e300})]))
    Traceback (most recent call last):
    ...
    ValueError: example 0 has the feature value 1e+300: a learner takes finite values within +-3.4e+38 (rescale it)
    """
    found = first_unlearnable(batch.indptr, batch.values, missing_ok=True)
    if found is not None:
        row, value = found
        raise ValueError(
            f"example {row} has the feature value {value:g}: a learner takes finite values within "
            f"+-{LARGEST_VALUE:.2g} (rescale it)"
        )


def label_moments_of(stats: np.ndarray) -> tuple[float, float, float]:
    """``(weight, mean, variance)`` of the labels a learner's statistics ``stats`` counted (squared loss
    with ``scale_labels``; zeros before any)."""
    weight, total, squares = (float(stats[i]) for i in (kernels.LABEL_WEIGHT, kernels.LABEL_SUM, kernels.LABEL_SQUARES))
    if not weight > 0:
        return 0.0, 0.0, 0.0
    mean = total / weight
    return weight, mean, max(squares / weight - mean * mean, 0.0)


class LinearLearner:
    """Online linear learner state; see the module docstring.

    Fitted state ends in ``_``: ``raw_`` weights of shape (slots, outputs) (the
    weights are ``stats_[SCALE] * raw_``; one output per class for softmax),
    ``sum_sq_grad_`` and ``feature_scale_`` (adaptive steps only), ``synced_``
    (each slot's truncation time stamp, lazy sparsity only), ``stats_`` (see
    ``kernels``), ``names_`` and ``passes_`` (per finished pass: examples,
    importance weight, mean loss). ``kernel_settings`` is not state but the
    config as the learning kernels read it (see polybeam.learners.kernel_settings).
    """

    def __init__(
        self,
        config: LearnerConfig | None = None,
        *,
        sparse: bool = False,
        centring_guard: bool = True,
        per_key: bool = False,
    ):
        self.config = config or LearnerConfig()
        # What the learning kernels read of the config, as numbers: built once, passed with every batch.
        self.kernel_settings = settings_of(self.config)
        # A sparse state keeps a row per slot touched (a learner per key: see polybeam.learners.slot_table);
        # it turns dense past dense_limit(bits) rows.
        self.table_ = SlotTable() if sparse else None
        if not sparse:
            check_memory(self.config)
        self._allocate(_FIRST_ROWS if sparse else 1 << self.config.bits)
        # Centring needs a bias to fold the centred features' means into (see polybeam.learners.centring).
        # (a learner per key learns its first few rows raw: see polybeam.learners.centring.RAW_ROWS)
        raw_rows = RAW_ROWS if per_key else 0
        self.centring_ = Centring.empty(raw_rows) if self.config.center and self.config.bias else Centring.off()
        # Centring's guard: the same learner without centring, racing it over the first pass (see
        # centring_verdict); None when nothing is centred, or once the race is decided. A learner that
        # learns its first rows raw *is* that learner until it centres, and makes it then
        # (``twin_due_``, see _begin_twin): a key of a few rows pays for one learner, not two.
        racing = centring_guard and self.centring_.active
        self.twin_due_ = racing and raw_rows > 0 and not self._cumulative
        self.uncentred_ = (
            LinearLearner(uncentred_settings(self.config)[0], sparse=sparse) if racing and not self.twin_due_ else None
        )
        self.centring_verdict_: dict | None = None
        # Both racers' losses block by block, to tell centring's gain from noise (see polybeam.learners.race);
        # until the twin is made, this learner's blocks are its too.
        self.race_: RaceBlocks | None = RaceBlocks.start() if racing else None
        if self.uncentred_ is not None:
            self.uncentred_.race_ = RaceBlocks.start()
        self.stats_ = kernels.new_stats()
        # The means missing values are filled with (see polybeam.learners.missing): learned by `learn`
        # (and by a polynomial learner for this one) in the first pass.
        self.missing_ = MissingValues(self.config.bits)
        # Additive statistics at the start of the current pass, so that merging
        # learners that continued one averaged state counts that state once.
        self.pass_start_ = np.zeros(kernels.N_STATS)
        self.names_: dict[int, str] = {}
        self.passes_: list[dict[str, float]] = []
        # Passes run before the holdout restarted this learner at a lower rate (holdout.restart): its
        # learning curve numbers passes as the job does.
        self.passes_before_ = 0
        self.averaged_ = 1  # how many learners were averaged into this pass's state (see merge)
        self.curve_ = LearningCurve()
        self.selection_ = PassSelection.of(self.config)

    def _allocate(self, rows: int) -> None:
        """Zeroed per-slot arrays of ``rows`` rows (empty where the step and sparsity rules keep none)."""
        outputs = self.config.outputs
        adaptive = self.config.step == "adaptive"
        scaled = adaptive or (self.config.step == "gsa" and self.config.normalized)
        lazy = self.config.sparsity in sparsity.LAZY
        self.raw_ = np.zeros((rows, outputs))
        self.sum_sq_grad_ = np.zeros((rows if adaptive else 0, outputs))
        self.feature_scale_ = np.zeros(rows if scaled else 0)
        self.synced_ = np.zeros(rows if lazy else 0)
        # How much this pass learned each slot: what merges weight the slot's weights by (see averaging).
        self.slot_mass_ = np.zeros(rows)

    @property
    def sparse(self) -> bool:
        """Whether the state holds only the slots it touched (see polybeam.learners.slot_table)."""
        return self.table_ is not None

    def _rows_batch(self, batch: ExampleBatch) -> ExampleBatch:
        """``batch`` with its slots replaced by this sparse state's rows (new slots get rows), or ``batch``
        itself once the state is dense (turning dense here when the new slots fill it past its limit)."""
        if self.table_ is None:
            return batch
        rows = self.table_.rows_of(batch.indices)
        self._reserve(len(self.table_))  # the new slots' rows (zero) before the state may turn dense
        if len(self.table_) > dense_limit(self.config.bits):
            self.to_dense()
            return batch
        return dataclasses.replace(batch, indices=rows.astype(batch.indices.dtype))

    def _reserve(self, rows: int) -> None:
        """Room for ``rows`` rows, doubling the arrays (rows never move)."""
        have = len(self.raw_)
        if rows <= have:
            return
        size = max(have, 1)
        while size < rows:
            size *= 2
        for name in _SLOT_ARRAYS:
            array = getattr(self, name)
            if len(array):
                grown = np.zeros((size,) + array.shape[1:])
                grown[:have] = array
                setattr(self, name, grown)

    def to_dense(self) -> LinearLearner:
        """Turn a sparse state dense (every slot a row of its own); a dense one is left as it is."""
        if self.table_ is None:
            return self
        check_memory(self.config)
        slots, used = self.table_.slots, len(self.table_)
        for name in _SLOT_ARRAYS:
            array = getattr(self, name)
            if len(array):
                dense = np.zeros(((1 << self.config.bits),) + array.shape[1:])
                dense[slots] = array[:used]
                setattr(self, name, dense)
        self.centring_ = self.centring_.relabelled(slots)
        self.table_ = None
        return self

    def _lay_out(self, table: SlotTable) -> None:
        """Move a sparse state's rows to ``table``'s (which holds every slot this one does)."""
        rows, used = table.find(self.table_.slots), len(self.table_)
        for name in _SLOT_ARRAYS:
            array = getattr(self, name)
            if len(array):
                moved = np.zeros((len(table),) + array.shape[1:])
                moved[rows] = array[:used]
                setattr(self, name, moved)
        self.centring_ = self.centring_.relabelled(rows)
        self.table_ = SlotTable(table.slots.copy())

    def _rows_of_slots(self, slots: np.ndarray) -> np.ndarray:
        """The rows of ``slots`` in the state (-1: a sparse state never touched the slot)."""
        slots = np.asarray(slots, dtype=np.int64)
        return slots if self.table_ is None else self.table_.find(slots)

    def _slots_of_rows(self, rows: np.ndarray) -> np.ndarray:
        return rows if self.table_ is None else self.table_.slots[rows]

    def every_slot(self, array: np.ndarray) -> np.ndarray:
        """A per-row array (``raw_``, ``feature_scale_``, ...) as every slot's: a sparse state's rows
        scattered into ``2**bits`` slots, a dense state's array itself."""
        if self.table_ is None or len(array) == 0:  # (an empty array stands for "none kept": no scale)
            return array
        dense = np.zeros(((1 << self.config.bits),) + array.shape[1:])
        dense[self.table_.slots] = array[: len(self.table_)]
        return dense

    def set_weights(self, slots: np.ndarray, weights: np.ndarray) -> LinearLearner:
        """Set the raw weights of ``slots`` (rows of shape (outputs,)), as a warm start does."""
        rows = np.asarray(slots, dtype=np.int64)
        if self.table_ is not None:
            rows = self.table_.rows_of(rows)
            self._reserve(len(self.table_))
            if len(self.table_) > dense_limit(self.config.bits):
                self.to_dense()
                rows = np.asarray(slots, dtype=np.int64)
        self.raw_[rows] = np.asarray(weights).reshape(len(rows), -1)
        return self

    # -- learning -------------------------------------------------------------

    def learn(self, batch: ExampleBatch) -> LinearLearner:
        """Learn from every example of ``batch``, in order, a missing value (NaN) filled with its
        feature's mean so far (see polybeam.learners.missing). A value no learner can take (infinite,
        or beyond ``polybeam.learners.values.LARGEST_VALUE``: its square would overflow an update) is
        refused, naming its row, before anything is learned."""
        check_values(batch)
        return self.learn_checked(self.missing_.fill(batch))

    def learn_checked(self, batch: ExampleBatch) -> LinearLearner:
        """:meth:`learn` for a batch whose values were checked and filled (or are products of such)."""
        config = self.config
        if batch.bits != config.bits:
            raise ValueError(
                f"batch is hashed into {batch.bits} bits but the learner uses {config.bits}; "
                "read the data with the learner's bits"
            )
        if len(batch) == 0:
            return self
        if config.loss == "softmax":
            self._check_classes(batch.labels)
        if self.uncentred_ is not None:
            self.uncentred_.curve_.every = self.curve_.every  # (its curve is the model's if it wins)
            self.uncentred_.learn_checked(batch)
        names, given = batch.names, batch
        batch = self._rows_batch(batch)
        if config.offset_prior and len(self.sum_sq_grad_):  # a shared per-key model's key-crossed batch
            seed_offset_sums(self.sum_sq_grad_, batch, config.offset_prior, self.feature_scale_)
        segments = self.centring_.segments(
            batch,
            self.raw_,
            first_raw=config.step == "gsa",
            before_fold=self._fold_hook(),
            feature_scale=self._normalising_scales(),
            on_centre=self._restart_steps,
            before_centre=self._twin_hook(given, batch) if self.twin_due_ else None,
        )
        for start, stop, values in segments:
            self._learn_counted(batch, start, stop, values)
        averaging.add_mass(self.slot_mass_, batch.weights, batch.indptr, batch.indices, batch.values, config.bias)
        if names:
            for slot, name in names.items():
                self.names_.setdefault(slot, name)
        if self.racing and self.examples_seen >= CENTRING_RACE_EXAMPLES:
            self.decide_centring()
        return self

    @property
    def racing(self) -> bool:
        """Whether centring's race is on (its twin made or due)."""
        return self.uncentred_ is not None or self.twin_due_

    def _twin_hook(self, given: ExampleBatch, rows: ExampleBatch) -> Callable[[int], None]:
        """What centring calls as it starts centring after row ``stop`` of the batch ``given`` (``rows``:
        in this learner's rows): make the twin, which learns the rest of the batch raw."""

        def begin(stop: int) -> None:
            self._begin_twin(rows.rows_between(0, stop))
            if stop < len(given):
                self.uncentred_.curve_.every = self.curve_.every
                self.uncentred_.learn_checked(given.rows_between(stop, len(given)))

        return begin

    def _begin_twin(self, learned: ExampleBatch | None = None) -> None:
        """Make the uncentred learner that races this one. Until centring starts, a learner that learns
        its first rows raw has learned what that learner would have (the same values in the same order;
        a slot that drops out before centring folds nothing), so its twin is a copy of it without
        centring. ``learned``: rows of the current batch already learned (in this learner's rows), whose
        mass the batch adds only at its end."""
        twin = LinearLearner.__new__(LinearLearner)  # (field by field: a key's learner is small)
        twin.__dict__.update(self.__dict__)
        for name in (*_SLOT_ARRAYS, "stats_", "pass_start_"):
            setattr(twin, name, getattr(self, name).copy())
        twin.table_ = None if self.table_ is None else SlotTable(self.table_.slots.copy())
        twin.names_, twin.passes_ = dict(self.names_), list(self.passes_)
        twin.curve_ = LearningCurve.from_state(self.curve_.to_state())
        twin.race_ = self.race_.copy()
        twin.config, twin.kernel_settings = uncentred_settings(self.config)
        twin.missing_ = MissingValues(self.config.bits)  # (it learns filled batches: the means are this one's)
        twin.centring_, twin.twin_due_, twin.uncentred_ = Centring.off(), False, None
        twin.selection_ = PassSelection.of(twin.config)
        if learned is not None and len(learned):
            averaging.add_mass(
                twin.slot_mass_, learned.weights, learned.indptr, learned.indices, learned.values, self.config.bias
            )
        self.uncentred_, self.twin_due_ = twin, False

    # -- centring's guard -------------------------------------------------------

    def _centring_gain(self) -> tuple[bool, float, float]:
        """``(shown, gain, standard_error)`` of centring's race so far (see polybeam.learners.race)."""
        centred, weights = self.race_.closed(self.stats_)
        if self.uncentred_ is None:  # (the twin is not made yet: it would have learned the same)
            return gain_shown(centred, centred.copy(), weights)
        uncentred, _ = self.uncentred_.race_.closed(self.uncentred_.stats_)
        return gain_shown(centred, uncentred, weights)

    def centring_pays(self) -> bool:
        """Whether the centred learner predicted better than the uncentred one racing it by more than
        the race's noise (True without a race). Each example is predicted before it is learned, so the
        progressive loss estimates the loss on new data; where the race shows no clear gain (few
        examples, or both learners alike, as a key's first rows are: see
        polybeam.learners.centring.RAW_ROWS), the simpler learner, without centring, goes on."""
        if not self.racing:
            return self.centring_verdict_ is None or self.centring_verdict_["kept"]
        return self._centring_gain()[0]

    def centring_verdict(self) -> dict | None:
        """What centring's guard compared and kept (None without a guard): the model's ``centring``.

        Centring (:mod:`polybeam.learners.centring`) conditions unscaled dense columns, and on sparse
        or nearly centred data it can only cost: its means are estimates and a slot that stops being
        centred is folded into the bias by a refit. So a learner that centres also learns the first
        pass without centring, up to :data:`CENTRING_RACE_EXAMPLES` examples, and goes on centred only
        where its progressive loss was lower by more than a standard error
        (:mod:`polybeam.learners.race`; :meth:`decide_centring`)."""
        if not self.racing:
            return self.centring_verdict_
        shown, gain, error = self._centring_gain()
        uncentred = self.uncentred_ or self  # (a twin not made yet: this learner)
        return {
            "kept": shown,
            "decided_on": "progressive loss",
            "examples": float(self.stats_[kernels.WEIGHT_SUM]),
            "progressive_loss": self.progressive_loss,
            "uncentred_progressive_loss": uncentred.progressive_loss,
            "standard_error": error,
            "standard_errors_needed": GAIN_STANDARD_ERRORS,
        }

    def decide_centring(self) -> LinearLearner:
        """End centring's race: go on as the uncentred learner when it predicted better (its state
        becomes this learner's, centring off), and drop the other."""
        if not self.racing:
            return self
        verdict = self.centring_verdict()
        if not verdict["kept"] and self.uncentred_ is None:  # (no twin yet: this learner is it)
            self.centring_ = Centring.off()
        elif not verdict["kept"]:
            winner = self.uncentred_
            winner.curve_.progress = self.curve_.progress  # (where this learner reports its points)
            for name in (*_SLOT_ARRAYS, "table_", "stats_", "pass_start_", "curve_"):
                setattr(self, name, getattr(winner, name))
            self.centring_ = Centring.off()
        self.drop_race()
        self.centring_verdict_ = verdict
        return self

    def drop_race(self) -> LinearLearner:
        """No centring's race from here on: no twin (made or due) and no race blocks."""
        self.uncentred_, self.race_, self.twin_due_ = None, None, False
        return self

    def _learn_counted(self, batch: ExampleBatch, start: int, stop: int, values: np.ndarray) -> None:
        """Learn rows ``start:stop``, stopping at each doubling example count to add a learning-curve point,
        and at each block of centring's race (see polybeam.learners.race)."""
        curve, race = self.curve_, self.race_
        keeps_curve = self.table_ is None  # a learner per key keeps none (a point per doubling of a few rows)
        while start < stop:
            end = min(stop, start + curve.room()) if keeps_curve else stop
            if race is not None:
                end = min(end, start + race.room())
            self._learn_rows(batch, start, end, values)
            if race is not None:
                race.advance(end - start, self.stats_)
            if not keeps_curve:
                curve.in_pass += end - start
            elif curve.advance(end - start):
                self._record_point()
            start = end

    def nonzero_slots(self) -> int:
        """How many slots have a non-zero weight in force, pending truncation paid, without touching the
        state (a curve point must not change learning): one numba pass over the slots."""
        config = self.config
        return sparsity.nonzero_in_force(
            self.raw_,
            self.sum_sq_grad_,
            self.feature_scale_,
            self.synced_,
            float(self.stats_[kernels.CLOCK]),
            float(self.stats_[kernels.SCALE]),
            float(config.threshold),
            config.step == "adaptive",
            config.normalized,
            self.kernel_settings.sparsity,
        )

    def _record_point(self) -> None:
        nonzero = self.nonzero_slots()
        self.curve_.record(
            pass_number=self.passes_before_ + len(self.passes_) + 1,
            examples=self.curve_.in_pass,
            weight=float(self.stats_[kernels.WEIGHT_SUM]),
            loss=float(self.stats_[kernels.LOSS_SUM]),
            nonzero=int(nonzero),
        )

    def _learn_rows(self, batch: ExampleBatch, start: int, stop: int, values: np.ndarray) -> None:
        """Learn rows ``start:stop`` of ``batch``, reading ``values`` for its values."""
        rows = slice(start, stop)
        arrays = (batch.labels[rows], batch.weights[rows], batch.indptr[start : stop + 1], batch.indices, values)
        scales, synced, stats = self.feature_scale_, self.synced_, self.stats_
        if self.config.loss == "softmax":
            learn_batch_softmax(*arrays, self.raw_, self.sum_sq_grad_, scales, synced, stats, self.kernel_settings)
        else:  # one output: the binary kernel's weights and AdaGrad sums are 1-d
            raw, sums = self.raw_.reshape(-1), self.sum_sq_grad_.reshape(-1)
            kernels.learn_batch(*arrays, raw, sums, scales, synced, stats, self.kernel_settings)

    def expect(self, total: int) -> LinearLearner:
        """Told how many examples training will see: nothing to plan for a linear learner (apple has a schedule)."""
        return self

    def _check_classes(self, labels: np.ndarray) -> None:
        classes = self.config.classes
        bad = (labels < 1) | (labels > classes) | (labels != np.round(labels))
        if bad.any():
            raise ValueError(
                f"softmax labels must be class ids 1..{classes}; got {labels[bad][0]!r} "
                "(read the data with labels='multiclass' and classes set, so bad labels become dead letters)"
            )

    def fit(
        self,
        batches: Iterable[ExampleBatch] | ExampleBatch | tuple,
        passes: int | None = None,
        *,
        shuffle=None,
        after_pass=None,
    ) -> LinearLearner:
        """Learn from ``batches`` for ``passes`` passes (default: the config's), one learner throughout.

        ``batches``: ExampleBatches, or a tuple ``(X, y)`` / ``(X, y, sample_weight)`` of NumPy,
        SciPy sparse or pandas data (see :func:`polybeam.learners.arrays.training_batches`).
        With several passes and a ``holdout_period``, one example in that many is held
        out, every pass is scored on them, and the learner ends as the best pass left
        it, stopping early as ``Train`` does (see :mod:`polybeam.learners.holdout`).
        ``shuffle`` (a random generator: every pass in a new order) and ``after_pass``: see
        :func:`~polybeam.learners.fitting.train_passes`.
        """
        batches = training_batches(batches, passes, bits=self.config.bits, seed=self.config.seed)
        return train_passes(self, batches, passes or self.config.passes, shuffle=shuffle, after_pass=after_pass)

    def start_pass(self) -> LinearLearner:
        """Close the current pass's statistics and start counting a new pass (centring's race ends with
        the first pass)."""
        self.decide_centring()
        self.missing_.freeze()
        self.passes_.append(self._pass_summary())
        for index in (kernels.EXAMPLES, kernels.WEIGHT_SUM, kernels.LOSS_SUM):
            self.stats_[index] = 0.0
        self.curve_.start_pass()
        self.averaged_ = 1
        return self.mark_pass_start()

    def restart_greedy_mean(self) -> LinearLearner:
        """Forget the greedy steps so far: GSA's step becomes the mean of the greedy steps from here on.

        For a learner whose features change (apple's expansions): a greedy step
        is about 1 / (x . x), and the mean of steps taken before an expansion,
        on fewer and smaller features, is too large after it. Merging later
        counts only the steps after the restart (pass_start forgets them too).
        """
        for index in (kernels.GREEDY_SUM, kernels.GREEDY_WEIGHT):
            self.stats_[index] = 0.0
            self.pass_start_[index] = 0.0
        return self

    def mark_pass_start(self) -> LinearLearner:
        """Count the additive statistics so far as earlier passes': merging learners that go on
        from this state then counts it once."""
        self.pass_start_ = np.where(_ADDITIVE, self.stats_, 0.0)
        self.slot_mass_[:] = 0.0
        return self

    # -- reading the state -----------------------------------------------------

    def settle(self) -> LinearLearner:
        """Pay every weight's pending truncation now (the kernels do it lazily); under the cumulative
        penalty, make the weights in force the sums and open every account again (see
        polybeam.learners.sparsity: what a merge does anyway)."""
        if len(self.synced_):
            rates, thresholds = self._penalty()
            sparsity.flush(
                self.raw_,
                self.stats_[kernels.SCALE],
                self.synced_,
                clock=self.stats_[kernels.CLOCK],
                rates=rates,
                thresholds=thresholds,
                sparsity=self.kernel_settings.sparsity,
            )
        return self

    def _penalty(self, rows: np.ndarray | slice = slice(None)) -> tuple[np.ndarray, np.ndarray]:
        """Per-weight penalty rates and per-slot thresholds of ``rows`` (see polybeam.learners.sparsity)."""
        raw = self.raw_[rows]
        return sparsity.penalty_arrays(
            self.sum_sq_grad_[rows] if len(self.sum_sq_grad_) else self.sum_sq_grad_,
            self.feature_scale_[rows] if len(self.feature_scale_) else self.feature_scale_,
            adaptive=self.config.step == "adaptive",
            normalized=self.config.normalized,
            threshold=self.config.threshold,
            shape=raw.shape,
        )

    @property
    def _cumulative(self) -> bool:
        return self.config.sparsity == "cumulative"

    def raw_in_force(self) -> np.ndarray:
        """The raw weights as the model holds them, pending truncation paid. Under the cumulative
        penalty a new array (the learner keeps its sums); otherwise ``raw_`` itself, settled."""
        if not self._cumulative:
            return self.settle().raw_
        rates, _ = self._penalty()
        return sparsity.in_force(self.raw_, self.synced_, clock=self.stats_[kernels.CLOCK], rates=rates)

    def _fold_hook(self):
        """What centring calls before it folds rows into the bias: under the cumulative penalty,
        settle those rows (their weights in force become their sums), so the fold is exact."""
        return self._settle_rows if self._cumulative else None

    def _restart_steps(self, rows: np.ndarray) -> None:
        """Slots that start being centred learn their centred values' scale afresh: the raw values'
        (a column of ages: 80) would make the steps of centred values (a spread of 15) small."""
        if len(self.sum_sq_grad_):
            self.sum_sq_grad_[rows] = 0.0
        if len(self.feature_scale_):
            self.feature_scale_[rows] = 0.0

    def _normalising_scales(self) -> np.ndarray | None:
        """The feature scales the steps normalise by (None when they do not): a slot that stops
        being centred gets its raw magnitude (see Centring.drop)."""
        return self.feature_scale_ if self.config.normalized and len(self.feature_scale_) else None

    def _settle_rows(self, rows: np.ndarray) -> None:
        rates, _ = self._penalty(rows)
        self.raw_[rows], self.synced_[rows] = sparsity.settled_accounts(
            self.raw_[rows], self.synced_[rows], clock=self.stats_[kernels.CLOCK], rates=rates
        )

    def _output_shape(self, array: np.ndarray) -> np.ndarray:
        return array.reshape(-1) if self.config.outputs == 1 else array

    @property
    def weights(self) -> np.ndarray:
        """The dense weights, truncation paid (a new array; (slots, classes) for softmax), every slot's
        even for a sparse state."""
        return self._output_shape(self.every_slot(self.stats_[kernels.SCALE] * self.raw_in_force()))

    @property
    def examples_seen(self) -> int:
        """Examples learned in the current pass."""
        return int(self.stats_[kernels.EXAMPLES])

    @property
    def fresh(self) -> bool:
        """Whether the learner has learned nothing yet: no example in any pass, no weights from a model."""
        return not self.passes_ and not self.stats_[kernels.EXAMPLES] and not self.stats_[kernels.LIFETIME_EXAMPLES]

    @property
    def progressive_loss(self) -> float:
        """Importance-weighted mean loss of the current pass, each example's loss taken before learning it."""
        weight = self.stats_[kernels.WEIGHT_SUM]
        return float(self.stats_[kernels.LOSS_SUM] / weight) if weight > 0 else float("nan")

    def label_moments(self) -> tuple[float, float, float]:
        """``(weight, mean, variance)`` of the labels counted (squared loss with ``scale_labels``)."""
        return label_moments_of(self.stats_)

    @property
    def greedy_step(self) -> float | None:
        """GSA's current step: the mean greedy step so far (None before any, or without GSA)."""
        weight = self.stats_[kernels.GREEDY_WEIGHT]
        return float(self.stats_[kernels.GREEDY_SUM] / weight) if weight > 0 else None

    def margins(self, batch: ExampleBatch) -> np.ndarray:
        """Raw scores ``w . x + b`` of each example (n x classes for softmax)."""
        return self.to_model().margins(batch)

    def predict(self, batch: ExampleBatch) -> np.ndarray:
        """Predictions as the extracted model would make them (see :meth:`Model.predict`)."""
        return self.to_model().predict(batch)

    # -- combining -------------------------------------------------------------

    def compact(self) -> LinearLearner:
        """Pay pending truncation and fold the L2 scale into the weights."""
        self.settle()
        scale = self.stats_[kernels.SCALE]
        if scale != 1.0:
            self.raw_ *= scale
            self.stats_[kernels.SCALE] = 1.0
        return self

    def merge(self, others: Iterable[LinearLearner]) -> LinearLearner:
        """Average this learner with ``others`` in place, coordinate by coordinate.

        Each slot's weights (and AdaGrad sums) are averaged weighted by how much
        each learner learned the slot this pass, its slot mass (the terascale
        learner's merge, see :mod:`polybeam.learners.averaging`); the masses add
        up, so merging is order-free and associative. Slots no learner touched
        this pass keep the mean weighted by importance seen this pass. Feature
        scales take the maximum, counts add up and names are united (first name
        per slot wins). Pending truncation is paid first, and the truncation
        clock starts again at zero.
        """
        learners = [self] + [other for other in others if other is not self]
        for other in learners[1:]:
            if other.config != self.config:
                raise ValueError("cannot merge learners with different configurations")
        if len(learners) == 1:
            return self
        averaged = sum(learner.averaged_ for learner in learners)
        self.missing_ = MissingValues.merged([learner.missing_ for learner in learners])
        if any(learner.racing for learner in learners):
            # A twin not made yet is made: the merged race is the one they would all have run, and the
            # merged learner may centre (its raw rows counted together) while its twin must not.
            for learner in learners:
                if learner.twin_due_:
                    learner._begin_twin()
        if all(learner.uncentred_ is not None for learner in learners):
            # Still racing: the uncentred learners average as the centred ones do (their sums add up).
            self.uncentred_.merge([learner.uncentred_ for learner in learners[1:]])
        elif any(learner.uncentred_ is not None for learner in learners):
            # Some decided (a worker past the race's examples): every learner goes on as its winner.
            learners = [learner.copy() if learner is not self else learner for learner in learners]
            for learner in learners:
                learner.decide_centring()
        learners = [self] + self._laid_out_alike(learners[1:])
        for learner in learners:
            learner.settle()
        pass_weights = np.array([learner.stats_[kernels.WEIGHT_SUM] for learner in learners])
        total = pass_weights.sum()
        shares = pass_weights / total if total > 0 else np.full(len(learners), 1.0 / len(learners))

        weights = averaging.WeightedAverage(self.raw_.shape)
        sum_sq_grad = averaging.WeightedAverage(self.sum_sq_grad_.shape)
        slot_mass = np.zeros_like(self.slot_mass_)
        stats = self.pass_start_.copy()
        centring = Centring.merged([learner.centring_ for learner in learners])
        scales = self._normalising_scales()
        for learner, share in zip(learners, shares):
            # Each learner's function in uncentred form; the merged means are put back below.
            learner_weights = learner.stats_[kernels.SCALE] * learner.raw_
            # A slot this learner centres and the merged one does not stops being centred here,
            # folded as this learner would fold it when an example lacked it (Centring.drop).
            own = learner.centring_
            dropped = ~np.isin(own.slots, centring.slots)
            own.fold_dropped(dropped, learner_weights, learner.feature_scale_ if scales is not None else None, scales)
            learner_weights[0] -= own.bias_offset(learner_weights, ~dropped)
            weights.add(learner_weights, learner.slot_mass_, share)
            if len(self.sum_sq_grad_):
                sum_sq_grad.add(learner.sum_sq_grad_, learner.slot_mass_, share)
            slot_mass += learner.slot_mass_
            if len(self.feature_scale_) and learner is not self:
                np.maximum(self.feature_scale_, learner.feature_scale_, out=self.feature_scale_)
            stats[_ADDITIVE] += learner.stats_[_ADDITIVE] - learner.pass_start_[_ADDITIVE]
            if learner is not self:
                for slot, name in learner.names_.items():
                    self.names_.setdefault(slot, name)
        stats[kernels.SCALE] = 1.0
        stats[kernels.LABEL_MIN] = min(learner.stats_[kernels.LABEL_MIN] for learner in learners)
        stats[kernels.LABEL_MAX] = max(learner.stats_[kernels.LABEL_MAX] for learner in learners)
        self.centring_ = centring
        progress = self.curve_.progress
        self.curve_ = LearningCurve.merged(
            [learner.curve_ for learner in learners], self.passes_before_ + len(self.passes_) + 1
        )
        self.curve_.progress = progress
        weights = weights.result()
        weights[0] += self.centring_.bias_offset(weights)
        self.raw_ = weights
        self.sum_sq_grad_ = sum_sq_grad.result()
        self.slot_mass_ = slot_mass
        self.synced_[:] = 0.0
        if all(learner.race_ is not None for learner in learners):  # still racing: every worker's blocks
            self.race_ = RaceBlocks.merged([(learner.race_, learner.stats_) for learner in learners], stats)
        self.stats_ = stats
        self.averaged_ = averaged
        return self

    def _laid_out_alike(self, others: list[LinearLearner]) -> list[LinearLearner]:
        """Lay this state and copies of ``others`` out on the same rows, to average them row by row:
        sparse states on the union of their slots (in slot order, so the merge does not depend on the
        order of the learners), all dense when one is or the union passes the dense limit."""
        everyone = [self] + others
        if all(learner.table_ is None for learner in everyone):
            return others
        union = SlotTable.union([learner.table_ for learner in everyone if learner.table_ is not None])
        if any(learner.table_ is None for learner in everyone) or len(union) > dense_limit(self.config.bits):
            self.to_dense()
            return [other.copy().to_dense() if other.table_ is not None else other for other in others]
        self._lay_out(union)
        laid_out = []
        for other in others:
            other = other.copy()
            other._lay_out(union)
            laid_out.append(other)
        return laid_out

    def restarted(self, config: LearnerConfig, *, sparse: bool | None = None) -> LinearLearner:
        """A fresh learner of this kind (per key or not) with ``config``: see holdout.restart. ``sparse``: a
        state of the slots touched only (default: as this learner's), the same weights either way."""
        per_key = self.table_ is not None
        return LinearLearner(config, sparse=per_key if sparse is None else sparse, per_key=per_key)

    def copy(self) -> LinearLearner:
        """An independent copy (e.g. to start several workers from one averaged state)."""
        clone = LinearLearner.__new__(LinearLearner)
        clone.__setstate__(self.__getstate__())
        return clone

    # -- extraction and serialisation -------------------------------------------

    def candidate_models(self) -> dict[str, Model]:
        """The models a holdout chooses among: this learner's only (see :mod:`polybeam.learners.holdout`)."""
        return {"linear": self.to_model()}

    def _pass_summary(self) -> dict[str, float]:
        return {
            "examples": self.examples_seen,
            "importance_weight": float(self.stats_[kernels.WEIGHT_SUM]),
            "loss": self.progressive_loss,
        }

    def to_model(self, metadata: Mapping[str, object] | None = None) -> Model:
        """The sparse model: non-zero weights, their names and what training saw.

        Pending truncation is paid; the subgradient baseline rounds weights below
        ``truncate_threshold`` to zero here, at the end of training. While centring's race
        goes on (:meth:`centring_verdict`), the model is its winner's; ``centring`` in its
        metadata says which and why.
        """
        if self.averaged_ > 1:  # (the finishing stage runs after averages of several learners)
            metadata = {"learners_averaged": self.averaged_, **(metadata or {})}
        verdict = self.centring_verdict()
        if verdict is not None:
            metadata = {"centring": verdict, **(metadata or {})}
            if self.uncentred_ is not None and not verdict["kept"]:
                if self.selection_.judged:  # (the passes were judged on this learner: the race's loser)
                    metadata = {"holdout": self.selection_.summary(self.config.holdout_period), **metadata}
                return with_fills(self.uncentred_._model(metadata, self.config), self.missing_)
        return with_fills(self._model(metadata, self.config), self.missing_)

    def _model(self, metadata: Mapping[str, object] | None, config: LearnerConfig) -> Model:
        """This learner's weights as a model with ``config`` (centring's twin writes its racer's)."""
        weights = self.stats_[kernels.SCALE] * self.raw_in_force()
        weights[0] -= self.centring_.bias_offset(weights)  # centred slots' means into the bias
        check_finite_weights(
            weights,
            label_range=(float(self.stats_[kernels.LABEL_MIN]), float(self.stats_[kernels.LABEL_MAX])),
            statistics=self.stats_[[kernels.LOSS_SUM, kernels.LABEL_SUM, kernels.LABEL_SQUARES]],
        )
        if self.config.sparsity == "subgradient":
            _, thresholds = self._penalty()
            weights[np.abs(weights) < thresholds] = 0.0
        rows = np.flatnonzero(np.any(weights != 0, axis=1))
        slots = self._slots_of_rows(rows)
        if self.table_ is not None:  # the model's slots in order
            order = np.argsort(slots)
            rows, slots = rows[order], slots[order]
        passes = self.passes_ + [self._pass_summary()]
        info = {
            "examples": passes[0]["examples"],
            "importance_weight": passes[0]["importance_weight"],
            "progressive_loss": passes[0]["loss"],
            "passes": passes,
            "label_min": float(self.stats_[kernels.LABEL_MIN]),
            "label_max": float(self.stats_[kernels.LABEL_MAX]),
            "learning_curve": [dict(point) for point in self.curve_.points],
        }
        if self.greedy_step is not None:
            info["greedy_step"] = self.greedy_step
        if self.selection_.judged:
            info["holdout"] = self.selection_.summary(self.config.holdout_period)
        if self.config.scale_labels:  # for a learner that goes on from the model (warm_start)
            info.update(zip(("label_weight", "label_mean", "label_variance"), self.label_moments()))
        info.update(metadata or {})
        names = {int(s): self.names_[int(s)] for s in slots if int(s) in self.names_}
        low, high = self._row_ranges(rows) if self._clips_values else (None, None)
        return Model(
            config=config,
            slots=slots,
            weights=self._output_shape(weights[rows]),
            metadata=info,
            names=names,
            clip_low=low,
            clip_high=high,
        )

    @property
    def _clips_values(self) -> bool:
        """Whether the learner predicts with values clipped to their features' known scales (see
        ``kernels.within_scale``): normalised adaptive steps."""
        return self.config.step == "adaptive" and self.config.normalized

    def predicted_values(self, batch: ExampleBatch) -> np.ndarray:
        """``batch``'s values as the learner predicts with them: clipped to their slots' ranges when it
        clips (see :meth:`value_ranges`), else the values themselves."""
        if not self._clips_values:
            return batch.values
        low, high = self.value_ranges(batch.indices)
        return np.clip(batch.values, low, high)

    def value_ranges(self, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(low, high)``: the range of raw values each slot's values were clipped to as the learner
        predicted, its centre (a centred slot's mean, else 0) plus or minus its known scale. A slot
        without a scale yet, and the bias slot (whose value the kernels supply), are unbounded.

        >>> from polybeam.learners.batch import ExampleBatch
        >>> learner = LinearLearner(LearnerConfig(bits=4, center=False)).learn(
        ...     ExampleBatch.from_rows([(1.0, {3: 2.0}), (2.0, {3: -5.0})], bits=4))
        >>> [bound.tolist() for bound in learner.value_ranges(np.array([0, 3, 7]))]
        [[-inf, -5.0, -inf], [inf, 5.0, inf]]
        """
        return self._row_ranges(self._rows_of_slots(slots))

    def _row_ranges(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`value_ranges` of the state's ``rows`` (-1: a slot never touched, unbounded)."""
        rows = np.asarray(rows, dtype=np.int64)
        scale = np.where(rows >= 0, self.feature_scale_[np.maximum(rows, 0)], 0.0)
        centre = np.zeros(len(rows))
        centred = self.centring_.slots
        if len(centred):
            position = np.minimum(np.searchsorted(centred, rows), len(centred) - 1)
            matched = centred[position] == rows
            centre[matched] = self.centring_.centres()[position[matched]]
        bounded = (scale > 0.0) & (rows != 0)
        return np.where(bounded, centre - scale, -np.inf), np.where(bounded, centre + scale, np.inf)

    def __getstate__(self) -> dict:
        """The state to pickle or save: the touched slots' rows, or every row when that is smaller
        (a slot number costs as much as a value: dense wins once most slots are touched)."""
        if self.table_ is not None:  # a sparse state: its rows in use, and the table
            slots, keep = None, slice(0, len(self.table_))
        else:
            arrays = [self.raw_, self.slot_mass_] + [
                a for a in (self.sum_sq_grad_, self.feature_scale_, self.synced_) if len(a)
            ]
            touched = np.zeros(len(self.raw_), dtype=bool)
            for array in arrays:
                touched |= (array != 0) if array.ndim == 1 else np.any(array != 0, axis=1)
            slots = np.flatnonzero(touched)
            row = sum(a.shape[1] if a.ndim == 2 else 1 for a in arrays)  # values per slot
            keep = slice(None) if len(slots) * (row + 1) >= len(touched) * row else slots

        def part(array):
            return array[keep] if len(array) else None

        return {
            "config": self.config.to_dict(),
            "slots": None if isinstance(keep, slice) else slots,
            "table": None if self.table_ is None else self.table_.slots,
            "raw": self.raw_[keep],
            "sum_sq_grad": part(self.sum_sq_grad_),
            "feature_scale": part(self.feature_scale_),
            "synced": part(self.synced_),
            "slot_mass": part(self.slot_mass_),
            "stats": self.stats_,
            "pass_start": self.pass_start_,
            "names": self.names_,
            "passes": self.passes_,
            "passes_before": self.passes_before_,
            "centring": self.centring_.to_state(),
            "uncentred": None if self.uncentred_ is None else self.uncentred_.__getstate__(),
            "twin_due": self.twin_due_,
            "centring_verdict": self.centring_verdict_,
            "race": None if self.race_ is None else self.race_.to_state(),
            "curve": self.curve_.to_state(),
            "selection": self.selection_.to_state(),
            "missing": self.missing_.to_state(),
            **({"averaged": self.averaged_} if self.averaged_ > 1 else {}),
        }

    def __setstate__(self, state: dict) -> None:
        table = state.get("table")
        self.__init__(LearnerConfig.from_dict(state["config"]), sparse=table is not None, centring_guard=False)
        if table is not None:
            self.table_ = SlotTable(table)
            self._allocate(len(table))
        slots = state["slots"] if state["slots"] is not None else slice(None)  # None: every slot (row)
        self.raw_[slots] = state["raw"]
        for name in ("sum_sq_grad", "feature_scale", "synced", "slot_mass"):  # slot_mass: none before issue 23
            if state.get(name) is not None:
                getattr(self, name + "_")[slots] = state[name]
        self.stats_ = kernels.padded_stats(state["stats"])
        self.pass_start_ = kernels.padded_stats(state["pass_start"])
        self.names_ = dict(state["names"])
        self.passes_ = list(state["passes"])
        self.passes_before_ = int(state.get("passes_before", 0))
        self.centring_ = Centring.from_state(state.get("centring"))
        self.uncentred_ = None  # (a state saved before centring's guard: no race)
        if state.get("uncentred") is not None:
            self.uncentred_ = LinearLearner.__new__(LinearLearner)
            self.uncentred_.__setstate__(state["uncentred"])
        self.centring_verdict_ = state.get("centring_verdict")
        self.twin_due_ = bool(state.get("twin_due", False))
        self.race_ = RaceBlocks.from_state(state.get("race"))
        if self.uncentred_ is not None and self.race_ is None:  # (a race saved before its blocks: from here on)
            self.race_ = RaceBlocks.start(self.stats_)
            self.uncentred_.race_ = RaceBlocks.start(self.uncentred_.stats_)
        self.curve_ = LearningCurve.from_state(state.get("curve"))
        self.selection_ = PassSelection.restored(state.get("selection"), self.config)
        self.missing_ = MissingValues.from_state(state.get("missing"), self.config.bits)
        self.averaged_ = int(state.get("averaged", 1))
        if not self.config.center and self.racing:  # continued without centring: no race
            self.drop_race()
        if not self.config.center and self.centring_.active:  # continued without centring: fold it away
            self.centring_.drop(
                np.ones(len(self.centring_.slots), dtype=bool), self.raw_, self._fold_hook(), self._normalising_scales()
            )
            self.centring_ = Centring.off()

    def __repr__(self) -> str:
        return (
            f"LinearLearner(loss={self.config.loss!r}, step={self.config.step!r}, "
            f"examples_seen={self.examples_seen}, progressive_loss={self.progressive_loss:.6g})"
        )
