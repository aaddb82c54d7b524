"""The finishing stage's Newton steps: the exact Hessian of a small model's loss, summed over examples.

L-BFGS learns the objective's curvature from its last few steps, and on a badly conditioned problem
(unscaled or strongly correlated columns, a weak L2) that takes more evaluations than a pass-limited
stage has: on scikit-learn's digits (64 pixel columns, 10 classes) at L2 0.1 the objective was still
29% above its optimum after 30 evaluations, and scikit-learn's own L-BFGS stood at the same point. When
the model has few parameters (active slots times outputs at most :data:`NEWTON_PARAMETERS`), the pass
that sums the loss and gradient also sums the Hessian itself, which is as additive over examples as the
gradient (so workers sum it the same way), and the stage steps by Newton's rule: within a few
evaluations of the optimum whatever the columns' scales, since the step does not depend on them.

For margins ``m_i = x_i . W`` (``W``: slots x outputs, the bias a column of ones), the Hessian of ``sum_i
c_i loss(m_i)`` over the flattened ``W`` (slot-major, as ``W.reshape(-1)``) is ``sum_i c_i (x_i x_i^T)
kron S_i``, with ``S_i`` the loss's second derivative in the margins: a number for one output, ``diag(p)
- p p^T`` for softmax's class probabilities ``p``.

>>> import numpy as np
>>> columns = np.array([[1.0, 2.0], [1.0, -1.0], [1.0, 0.5]])  # a bias column and one feature
>>> second = np.array([[0.25], [0.2], [0.1]])
>>> np.allclose(batch_hessian(columns, second), columns.T @ (second * columns))
True
"""

from __future__ import annotations

import numpy as np

# The most parameters (active slots times outputs) whose Hessian the stage sums: a matrix of 2048**2
# numbers is 32 MiB, its Cholesky factor a few hundredths of a second, and summing it costs about
# examples x (a row's slots x outputs)**2 multiplications a pass, which on the suite's small tasks is
# less than the passes it saves.
NEWTON_PARAMETERS = 2048
# The ridge added to the Hessian's diagonal, relative to its mean, when a direction has no curvature
# (softmax's common shift of the bias row, a slot without examples and without penalty): the solve
# stays defined, and the step along such a direction stays small.
RIDGE = 1e-10
# The most entries of the weighted copies of a batch's rows that one matrix product of batch_hessian takes.
BLOCK_ENTRIES = 1 << 22


# The most multiplications (about examples x parameters**2) a pass may spend summing the Hessian at one
# point: a few tenths of a second here. Past it a Newton step costs more than the L-BFGS passes it saves
# (a million examples of 2048 parameters would take hours a pass).
HESSIAN_BUDGET = 2e9


def affordable(examples: int, parameters: int) -> bool:
    """Whether Newton steps suit a model of ``parameters`` parameters over ``examples`` examples a pass.

    >>> affordable(1438, 650), affordable(1_000_000, 2048), affordable(100, 4096)
    (True, False, False)
    """
    return parameters <= NEWTON_PARAMETERS and examples * parameters**2 <= HESSIAN_BUDGET


def batch_hessian(columns: np.ndarray, second: np.ndarray, probabilities: np.ndarray | None = None) -> np.ndarray:
    """The Hessian over a batch's used slots (dense ``columns``: examples x slots, the bias's column
    included), flattened slot-major. One output: ``second`` (examples x 1) is each example's
    importance-weighted second derivative. Softmax: ``probabilities`` (examples x classes) and
    ``second`` each example's importance (examples x 1).

    >>> columns = np.array([[1.0, 1.0], [1.0, 0.0]])
    >>> p = np.array([[0.5, 0.5], [0.9, 0.1]])
    >>> h = batch_hessian(columns, np.ones((2, 1)), p)
    >>> h.shape, bool(np.allclose(h, h.T)), bool(np.allclose(h.sum(axis=1), 0.0))  # rows of a shift sum to 0
    ((4, 4), True, True)
    """
    examples, slots = columns.shape
    if probabilities is None:
        return columns.T @ (columns * second[:, :1])
    classes = probabilities.shape[1]
    upper_a, upper_b = np.triu_indices(classes)
    # Each example's factor for each block (a, b), a <= b: c_i (p_a [a == b] - p_a p_b).
    weighted = probabilities * second[:, :1]
    factors = -weighted[:, upper_a] * probabilities[:, upper_b]
    factors[:, upper_a == upper_b] += weighted
    pairs = len(upper_a)
    blocks = np.zeros((slots, slots * pairs))
    # every block in one matrix product (a few rows at a time: the weighted copies are slots x pairs wide)
    chunk = max(1, BLOCK_ENTRIES // max(slots * pairs, 1))
    for start in range(0, examples, chunk):
        rows = columns[start : start + chunk]
        scaled = (rows[:, :, None] * factors[start : start + chunk, None, :]).reshape(len(rows), slots * pairs)
        blocks += rows.T @ scaled
    blocks = blocks.reshape(slots, slots, pairs)
    hessian = np.empty((slots, classes, slots, classes))
    hessian[:, upper_a, :, upper_b] = blocks.transpose(2, 0, 1)
    hessian[:, upper_b, :, upper_a] = blocks.transpose(2, 1, 0)
    return hessian.reshape(slots * classes, slots * classes)


def newton_direction(hessian: np.ndarray, gradient: np.ndarray) -> np.ndarray | None:
    """``-H^-1 g`` for the penalised ``hessian`` (symmetric, positive semi-definite), with a ridge of
    :data:`RIDGE` times its mean diagonal (more when it is singular); None when it cannot be solved.
    (numpy's solver, not scipy's Cholesky: each bundles its own BLAS, and scipy's threads waited on
    numpy's, still spinning after the Hessian's products: 22 ms for 275 parameters instead of 1.)

    >>> h = np.array([[2.0, 0.0], [0.0, 0.0]])  # no curvature along the second direction
    >>> np.round(newton_direction(h, np.array([2.0, 0.0])), 6)
    array([-1., -0.])
    """
    scale = float(np.mean(np.diag(hessian))) if len(hessian) else 0.0
    if not (np.isfinite(scale) and scale > 0):
        return None
    ridge = RIDGE * scale
    for _ in range(6):
        try:
            direction = -np.linalg.solve(hessian + ridge * np.eye(len(hessian)), gradient)
        except np.linalg.LinAlgError:
            ridge *= 100.0
            continue
        return direction if np.all(np.isfinite(direction)) else None
    return None
