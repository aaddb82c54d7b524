"""The standardised problem from Gram statistics equals numpy's weighted correlations and least squares."""

from __future__ import annotations

import numpy as np
import pytest

from polybeam.learners.batch import ExampleBatch
from polybeam.selection.standardize import standardized
from polybeam.selection.statistics import GramStatistics

BITS = 8


def dense_problem(seed=0, n=400, d=5):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)) * rng.uniform(0.5, 20, size=d) + rng.normal(size=d) * 3
    x[:, 2] = 0.5 * x[:, 0] + rng.normal(size=n)  # correlated columns
    y = x @ rng.normal(size=d) + 4.0 + rng.normal(size=n)
    w = rng.uniform(0.5, 2.0, size=n)
    rows = [(float(y[i]), {j + 1: float(x[i, j]) for j in range(d)}) for i in range(n)]
    stats = GramStatistics.for_columns(np.arange(1, d + 1), bits=BITS).add(
        ExampleBatch.from_rows(rows, bits=BITS, weights=w)
    )
    return x, y, w, stats


def weighted_corr(a, b, w):
    am, bm = a - np.average(a, weights=w), b - np.average(b, weights=w)
    return np.average(am * bm, weights=w) / np.sqrt(np.average(am**2, weights=w) * np.average(bm**2, weights=w))


def test_gram_and_correlations_are_weighted_correlations():
    x, y, w, stats = dense_problem()
    problem = standardized(stats)
    d = x.shape[1]
    for i in range(d):
        assert problem.correlations[i] == pytest.approx(weighted_corr(x[:, i], y, w), rel=1e-9)
        for j in range(d):
            assert problem.gram[i, j] == pytest.approx(weighted_corr(x[:, i], x[:, j], w), rel=1e-9, abs=1e-12)


def test_a_standardised_fit_maps_back_to_weighted_least_squares():
    x, y, w, stats = dense_problem(seed=1)
    problem = standardized(stats)
    weights = np.linalg.solve(problem.gram, problem.correlations)
    raw, intercept = problem.raw_model(weights)
    design = np.column_stack([x, np.ones(len(x))])
    expected = np.linalg.lstsq(design * np.sqrt(w)[:, None], y * np.sqrt(w), rcond=None)[0]
    np.testing.assert_allclose(raw, expected[:-1], rtol=1e-8)
    assert intercept == pytest.approx(expected[-1], rel=1e-8)
    explained = 2 * weights @ problem.correlations - weights @ problem.gram @ weights
    residual = y - x @ raw - intercept
    assert explained == pytest.approx(
        1 - np.average(residual**2, weights=w) / np.cov(y, aweights=w, bias=True), rel=1e-8
    )


def test_constant_columns_explain_nothing_and_unstandardised_is_raw_moments():
    x, y, w, stats = dense_problem(seed=2)
    stats.xtx[3, :] = stats.xtx[:, 3] = 0.0  # column 4 never non-zero
    stats.sum_x[3] = 0.0
    problem = standardized(stats)
    assert problem.constant.tolist() == [False, False, False, True, False]
    assert not problem.gram[3].any() and problem.correlations[3] == 0.0
    raw = standardized(stats, standardize=False)
    np.testing.assert_allclose(raw.gram, stats.xtx / stats.n)
    np.testing.assert_allclose(raw.correlations, stats.xty / stats.n)
    with pytest.raises(ValueError, match="empty"):
        standardized(GramStatistics.for_columns(np.array([1]), bits=BITS))
