"""Slow, plain-numpy reference sequencers: every score from a fresh solve, nothing incremental.

They follow the paper's definitions literally (Algorithms 1 and 2, the
variants of section 2 and the group lasso of section 5.2) so that the fast
sequencers of polybeam.selection can be checked against them on small
problems where no group is singular.
"""

from __future__ import annotations

import numpy as np


def whitening_matrix(gram, group_of_column, whiten):
    """Dense block-diagonal T with T_g' C_g T_g = I (inverse Cholesky), or the identity."""
    size = len(gram)
    transform = np.zeros((size, size))
    for group in np.unique(group_of_column):
        own = np.flatnonzero(group_of_column == group)
        if whiten:
            transform[np.ix_(own, own)] = np.linalg.inv(np.linalg.cholesky(gram[np.ix_(own, own)])).T
        else:
            transform[np.ix_(own, own)] = np.eye(len(own))
    return transform


def ridge_fit(gram, correlations, columns, ridge):
    if len(columns) == 0:
        return np.zeros(0), 0.0
    weights = np.linalg.solve(gram[np.ix_(columns, columns)] + ridge * np.eye(len(columns)), correlations[columns])
    return weights, float(correlations[columns] @ weights)


def reference_sequence(
    gram, correlations, group_of_column, costs, *, method, ridge=0.0, whiten=True, minimum_cost=None, lasso_order=None
):
    """[(group, standardised weights over all columns, objective F)] in the method's order."""
    transform = whitening_matrix(gram, group_of_column, whiten)
    basis_gram = transform.T @ gram @ transform
    basis_b = transform.T @ correlations
    groups = int(group_of_column.max()) + 1
    members = [np.flatnonzero(group_of_column == g) for g in range(groups)]
    chosen, out = [], []
    remaining = list(range(groups))
    if minimum_cost is None:
        minimum_cost = min(costs)
    while remaining:
        columns = np.concatenate([members[g] for g in chosen]) if chosen else np.zeros(0, dtype=int)
        weights, objective = ridge_fit(basis_gram, basis_b, columns, ridge)
        gradient = basis_b - basis_gram[:, columns] @ weights
        scores = {}
        for g in remaining:
            own = members[g]
            if method in ("cs-g-omp", "no-whiten", "g-omp"):
                score = float(np.sum(gradient[own] ** 2))
            elif method == "single":
                score = float(np.max(gradient[own] ** 2))
            else:  # forward regression: a fresh solve per candidate
                score = ridge_fit(basis_gram, basis_b, np.concatenate([columns, own]), ridge)[1] - objective
            scores[g] = score if method == "g-omp" else score / costs[g]
        if method == "doubling":
            cap = minimum_cost if not chosen else sum(costs[g] for g in chosen)
            cap = max(cap, min(costs[g] for g in remaining))
            scores = {g: s for g, s in scores.items() if costs[g] <= cap}
        if method == "sparse":
            best = lasso_order[len(chosen)]
        else:
            best = max(scores, key=lambda g: (scores[g], -g))
        chosen.append(best)
        remaining.remove(best)
        columns = np.concatenate([members[g] for g in chosen])
        weights, objective = ridge_fit(basis_gram, basis_b, columns, ridge)
        full = np.zeros(len(gram))
        full[columns] = weights
        out.append((best, transform @ full, objective))
    return out


def reference_lasso_order(
    gram,
    correlations,
    group_of_column,
    costs,
    *,
    ridge=0.0,
    whiten=True,
    points=100,
    smallest=1e-4,
    iterations=200_000,
    tolerance=1e-13,
):
    """Entry order along the cost-weighted group lasso path, by plain proximal gradient (ISTA) per point."""
    transform = whitening_matrix(gram, group_of_column, whiten)
    hessian = transform.T @ gram @ transform + ridge * np.eye(len(gram))
    b = transform.T @ correlations
    groups = int(group_of_column.max()) + 1
    members = [np.flatnonzero(group_of_column == g) for g in range(groups)]
    step = 1.0 / np.linalg.eigvalsh(hessian)[-1]
    top = max(np.linalg.norm(b[members[g]]) / costs[g] for g in range(groups))
    weights = np.zeros(len(b))
    entered = {}
    for point, mu in enumerate(top * smallest ** (np.arange(points) / (points - 1))):
        gradient = b - hessian @ weights
        violation = {g: np.linalg.norm(gradient[members[g]]) / costs[g] for g in range(groups)}
        for _ in range(iterations):
            u = weights + step * (b - hessian @ weights)
            new = np.zeros_like(u)
            for g in range(groups):
                norm = np.linalg.norm(u[members[g]])
                if norm > 0:
                    new[members[g]] = max(0.0, 1 - step * mu * costs[g] / norm) * u[members[g]]
            done = np.max(np.abs(new - weights)) < tolerance
            weights = new
            if done:
                break
        for g in range(groups):
            if g not in entered and np.linalg.norm(weights[members[g]]) > 0:
                entered[g] = (point, -violation[g])
    gradient = b - hessian @ weights
    for g in range(groups):
        if g not in entered:
            entered[g] = (points, -np.linalg.norm(gradient[members[g]]) / costs[g])
    return sorted(range(groups), key=lambda g: (entered[g], g))
