"""The SSM heuristic: rank monomials by the squared residual on the examples where they are large.

Agarwal et al., section 2.3 (after Sanyal, Schwartz and Mahajan): a monomial m
whose index ``E[r(x)^2 m(x)^2] / E[m(x)^2]`` is high lives where the current
predictor errs most, so polynomials with m as a factor can reduce the error
most; ``r`` is the residual of the current predictor. Apple's ``ssm`` rule
ranks the candidate parents by this index instead of by weight magnitude.

Online estimate, per weight slot j over the examples of the current epoch::

    index_j = (sum_i r_i^2 x_ij^2 + PRIOR * mean_r2 * mean_x2_j) / (sum_i x_ij^2 + PRIOR * mean_x2_j)

with ``r_i`` taken *before* example i is learned (progressive, like the
validation loss) and ``mean_x2_j`` the mean of x_ij^2 over the examples where
slot j is non-zero. The PRIOR term acts like :data:`PRIOR` extra occurrences at
the epoch's mean squared residual: without it a monomial seen once on a badly
predicted example would outrank every frequent one, although its estimate rests
on one example. Sums restart at every epoch, so the index describes the current
predictor.

The residual generalises beyond squared loss as the negative derivative of
the loss in the prediction (``y - p`` up to a constant factor for squared loss,
``y * sigmoid(-y p)`` for logistic); for softmax ``r^2`` is the squared norm of
the probability residual ``p - onehot(y)``.

>>> import numpy as np
>>> from polybeam.learners.batch import ExampleBatch
>>> stats = ResidualStatistics(bits=4)
>>> batch = ExampleBatch.from_rows([(1.0, {1: 1.0, 2: 1.0}), (-1.0, {1: 1.0})], bits=4)
>>> stats.add(batch, residuals_squared=np.array([4.0, 0.0]))
>>> scores = stats.index()
>>> bool(scores[2] > scores[1] > 0), float(scores[3])
(True, 0.0)
"""

from __future__ import annotations

import numba
import numpy as np

from polybeam.learners import (
    kernel_cache,  # noqa: F401  (first: where numba caches the kernels below)
    kernels,
)
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.loss_specs import loss_spec
from polybeam.learners.losses import loss_derivative
from polybeam.learners.softmax import predict_batch_softmax

PRIOR = 10.0


@numba.njit(cache=True)
def accumulate(indptr, indices, values, residuals_squared, weights, sum_r2x2, sum_x2, count):
    """Adds every example's ``w r^2 x_j^2``, ``w x_j^2`` and ``w`` (importance w) to its slots."""
    for row in range(indptr.shape[0] - 1):
        r2 = residuals_squared[row]
        w = weights[row]
        for k in range(indptr[row], indptr[row + 1]):
            x2 = values[k] * values[k] * w
            slot = indices[k]
            sum_r2x2[slot] += r2 * x2
            sum_x2[slot] += x2
            count[slot] += w


@numba.njit(cache=True)
def binary_residuals_squared(margins, labels, loss, parameter, binary, clamps, low, high, out):
    """``(d loss / d p)^2`` at each example's prediction.

    A loss that clamps (squared loss) clamps the prediction to the range of labels seen, the
    example's own label included, as the learner's kernel does; two classes are read as -1 and +1.
    """
    for row in range(margins.shape[0]):
        p = margins[row]
        y = labels[row]
        if clamps:
            p = min(max(p, min(low, y)), max(high, y))
        if binary:
            y = kernels.binary_label(y)
        g = loss_derivative(loss, p, y, parameter)
        out[row] = g * g


class ResidualStatistics:
    """Per-slot sums behind the SSM index (see the module docstring)."""

    def __init__(self, bits: int):
        size = 1 << bits
        self.sum_r2x2 = np.zeros(size)
        self.sum_x2 = np.zeros(size)
        self.count = np.zeros(size)
        self.sum_r2 = 0.0
        self.weight = 0.0

    def add(self, batch: ExampleBatch, residuals_squared: np.ndarray) -> None:
        """Count ``batch`` (expanded features) with each example's squared residual."""
        accumulate(
            batch.indptr,
            batch.indices,
            batch.values,
            residuals_squared,
            batch.weights,
            self.sum_r2x2,
            self.sum_x2,
            self.count,
        )
        self.sum_r2 += float(np.dot(residuals_squared, batch.weights))
        self.weight += float(batch.weights.sum())

    def add_predicted(self, learner, batch: ExampleBatch) -> None:
        """Count ``batch`` with the residuals of ``learner``'s current weights (before it learns the batch)."""
        self.add(batch, residuals_squared(learner, batch))

    def index(self) -> np.ndarray:
        """Each slot's SSM index; 0 for slots not seen since the last :meth:`reset`."""
        seen = self.count > 0
        mean_r2 = self.sum_r2 / self.weight if self.weight > 0 else 0.0
        prior_x2 = np.zeros_like(self.sum_x2)
        prior_x2[seen] = PRIOR * self.sum_x2[seen] / self.count[seen]
        index = np.zeros_like(self.sum_x2)
        denominator = self.sum_x2 + prior_x2
        positive = seen & (denominator > 0)
        index[positive] = (self.sum_r2x2[positive] + mean_r2 * prior_x2[positive]) / denominator[positive]
        return index

    def reset(self) -> None:
        for array in (self.sum_r2x2, self.sum_x2, self.count):
            array[:] = 0.0
        self.sum_r2 = self.weight = 0.0


def residuals_squared(learner, batch: ExampleBatch) -> np.ndarray:
    """Each example's squared residual under a :class:`LinearLearner`'s current weights, with its values
    clipped as the learner predicts with them.

    Pending truncation is not paid first: it moves weights by far less than a
    residual's scale, and paying it would cost a pass over every weight. The
    cumulative penalty's raw rows are sums, not weights: there the weights in
    force are worth that pass.
    """
    config = learner.config
    stats = learner.stats_
    scale = stats[kernels.SCALE]
    raw = learner.raw_in_force() if config.sparsity == "cumulative" else learner.raw_
    if config.outputs > 1:
        scores = np.empty((len(batch), config.outputs))
        predict_batch_softmax(batch.indptr, batch.indices, learner.predicted_values(batch), raw, config.bias, scores)
        scores *= scale
        # Softmax of every row at once, shifted by its largest score so that exp cannot overflow.
        probabilities = np.exp(scores - scores.max(axis=1, keepdims=True))
        probabilities /= probabilities.sum(axis=1, keepdims=True)
        probabilities[np.arange(len(batch)), batch.labels.astype(np.int64) - 1] -= 1.0
        return np.einsum("ij,ij->i", probabilities, probabilities)
    margins = np.empty(len(batch))
    values = learner.predicted_values(batch)
    kernels.predict_batch(batch.indptr, batch.indices, values, raw.reshape(-1), config.bias, margins)
    margins *= scale
    low, high = stats[kernels.LABEL_MIN], stats[kernels.LABEL_MAX]
    out = np.empty(len(batch))
    spec = loss_spec(config.loss)
    binary_residuals_squared(
        margins, batch.labels, spec.code, config.loss_parameter, spec.labels == "binary", spec.clamps, low, high, out
    )
    return out
