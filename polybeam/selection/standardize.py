"""The standardised least-squares problem, from Gram statistics alone.

Group sequencing (Hu, Grubb, Bagnell and Hebert) assumes features and response
with zero mean and unit variance. From the sums of
:class:`~polybeam.selection.statistics.GramStatistics` (weights w, n = sum w)::

    mean_x = sum x / n            cov = X'WX / n - mean_x mean_x'
    mean_y = sum y / n            var_y = y'Wy / n - mean_y^2
    C = S^-1 cov S^-1             b = S^-1 (X'Wy / n - mean_x mean_y) / sd_y

with S = diag(sd_x): C is the features' correlation matrix and b their
correlations with the response, so a model ``y_std = w' x_std`` explains the
variance fraction ``2 w'b - w'Cw``. Constant columns (zero variance) keep
scale 1 and zero correlations: a group made only of them explains nothing and
is skipped by the sequencers with a reason. ``standardize=False`` centres
nothing and scales nothing (the paper's comparison variants): C = X'WX / n,
b = X'Wy / n, and the "variance" of y is y'Wy / n.

>>> import numpy as np
>>> from polybeam.learners.batch import ExampleBatch
>>> from polybeam.selection.statistics import GramStatistics
>>> rows = [(2.0 * x + 1.0, {1: x, 2: 5.0}) for x in (0.0, 1.0, 2.0, 3.0)]
>>> stats = GramStatistics.for_columns(np.array([1, 2]), bits=4).add(ExampleBatch.from_rows(rows, bits=4))
>>> problem = standardized(stats)
>>> problem.gram.round(6).tolist(), problem.correlations.round(6).tolist(), problem.constant.tolist()
([[1.0, 0.0], [0.0, 0.0]], [1.0, 0.0], [False, True])
"""

from __future__ import annotations

import dataclasses

import numpy as np

from polybeam.selection.statistics import GramStatistics

# Below this relative variance a column counts as constant (rounding in X'X / n - mean^2).
CONSTANT_TOLERANCE = 1e-12


@dataclasses.dataclass(frozen=True)
class StandardizedProblem:
    """C, b and the constants to map a standardised model back to the input's units."""

    gram: np.ndarray  # C (D x D)
    correlations: np.ndarray  # b (D)
    mean_x: np.ndarray
    scale_x: np.ndarray  # sd_x (1 where constant or not standardised)
    mean_y: float
    scale_y: float
    constant: np.ndarray  # bool per column: zero variance
    standardize: bool
    # What a model's explained variance is a fraction of: 1 when standardised, y'Wy / n otherwise.
    total_variance: float = 1.0

    def raw_model(self, weights: np.ndarray) -> tuple[np.ndarray, float]:
        """Weights and intercept in the input's units of a model fitted on the standardised problem."""
        raw = self.scale_y * np.asarray(weights, dtype=np.float64) / self.scale_x
        return raw, float(self.mean_y - raw @ self.mean_x)


def standardized(statistics: GramStatistics, *, standardize: bool = True) -> StandardizedProblem:
    """The (standardised) Gram matrix and correlations of ``statistics`` (see the module docstring)."""
    n = statistics.n
    if not n > 0:
        raise ValueError("no examples: the statistics are empty")
    second = statistics.xtx / n
    cross = statistics.xty / n
    diagonal = np.diag(second).copy()
    if not standardize:
        zero = np.zeros_like(cross)
        constant = diagonal <= 0
        total = float(statistics.yty / n)
        return StandardizedProblem(
            second, cross, zero, np.ones_like(cross), 0.0, 1.0, constant, False, total if total > 0 else 1.0
        )
    mean_x = statistics.sum_x / n
    mean_y = statistics.sum_y / n
    cov = second - np.outer(mean_x, mean_x)
    variance = np.diag(cov).copy()
    constant = variance <= CONSTANT_TOLERANCE * np.maximum(diagonal, 1.0)
    scale_x = np.where(constant, 1.0, np.sqrt(np.where(constant, 1.0, variance)))
    var_y = statistics.yty / n - mean_y**2
    scale_y = float(np.sqrt(var_y)) if var_y > CONSTANT_TOLERANCE * max(statistics.yty / n, 1.0) else 1.0
    gram = cov / np.outer(scale_x, scale_x)
    correlations = (cross - mean_x * mean_y) / scale_x / scale_y
    gram[constant, :] = 0.0
    gram[:, constant] = 0.0
    correlations[constant] = 0.0
    return StandardizedProblem(gram, correlations, mean_x, scale_x, float(mean_y), scale_y, constant, True)
