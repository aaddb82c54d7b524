"""The fast sequencers against the slow reference, and their handling of singular groups."""

import numpy as np
import pytest

from polybeam.selection.group_lasso import entry_order
from polybeam.selection.sequencing import METHODS, method_whitens, sequence
from polybeam.selection.whitening import GroupBasis
from tests.selection.reference_sequencing import reference_lasso_order, reference_sequence


def correlated_problem(seed, sizes=(3, 1, 4, 2, 3, 2), n=400):
    """Standardised C and b of grouped data: correlated within groups, the response linear plus noise."""
    rng = np.random.default_rng(seed)
    blocks = []
    for size in sizes:
        shared = rng.normal(size=(n, 1))
        blocks.append(rng.uniform(0.3, 0.9) * shared + rng.normal(size=(n, size)))
    x = np.hstack(blocks)
    y = x @ rng.normal(size=x.shape[1]) * rng.uniform(0.2, 1.0) + rng.normal(size=n)
    x = (x - x.mean(0)) / x.std(0)
    y = (y - y.mean()) / y.std()
    gram, b = x.T @ x / n, x.T @ y / n
    group_of_column = np.repeat(np.arange(len(sizes)), sizes)
    costs = rng.uniform(0.5, 5.0, size=len(sizes))
    return gram, b, group_of_column, costs


GREEDY = [method for method in METHODS if method != "sparse"]


@pytest.mark.parametrize("method", GREEDY)
@pytest.mark.parametrize("ridge", [0.0, 1e-3, 0.5])
@pytest.mark.parametrize("seed", range(6))
def test_greedy_methods_match_the_reference(method, ridge, seed):
    gram, b, group_of_column, costs = correlated_problem(seed)
    fast = sequence(gram, b, group_of_column, costs, method=method, ridge=ridge)
    slow = reference_sequence(
        gram, b, group_of_column, costs, method=method, ridge=ridge, whiten=method_whitens(method)
    )
    assert fast.order == [group for group, _, _ in slow]
    assert not fast.skipped
    for step, (_, weights, objective) in zip(fast.steps, slow):
        np.testing.assert_allclose(step.weights, weights, rtol=0, atol=1e-8)
        assert step.objective == pytest.approx(objective, abs=1e-8)
        w = step.weights
        assert step.explained_variance == pytest.approx(2 * w @ b - w @ gram @ w, abs=1e-8)


@pytest.mark.parametrize("method", ["cs-g-omp", "cs-g-fr", "doubling"])
def test_switching_whitening_off_matches_the_unwhitened_reference(method):
    gram, b, group_of_column, costs = correlated_problem(11)
    fast = sequence(gram, b, group_of_column, costs, method=method, ridge=1e-2, whiten=False)
    slow = reference_sequence(gram, b, group_of_column, costs, method=method, ridge=1e-2, whiten=False)
    assert fast.order == [group for group, _, _ in slow]
    for step, (_, weights, _) in zip(fast.steps, slow):
        np.testing.assert_allclose(step.weights, weights, rtol=0, atol=1e-8)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("ridge", [0.0, 1e-2])
def test_sparse_follows_the_group_lasso_path(seed, ridge):
    gram, b, group_of_column, costs = correlated_problem(seed, sizes=(2, 1, 3, 2, 2))
    basis = GroupBasis.build(gram, b, group_of_column)
    fast = entry_order(basis, costs, ridge=ridge, points=30)
    slow = reference_lasso_order(gram, b, group_of_column, costs, ridge=ridge, points=30)
    assert fast == slow
    result = sequence(gram, b, group_of_column, costs, method="sparse", ridge=ridge, lasso_points=30)
    reference = reference_sequence(gram, b, group_of_column, costs, method="sparse", ridge=ridge, lasso_order=slow)
    assert result.order == slow
    for step, (_, weights, _objective) in zip(result.steps, reference):
        np.testing.assert_allclose(step.weights, weights, rtol=0, atol=1e-8)


def test_forward_regression_gains_are_the_exact_marginal_gains():
    gram, b, group_of_column, costs = correlated_problem(3)
    result = sequence(gram, b, group_of_column, costs, method="cs-g-fr", ridge=0.0)
    objectives = [step.objective for step in result.steps]
    assert all(later >= earlier - 1e-12 for earlier, later in zip(objectives, objectives[1:]))
    full = np.linalg.solve(gram, b) @ b
    assert objectives[-1] == pytest.approx(full, abs=1e-10)


def test_doubling_never_more_than_doubles_the_total_cost():
    # Section 4's example: independent X_i of cost i, Y = sum e^i X_i. Forward regression buys the most
    # expensive item first; Doubling buys item 1, then 2, 3, then the dearest that at most doubles the total.
    size = 12
    scales = np.exp(np.arange(1, size + 1))
    gram = np.eye(size)
    b = scales / np.sqrt(np.sum(scales**2))
    costs = np.arange(1, size + 1, dtype=float)
    groups = np.arange(size)
    assert sequence(gram, b, groups, costs, method="cs-g-fr").order[0] == size - 1
    order = sequence(gram, b, groups, costs, method="doubling").order
    assert order[:5] == [0, 1, 2, 5, 11]
    spent = 0.0
    for group in order:
        assert costs[group] <= max(spent, 1.0) or costs[group] == min(costs[g] for g in order[order.index(group) :])
        spent += costs[group]


@pytest.mark.parametrize("ridge", [0.0, 1e-6])
def test_duplicate_and_constant_groups_are_skipped_with_a_reason(ridge):
    gram, b, group_of_column, costs = correlated_problem(5, sizes=(2, 3, 2))
    # Column blocks: a copy of group 0 as group 3, and a constant group 4.
    gram = np.block(
        [[gram, gram[:, :2], np.zeros((7, 1))], [gram[:2, :], gram[:2, :2], np.zeros((2, 1))], [np.zeros((1, 10))]]
    )
    b = np.concatenate([b, b[:2], [0.0]])
    group_of_column = np.concatenate([group_of_column, [3, 3, 4]])
    costs = np.concatenate([costs, [costs[0] * 0.99, 1.0]])
    constant = np.diag(gram) == 0
    for method in METHODS:
        result = sequence(
            gram, b, group_of_column, costs, method=method, ridge=ridge, constant=constant, lasso_points=20
        )
        reasons = {skip.group: skip.reason for skip in result.skipped}
        assert "constant" in reasons[4]
        # Whichever of the two copies comes second is the duplicate.
        assert (0 in result.order) != (3 in result.order)
        duplicate = 3 if 0 in result.order else 0
        assert duplicate in reasons and "linear combinations" in reasons[duplicate], (method, reasons)
        assert sorted(result.order + list(reasons)) == [0, 1, 2, 3, 4]
        final = result.steps[-1].weights
        full = np.linalg.lstsq(gram[:7, :7], b[:7], rcond=None)[0]
        # Whatever was kept, the final model predicts like least squares on all distinct features.
        np.testing.assert_allclose(
            gram @ final,
            np.concatenate([gram[:7, :7] @ full, gram[:2, :7] @ full, [0.0]]),
            atol=1e-5 if ridge else 1e-8,
        )


def test_duplicate_features_within_a_group_keep_the_group_rank():
    gram, b, group_of_column, costs = correlated_problem(8, sizes=(2, 2))
    # Group 0 gets a third feature equal to its first.
    gram = np.insert(np.insert(gram, 2, gram[0], axis=0), 2, np.insert(gram[:, 0], 2, 1.0), axis=1)
    b = np.insert(b, 2, b[0])
    group_of_column = np.array([0, 0, 0, 1, 1])
    for method in METHODS:
        result = sequence(gram, b, group_of_column, costs, method=method, lasso_points=20)
        assert not result.skipped
        assert {step.group: step.directions for step in result.steps}[0] == 2
        final = result.steps[-1].weights
        reduced = np.linalg.solve(gram[np.ix_([0, 1, 3, 4], [0, 1, 3, 4])], b[[0, 1, 3, 4]])
        np.testing.assert_allclose(gram @ final, gram[:, [0, 1, 3, 4]] @ reduced, atol=1e-8)


def test_unknown_method_and_bad_ridge_fail_clearly():
    gram, b, group_of_column, costs = correlated_problem(0)
    with pytest.raises(ValueError, match="choose one of cs-g-omp"):
        sequence(gram, b, group_of_column, costs, method="omp")
    with pytest.raises(ValueError, match="ridge"):
        sequence(gram, b, group_of_column, costs, ridge=-1.0)
