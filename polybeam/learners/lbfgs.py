"""The finishing stage: L-BFGS passes over the data, warm-started from the averaged online model.

The terascale linear learner (Agarwal, Chapelle, Dudík, Langford 2014) ends
its online pass, averaged across nodes, with batch L-BFGS: the online model is
a good starting point and L-BFGS converges fast from it to the regularised
batch optimum, which averaging alone never reaches with many workers. Each
L-BFGS evaluation of the objective is one pass over the data whose loss and
gradient are sums over examples (:class:`LossGradient`, additive, so a Beam
CombineFn sums it across workers); :class:`Lbfgs` is the optimiser in
"reverse communication" form: it says which point to evaluate next
(:meth:`Lbfgs.point`) and takes the loss and gradient there
(:meth:`Lbfgs.told`), so that each pass is one step of a pipeline and the
optimiser's small state travels between passes as a single element.

The objective, over the model's dense weights ``w`` (the bias is slot 0)::

    F(w) = sum_i importance_i * loss(w . x_i + b, y_i) + l2 / 2 * ||w without the bias||**2

with the losses of :mod:`polybeam.learners.losses` (logistic ``log(1 +
exp(-y m))``, squared ``(m - y)**2``, softmax ``-log p_y``). This is
scikit-learn's ``LogisticRegression(C=1 / l2)`` objective (its intercept is not
penalised either) and VW's ``--bfgs --l2``. The regularisation is on the sum
of losses, so its relative strength falls as the data grow. Default
``lbfgs_l2 = 10``, not scikit-learn's C = 1: on 300,000 examples of
``PlantedPolynomial`` hashed into 2**18 slots (about 100,000 features, each
in ~150 examples) the exact optimum's held-out log loss was 0.5655 at l2 = 1
(it overfits: the online learner alone reaches 0.4721), 0.4635 at 10, 0.4646
at 20, 0.4686 at 30 and 0.4889 at 100 (scipy's L-BFGS-B to convergence); a
stronger penalty also makes the problem better conditioned, so fewer passes
reach the optimum. It is a default for hashed sparse data of that kind, not
a universal one: tune it on held-out data.

Each pass evaluates one point, so ``passes`` passes are at most ``passes - 1``
line-search steps after evaluating the warm start: the line search tries the
L-BFGS step (length 1, its initial inverse Hessian the inverse of the diagonal of
the Hessian, summed with the gradient: a Newton step on the diagonal) and backtracks
by quadratic interpolation while the Armijo condition fails. The model returned
is the best point evaluated (the last accepted one). Hinge loss is not
differentiable and is refused.

A model of few parameters over not too many examples
(:func:`polybeam.learners.newton.affordable`) steps by Newton's rule: the
pass sums the loss's whole
Hessian with its gradient (as additive over examples), the step solves it, and
the optimiser stops asking for it once the step would gain less than
:data:`NEWTON_TOLERANCE` of the objective. On
the suite's small multiclass tasks that reaches the optimum within 0.1% in at most 16
evaluations at every L2 of the grid, where L-BFGS took up to and past 30
(``benchmarks/results/convergence.md``).

>>> from polybeam.learners.batch import ExampleBatch
>>> batch = ExampleBatch.from_rows([(1.0, {1: 1.0}), (-1.0, {2: 1.0}), (1.0, {1: 1.0, 2: 1.0})] * 10, bits=4)
>>> optimiser = Lbfgs(np.zeros((16, 1)), l2=1.0)
>>> for _ in range(15):
...     total = LossGradient.of(optimiser.point(), [batch], "logistic", bias=True)
...     _ = optimiser.told(total)
>>> bool(optimiser.objective < 30 * np.log(2)), optimiser.evaluations
(True, 15)
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numba
import numpy as np

from polybeam.learners import (
    kernel_cache,  # noqa: F401  (first: where numba caches the kernels below)
    newton,
)
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.loss_specs import loss_spec, losses_where
from polybeam.learners.losses import batch_derivatives, batch_losses

if TYPE_CHECKING:  # (scipy.sparse loads with the stage's first design: a command without it starts faster)
    import scipy.sparse

# Pairs (s, y) the L-BFGS two-loop recursion keeps: each pair costs two dense weight vectors (the state
# that travels between passes holds 20 of them: 40 MB at 18 bits). Warm-started from 64 workers' average
# on the averaging benchmark, the objective after 40 passes was 1.0047 times scikit-learn's optimum
# with 5 pairs, 1.0023 with 10 (and 1.0198 / 1.0082 with H0 a multiple of I instead of the diagonal).
DEFAULT_MEMORY = 10
# Armijo's sufficient decrease constant.
SUFFICIENT_DECREASE = 1e-4
# A Newton step that would lower the objective by less than this fraction of it ends the optimiser's
# work: the rest is rounding (a step at 1e-10 leaves the next at ~1e-20).
NEWTON_TOLERANCE = 1e-10


def check_loss(loss: str) -> None:
    if not loss_spec(loss).finishing:
        smooth = ", ".join(losses_where(finishing=True))
        raise ValueError(f"the L-BFGS finishing stage needs a differentiable loss ({smooth}); got {loss!r}")


def design_matrix(batch: ExampleBatch, slots: int) -> scipy.sparse.csr_matrix:
    """The batch's features as a sparse matrix with ``slots`` columns (duplicate entries add up, as the
    kernels' margins do)."""
    import scipy.sparse

    return scipy.sparse.csr_matrix((batch.values, batch.indices, batch.indptr), shape=(len(batch), slots))


@dataclasses.dataclass(frozen=True)
class SparseWeights:
    """Weights on some slots only: ``rows[k]`` (one entry per output) is slot ``slots[k]``'s, ``slots``
    sorted; every other slot's weight is 0. What the stage evaluates: the slots its data use, never a
    dense ``2**bits x outputs`` array."""

    slots: np.ndarray
    rows: np.ndarray
    # Whether a pass's sums at this point carry the loss's Hessian (a Newton step follows; see
    # polybeam.learners.newton): not once its optimiser has converged.
    newton: bool = False

    @classmethod
    def of(cls, weights) -> SparseWeights:
        """``weights`` as SparseWeights: already, or a dense array (one row per slot)."""
        if isinstance(weights, SparseWeights):
            return weights
        rows = np.asarray(weights, dtype=np.float64)
        rows = rows.reshape(len(rows), -1)
        return cls(np.arange(len(rows), dtype=np.int64), rows)

    @property
    def outputs(self) -> int:
        return self.rows.shape[1]

    def rows_at(self, slots: np.ndarray, located: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """The weights of ``slots`` (sorted), 0 where this holds none (``located``: ``_positions(self.slots,
        slots)`` when already known)."""
        found, positions = located if located is not None else _positions(self.slots, slots)
        rows = np.zeros((len(slots), self.outputs))
        rows[found] = self.rows[positions[found]]
        return rows


@numba.njit(cache=True, nogil=True)
def _add_at(target, positions, values):
    """``target[positions] += values`` for distinct ``positions`` (one row each): numpy's fancy-indexed
    add was a fifth of a pass on 10**6 features."""
    for i in range(positions.shape[0]):
        row = positions[i]
        for j in range(values.shape[1]):
            target[row, j] += values[i, j]


def _positions(universe: np.ndarray, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(found, positions)``: which of ``slots`` are in the sorted ``universe``, and where."""
    positions = np.searchsorted(universe, slots)
    inside = positions < len(universe)
    found = np.zeros(len(slots), dtype=bool)
    found[inside] = universe[positions[inside]] == slots[inside]
    return found, positions


@dataclasses.dataclass(frozen=True)
class BatchDesign:
    """A batch's features over the slots it uses (and slot 0, the bias's, always): ``matrix`` has one
    column per entry of ``slots``, so that its products cost what the batch holds, not ``2**bits``."""

    slots: np.ndarray
    matrix: scipy.sparse.csr_matrix
    squares: scipy.sparse.csr_matrix  # the matrix's entries squared (the Hessian diagonal's sums)
    # (universe, found, positions) of the last located(universe): the points a pass evaluates and the sums
    # they add to share one array of slots, so a batch looks its slots up once, not once per point and sum
    # (the lookups were most of a pass's time on 10**6 features).
    _located: list = dataclasses.field(default_factory=list, compare=False, repr=False)
    # the dense columns the Hessian's products take (made once for every point a pass evaluates)
    _dense: list = dataclasses.field(default_factory=list, compare=False, repr=False)

    def dense_columns(self, bias: bool) -> np.ndarray:
        """The matrix as a dense array, the bias a column of ones added to slot 0's (the first)."""
        if not self._dense:
            columns = self.matrix.toarray()
            if bias:
                columns[:, 0] += 1.0
            self._dense.append(columns)
        return self._dense[0]

    def located(self, universe: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(found, positions)`` of this batch's slots in ``universe`` (sorted), remembered for the same
        array object (arrays of slots are never changed in place)."""
        if self._located and self._located[0] is universe:
            return self._located[1], self._located[2]
        found, positions = _positions(universe, self.slots)
        self._located[:] = [universe, found, positions]
        return found, positions

    @classmethod
    def of(cls, batch: ExampleBatch) -> BatchDesign:
        import scipy.sparse

        used, columns = np.unique(np.concatenate(([0], batch.indices)), return_inverse=True)
        matrix = scipy.sparse.csr_matrix((batch.values, columns[1:], batch.indptr), shape=(len(batch), len(used)))
        return cls(used.astype(np.int64), matrix, matrix.multiply(matrix).tocsr())

    def margins(self, point: SparseWeights, bias: bool) -> np.ndarray:
        """Each example's margins under ``point``, shape (examples, outputs)."""
        rows = point.rows_at(self.slots, self.located(point.slots))
        margins = self.matrix @ rows
        if bias:  # (slot 0 is the first of the sorted slots)
            margins = margins + rows[0]
        return margins


class LossGradient:
    """The importance-weighted sum of losses and their gradient over the weights, over some examples.

    Additive: ``a.merge([b])`` is the sum over the examples of both, so that workers
    sum it in any order. ``gradient`` (and ``curvature``, the diagonal of the loss's Hessian: the
    optimiser's preconditioner) has a row per slot of ``slots`` and a column per output; ``slots``
    None: a row per slot of the whole weight space, in order (dense). Sparse sums grow their slots
    as examples bring new ones.
    """

    def __init__(
        self,
        loss: float,
        gradient: np.ndarray,
        curvature: np.ndarray,
        weight: float = 0.0,
        examples: int = 0,
        slots: np.ndarray | None = None,
        cross: np.ndarray | None = None,
        feature_sums: np.ndarray | None = None,
        hessian: np.ndarray | None = None,
    ):
        self.loss, self.gradient, self.curvature = loss, gradient, curvature
        self.weight, self.examples, self.slots = weight, examples, slots
        # The Hessian's entries between each slot and the bias (sum of second derivatives times the value),
        # and the importance-weighted sum of each slot's values: what centring the features needs (see Lbfgs).
        self.cross = np.zeros_like(gradient) if cross is None else cross
        self.feature_sums = np.zeros((len(gradient), 1)) if feature_sums is None else feature_sums
        # The loss's whole Hessian over the flattened rows (slot-major), when the sum was asked for it and
        # its slots stay few (polybeam.learners.newton); None else. Dropped as soon as the slots outgrow
        # the limit, so that whether a sum has it depends on its slots alone, not on how parts were merged.
        self.hessian = hessian

    ROWS = ("gradient", "curvature", "cross", "feature_sums")

    def __repr__(self) -> str:
        where = "dense" if self.slots is None else f"{len(self.slots)} slots"
        return f"LossGradient(loss={self.loss}, {where}, examples={self.examples})"

    @classmethod
    def zero(cls, shape: tuple[int, ...]) -> LossGradient:
        """The empty sum over the whole weight space (dense rows)."""
        return cls(0.0, np.zeros(shape), np.zeros(shape))

    @classmethod
    def on(cls, slots: np.ndarray, outputs: int, hessian: bool = False) -> LossGradient:
        """The empty sum with rows for ``slots`` (sorted; more join as examples use them); ``hessian``: with
        the whole Hessian too while its slots and examples stay few enough
        (:func:`polybeam.learners.newton.affordable`)."""
        slots = np.asarray(slots, dtype=np.int64)
        matrix = None
        if hessian and newton.affordable(0, len(slots) * outputs):
            matrix = np.zeros((len(slots) * outputs, len(slots) * outputs))
        return cls(0.0, np.zeros((len(slots), outputs)), np.zeros((len(slots), outputs)), slots=slots, hessian=matrix)

    def rows(self) -> dict[str, np.ndarray]:
        return {name: getattr(self, name) for name in self.ROWS}

    @classmethod
    def of(
        cls, weights, batches: Iterable[ExampleBatch], loss: str, bias: bool, parameter: float = 0.0
    ) -> LossGradient:
        """The sum over ``batches`` at ``weights`` (a dense array: dense rows; SparseWeights: their slots'
        rows, and those the batches use)."""
        if isinstance(weights, SparseWeights):
            total = cls.on(weights.slots, weights.outputs)
        else:
            total = cls.zero(np.shape(weights))
        for batch in batches:
            total.add(weights, batch, loss, bias, parameter)
        return total

    def add(
        self,
        weights,
        batch: ExampleBatch,
        loss: str,
        bias: bool,
        parameter: float = 0.0,
        design: BatchDesign | None = None,
    ) -> LossGradient:
        """Add the examples of ``batch`` at ``weights`` (a dense array, shape (slots, outputs), or
        :class:`SparseWeights`; softmax: one column per class). ``parameter``: the loss's number (see
        ``LearnerConfig.loss_parameter``); ``design``: the batch's :class:`BatchDesign`, when already
        made (one for every point a pass evaluates)."""
        check_loss(loss)
        if len(batch) == 0:
            return self
        design = design if design is not None else BatchDesign.of(batch)
        point = SparseWeights.of(weights)
        margins = design.margins(point, bias)
        importance = batch.weights
        spec = loss_spec(loss)
        if spec.labels == "multiclass":
            scores = margins - margins.max(axis=1, keepdims=True)
            log_norm = np.log(np.exp(scores).sum(axis=1))
            truth = batch.labels.astype(np.int64) - 1
            rows = np.arange(len(batch))
            self.loss += float(importance @ (log_norm - scores[rows, truth]))
            derivative = np.exp(scores - log_norm[:, None])
            probabilities = derivative.copy() if self.hessian is not None else None
            second = derivative * (1.0 - derivative)
            derivative[rows, truth] -= 1.0
        else:
            # The learner's own arithmetic (polybeam.learners.losses), on the unclamped margins.
            margins = np.ascontiguousarray(margins[:, 0], dtype=np.float64)
            labels = np.where(batch.labels > 0, 1.0, -1.0) if spec.labels == "binary" else batch.labels
            labels = np.ascontiguousarray(labels, dtype=np.float64)
            values, derivative, second = (np.empty((len(batch), 1)) for _ in range(3))
            batch_losses(spec.code, margins, labels, parameter, values[:, 0])
            batch_derivatives(spec.code, margins, labels, parameter, derivative[:, 0], second[:, 0])
            self.loss += float(importance @ values[:, 0])
            probabilities = None
        derivative *= importance[:, None]
        second *= importance[:, None]
        outputs = second.shape[1]
        if self.hessian is not None and not newton.affordable(self.examples + len(batch), len(design.slots) * outputs):
            self.hessian = None  # (the batch alone has too many slots, or the examples too many: so will the sum)
        if self.hessian is not None:
            weights_of_rows = importance[:, None] if probabilities is not None else second
            batch_part = newton.batch_hessian(design.dense_columns(bias), weights_of_rows, probabilities)
        gradient = design.matrix.T @ derivative
        curvature = design.squares.T @ second
        cross = design.matrix.T @ second
        if bias:
            gradient[0] += derivative.sum(axis=0)
            curvature[0] += second.sum(axis=0)
        sums = (design.matrix.T @ importance)[:, None]
        rows = dict(gradient=gradient, curvature=curvature, cross=cross, feature_sums=sums)
        positions = self._add_rows(design.slots, rows, design.located(self.slots) if self.slots is not None else None)
        self.weight += float(importance.sum())
        self.examples += len(batch)
        self._check_hessian()
        if self.hessian is not None:  # (still: the batch's slots may have outgrown the limit)
            self._add_hessian(positions, batch_part)
        return self

    def _check_hessian(self) -> None:
        """Drop the Hessian once the sum's slots or examples make it too costly (polybeam.learners.newton.
        affordable): both only grow, so whether the whole keeps it does not depend on how parts merged."""
        if self.hessian is not None and not newton.affordable(self.examples, self.hessian.shape[0]):
            self.hessian = None

    def _add_rows(self, slots: np.ndarray, rows: dict[str, np.ndarray], located=None) -> np.ndarray:
        """Add ``rows`` (one per slot of ``slots``); the rows' positions in this sum."""
        if self.slots is None:  # dense
            for name, values in rows.items():
                getattr(self, name)[slots] += values
            return slots
        found, positions = located if located is not None else _positions(self.slots, slots)
        if not found.all():  # slots this sum has no row for yet: make room (rare once the slots settle)
            self._grow(slots[~found])
            positions = np.searchsorted(self.slots, slots)
        for name, values in rows.items():
            _add_at(getattr(self, name), positions, values)
        return positions

    def _flat(self, positions: np.ndarray) -> np.ndarray:
        """The flattened rows (slot-major) of the rows at ``positions``."""
        outputs = self.gradient.shape[1]
        return (np.asarray(positions)[:, None] * outputs + np.arange(outputs)).reshape(-1)

    def _add_hessian(self, positions: np.ndarray, part: np.ndarray) -> None:
        if len(positions) == len(self.slots):  # (the part's slots are all of this sum's, in order: no scatter)
            self.hessian += part
            return
        flat = self._flat(positions)
        self.hessian[np.ix_(flat, flat)] += part

    def _grow(self, new: np.ndarray) -> None:
        slots = np.union1d(self.slots, new)
        positions = np.searchsorted(slots, self.slots)
        for name, values in self.rows().items():
            grown = np.zeros((len(slots), values.shape[1]))
            grown[positions] = values
            setattr(self, name, grown)
        if self.hessian is not None:
            outputs = self.gradient.shape[1]
            if newton.affordable(self.examples, len(slots) * outputs):
                grown = np.zeros((len(slots) * outputs, len(slots) * outputs))
                flat = self._flat(positions)
                grown[np.ix_(flat, flat)] = self.hessian
                self.hessian = grown
            else:
                self.hessian = None
        self.slots = slots

    def aligned(self, slots: np.ndarray) -> LossGradient:
        """This sum with a row for each of ``slots`` (sorted; rows of other slots left out)."""
        hessian = None
        if self.slots is None:
            rows = {name: values[slots] for name, values in self.rows().items()}
        else:
            found, positions = _positions(self.slots, slots)
            rows = {}
            for name, values in self.rows().items():
                rows[name] = np.zeros((len(slots), values.shape[1]))
                rows[name][found] = values[positions[found]]
            if self.hessian is not None:
                if found.all() and len(slots) == len(self.slots):  # the same slots
                    hessian = self.hessian
                else:
                    outputs = self.gradient.shape[1]
                    hessian = np.zeros((len(slots) * outputs, len(slots) * outputs))
                    mine, theirs = self._flat(positions[found]), self._flat(np.flatnonzero(found))
                    hessian[np.ix_(theirs, theirs)] = self.hessian[np.ix_(mine, mine)]
        return LossGradient(
            self.loss, weight=self.weight, examples=self.examples, slots=np.asarray(slots), hessian=hessian, **rows
        )

    def merge(self, others: Iterable[LossGradient]) -> LossGradient:
        for other in others:
            if other is self:
                continue
            self.loss += other.loss
            if other.slots is None and self.slots is None:
                for name, values in other.rows().items():
                    getattr(self, name)[...] += values
            else:
                slots = other.slots if other.slots is not None else np.arange(len(other.gradient))
                positions = self._add_rows(slots, other.rows())
                if self.hessian is not None and other.hessian is not None:
                    self._add_hessian(positions, other.hessian)
            if other.hessian is None:  # (a part whose slots outgrew the limit: so do the whole's)
                self.hessian = None
            self.weight += other.weight
            self.examples += other.examples
            self._check_hessian()
        return self


def regularised(
    total: LossGradient,
    weights: np.ndarray,
    l2: float,
    bias: bool,
    anchor: np.ndarray | None = None,
    scale: np.ndarray | None = None,
) -> tuple[float, np.ndarray]:
    """``(F(w), grad F(w))``: the summed loss and gradient plus the L2 term (not on the bias slot) on the
    weights' distance from ``anchor`` (None: from 0), each coordinate's square weighed by ``scale`` (None:
    by 1)."""
    penalised = weights.copy() if anchor is None else weights - anchor.reshape(weights.shape)
    if bias:
        penalised[0] = 0.0
    scaled = penalised if scale is None else penalised * scale.reshape(weights.shape)
    value = total.loss + 0.5 * l2 * float(np.sum(penalised * scaled))
    return value, total.gradient + l2 * scaled


class Lbfgs:
    """L-BFGS with a backtracking Armijo line search, one objective evaluation at a time.

    ``point()`` is where the objective must be evaluated next; ``told(total)``
    takes the :class:`LossGradient` summed there (the L2 term is added here).
    ``weights`` is the best point so far (the warm start until another is accepted).

    ``centre`` (with a bias; one number per row, 0 for the bias's row 0): the optimiser works in
    coordinates where each feature is centred on it, ``u`` with ``w = u`` but for the bias ``b = u_0 -
    centre . u``: the same objective (the penalty is on ``w``, not the bias), but the mean direction,
    which makes unscaled features with large means (a year, a price) ill-conditioned for any diagonal
    preconditioner, is taken out, as standardising does for scikit-learn (whose L-BFGS on unscaled
    columns needs thousands of iterations).

    ``shift_invariant`` (softmax): the loss does not change when the same number is added to every
    class's weight of a slot, so the penalised optimum has class weights that sum to 0 in every row; the
    start is moved there (the same loss, a smaller penalty) and every step kept there. Else that
    direction's curvature is the penalty's alone, which the Hessian's diagonal (the loss's) hides: on
    scikit-learn's digits at L2 0.1 the objective was still 37% above the optimum after 30 evaluations.

    ``anchor`` (the start's shape): the penalty is on the weights' distance from it instead of from 0, and
    ``scale`` (one positive number per weight) weighs each coordinate's square in it: ``l2 / 2 * sum_j
    scale_j (w_j - anchor_j)**2`` (see :class:`Finishing`'s candidates pulled toward the online model).
    With ``shift_invariant`` the anchor is moved to class weights summing to 0 as the start is (the same
    predictions), and ``scale`` must weigh a row's classes alike, so that the optimum stays there.
    """

    def __init__(
        self,
        start: np.ndarray,
        l2: float,
        bias: bool = True,
        memory: int = DEFAULT_MEMORY,
        centre: np.ndarray | None = None,
        shift_invariant: bool = False,
        anchor: np.ndarray | None = None,
        scale: np.ndarray | None = None,
    ):
        if not (l2 >= 0 and math.isfinite(l2)):
            raise ValueError(f"lbfgs_l2 must be a finite number >= 0; got {l2}")
        self.shape = np.shape(start)
        self.l2 = float(l2)
        self.bias = bias
        self.memory = memory
        self.centre = None
        if centre is not None and bias:
            self.centre = np.asarray(centre, dtype=np.float64).reshape(-1).copy()
            self.centre[0] = 0.0
        self.shift_invariant = shift_invariant and len(self.shape) == 2 and self.shape[1] > 1
        start = self._zero_sum(np.array(start, dtype=np.float64).reshape(-1))
        self.anchor = None if anchor is None else self._zero_sum(np.array(anchor, dtype=np.float64).reshape(-1))
        self.scale = None if scale is None else np.asarray(scale, dtype=np.float64).reshape(-1)
        if self.scale is not None and self.shift_invariant and np.ptp(self._rows(self.scale), axis=1).any():
            raise ValueError("a shift-invariant optimiser weighs a row's classes alike (scale equal across a row)")
        self.coordinates = self._to_coordinates(start)
        self.objective: float | None = None
        self.gradient: np.ndarray | None = None  # in the optimiser's coordinates
        self.direction: np.ndarray | None = None
        self.step = 0.0
        self.pairs: list[tuple[np.ndarray, np.ndarray, float]] = []
        self.scaling: np.ndarray | None = None  # H0: the inverse of the Hessian's diagonal at the last accepted point
        self.evaluations = 0
        self.history: list[float] = []  # the objective at each accepted point
        # Newton's decrement says the objective is within NEWTON_TOLERANCE of its minimum: later passes
        # evaluate the same point again (no Hessian), and it stays the best
        self.converged = False

    # -- the change of coordinates (identity without a centre)

    def _zero_sum(self, flat: np.ndarray) -> np.ndarray:
        """``flat`` with each row's class weights summing to 0 (with ``shift_invariant``; else itself)."""
        if not self.shift_invariant:
            return flat
        rows = self._rows(flat)
        return (rows - rows.mean(axis=1, keepdims=True)).reshape(-1)

    def _rows(self, flat: np.ndarray) -> np.ndarray:
        return flat.reshape(self.shape[0], -1)

    def _to_weights(self, coordinates: np.ndarray) -> np.ndarray:
        if self.centre is None:
            return coordinates
        weights = self._rows(coordinates.copy())
        weights[0] -= self.centre @ weights
        return weights.reshape(-1)

    def _to_coordinates(self, weights: np.ndarray) -> np.ndarray:
        if self.centre is None:
            return weights
        coordinates = self._rows(weights.copy())
        coordinates[0] += self.centre @ coordinates
        return coordinates.reshape(-1)

    def _gradient_in_coordinates(self, gradient: np.ndarray) -> np.ndarray:
        """The chain rule: ``d F / d u_j = d F / d w_j - centre_j d F / d b``."""
        if self.centre is None:
            return gradient
        rows = self._rows(gradient)
        return (rows - self.centre[:, None] * rows[0][None, :]).reshape(-1)

    def curvature_in_coordinates(self, total: LossGradient) -> np.ndarray:
        """The Hessian's diagonal in the optimiser's coordinates (with the penalty's): ``sum h (x_j -
        centre_j)**2`` from the sums of ``h x**2``, ``h x`` and ``h``."""
        curvature = total.curvature.reshape(self.shape[0], -1)
        if self.centre is not None:
            c = self.centre[:, None]
            centred = curvature - 2.0 * c * total.cross.reshape(curvature.shape) + c * c * curvature[0][None, :]
            centred[0] = curvature[0]
            # (rounding can leave a centred sum at or below 0 where the values barely vary: keep the plain one)
            curvature = np.where(centred > 1e-9 * curvature, centred, curvature)
        return curvature.reshape(-1) + self.l2 * self._penalised_mask()

    @property
    def weights(self) -> np.ndarray:
        """The best point so far, flat (``point()``'s shape flattened)."""
        return self._to_weights(self.coordinates)

    def point(self) -> np.ndarray:
        """The weights (shape of the start) to evaluate in the next pass."""
        if self.direction is None or self.converged:
            return self.weights.reshape(self.shape)
        return self._to_weights(self.coordinates + self.step * self.direction).reshape(self.shape)

    def told(self, total: LossGradient) -> Lbfgs:
        """Take the loss and gradient at ``point()`` (and the Hessian, when ``total`` has it: a Newton step
        follows) and choose the next point."""
        if self.converged:
            self.evaluations += 1
            return self
        trial = self.coordinates if self.direction is None else self.coordinates + self.step * self.direction
        value, weight_gradient = regularised(
            total, self._to_weights(trial).reshape(self.shape), self.l2, self.bias, self.anchor, self.scale
        )
        gradient = self._gradient_in_coordinates(weight_gradient.reshape(-1))
        self.evaluations += 1
        curvature = self.curvature_in_coordinates(total)
        accepted = self.direction is None  # the warm start
        if not accepted:
            slope = float(self.gradient @ self.direction)
            accepted = math.isfinite(value) and value <= self.objective + SUFFICIENT_DECREASE * self.step * slope
            if accepted:
                s, y = trial - self.coordinates, gradient - self.gradient
                sy = float(s @ y)
                if sy > 1e-12 * float(y @ y):
                    self.pairs = (self.pairs + [(s, y, sy)])[-self.memory :]
        if accepted:
            self._accept(trial, value, gradient, curvature, self._newton_step(total, weight_gradient))
            return self
        # Backtrack: the minimiser of the quadratic through f(0), f'(0) and f(step), kept within [0.1, 0.5] step.
        rise = (value - self.objective - slope * self.step) if math.isfinite(value) else math.inf
        guess = -slope * self.step**2 / (2.0 * rise) if rise > 0 else 0.5 * self.step
        self.step = min(max(guess, 0.1 * self.step), 0.5 * self.step)
        return self

    def _penalised_mask(self) -> np.ndarray:
        mask = np.ones(self.shape)
        if self.bias:
            mask[0] = 0.0
        return mask.reshape(-1) if self.scale is None else mask.reshape(-1) * self.scale

    def _newton_step(self, total: LossGradient, weight_gradient: np.ndarray) -> np.ndarray | None:
        """The Newton direction in the optimiser's coordinates, when ``total`` has the loss's Hessian."""
        if total.hessian is None:
            return None
        hessian = total.hessian + np.diag(self.l2 * self._penalised_mask())
        direction = newton.newton_direction(hessian, weight_gradient.reshape(-1))
        # (a direction in the weights is one in the centred coordinates through the inverse change)
        return None if direction is None else self._to_coordinates(direction)

    def _accept(
        self,
        coordinates: np.ndarray,
        value: float,
        gradient: np.ndarray,
        curvature: np.ndarray,
        newton_step: np.ndarray | None = None,
    ) -> None:
        self.coordinates, self.objective, self.gradient = coordinates, value, gradient
        self.history.append(value)
        # Hashed sparse features are seen from a few times to every example (the bias): the Hessian's
        # diagonal spans orders of magnitude, and scaling by it (rather than one number) is what
        # makes few passes enough. Slots no example touches (and no penalty) keep a unit scale.
        self.scaling = np.where(curvature > 0, 1.0 / np.where(curvature > 0, curvature, 1.0), 1.0)
        direction = newton_step
        if direction is not None and -float(direction @ gradient) / 2 <= NEWTON_TOLERANCE * abs(value):
            self.converged = True  # (half Newton's decrement: how far above the minimum the objective is)
            return
        if direction is None or float(direction @ gradient) >= 0:
            direction = -self._inverse_hessian_times(gradient)
        if float(direction @ gradient) >= 0:  # not a descent direction: forget the curvature pairs
            self.pairs = []
            direction = -self.scaling * gradient
        # (the gradient sums to 0 across classes, so the projection keeps the slope: still a descent)
        self.direction = self._zero_sum(direction)
        self.step = 1.0

    def _inverse_hessian_times(self, gradient: np.ndarray) -> np.ndarray:
        """The two-loop recursion (Nocedal & Wright, algorithm 7.4), H0 the inverse Hessian diagonal
        times s.y / (y . diagonal . y) of the latest pair."""
        q = gradient.copy()
        alphas = []
        for s, y, sy in reversed(self.pairs):
            alpha = float(s @ q) / sy
            q -= alpha * y
            alphas.append(alpha)
        q *= self.scaling
        if self.pairs:  # the diagonal scaled to the latest pair's curvature (as s.y / y.y scales I)
            s, y, sy = self.pairs[-1]
            q *= sy / float(y @ (self.scaling * y))
        for (s, y, sy), alpha in zip(self.pairs, reversed(alphas)):
            beta = float(y @ q) / sy
            q += (alpha - beta) * s
        return q

    def summary(self) -> dict:
        """What the stage did, for the model's metadata."""
        return {"evaluations": self.evaluations, "l2": self.l2, "objective": self.history}


def finish_model(model, weights, summary: dict):
    """``model`` with the finishing stage's ``weights`` (dense, shape (slots, outputs), or
    :class:`SparseWeights`; its values then unclipped: the stage optimised the plain linear function of
    the (expanded) features) and ``summary`` in its metadata."""

    point = SparseWeights.of(weights)
    nonzero = np.any(point.rows != 0, axis=1)
    slots, rows = point.slots[nonzero], point.rows[nonzero]
    metadata = dict(model.metadata)
    metadata["lbfgs"] = summary
    kept_slots = set(slots.tolist())
    return dataclasses.replace(
        model,
        slots=slots,
        weights=rows if model.config.outputs > 1 else rows[:, 0],
        metadata=metadata,
        names={s: n for s, n in model.names.items() if s in kept_slots},
        clip_low=None,
        clip_high=None,
    )


def model_features(model, batch: ExampleBatch) -> ExampleBatch:
    """``batch`` as the model's weights see it: its missing values filled (see
    polybeam.learners.missing), and expanded when the model expands its input."""
    batch = model.filled(batch)
    return model.expansion.expand(batch) if model.expansion is not None else batch


def start_weights(model) -> np.ndarray:
    """The model's dense weights, shape (slots, outputs)."""
    return model.dense_weights.reshape((1 << model.config.bits, model.config.outputs)).copy()


def start_point(model) -> SparseWeights:
    """The model's weights on the slots it holds and slot 0 (the bias's): where the finishing stage starts."""
    slots = np.union1d([0], np.asarray(model.slots, dtype=np.int64))
    held = SparseWeights(
        np.asarray(model.slots, dtype=np.int64), np.asarray(model.weights).reshape(len(model.slots), -1)
    )
    return SparseWeights(slots, held.rows_at(slots), newton=True)


# -- the holdout: the stage never returns a model worse than the online one ---------------------------------

# The L2 penalties the stage chooses among on the holdout when none is given (``lbfgs_l2=None``).
L2_GRID = (0.1, 1.0, 10.0)
# With them, candidates pulled toward the online model instead of 0: (how each weight's square is
# weighed, strength per training example). "curvature": by the loss's mean curvature along it at the
# online model (the Hessian's diagonal over the examples), a scale-free trust region around the online
# model; "weights": by 1. Stopping L-BFGS after a few passes from the online model had regularised
# towards it; Newton's steps reach the optimum at once, and the optimum of a penalty towards 0 chosen on a
# small holdout lost to the online model on the suite's ames, BostonHousing, Ionosphere and SwissLabor
# (``benchmarks/results/suite_newton.md``). These candidates put points between the two back, where
# Newton's steps run (polybeam.learners.newton.affordable): the others' L-BFGS stops on the way.
TOWARD_ONLINE = (("curvature", 0.1), ("curvature", 1.0), ("weights", 0.1))
# The curvature a coordinate no example moves is weighed by in a candidate pulled toward the online model
# (any positive number: the data never moves it from the online weight).
CURVATURE_FLOOR = 1e-12
# One example in this many is the stage's holdout when the learner has no holdout period of its own.
HOLDOUT_PERIOD = 10
# How many standard errors of the difference a point's held-out loss must be below the online model's
# to be chosen over it (see Finishing).
STANDARD_ERRORS = 2.0
# Fewer held-out examples than this judge nothing (the online model is kept): their standard error is
# itself too noisy (the suite's promotergene, 8 held out: a point chosen at 2 standard errors was 0.10
# worse in test log loss).
MIN_HELD_OUT = 30


# -- after averaging: the finishing stage by default when a pass was learned by several learners -----------

# The finishing passes that run by default after online passes averaged from more than
# AVERAGE_LEFT_ALONE learners (``Train(lbfgs_after_averaging=...)``, ``--lbfgs-after-averaging``).
# Measured by ``benchmarks/bench_workers.py``: the held-out loss of the average of 64 or 256 learners
# after 5 online passes reached one learner's within the first 5 finishing passes on its tasks, and
# 10 or 20 passes chose the same point.
AFTER_AVERAGING_PASSES = 5
# An average of this many learners or fewer is kept as it is: two learners' average was within 1% of
# one learner's held-out loss after one pass (``benchmarks/results/mixing.md``), not worth passes.
AVERAGE_LEFT_ALONE = 2


def finishing_plan(
    config, learners: int | None, after_averaging: int = AFTER_AVERAGING_PASSES
) -> tuple[int, str | None]:
    """``(passes, why)``: the finishing stage of training with ``config`` when ``learners`` learners learn each
    pass (None: unknown, as on a remote runner). ``lbfgs_passes`` when given (why: "asked for"). Else
    ``after_averaging`` passes that run only after online passes averaged from more than
    :data:`AVERAGE_LEFT_ALONE` learners (the model's ``learners_averaged``, known once they ran; why None:
    see :func:`averaged_why`), or none where no such average can come: ``learners`` known and at most
    two, ``after_averaging`` 0, a loss that is not smooth, no holdout to keep the average by.

    >>> from polybeam.learners.config import LearnerConfig
    >>> finishing_plan(LearnerConfig(loss="logistic"), 64), finishing_plan(LearnerConfig(loss="logistic"), None)
    ((5, None), (5, None))
    >>> finishing_plan(LearnerConfig(loss="logistic"), 2), finishing_plan(LearnerConfig(loss="hinge"), None)
    ((0, None), (0, None))
    >>> finishing_plan(LearnerConfig(loss="logistic", lbfgs_passes=3), 1)
    (3, 'asked for')
    """
    if config.lbfgs_passes:
        return int(config.lbfgs_passes), "asked for"
    if learners is not None and learners <= AVERAGE_LEFT_ALONE:
        return 0, None
    if not after_averaging or not loss_spec(config.loss).finishing or config.holdout_period <= 0:
        return 0, None
    return int(after_averaging), None


def averaged_why(model) -> str | None:
    """Why the finishing stage runs after ``model``'s online passes when it was not asked for: "each pass
    averaged N learners" when its last pass averaged more than :data:`AVERAGE_LEFT_ALONE` (the runner's
    bundles, or ``--learners``); None: it does not run (one or two learners' average is kept as it is)."""
    averaged = int(model.metadata.get("learners_averaged", 1))
    return f"each pass averaged {averaged} learners" if averaged > AVERAGE_LEFT_ALONE else None


def stage_holdout_period(config) -> int:
    """The holdout period of the finishing stage under ``config``: the learner's (one example in
    ``holdout_period``, the same examples its passes hold out); 0 (``--holdout-off``): none, and the
    stage then chooses nothing."""
    return int(config.holdout_period)


def held_out_losses(
    model, held: ExampleBatch, weights: SparseWeights | None = None, design: BatchDesign | None = None
) -> np.ndarray:
    """Each example's loss over ``held`` of ``model`` as it predicts (``weights`` None: its expansion, its
    values clipped), or of the model ``weights`` make (``held`` expanded as they see it; values unclipped,
    as the stage optimised them; ``design``: ``held``'s :class:`BatchDesign` when already made). Squared
    loss on predictions clamped to the labels' range, as the learner and ``polybeam.learners.holdout``
    count it."""
    from polybeam.learners.evaluation import pointwise_loss
    from polybeam.learners.model import finalize_predictions

    if weights is None:
        margins = model.margins(held)
    else:
        design = design if design is not None else BatchDesign.of(held)
        margins = design.margins(SparseWeights.of(weights), model.config.bias)
        margins = margins if margins.shape[1] > 1 else margins[:, 0]
    low, high = float(model.metadata.get("label_min", 0.0)), float(model.metadata.get("label_max", 0.0))
    predictions = finalize_predictions(model.config.loss, margins, low, high)
    return pointwise_loss(model.config.loss, held.labels, margins, predictions, model.config.loss_parameter)


@dataclasses.dataclass
class PassSums:
    """What one pass of the stage sums over the examples: per L2, the loss and gradient on the training
    part at that optimiser's point; per candidate (each point, then the online model), the held-out
    loss; per point, the squared differences of its held-out losses from the online model's (the
    spread of the difference); and the held-out importance weight and count. Additive (``merge``),
    as :class:`LossGradient` is."""

    totals: list[LossGradient]
    held_out: np.ndarray
    squared_differences: np.ndarray
    held_weight: float = 0.0
    held_count: int = 0

    @classmethod
    def zero(cls, points: list[SparseWeights]) -> PassSums:
        """The empty sums of a pass evaluating ``points`` (each training sum with rows for its point's
        slots)."""
        totals = [LossGradient.on(point.slots, point.outputs, hessian=point.newton) for point in points]
        return cls(totals, np.zeros(len(points) + 1), np.zeros(len(points)))

    def add(self, model, points: list[SparseWeights], batch: ExampleBatch, period: int, seed: int):
        """Add ``batch``: its held-out rows (one in ``period``) to the held-out losses, the others to the
        training sums."""
        from polybeam.learners.holdout import holdout_rows

        held_rows = holdout_rows(batch, period, seed) if period > 0 else np.zeros(len(batch), dtype=bool)
        train = batch if not held_rows.any() else batch.take(~held_rows)
        expanded = model_features(model, train)
        design = BatchDesign.of(expanded) if len(expanded) else None
        for total, point in zip(self.totals, points):
            total.add(point, expanded, model.config.loss, model.config.bias, model.config.loss_parameter, design)
        if held_rows.any():
            held = batch.take(held_rows)
            expanded_held = model_features(model, held)
            held_design = BatchDesign.of(expanded_held)
            online = held_out_losses(model, held)
            for k, point in enumerate(points):
                losses = held_out_losses(model, expanded_held, point, held_design)
                self.held_out[k] += float(held.weights @ losses)
                self.squared_differences[k] += float(held.weights @ (losses - online) ** 2)
            self.held_out[-1] += float(held.weights @ online)
            self.held_weight += float(held.weights.sum())
            self.held_count += len(held)
        return self

    def merge(self, others: Iterable[PassSums]) -> PassSums:
        for other in others:
            if other is self:
                continue
            for mine, theirs in zip(self.totals, other.totals):
                mine.merge([theirs])
            self.held_out = self.held_out + other.held_out
            self.squared_differences = self.squared_differences + other.squared_differences
            self.held_weight += other.held_weight
            self.held_count += other.held_count
        return self


class Finishing:
    """The finishing stage between passes: the online model it started from, one :class:`Lbfgs` per L2
    (``l2``, or :data:`L2_GRID` when None, then also one per :data:`TOWARD_ONLINE` candidate, whose penalty
    pulls toward the online model instead of 0), and the best candidate on the holdout so far.

    Every pass evaluates each optimiser's point on the training part (its loss and gradient) and every
    point and the online model on the held-out part (one example in ``period``). The model the stage
    returns is the point of lowest held-out loss among those that beat the online model there by more
    than :data:`STANDARD_ERRORS` standard errors of the difference (early stopping on the holdout,
    which also chooses the L2), or the online model itself when none did ("kept": "online" in the
    model's ``metadata["lbfgs"]``). The first pass's points are the online weights themselves, without
    the online model's clipping of values to their known ranges: never chosen over it. The margin keeps
    a small holdout's noise from choosing: on scikit-learn's breast cancer data (47 held-out examples)
    the lowest held-out loss alone, and one standard error, chose a point 0.02 worse in test log loss
    than the online model; fewer than :data:`MIN_HELD_OUT` held-out examples choose nothing. ``period`` 0 (the
    learner's ``--holdout-off``): no holdout, and the stage returns the last accepted point of its
    single L2 (``l2``, or 10 when None), as before.
    """

    def __init__(self, model, l2: float | None, period: int = HOLDOUT_PERIOD, seed: int = 0, why: str | None = None):
        check_loss(model.config.loss)
        self.model = model
        self.why = why  # why the stage runs (see finishing_plan), for the summary
        self.started, self.seconds = time.time(), 0.0  # (wall clock: a Beam stage's passes run anywhere)
        self.period, self.seed = int(period), int(seed)
        self.grid = (l2,) if l2 is not None else (L2_GRID if self.period > 0 else (10.0,))
        # (with the grid chosen on the holdout: see TOWARD_ONLINE)
        self.toward_online = TOWARD_ONLINE if l2 is None and self.period > 0 else ()
        self.start = start_point(model)
        # The optimisers work on the rows the first pass found active (a slot some training example has,
        # or a weight of the online model): the others' gradient and weight stay 0 for every L2, and
        # leaving them out keeps each optimiser's memory to the data's size, not 2**bits (times classes).
        self.active: np.ndarray | None = None
        self.optimisers: list[Lbfgs] = []
        # The training examples a pass sums (known after the first): with the active rows, whether the
        # passes after it sum the Hessian for Newton steps (polybeam.learners.newton.affordable)
        self.examples = 0
        self.passes = 0
        self.online_loss: float | None = None  # the online model's mean held-out loss
        # (mean held-out loss, optimiser, weights) of the best point that beat the online model
        self.best: tuple[float, int, np.ndarray] | None = None
        self.held_weight = 0.0
        self.held_count = 0
        self.history: list[list[float]] = []  # per pass, each point's mean held-out loss

    def points(self) -> list[SparseWeights]:
        """The weights each optimiser evaluates in the next pass (the first pass: the online weights,
        one point for every L2)."""
        if not self.optimisers:
            return [self.start]
        affordable = newton.affordable(self.examples, len(self.active) * self.start.outputs)
        return [self._on_active(opt.point(), affordable and not opt.converged) for opt in self.optimisers]

    def _on_active(self, rows: np.ndarray, newton: bool = False) -> SparseWeights:
        return SparseWeights(self.active, rows.reshape(len(self.active), -1), newton)

    def sums(self, batches: Iterable[ExampleBatch]) -> PassSums:
        """The pass's sums over ``batches`` in this process (``Train`` sums them across workers)."""
        points = self.points()
        total = PassSums.zero(points)
        for batch in batches:
            total.add(self.model, points, batch, self.period, self.seed)
        return total

    def told(self, sums: PassSums | None) -> Finishing:
        """Take a pass's sums: each optimiser its training part's, the holdout its candidates'."""
        points = self.points()
        if sums is None:  # no example reached the stage: the empty sums
            sums = PassSums.zero(points)
        weight = sums.held_weight
        if weight > 0:
            means = sums.held_out / weight
            self.online_loss, self.held_weight = float(means[-1]), weight
            self.held_count = int(sums.held_count)
            self.history.append(means[:-1].tolist())
            differences = means[:-1] - means[-1]
            spread = np.maximum(sums.squared_differences / weight - differences**2, 0.0)
            errors = np.sqrt(spread / max(sums.held_count, 1))
            for k, point in enumerate(points):
                mean = float(means[k])
                beats = (
                    self.passes > 0
                    and sums.held_count >= MIN_HELD_OUT
                    and math.isfinite(mean)
                    and differences[k] < -STANDARD_ERRORS * errors[k]
                )
                if beats and (self.best is None or mean < self.best[0]):
                    self.best = (mean, k, point)
        if not self.optimisers:  # the first pass: the online weights' sums serve every L2
            total = sums.totals[0].aligned(np.union1d(sums.totals[0].slots, self.start.slots))
            start = self.start.rows_at(total.slots)
            active = np.any(total.curvature != 0, axis=1) | np.any(start != 0, axis=1)
            active[0] = True  # (the bias, slot 0: row 0 of every optimiser's vector)
            self.active = total.slots[active]
            self.examples = int(total.examples)
            bias = self.model.config.bias
            # The optimisers centre the features on their means over the training part (see Lbfgs).
            centre = total.feature_sums[active, 0] / total.weight if total.weight > 0 else None
            shift_invariant = loss_spec(self.model.config.loss).labels == "multiclass"
            self.optimisers = [
                Lbfgs(start[active], l2=value, bias=bias, centre=centre, shift_invariant=shift_invariant)
                for value in self.grid
            ]
            self.optimisers += self._toward_online(total, start[active], centre, shift_invariant)
            totals = [total] * len(self.optimisers)
        else:
            totals = sums.totals
        for optimiser, total in zip(self.optimisers, totals):
            optimiser.told(total.aligned(self.active))
        self.passes += 1
        self.seconds = time.time() - self.started
        return self

    def _toward_online(
        self, total: LossGradient, online: np.ndarray, centre: np.ndarray | None, shift_invariant: bool
    ) -> list[Lbfgs]:
        """The optimisers of the :data:`TOWARD_ONLINE` candidates, from the first pass's sums ``total`` (at the
        online weights ``online``, the active rows), for a model that takes Newton's steps (see
        :data:`TOWARD_ONLINE`; larger models stop L-BFGS on its way from the online model). With softmax (``shift_invariant``) a row's classes are
        weighed alike (by their mean curvature), so that the penalised optimum still has class weights that
        sum to 0 in every row (see :class:`Lbfgs`: the anchor is moved there, predicting the same)."""
        parameters = len(online) * (online.shape[1] if online.ndim > 1 else 1)
        if not newton.affordable(self.examples, parameters):
            self.toward_online = ()  # (L-BFGS's passes from the online model stop on the way: an early stop's pull)
        if not self.toward_online:
            return []
        bias = self.model.config.bias
        examples = max(self.examples, 1)
        plain = Lbfgs(online, l2=0.0, bias=bias, centre=centre)
        # (the centred coordinates' curvature: a year's or a price's mean does not inflate its weight's)
        curvature = plain.curvature_in_coordinates(total.aligned(self.active)) / examples
        if shift_invariant:
            rows = curvature.reshape(len(online), -1)
            curvature = np.repeat(rows.mean(axis=1, keepdims=True), rows.shape[1], axis=1).reshape(-1)
        curvature = np.where(curvature > 0, curvature, CURVATURE_FLOOR)
        scales = {"curvature": curvature, "weights": None}
        return [
            Lbfgs(
                online,
                l2=strength * examples,
                bias=bias,
                centre=centre,
                shift_invariant=shift_invariant,
                anchor=online,
                scale=scales[weighed],
            )
            for weighed, strength in self.toward_online
        ]

    def _candidate(self, index: int) -> dict:
        """What candidate ``index`` penalised: ``{"toward": "zero"}`` for the grid's, the weighing and
        strength per example for one pulled toward the online model."""
        if index < len(self.grid):
            return {"toward": "zero"}
        weighed, strength = self.toward_online[index - len(self.grid)]
        return {"toward": "online", "weighed_by": weighed, "strength": strength}

    def summary(self) -> dict:
        """What the stage did and chose, for the model's ``metadata["lbfgs"]``."""
        chosen = self._chosen()
        index = self.optimisers.index(chosen) if chosen is not None else None
        return {
            "evaluations": self.passes,
            "l2": chosen.l2 if chosen is not None else None,
            **(self._candidate(index) if index is not None else {}),
            "objective": chosen.history if chosen is not None else [],
            "l2_grid": list(self.grid),
            "toward_online": [{"weighed_by": w, "strength": c} for w, c in self.toward_online],
            "kept": "lbfgs" if chosen is not None else "online",
            "decided_on": "holdout" if self.period > 0 else "nothing (no holdout)",
            "holdout_examples_weight": self.held_weight,
            "holdout_examples": self.held_count,
            "holdout_judges_from": MIN_HELD_OUT,
            "online_holdout_loss": self.online_loss,
            "holdout_loss": self.best[0] if self.best is not None and chosen is not None else self.online_loss,
            "holdout_losses": self.history,
            "why": self.why,
            "seconds": round(self.seconds, 3),
        }

    def _chosen(self) -> Lbfgs | None:
        if not self.optimisers:  # no pass ran
            return None
        if self.period <= 0 or self.online_loss is None:  # nothing to judge on: the single optimiser's
            return self.optimisers[0]
        if self.best is None:
            return None
        return self.optimisers[self.best[1]]

    def finished(self):
        """The model the stage returns (see the class docstring); its config records the passes that ran."""
        chosen = self._chosen()
        if chosen is None:
            metadata = dict(self.model.metadata)
            metadata["lbfgs"] = self.summary()
            finished = dataclasses.replace(self.model, metadata=metadata)
        else:
            weights = self._on_active(chosen.weights) if self.period <= 0 or self.online_loss is None else self.best[2]
            finished = finish_model(self.model, weights, self.summary())
        if finished.config.lbfgs_passes == self.passes:
            return finished
        return dataclasses.replace(finished, config=dataclasses.replace(finished.config, lbfgs_passes=self.passes))


def finish(
    model,
    batches: list[ExampleBatch],
    passes: int,
    l2: float | None = None,
    *,
    period: int = HOLDOUT_PERIOD,
    seed: int = 0,
    why: str | None = None,
):
    """Run the finishing stage in one process (what ``Train`` does in passes over a PCollection): see
    :class:`Finishing`."""
    stage = Finishing(model, l2, period, seed, why)
    for _ in range(passes):
        stage.told(stage.sums(batches))
    return stage.finished()
