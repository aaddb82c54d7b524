"""Apple: an online linear learner over a stage-wise growing polynomial feature set.

:class:`PolynomialLearner` expands every batch over the current parent
monomials (:mod:`polybeam.learners.expansion`) and hands the expanded batch to
a :class:`~polybeam.learners.linear.LinearLearner`, so every loss, step rule
and sparsity rule works on the products unchanged (truncation acts on the
expanded weights; GSA's x.x includes them). At the end of each epoch
(:class:`~polybeam.learners.stages.ExpansionSchedule`; a batch that straddles
an epoch's end is split there) the heaviest non-parent monomials become
parents (:func:`~polybeam.learners.stages.pick_parents`).

Its model (:meth:`PolynomialLearner.to_model`) records the parents and the
factors of every weighted product, and expands its input exactly as training
did.

>>> import numpy as np
>>> from polybeam.learners.batch import ExampleBatch
>>> from polybeam.learners.config import LearnerConfig
>>> rng = np.random.default_rng(0)
>>> rows = [(float(x[0] * x[1]) * 2 - 1, {i + 1: 1.0 for i in np.flatnonzero(x)}) for x in rng.random((4000, 6)) < 0.5]
>>> batch = ExampleBatch.from_rows(rows, bits=12)
>>> config = LearnerConfig(loss="squared", bits=12, expand="apple", repeat_factors=False)
>>> learner = PolynomialLearner(config, total=len(batch))
>>> _ = learner.learn(batch)
>>> Monomial.of([1, 2]) in learner.parents or Monomial.of([1]) in learner.parents
True
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import os
import threading
from collections import deque
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor, wait

import numpy as np

from polybeam.learners import kernels
from polybeam.learners.arrays import training_batches
from polybeam.learners.background import available_cores
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.expansion import NO_TRACE, RING, Expander, Expansion, new_product_trace, unpack_factors
from polybeam.learners.fitting import train_passes
from polybeam.learners.holdout import PassSelection
from polybeam.learners.linear import LinearLearner, check_values
from polybeam.learners.missing import with_fills
from polybeam.learners.model import Model
from polybeam.learners.monomials import FactorTable, Monomial
from polybeam.learners.ssm import ResidualStatistics
from polybeam.learners.stages import ExpansionSchedule, expansion_size, pick_parents, slot_magnitudes

# Expansion runs ahead of learning on a helper thread, sub-batch by sub-batch (both
# kernels release the GIL): with two cores or more, expanding then costs little wall
# time beyond learning, as VW's parser thread hides its parsing.
AHEAD_ROWS = 512
_helper: ThreadPoolExecutor | None = None
# Learners of concurrent bundles (the local runner's multi_threading workers) ask for the helper at
# once: without the lock, each could see none yet and start its own, one of them never shut down.
_helper_lock = threading.Lock()


def _forget_helper() -> None:
    global _helper, _helper_lock
    _helper = None  # a forked child has none of its parent's threads
    _helper_lock = threading.Lock()  # nor its lock, which another thread may have held at the fork


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_helper)


def _expansion_thread() -> ThreadPoolExecutor | None:
    """The process's one expansion helper thread, or None on a single core."""
    global _helper
    if available_cores() < 2:
        return None
    with _helper_lock:
        if _helper is None:
            _helper = ThreadPoolExecutor(max_workers=1, thread_name_prefix="polybeam-expand")
        return _helper


class PolynomialLearner:
    """A :class:`LinearLearner` over polynomial features (see the module docstring).

    The expansion comes from the config: ``expand`` ("apple", "quadratic" or
    "cubic"), and for apple ``alpha``, ``expand_rule``, ``max_degree``,
    ``expansions``, ``expand_after``, ``examples_per_pass`` and
    ``repeat_factors``. ``total``: the number of training examples over all
    passes, when known (default: ``examples_per_pass * passes`` when the config
    gives a count); apple's epochs are then equally spaced over it; otherwise
    apple expands after ``expand_after``, twice that, four times that, ...
    examples.
    """

    def __init__(self, config: LearnerConfig, *, total: int | None = None, sparse: bool = False, per_key: bool = False):
        if config.expand == "none":
            raise ValueError("PolynomialLearner needs an expansion; set expand='apple', 'quadratic' or 'cubic'")
        self.config = config
        # A sparse state (a learner per key) holds the learners' weights by row; the SSM rule's residuals
        # read weights by slot, so its learners stay dense. The expander's traces are dense either way.
        sparse = sparse and config.expand_rule != "ssm"
        # (no centring guard: apple's guard races the products already, and racing both would learn
        # every expanded example twice)
        self.linear = LinearLearner(config, sparse=sparse, centring_guard=False, per_key=per_key)
        # Apple's guard: the same learner without products, learning the same examples, so that
        # the model can be the linear one when the products did not predict better (to_model).
        guarded = config.expand == "apple" and config.apple_guard
        self.shadow = LinearLearner(linear_config(config), sparse=sparse, centring_guard=False) if guarded else None
        # The race's loss sums (apple, guard, importance) over the first pass's examples since
        # apple last grew: the final model's features were in place for all of them.
        self.race = np.zeros(3)
        self.expander = Expander(bits=config.bits, max_degree=config.max_degree, repeat_factors=config.repeat_factors)
        if total is None and config.examples_per_pass is not None:
            total = config.examples_per_pass * config.passes
        self.schedule = ExpansionSchedule(total=total, stages=config.expansions, first=config.expand_after)
        self.examples_seen = 0
        self.base_nonzeros = 0
        self.base_slots = np.zeros(1 << config.bits, dtype=bool)
        self.stages_done: list[dict] = []
        # An epoch that ended with the last example seen so far grows the parents only when
        # another example comes: parents added after the last example would never be learned,
        # yet their products (hashed onto slots trained for other features) would enter every
        # prediction of the model.
        self.grow_pending = False
        # Quadratic and cubic never grow; a merged apple learner keeps its parents (see merge).
        self.frozen = config.expand != "apple"
        # Quadratic and cubic: each product slot's packed factors, to name the model's products
        # (empty when the factors do not fit 63 bits: cubic above 20 bits).
        degree = {"quadratic": 2, "cubic": 3}.get(config.expand)
        self.product_trace = new_product_trace(config.bits, degree) if degree else np.zeros(0, dtype=np.int64)
        # The SSM rule ranks candidates by residual statistics gathered over each epoch.
        self.residuals = ResidualStatistics(config.bits) if config.expand_rule == "ssm" and not self.frozen else None
        # With several passes: each pass's holdout loss, the best pass and its state (polybeam.learners.holdout).
        self.selection_ = PassSelection.of(config)

    def expect(self, total: int) -> PolynomialLearner:
        """Space the epochs equally over the ``total`` examples this learner will see (0: the doubling
        schedule, when nobody knows), whatever the config said.

        Only before the first example: the schedule must not change under a learner midway.
        """
        if self.examples_seen == 0:
            self.schedule = dataclasses.replace(self.schedule, total=int(total) if total > 0 else None)
        return self

    @property
    def parents(self) -> list[Monomial]:
        return self.expander.parents

    def learn(self, batch: ExampleBatch) -> PolynomialLearner:
        """Learn from ``batch`` in order, growing the feature set at every epoch's end inside it (a value
        no learner can take is refused first, and a missing value filled: see :meth:`LinearLearner.learn`)."""
        check_values(batch)
        batch = self.linear.missing_.fill(batch)  # (before expanding: products of the filled values)
        position = 0
        while position < len(batch):
            if self.grow_pending and not self.frozen:
                self._grow()
            self.grow_pending = False
            boundary = None if self.frozen else self.schedule.next_boundary(self.examples_seen)
            take = len(batch) - position
            if boundary is not None:
                take = min(take, boundary - self.examples_seen)
            part = batch if take == len(batch) else batch.rows_between(position, position + take)
            self.base_slots[part.indices] = True
            self.base_nonzeros += part.nnz
            if self.shadow is None:
                self._learn_expanded(part)
            else:
                before = self._race_sums()
                self.shadow.learn_checked(part)
                self._learn_expanded(part)
                if not self.linear.passes_:  # later passes' losses are training losses
                    self.race += self._race_sums() - before
            self.examples_seen += take
            position += take
            if boundary is not None and self.examples_seen == boundary:
                self.grow_pending = True
        return self

    def fit(self, batches, passes: int | None = None, *, shuffle=None, after_pass=None) -> PolynomialLearner:
        """Learn from ``batches`` (as :meth:`LinearLearner.fit` takes them) for ``passes`` passes (default:
        the config's), with the holdout and early stopping of :meth:`LinearLearner.fit`. Unless told how
        many examples to expect, apple spaces its epochs over all it will learn."""
        batches = training_batches(batches, passes, bits=self.config.bits, seed=self.config.seed)
        return train_passes(
            self,
            batches,
            passes or self.config.passes,
            expect=self.schedule.total is None,
            shuffle=shuffle,
            after_pass=after_pass,
        )

    def _learn_expanded(self, part: ExampleBatch) -> None:
        """Expand ``part`` and learn it, expanding one sub-batch ahead on the helper thread when there is one.

        The parents do not change inside ``part`` (it lies within one epoch), so
        the expansion of later rows never depends on learning earlier ones.
        """
        helper = _expansion_thread() if len(part) >= 2 * AHEAD_ROWS else None
        if helper is None:
            self._learn_one(self._expand(part))
            return
        pieces = (
            part.rows_between(start, min(start + AHEAD_ROWS, len(part))) for start in range(0, len(part), AHEAD_ROWS)
        )
        # At most RING - 1 pieces are expanded ahead of the one being learned: each
        # lives in its own ring buffer of the expander until it is learned.
        pending = deque(helper.submit(self._expand, piece) for piece in itertools.islice(pieces, RING - 1))
        try:
            while pending:
                expanded = pending.popleft().result()
                following = next(pieces, None)
                if following is not None:
                    pending.append(helper.submit(self._expand, following))
                self._learn_one(expanded)
        finally:
            for future in pending:  # on an error: nothing may still touch the expander afterwards
                future.cancel()
            wait(pending)

    def _learn_one(self, expanded: ExampleBatch) -> None:
        if self.residuals is not None and not self.frozen:
            self.residuals.add_predicted(self.linear, expanded)
        self.linear.learn_checked(expanded)

    def _expand(self, batch: ExampleBatch) -> ExampleBatch:
        """``batch`` expanded into the expander's reused memory: valid until RING - 1 more expansions."""
        if self.config.expand == "apple":
            return self.expander.expand(batch, reuse=True)
        return self.expansion.expand(batch, slot_trace=self.product_trace)

    @property
    def expansion(self) -> Expansion:
        """The expansion as the model records it."""
        parents = tuple(self.parents) if self.config.expand == "apple" else ()
        return Expansion(
            self.config.expand, parents, self.config.max_degree, self.config.repeat_factors, self.config.interactions
        )

    def _grow(self) -> None:
        """End an epoch: the heaviest non-parent monomials (highest SSM index for ``ssm``) become parents."""
        magnitudes = slot_magnitudes(self.linear.weights, self.linear.every_slot(self.linear.feature_scale_))
        ranking = magnitudes
        if self.residuals is not None:
            ranking = self.residuals.index()
            self.residuals.reset()
        size = expansion_size(self.base_nonzeros / max(self.examples_seen, 1), self.config.alpha)
        base = np.flatnonzero(self.base_slots)
        chosen = pick_parents(
            ranking,
            self.monomial_of,
            self.parents,
            size,
            rule=self.config.expand_rule,
            smallest_degree_candidates=lambda: [(float(magnitudes[s]), Monomial.of([int(s)])) for s in base],
        )
        self.expander.add_parents(chosen)
        if not self.linear.passes_:
            self.race[:] = 0.0  # the race counts the examples after the last growth
        if self.config.step == "gsa":
            # The examples' x . x grows with the products: GSA's mean step starts afresh
            # (on the suite, apple with GSA: ames 0.59 -> 0.41, CPS1988 0.78 -> 0.74).
            self.linear.restart_greedy_mean()
        self.stages_done.append({"examples": self.examples_seen, "size": size, "added": len(chosen)})

    def monomial_of(self, slot: int) -> Monomial | None:
        """The monomial that owns ``slot``: the product last written there, else its base feature."""
        product = self.expander.traced_product(slot) if self.config.expand == "apple" else None
        if product is not None:
            return product
        if self.base_slots[slot]:
            return Monomial.of([slot])
        return None

    def predict(self, batch: ExampleBatch) -> np.ndarray:
        """Predictions for ``batch``, expanded as the model would (see :meth:`to_model`)."""
        return self.to_model().predict(batch)

    def _race_sums(self) -> np.ndarray:
        return np.array(
            [
                self.linear.stats_[kernels.LOSS_SUM],
                self.shadow.stats_[kernels.LOSS_SUM],
                self.linear.stats_[kernels.WEIGHT_SUM],
            ]
        )

    def race_losses(self) -> tuple[float, float]:
        """Apple's and its guard's mean progressive loss over the first pass's examples since apple
        last grew (NaN before any)."""
        apple, linear, weight = self.race
        return (float(apple / weight), float(linear / weight)) if weight > 0 else (math.nan, math.nan)

    def products_paid(self) -> bool:
        """Whether apple predicted better than its guard, the same learner without products.

        With several passes and a holdout (see :mod:`polybeam.learners.holdout`), the
        two are compared on the held-out examples, after the pass training kept.
        With one pass, on their progressive loss (each example predicted before it
        was learned, so an estimate of the error on new data) over the examples since
        apple last grew, when the final model's products were all there. Ties, and no
        such examples, go to apple; True without a guard. (Over the whole first pass the
        products' young, noisy weights would count against a final model that is
        better: spam, 0.083 against the linear 0.087.)
        """
        if self.shadow is None:
            return True
        if self.selection_.best_kept is not None:
            return self.selection_.best_kept != "linear"
        apple, linear = self.race_losses()
        return not linear < apple  # NaN: apple

    def guard_verdict(self) -> dict | None:
        """What apple's guard compared and kept (None without a guard): the model's ``apple_guard``."""
        if self.shadow is None:
            return None
        if self.selection_.best_kept is not None:
            best = next(entry for entry in self.selection_.history if entry["pass"] == self.selection_.best_pass)
            return {
                "products_kept": self.products_paid(),
                "decided_on": "holdout",
                "pass": best["pass"],
                "examples": float(best["examples"]),
                "holdout_loss": best["losses"].get("apple"),
                "linear_holdout_loss": best["losses"].get("linear"),
            }
        apple, linear = self.race_losses()
        return {
            "products_kept": self.products_paid(),
            "decided_on": "progressive loss",
            "examples": float(self.race[2]),
            "progressive_loss": apple,
            "linear_progressive_loss": linear,
        }

    def candidate_models(self) -> dict[str, Model]:
        """The models a holdout chooses among: apple's, and its guard's linear one when there is a guard."""
        models = {self.config.expand: self._expanded_model({"stages": self.stages_done})}
        if self.shadow is not None:
            models["linear"] = self._guard_model({"stages": self.stages_done})
        return models

    def to_model(self, metadata: Mapping[str, object] | None = None) -> Model:
        """The sparse model with its expansion: parents, and the factors of each weighted product.

        Apple's model is the linear one (no parents) when its products did not pay
        (:meth:`products_paid`); ``apple_guard`` in its metadata says which it is and why.
        """
        extra = {"stages": self.stages_done}
        if self.selection_.judged:
            extra["holdout"] = self.selection_.summary(self.config.holdout_period)
        verdict = self.guard_verdict()
        if verdict is not None:
            extra["apple_guard"] = verdict
        extra.update(metadata or {})
        if verdict is not None and not verdict["products_kept"]:
            return self._guard_model(extra)
        return self._expanded_model(extra)

    def _guard_model(self, metadata: Mapping[str, object]) -> Model:
        """The guard's linear model, as a model of this config that expands nothing."""
        model = self.shadow.to_model(metadata)
        no_parents = dataclasses.replace(self.expansion, parents=())
        model = dataclasses.replace(model, config=self.config, expansion=no_parents)
        return with_fills(model, self.linear.missing_, np.flatnonzero(self.base_slots))

    def _expanded_model(self, metadata: Mapping[str, object]) -> Model:
        model = self.linear.to_model(metadata)
        monomials = FactorTable.empty()
        if self.config.expand == "apple" and self.parents:
            trace = self.expander.slot_trace[model.slots]
            traced = trace != NO_TRACE
            monomials = FactorTable.from_products(
                model.slots[traced], self.parents, trace[traced] >> 32, trace[traced] & 0xFFFFFFFF
            )
        elif len(self.product_trace):
            trace = self.product_trace[model.slots]
            traced = trace != 0
            monomials = FactorTable.from_matrix(model.slots[traced], unpack_factors(trace[traced], self.config.bits))
        model = dataclasses.replace(model, expansion=self.expansion, monomials=monomials)
        # Every base feature's fill: a product's factor may have no weight of its own.
        return with_fills(model, self.linear.missing_, np.flatnonzero(self.base_slots))

    @property
    def progressive_loss(self) -> float:
        return self.linear.progressive_loss

    # -- combining (parameter mixing, the paper's parallel apple) -------------------

    def merge(self, others) -> PolynomialLearner:
        """Average with ``others`` in place: weights as :meth:`LinearLearner.merge`, parents united.

        As in the paper's parallel apple, the united parent set is then frozen:
        a merged learner expands no further. The union is put in a canonical
        order (by degree, then factors), and a slot that learners traced to
        different products (a hash collision) keeps the one with the smaller
        canonical trace, so the merged learner, and its model file, do not
        depend on the order in which the runner merged partial learners.
        """
        others = [other for other in others if other is not self]
        if not others:
            return self
        self.linear.merge([other.linear for other in others])
        if self.shadow is not None and all(other.shadow is not None for other in others):
            self.shadow.merge([other.shadow for other in others])
            self.race = self.race + sum(other.race for other in others)
        else:
            self.shadow = None  # a learner without its guard (a warm start): the merged one has none
        learners = [self] + others
        united = sorted(
            {parent for learner in learners for parent in learner.parents},
            key=lambda parent: (parent.degree, parent.factors),
        )
        position = {parent: i for i, parent in enumerate(united)}
        untraced = np.iinfo(np.int64).max
        traces = np.full_like(self.expander.slot_trace, untraced)
        for learner in learners:
            trace = learner.expander.slot_trace
            traced = np.flatnonzero(trace != NO_TRACE)
            if len(traced):
                remap = np.array([position[parent] for parent in learner.parents], dtype=np.int64)
                renumbered = (remap[trace[traced] >> 32] << 32) | (trace[traced] & 0xFFFFFFFF)
                traces[traced] = np.minimum(traces[traced], renumbered)
        for other in others:
            self.base_slots |= other.base_slots
            self.examples_seen += other.examples_seen
            self.base_nonzeros += other.base_nonzeros
        traces[traces == untraced] = NO_TRACE
        self.expander.parents = []
        self.expander.add_parents(united)
        self.expander.slot_trace = traces
        self.frozen = True
        self.grow_pending = False
        return self

    def start_pass(self) -> PolynomialLearner:
        for learner in (self.linear, self.shadow):
            if learner is not None:
                learner.start_pass()
        return self

    def compact(self) -> PolynomialLearner:
        for learner in (self.linear, self.shadow):
            if learner is not None:
                learner.compact()
        return self

    def restarted(self, config: LearnerConfig, *, sparse: bool | None = None) -> PolynomialLearner:
        """A fresh learner of this kind with ``config``, spacing its epochs as this one: see holdout.restart.
        ``sparse``: a state of the slots touched only (default: as this learner's)."""
        per_key = self.linear.table_ is not None
        sparse = per_key if sparse is None else sparse
        return PolynomialLearner(config, total=self.schedule.total, sparse=sparse, per_key=per_key)

    def copy(self) -> PolynomialLearner:
        """An independent copy (e.g. to start several workers from one averaged state)."""
        clone = PolynomialLearner.__new__(PolynomialLearner)
        clone.__setstate__(self.__getstate__())
        return clone

    # -- state (pickles, checkpoints): only what is not derived or scratch, dense arrays as their touched slots

    def __getstate__(self) -> dict:
        trace_slots, trace = _sparse_or_dense(self.expander.slot_trace, self.expander.slot_trace != NO_TRACE)
        product_slots, products = _sparse_or_dense(self.product_trace, self.product_trace != 0)
        base = np.flatnonzero(self.base_slots)
        state = {
            "config": self.config.to_dict(),
            "linear": self.linear.__getstate__(),
            "shadow": None if self.shadow is None else self.shadow.__getstate__(),
            "race": self.race.tolist(),
            "parents": [list(parent.factors) for parent in self.parents],
            "trace_slots": trace_slots,
            "trace": trace,
            "product_slots": product_slots,
            "products": products,
            "schedule": dataclasses.asdict(self.schedule),
            "examples_seen": int(self.examples_seen),
            "base_nonzeros": int(self.base_nonzeros),
            # Slot numbers (8 bytes each) while few, else one byte per slot.
            "base_slots": base if len(base) * 8 < len(self.base_slots) else self.base_slots.copy(),
            "stages_done": list(self.stages_done),
            "frozen": bool(self.frozen),
            "grow_pending": bool(self.grow_pending),
            "residuals": None,
            "selection": self.selection_.to_state(),
        }
        if self.residuals is not None:
            seen = np.flatnonzero(self.residuals.count)
            state["residuals"] = {
                "slots": seen,
                "sum_r2x2": self.residuals.sum_r2x2[seen],
                "sum_x2": self.residuals.sum_x2[seen],
                "count": self.residuals.count[seen],
                "sum_r2": float(self.residuals.sum_r2),
                "weight": float(self.residuals.weight),
            }
        return state

    def __setstate__(self, state: dict) -> None:
        self.__init__(LearnerConfig.from_dict(state["config"]), total=state["schedule"]["total"])
        self.linear = LinearLearner.__new__(LinearLearner)
        self.linear.__setstate__(state["linear"])
        self.shadow = None  # states saved before the guard existed have none
        if state.get("shadow") is not None:
            self.shadow = LinearLearner.__new__(LinearLearner)
            self.shadow.__setstate__(state["shadow"])
            self.race = np.array(state["race"], dtype=np.float64)
        self.schedule = ExpansionSchedule(**state["schedule"])
        self.expander.add_parents(Monomial.of(factors) for factors in state["parents"])
        every = slice(None)
        self.expander.slot_trace[every if state["trace_slots"] is None else state["trace_slots"]] = state["trace"]
        if len(self.product_trace):
            self.product_trace[every if state["product_slots"] is None else state["product_slots"]] = state["products"]
        self.examples_seen = int(state["examples_seen"])
        self.base_nonzeros = int(state["base_nonzeros"])
        base = np.asarray(state["base_slots"])
        if base.dtype == bool:  # saved dense: one flag per slot
            self.base_slots[:] = base
        else:  # saved as the slot numbers
            self.base_slots[base] = True
        self.stages_done = list(state["stages_done"])
        self.frozen = bool(state["frozen"])
        self.grow_pending = bool(state.get("grow_pending", False))  # states saved before it existed: False
        self.selection_ = PassSelection.restored(state.get("selection"), self.config)
        residuals = state["residuals"]
        if self.frozen:
            self.residuals = None
        elif residuals is not None and self.residuals is not None:
            slots = residuals["slots"]
            self.residuals.sum_r2x2[slots] = residuals["sum_r2x2"]
            self.residuals.sum_x2[slots] = residuals["sum_x2"]
            self.residuals.count[slots] = residuals["count"]
            self.residuals.sum_r2 = float(residuals["sum_r2"])
            self.residuals.weight = float(residuals["weight"])


def _sparse_or_dense(array: np.ndarray, present: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """``(slots, values)`` of the present entries, or ``(None, array)`` when the whole array is smaller."""
    slots = np.flatnonzero(present)
    if 2 * len(slots) >= len(array):
        return None, array.copy()
    return slots, array[slots]


def linear_config(config: LearnerConfig) -> LearnerConfig:
    """``config`` without its expansion: how apple's guard learns."""
    return dataclasses.replace(config, expand="none")


def make_learner(
    config: LearnerConfig, *, total: int | None = None, sparse: bool = False, per_key: bool | None = None
) -> LinearLearner | PolynomialLearner:
    """The learner a config asks for: linear, or polynomial when ``expand`` is set. ``sparse``: a state of
    the slots touched only (a learner per key; see polybeam.learners.slot_table). ``per_key`` (default:
    ``sparse``): a learner of one key's few rows, which learns its first rows raw before it centres
    (see polybeam.learners.centring.RAW_ROWS)."""
    per_key = sparse if per_key is None else per_key
    if config.expand == "none":
        return LinearLearner(config, sparse=sparse, per_key=per_key)
    return PolynomialLearner(config, total=total, sparse=sparse, per_key=per_key)


def linear_part(learner: LinearLearner | PolynomialLearner) -> LinearLearner:
    """The linear learner that holds the weights: the learner itself, or a polynomial learner's."""
    return learner.linear if isinstance(learner, PolynomialLearner) else learner
