"""Anytime quality: explained variance against cost, alpha-timeliness and the Oracle re-ordering.

Section 5.2 of Hu et al. measures an anytime sequencing by the area under its
explained-variance-against-cost curve, normalised, up to the alpha-stopping
cost: the cost at which the reference sequencing (CS-G-OMP in the paper)
first reaches ``alpha`` of its final training objective. Curves start at
(0, 0), join their prefixes' points by straight lines, are cut at the
stopping cost with the paper's interpolation rule (the value at the stopping
cost interpolated linearly between the prefixes either side) and continue
flat after their last group. Here the area is divided by the stopping cost,
so a timeliness is the curve's mean explained-variance fraction over the
budgets up to the stopping cost: 1 would explain everything at no cost.

``alpha`` is the paper's plateau rule when not given: the smallest of 0.95,
0.96, ..., 0.99 at which the reference has reached 95% of its final value and
the next 1% costs more than 20% of the total cost (1 if there is no plateau).

The Oracle re-orders a curve's groups by their marginal gain per unit cost,
as if the gains stayed the same in the new order (Karayev et al.): an
approximate upper bound of what an ordering of those groups achieves.

>>> import numpy as np
>>> costs, values = np.array([0.0, 1.0, 3.0, 4.0]), np.array([0.0, 0.2, 0.8, 0.9])
>>> round(timeliness(costs, values, stop=3.0), 4)          # (0.1 + 1.0) / 3
0.3667
>>> oracle_curve(costs, values)[1].round(6).tolist()             # 0.6 for 2, then 0.2 / 1, 0.1 / 1
[0.0, 0.6, 0.8, 0.9]
>>> stopping_cost(costs, values, alpha=0.85)               # the first prefix with >= 0.85 * 0.9
3.0
"""

from __future__ import annotations

import dataclasses

import numpy as np

PLATEAU_ALPHAS = (0.95, 0.96, 0.97, 0.98, 0.99)


def value_at(costs: np.ndarray, values: np.ndarray, budget: float) -> float:
    """The curve's value at ``budget``: linear between prefixes, flat after the last."""
    return float(np.interp(budget, costs, values, right=values[-1]))


def timeliness(costs: np.ndarray, values: np.ndarray, *, stop: float) -> float:
    """Area under the curve from 0 to ``stop`` divided by ``stop`` (see the module docstring)."""
    costs, values = np.asarray(costs, dtype=np.float64), np.asarray(values, dtype=np.float64)
    if not stop > 0:
        raise ValueError(f"the stopping cost must be > 0, got {stop}")
    inside = costs < stop
    points_x = np.concatenate([costs[inside], [stop]])
    points_y = np.concatenate([values[inside], [value_at(costs, values, stop)]])
    return float(np.trapezoid(points_y, points_x) / stop)


def stopping_cost(costs: np.ndarray, values: np.ndarray, *, alpha: float) -> float:
    """The cumulative cost of the first prefix whose value reaches ``alpha`` of the curve's final value."""
    if not 0 < alpha <= 1:
        raise ValueError(f"alpha must be in (0, 1], got {alpha}")
    costs, values = np.asarray(costs, dtype=np.float64), np.asarray(values, dtype=np.float64)
    target = alpha * values[-1]
    reached = np.flatnonzero(values[1:] >= target - 1e-12 * abs(target))
    return float(costs[1:][reached[0]]) if len(reached) else float(costs[-1])


def plateau_alpha(costs: np.ndarray, values: np.ndarray) -> float:
    """The paper's choice of alpha: where 95% is reached and the next 1% costs > 20% of the total."""
    total = float(costs[-1])
    if total <= 0 or values[-1] <= 0:
        return 1.0
    for alpha in PLATEAU_ALPHAS:
        here = stopping_cost(costs, values, alpha=alpha)
        further = stopping_cost(costs, values, alpha=min(alpha + 0.01, 1.0))
        if further - here > 0.2 * total:
            return alpha
    return 1.0


def oracle_curve(costs: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The curve's groups re-ordered by marginal gain per unit cost (ties keep their order)."""
    costs, values = np.asarray(costs, dtype=np.float64), np.asarray(values, dtype=np.float64)
    spent, gains = np.diff(costs), np.diff(values)
    rate = np.where(spent > 0, gains / np.where(spent > 0, spent, 1.0), np.where(gains > 0, np.inf, 0.0))
    order = np.argsort(-rate, kind="stable")
    # From the curve's own start: a held-out curve starts at the training mean's value, not exactly 0.
    return (
        np.concatenate([[costs[0]], costs[0] + np.cumsum(spent[order])]),
        np.concatenate([[values[0]], values[0] + np.cumsum(gains[order])]),
    )


@dataclasses.dataclass
class HeldOutCurve:
    """Importance-weighted squared errors of every prefix (column 0: the training mean) on held-out data.

    Partial curves from different batches merge by summation;
    :meth:`explained_variance` is ``1 - SSE / SST`` per prefix, SST about the
    held-out mean.
    """

    squared_errors: np.ndarray
    n: float = 0.0
    sum_y: float = 0.0
    sum_y2: float = 0.0
    examples: int = 0

    @classmethod
    def of(cls, predictions: np.ndarray, labels: np.ndarray, weights: np.ndarray | None = None) -> HeldOutCurve:
        """The partial curve of one batch's predictions (n x prefixes+1)."""
        weights = np.ones(len(labels)) if weights is None else np.asarray(weights, dtype=np.float64)
        residuals = predictions - labels[:, None]
        return cls(
            weights @ residuals**2,
            float(weights.sum()),
            float(weights @ labels),
            float(weights @ labels**2),
            len(labels),
        )

    def merge(self, others) -> HeldOutCurve:
        for other in others:
            self.squared_errors = self.squared_errors + other.squared_errors
            self.n += other.n
            self.sum_y += other.sum_y
            self.sum_y2 += other.sum_y2
            self.examples += other.examples
        return self

    def explained_variance(self) -> np.ndarray:
        if not self.n > 0:
            raise ValueError("no held-out examples")
        total = self.sum_y2 - self.sum_y**2 / self.n
        # Relative to y'y: a constant response leaves only rounding (e.g. 1e-17) here.
        if not total > 1e-12 * self.sum_y2:
            raise ValueError("the held-out response is constant: explained variance is undefined")
        return 1.0 - self.squared_errors / total
