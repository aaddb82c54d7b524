"""The AUC of Evaluation: exact up to its cap of distinct scores, then in bounded memory within its stated bound."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from polybeam.learners.evaluation import Evaluation, bucketed, key_scores, score_keys


def pairwise_auc(scores, labels, weights) -> float:
    """The AUC by its definition, over every positive-negative pair (ties count one half); slow and plain."""
    wins = total = 0.0
    for s_p, y_p, w_p in zip(scores, labels, weights):
        if y_p <= 0:
            continue
        for s_n, y_n, w_n in zip(scores, labels, weights):
            if y_n > 0:
                continue
            total += w_p * w_n
            wins += w_p * w_n * (1.0 if s_p > s_n else 0.5 if s_p == s_n else 0.0)
    return wins / total


finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
examples = st.lists(st.tuples(finite, st.booleans(), st.floats(0.1, 3.0)), min_size=2, max_size=60)


def evaluation(rows, cap: int) -> Evaluation:
    result = Evaluation("logistic")
    result.max_distinct = cap
    for start in range(0, len(rows), 7):  # in several batches, so folds and coarsening interleave
        part = rows[start : start + 7]
        result.add(
            np.array([1.0 if y else -1.0 for _, y, _ in part]),
            np.array([s for s, _, _ in part]),
            np.array([w for _, _, w in part]),
        )
    return result


def columns(rows):
    return (
        np.array([s for s, _, _ in rows]),
        np.array([1.0 if y else -1.0 for _, y, _ in rows]),
        np.array([w for _, _, w in rows]),
    )


@settings(max_examples=150, deadline=None)
@given(rows=examples, cap=st.integers(2, 8))
def test_a_capped_auc_is_within_its_bound_and_keeps_at_most_the_cap(rows, cap):
    scores, labels, weights = columns(rows)
    if not ((labels > 0).any() and (labels < 0).any()):
        return
    result = evaluation(rows, cap)
    auc = result.auc()
    assert len(result.scores) <= cap
    assert abs(auc - pairwise_auc(scores, labels, weights)) <= result.auc_error_bound() + 1e-12
    # What it computes is exactly the AUC of the scores in their buckets.
    assert auc == pytest_approx(pairwise_auc(bucketed(scores, result.shift), labels, weights))


@settings(max_examples=100, deadline=None)
@given(parts=st.lists(examples, min_size=2, max_size=4), cap=st.integers(2, 8))
def test_merged_capped_evaluations_are_the_bucketed_auc_of_all_the_data(parts, cap):
    merged = evaluation(parts[0], cap).merge([evaluation(part, cap) for part in parts[1:]])
    scores, labels, weights = columns([row for part in parts for row in part])
    if not ((labels > 0).any() and (labels < 0).any()):
        return
    assert merged.auc() == pytest_approx(pairwise_auc(bucketed(scores, merged.shift), labels, weights))
    assert len(merged.scores) <= cap


def test_exact_below_the_cap():
    rng = np.random.default_rng(1)
    scores, labels, weights = rng.normal(size=300), np.where(rng.random(300) < 0.4, 1.0, -1.0), rng.random(300) + 0.5
    result = Evaluation("logistic").add(labels, scores, weights)
    assert result.shift == 0 and result.auc_error_bound() == 0.0
    assert abs(result.auc() - pairwise_auc(scores, labels, weights)) < 1e-12


def test_millions_of_distinct_scores_stay_under_the_cap():
    rng = np.random.default_rng(0)
    result = Evaluation("logistic")
    result.max_distinct = 1 << 14
    for _ in range(20):
        labels = np.where(rng.random(100_000) < 0.5, 1.0, -1.0)
        result.add(labels, rng.normal(size=100_000) + 0.8 * labels)
    assert len(result.scores) <= 1 << 14 and result.shift > 0
    # Continuous scores: two million examples in 16k buckets move the AUC by at most ~1e-4; the
    # AUC of two unit normals 1.6 apart is Phi(1.6 / sqrt(2)) = 0.8711.
    assert result.auc_error_bound() < 2e-4 and abs(result.auc() - 0.8711) < 0.002


def test_score_keys_round_trip_and_keep_order():
    scores = np.array([-np.inf, -1e300, -2.5, -5e-324, 0.0, 5e-324, 1.0, 1e300, np.inf])
    keys = score_keys(scores)
    assert (np.diff(keys) > 0).all() and np.array_equal(key_scores(keys), scores)
    assert score_keys(np.array([-0.0]))[0] == score_keys(np.array([0.0]))[0]  # equal scores, one key


def pytest_approx(value):
    import pytest

    return pytest.approx(value, abs=1e-12)
