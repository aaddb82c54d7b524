"""The "Sparse" baseline: the order in which groups enter the cost-weighted group lasso path.

Hu et al. compare their greedy sequencers with cost-weighted group lasso
(Yuan and Lin), whose penalty scales each group's norm by its cost::

    min_w  1/2 w'(C + ridge I)w - b'w + mu * sum_g c(g) ||w_g||_2

(the least-squares risk written with the Gram statistics, so it is solved
from C and b alone, in the groups' bases of :mod:`polybeam.selection.whitening`).
Along a path of ``mu`` from ``mu_max = max_g ||b_g|| / c(g)`` (nothing
selected) down to ``mu_max * smallest`` on a geometric grid, each solution
warm-starts the next. A group's rank is the first grid point where its
weights are non-zero (groups entering at the same point by how far they break
the optimality condition ``||gradient_g|| <= mu c(g)`` there); groups that
never enter come last, by the same measure at the end of the path. The
sequencer then refits the ridge model on each prefix, as for every method.

Block coordinate descent (a numba kernel): each group's block is minimised by
a proximal step with the block's largest eigenvalue as step (exact when the
group is whitened, since then ``C_g = I``), keeping ``gradient = b - (C +
ridge I) w`` up to date column block by column block.

>>> import numpy as np
>>> from polybeam.selection.whitening import GroupBasis
>>> gram = np.eye(3)
>>> basis = GroupBasis.build(gram, np.array([0.2, 0.5, 0.4]), np.array([0, 1, 2]))
>>> entry_order(basis, np.array([1.0, 1.0, 0.5]))   # 0.4 / 0.5 beats 0.5 / 1
[2, 1, 0]
"""

from __future__ import annotations

import numba
import numpy as np

from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernels below)
from polybeam.selection.whitening import GroupBasis


def entry_order(
    basis: GroupBasis,
    costs: np.ndarray,
    *,
    ridge: float = 0.0,
    points: int = 100,
    smallest: float = 1e-4,
    tolerance: float = 1e-10,
    max_sweeps: int = 10_000,
) -> list[int]:
    """The groups in the order they enter the path (see the module docstring)."""
    _, order = lasso_path(
        basis, costs, ridge=ridge, points=points, smallest=smallest, tolerance=tolerance, max_sweeps=max_sweeps
    )
    return order


def lasso_path(
    basis: GroupBasis,
    costs: np.ndarray,
    *,
    ridge: float = 0.0,
    points: int = 100,
    smallest: float = 1e-4,
    tolerance: float = 1e-10,
    max_sweeps: int = 10_000,
) -> tuple[list[tuple[float, np.ndarray]], list[int]]:
    """The path ``[(mu, basis weights), ...]`` and the groups' entry order."""
    costs = np.asarray(costs, dtype=np.float64)
    gram = np.ascontiguousarray(basis.gram)
    correlations = basis.correlations.astype(np.float64)
    offsets = basis.offsets.astype(np.int64)
    groups = len(costs)
    present = basis.ranks > 0
    lipschitz = np.ones(groups)
    for group in np.flatnonzero(present):
        block = gram[offsets[group] : offsets[group + 1], offsets[group] : offsets[group + 1]]
        lipschitz[group] = float(np.linalg.eigvalsh(block)[-1]) + ridge
    weights = np.zeros(len(correlations))
    gradient = correlations.copy()
    violation = _group_norms(gradient, offsets) / costs
    top = float(violation[present].max()) if present.any() else 0.0
    entered_at = np.full(groups, -1)
    entry_violation = np.zeros(groups)
    path = []
    if top <= 0:
        return path, [int(g) for g in np.flatnonzero(present)]
    for point, mu in enumerate(top * smallest ** (np.arange(points) / max(points - 1, 1))):
        violation = _group_norms(gradient, offsets) / costs
        _block_descent(gram, gradient, weights, offsets, lipschitz, mu * costs, float(ridge), tolerance, max_sweeps)
        nonzero = _group_norms(weights, offsets) > 0
        new = nonzero & (entered_at < 0) & present
        entered_at[new] = point
        entry_violation[new] = violation[new]
        path.append((float(mu), weights.copy()))
    final = _group_norms(gradient, offsets) / costs
    entry_violation[entered_at < 0] = final[entered_at < 0]
    entered_at[entered_at < 0] = points
    order = sorted(np.flatnonzero(present).tolist(), key=lambda g: (entered_at[g], -entry_violation[g], g))
    return path, order


def _group_norms(vector: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    squared = np.concatenate([[0.0], np.cumsum(vector * vector)])
    return np.sqrt(np.maximum(squared[offsets[1:]] - squared[offsets[:-1]], 0.0))


@numba.njit(cache=True, nogil=True)
def _block_descent(gram, gradient, weights, offsets, lipschitz, penalties, ridge, tolerance, max_sweeps):
    """Proximal block coordinate descent to ``max |change| < tolerance``; ``gradient = b - (C + ridge I) w``."""
    size = gram.shape[0]
    groups = len(offsets) - 1
    delta = np.zeros(size)
    for _ in range(max_sweeps):
        largest = 0.0
        for group in range(groups):
            start, stop = offsets[group], offsets[group + 1]
            if stop == start:
                continue
            step = 1.0 / lipschitz[group]
            norm = 0.0
            for i in range(start, stop):
                u = weights[i] + step * gradient[i]
                delta[i] = u
                norm += u * u
            norm = np.sqrt(norm)
            shrink = 0.0
            if norm > 0.0:
                shrink = max(0.0, 1.0 - step * penalties[group] / norm)
            changed = False
            for i in range(start, stop):
                new = shrink * delta[i]
                delta[i] = new - weights[i]
                if delta[i] != 0.0:
                    changed = True
                    largest = max(largest, abs(delta[i]))
                weights[i] = new
            if changed:
                for i in range(start, stop):
                    d = delta[i]
                    if d != 0.0:
                        for row in range(size):
                            gradient[row] -= gram[i, row] * d  # symmetric: read a contiguous row
                        gradient[i] -= ridge * d
        if largest < tolerance:
            return
