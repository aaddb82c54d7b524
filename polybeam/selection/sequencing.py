"""Cost-sensitive feature group sequencing (Hu, Grubb, Bagnell and Hebert): CS-G-OMP, CS-G-FR, Doubling.

Given the standardised problem (correlation matrix C, correlations b; see
:mod:`polybeam.selection.standardize`), groups of its columns and their
costs, a sequencer orders the groups greedily; every prefix of the order is an
anytime model, the ridge solution ``w(S) = (C_S + ridge I)^-1 b_S`` over the
groups chosen so far, whose explained variance ``F(S) = b_S' w(S)`` is the
objective. Methods:

============ ==================================================================
cs-g-omp     Algorithm 1: the whitened gradient per unit cost, ``b_g' C_g^-1 b_g / c(g)``
             with ``b = b - C_{.S} w(S)`` the gradient of F at the current model
cs-g-fr      the gain in F per unit cost, ``(F(S + g) - F(S)) / c(g)``
doubling     Algorithm 2: CS-G-FR among the groups that cost at most what is chosen
             so far (the cheapest groups at the start), so the total at most doubles
no-whiten    ``||b_g||^2 / c(g)`` over individually standardised features
single       ``||b_g||_inf^2 / c(g)``: the group's best single feature
g-omp        ``b_g' C_g^-1 b_g``: group OMP, blind to costs
sparse       the order in which groups enter the cost-weighted group lasso path
             (:mod:`polybeam.selection.group_lasso`); models are the same ridge refits
============ ==================================================================

Everything works in each group's basis (:mod:`polybeam.selection.whitening`:
whitened by default, so ``C_g = I`` and the OMP score is ``||b_g||^2``). The
selected block's Cholesky factor ``L L' = C_S + ridge I`` grows by one block
per group (``K = L^-1 C_{S,g}``, ``L_g = chol(C_g + ridge I - K'K)``), as
scikit-learn's Gram OMP grows it by one atom, and ``z = L^-1 b_S`` gives both
the model (``L' w = z``) and the objective ``F = ||z||^2``. CS-G-FR keeps, for
every column, ``L^-1 C_{S,.}`` and every candidate group's Schur complement
``C_g + ridge I - K_g'K_g``, each updated by the new block rows when a group
is chosen, so a candidate's gain ``b_g' Schur_g^-1 b_g`` never refactors
anything from scratch.

A group is skipped with a reason, never a crash: when all its features are
constant, or when, at the moment it would be chosen, its features are (up to
``tolerance`` of their variance) combinations of the groups already chosen
(duplicates); directions of a group that are partly so are dropped, the rest
is used. The dependence is judged without the ridge, which makes any system
invertible.

>>> import numpy as np
>>> gram = np.array([[1.0, 0.9, 0.0], [0.9, 1.0, 0.0], [0.0, 0.0, 1.0]])
>>> result = sequence(gram, np.array([0.6, 0.6, 0.3]), np.array([0, 1, 2]), np.array([1.0, 1.0, 0.5]),
...                   method="cs-g-fr", ridge=0.0)
>>> [step.group for step in result.steps], [round(step.objective, 4) for step in result.steps]
([0, 2, 1], [0.36, 0.45, 0.4689])
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.linalg import solve_triangular

from polybeam.selection.cholesky import GrowingCholesky
from polybeam.selection.group_lasso import entry_order
from polybeam.selection.methods import METHODS
from polybeam.selection.methods import UNWHITENED as _UNWHITENED
from polybeam.selection.whitening import DEFAULT_TOLERANCE, GroupBasis


@dataclasses.dataclass(frozen=True)
class Step:
    """One prefix: the group added, the model over the groups so far (standardised units) and its quality."""

    group: int
    weights: np.ndarray  # over all D columns of the problem, zero outside the prefix
    objective: float  # F(S) = b_S' (C_S + ridge I)^-1 b_S, what the greedy choice maximises
    explained_variance: float  # 2 w'b - w'Cw: the training variance fraction the model explains
    directions: int  # basis directions of the group used (its rank, less any dependent on earlier groups)


@dataclasses.dataclass(frozen=True)
class Skipped:
    group: int
    reason: str


@dataclasses.dataclass(frozen=True)
class SequenceResult:
    method: str
    ridge: float
    whiten: bool
    steps: tuple[Step, ...]
    skipped: tuple[Skipped, ...]

    @property
    def order(self) -> list[int]:
        return [step.group for step in self.steps]


def method_whitens(method: str, whiten: bool | None = None) -> bool:
    """Whether ``method`` works in whitened group bases (``whiten`` overrides the method's default)."""
    check_method(method)
    if method in _UNWHITENED:
        return False
    return True if whiten is None else bool(whiten)


def check_method(method: str) -> None:
    if method not in METHODS:
        raise ValueError(f"unknown sequencing method {method!r}; choose one of {', '.join(METHODS)}")


def sequence(
    gram: np.ndarray,
    correlations: np.ndarray,
    group_of_column: np.ndarray,
    costs: np.ndarray,
    *,
    method: str = "cs-g-omp",
    ridge: float = 0.0,
    whiten: bool | None = None,
    constant: np.ndarray | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
    minimum_cost: float | None = None,
    total_variance: float = 1.0,
    lasso_points: int = 100,
    names: list[str] | None = None,
) -> SequenceResult:
    """Order every group of the problem ``(gram, correlations)`` by ``method`` (see the module docstring).

    ``minimum_cost`` is Algorithm 2's c_min (default: the cheapest group's
    cost); ``total_variance`` scales explained variance to a fraction (1 for a
    standardised response); ``names`` name the groups in skip reasons.
    """
    whitened = method_whitens(method, whiten)
    if not (np.isfinite(ridge) and ridge >= 0):
        raise ValueError(f"ridge must be a finite number >= 0, got {ridge}")
    costs = np.asarray(costs, dtype=np.float64)
    basis = GroupBasis.build(
        gram, correlations, group_of_column, whiten=whitened, constant=constant, tolerance=tolerance
    )
    if len(costs) != len(basis.columns):
        raise ValueError(f"{len(costs)} costs for {len(basis.columns)} groups")
    skipped = [
        Skipped(group, "all its features are constant in the training data")
        for group in np.flatnonzero(basis.ranks == 0).tolist()
    ]
    run = _Run(basis, costs, ridge, tolerance, total_variance, names)
    if method == "sparse":
        order = entry_order(basis, costs, ridge=ridge, points=lasso_points)
        for group in order:
            if basis.ranks[group] > 0:
                run.add(group)
    elif method in ("cs-g-fr", "doubling"):
        _forward_regression(run, doubling=method == "doubling", minimum_cost=minimum_cost)
    else:
        _matching_pursuit(run, method)
    return SequenceResult(method, float(ridge), whitened, tuple(run.steps), tuple(skipped + run.skipped))


class _Run:
    """The growing factor of the selected block and the prefixes recorded so far."""

    def __init__(
        self,
        basis: GroupBasis,
        costs: np.ndarray,
        ridge: float,
        tolerance: float,
        total_variance: float,
        names: list[str] | None = None,
    ):
        self.basis = basis
        self.names = names if names is not None else [str(group) for group in range(len(costs))]
        self.costs = costs
        self.ridge = ridge
        self.tolerance = tolerance
        self.total_variance = total_variance
        size = basis.offsets[-1]
        self.factor = GrowingCholesky(size)  # L, L L' = C_S + ridge I
        # Without the ridge, for telling dependent groups apart (the same as L when ridge = 0).
        self.plain_factor = GrowingCholesky(size) if ridge > 0 else self.factor
        self.z = np.zeros(size)
        self.selected = np.zeros(size, dtype=np.int64)  # basis columns, in the order chosen
        self.selected_gram = np.zeros((size, size), order="F")  # C[:, selected], columns appended
        self.remaining = [group for group in range(len(basis.columns)) if basis.ranks[group] > 0]
        self.chosen: list[int] = []
        self.steps: list[Step] = []
        self.skipped: list[Skipped] = []

    @property
    def size(self) -> int:
        """Basis columns selected so far (the factor's order)."""
        return self.factor.size

    def columns_of(self, group: int) -> np.ndarray:
        return np.arange(self.basis.offsets[group], self.basis.offsets[group + 1])

    @property
    def spent(self) -> float:
        return float(self.costs[self.chosen].sum())

    def weights(self) -> np.ndarray:
        """The current model over the selected basis columns: L' w = z."""
        return self.factor.backward(self.z[: self.size])

    def gradient(self) -> np.ndarray:
        """b - C_{., S} w(S) over every basis column."""
        return self.basis.correlations - self.selected_gram[:, : self.size] @ self.weights()

    def add(self, group: int) -> np.ndarray | None:
        """Append ``group`` to the prefix; its kept local directions, or None (and skipped) if dependent."""
        self.remaining.remove(group)
        columns = self.columns_of(group)
        k, gram, ridge = self.size, self.basis.gram, self.ridge
        cross = self.selected_gram[columns, :k].T  # C_{S, g}
        own = gram[np.ix_(columns, columns)]
        projection = self.factor.forward(cross)
        schur = own + ridge * np.eye(len(columns)) - projection.T @ projection
        if ridge > 0:
            plain = self.plain_factor.forward(cross)
            plain_schur = own - plain.T @ plain
        else:
            plain, plain_schur = projection, schur
        keep = _independent_directions(plain_schur, self.tolerance * np.diag(own))
        if len(keep) == 0:
            names = ", ".join(self.names[chosen] for chosen in self.chosen)
            self.skipped.append(
                Skipped(
                    group,
                    f"its features are linear combinations of the groups chosen "
                    f"before it ({names}): it adds no new direction",
                )
            )
            return None
        m = len(keep)
        block = np.linalg.cholesky(schur[np.ix_(keep, keep)])
        self.factor.append(projection[:, keep], block)
        if ridge > 0:
            self.plain_factor.append(plain[:, keep], np.linalg.cholesky(plain_schur[np.ix_(keep, keep)]))
        kept = columns[keep]
        residual = self.basis.correlations[kept] - projection[:, keep].T @ self.z[:k]
        self.z[k : k + m] = solve_triangular(block, residual, lower=True, check_finite=False)
        self.selected[k : k + m] = kept
        self.selected_gram[:, k : k + m] = gram[:, kept]
        self.chosen.append(group)
        self._record(group, m)
        return keep

    def _record(self, group: int, directions: int) -> None:
        k = self.size
        weights = self.weights()
        objective = float(self.z[:k] @ self.z[:k])
        # 2 w'b - w'Cw with C_S w = b_S - ridge w at the ridge solution, and b_S'w = ||z||^2.
        explained = objective + self.ridge * float(weights @ weights)
        self.steps.append(
            Step(
                group,
                self.basis.to_columns(weights, self.selected[:k]),
                objective / self.total_variance,
                explained / self.total_variance,
                directions,
            )
        )


def _independent_directions(schur: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """The columns a sequential Cholesky of ``schur`` keeps: each one's pivot, given the kept ones, above its threshold."""
    keep: list[int] = []
    factor = np.zeros_like(schur)
    for column in range(len(schur)):
        if keep:
            row = solve_triangular(
                factor[: len(keep), : len(keep)], schur[keep, column], lower=True, check_finite=False
            )
        else:
            row = np.zeros(0)
        pivot = schur[column, column] - row @ row
        if pivot > max(thresholds[column], 0.0):
            index = len(keep)
            factor[index, :index] = row
            factor[index, index] = np.sqrt(pivot)
            keep.append(column)
    return np.array(keep, dtype=np.int64)


def _matching_pursuit(run: _Run, method: str) -> None:
    """CS-G-OMP and its variants: score every remaining group by the gradient at the current model."""
    basis = run.basis
    group_of_basis = basis.group_of_basis
    groups = len(basis.columns)
    present = np.flatnonzero(basis.ranks > 0)
    while run.remaining:
        gradient = run.gradient()
        squared = gradient * gradient
        if method == "single":
            best = np.zeros(groups)
            best[present] = np.maximum.reduceat(squared, basis.offsets[present])
            scores = best / run.costs
        else:
            scores = np.bincount(group_of_basis, weights=squared, minlength=groups)
            if method != "g-omp":
                scores = scores / run.costs
        _add_best(run, scores)


def _add_best(run: _Run, scores: np.ndarray, allowed: np.ndarray | None = None) -> None:
    """Add the best-scoring remaining (allowed) group, skipping dependent ones, until one is added."""
    candidates = np.full(len(scores), -np.inf)
    mask = np.zeros(len(scores), dtype=bool)
    mask[run.remaining] = True
    if allowed is not None:
        mask &= allowed
    candidates[mask] = scores[mask]
    while np.any(mask):
        best = int(np.argmax(candidates))  # the first of equal scores: groups keep their given order
        mask[best] = False
        candidates[best] = -np.inf
        if run.add(best) is not None:
            return


def _forward_regression(run: _Run, *, doubling: bool, minimum_cost: float | None) -> None:
    """CS-G-FR (and Algorithm 2): the exact gain of every remaining group, kept up to date block by block."""
    basis, costs = run.basis, run.costs
    candidates = _CandidateGains(basis, run.ridge)
    gradient = basis.correlations.copy()
    rows = np.zeros_like(basis.gram)  # L^-1 C_{S,.} (ridge on the selected diagonal), one row per direction
    if minimum_cost is None:
        minimum_cost = float(costs[run.remaining].min()) if run.remaining else 0.0
    while run.remaining:
        gains = candidates.gains(gradient, run.tolerance)
        allowed = None
        if doubling:
            cap = minimum_cost if not run.chosen else run.spent
            allowed = costs <= max(cap, float(costs[run.remaining].min()))
        before = run.size
        chosen_before = len(run.chosen)
        _add_best(run, gains / costs, allowed)
        if len(run.chosen) == chosen_before:
            continue  # every allowed group was dependent (skipped): choose again among the rest
        k, m = before, run.size - before
        kept = run.selected[k : k + m]
        block = run.factor.diagonal_block(k, k + m)
        new_rows = basis.gram[kept, :].copy()
        new_rows[np.arange(m), kept] += run.ridge
        if k:
            new_rows -= run.factor.block_rows(k, k + m) @ rows[:k]
        new_rows = solve_triangular(block, new_rows, lower=True, check_finite=False)
        rows[k : k + m] = new_rows
        gradient -= new_rows.T @ run.z[k : k + m]
        candidates.downdate(new_rows)


class _CandidateGains:
    """Every group's Schur complement ``C_g + ridge I - K_g'K_g``, stacked by size for batched algebra."""

    def __init__(self, basis: GroupBasis, ridge: float):
        self.buckets = []  # (groups, their basis columns (n x r), their Schur complements (n x r x r))
        ranks = basis.ranks
        for rank in sorted(set(ranks[ranks > 0].tolist())):
            groups = np.flatnonzero(ranks == rank)
            columns = basis.offsets[groups][:, None] + np.arange(rank)[None, :]
            schur = basis.gram[columns[:, :, None], columns[:, None, :]] + ridge * np.eye(rank)
            self.buckets.append((groups, columns, schur))
        self.groups = len(ranks)

    def downdate(self, new_rows: np.ndarray) -> None:
        for _, columns, schur in self.buckets:
            block = new_rows[:, columns]  # m x n x r
            schur -= np.einsum("mni,mnj->nij", block, block)

    def gains(self, gradient: np.ndarray, tolerance: float) -> np.ndarray:
        """``b_g' Schur_g^+ b_g`` for every group (0 for rank-0 groups), over directions above ``tolerance``."""
        out = np.zeros(self.groups)
        for groups, columns, schur in self.buckets:
            values, vectors = np.linalg.eigh(schur)
            projected = np.einsum("nij,ni->nj", vectors, gradient[columns])
            usable = values > tolerance
            out[groups] = np.where(usable, projected**2 / np.where(usable, values, 1.0), 0.0).sum(axis=1)
        return out
