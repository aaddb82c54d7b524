"""The SSM index: the kernel's sums equal a plain-Python reference, and apple's ssm rule finds interactions."""

from __future__ import annotations

import numpy as np
import pytest

from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.linear import LinearLearner
from polybeam.learners.monomials import Monomial
from polybeam.learners.polynomial import PolynomialLearner
from polybeam.learners.ssm import PRIOR, ResidualStatistics, residuals_squared

BITS = 10


def random_batch(rng, n=60, labels=None):
    rows = []
    for _ in range(n):
        slots = rng.choice(np.arange(1, 40), size=rng.integers(1, 6), replace=False)
        rows.append(
            (
                float(rng.choice([-1.0, 1.0]) if labels is None else rng.integers(1, labels + 1)),
                {int(s): float(rng.normal()) for s in slots},
            )
        )
    return ExampleBatch.from_rows(rows, bits=BITS, weights=rng.uniform(0.5, 2.0, size=n))


def reference_index(batches, residuals):
    """E[r^2 m^2] / E[m^2] per slot, with PRIOR pseudo-occurrences at the mean r^2, in plain Python."""
    r2x2, x2, count, total_r2, total_w = {}, {}, {}, 0.0, 0.0
    for batch, r2 in zip(batches, residuals):
        for row in range(len(batch)):
            w = batch.weights[row]
            total_r2 += w * r2[row]
            total_w += w
            slots, values = batch.row(row)
            for slot, value in zip(slots.tolist(), values.tolist()):
                r2x2[slot] = r2x2.get(slot, 0.0) + w * r2[row] * value**2
                x2[slot] = x2.get(slot, 0.0) + w * value**2
                count[slot] = count.get(slot, 0.0) + w
    mean_r2 = total_r2 / total_w
    index = {}
    for slot in x2:
        prior = PRIOR * x2[slot] / count[slot]
        index[slot] = (r2x2[slot] + mean_r2 * prior) / (x2[slot] + prior)
    return index


def test_the_index_matches_a_plain_python_reference():
    rng = np.random.default_rng(3)
    batches = [random_batch(rng) for _ in range(3)]
    residuals = [rng.exponential(size=len(batch)) for batch in batches]
    stats = ResidualStatistics(BITS)
    for batch, r2 in zip(batches, residuals):
        stats.add(batch, r2)
    index = stats.index()
    expected = reference_index(batches, residuals)
    assert set(np.flatnonzero(index).tolist()) == set(expected)
    for slot, value in expected.items():
        assert index[slot] == pytest.approx(value, rel=1e-12)
    stats.reset()
    assert not stats.index().any()


@pytest.mark.parametrize("loss", ["squared", "logistic", "hinge"])
def test_residuals_are_the_loss_gradient_at_the_current_prediction(loss):
    rng = np.random.default_rng(4)
    # (without centring's guard, as apple's learners, the SSM rule's users, have none)
    config = LearnerConfig(loss=loss, bits=BITS, learning_rate=0.5)
    learner = LinearLearner(config, centring_guard=False).learn(random_batch(rng, 200))
    batch = random_batch(rng)
    margins = learner.margins(batch)
    expected = []
    for p, y in zip(margins, batch.labels):
        if loss == "squared":
            low = min(learner.stats_[7], y)
            high = max(learner.stats_[8], y)
            expected.append((2 * (min(max(p, low), high) - y)) ** 2)
        elif loss == "logistic":
            expected.append((y / (1 + np.exp(y * p))) ** 2)
        else:
            expected.append(1.0 if y * p < 1 else 0.0)
    assert residuals_squared(learner, batch) == pytest.approx(np.array(expected), rel=1e-9, abs=1e-12)


def test_softmax_residuals_are_the_squared_probability_error():
    rng = np.random.default_rng(5)
    config = LearnerConfig(loss="softmax", classes=3, bits=BITS, learning_rate=0.5)
    learner = LinearLearner(config, centring_guard=False).learn(random_batch(rng, 200, labels=3))
    batch = random_batch(rng, labels=3)
    probabilities = learner.predict(batch)
    onehot = np.eye(3)[batch.labels.astype(int) - 1]
    assert residuals_squared(learner, batch) == pytest.approx(((probabilities - onehot) ** 2).sum(axis=1), rel=1e-9)


def test_the_ssm_rule_finds_an_interaction_that_weights_cannot_see():
    # y = x1 * (2 x2 - 1) with P(x1 = 1) = 0.2, among six binary features (regression). The
    # best linear model is -0.2 + 0.4 x2: x1's weight is 0, so the weight rule has nothing to
    # go on, but the residual 2 (x1 - 0.2)(x2 - 0.5) is 4 times larger where x1 is on. SSM
    # makes x1 the first parent, and x1*x2 explains the label.
    rng = np.random.default_rng(0)
    x = rng.random((20000, 6)) < np.array([0.2, 0.5, 0.5, 0.5, 0.5, 0.5])
    rows = [(float(r[0]) * (2.0 * r[1] - 1.0), {i + 1: 1.0 for i in np.flatnonzero(r)}) for r in x]
    data = ExampleBatch.from_rows(rows, bits=BITS)
    config = LearnerConfig(
        loss="squared",
        bits=BITS,
        step="adaptive",
        learning_rate=0.5,
        expand="apple",
        expand_rule="ssm",
        alpha=0.5,
        repeat_factors=False,
    )
    learner = PolynomialLearner(config, total=len(data)).learn(data)
    assert learner.parents[0] == Monomial.of([1])
    linear = LinearLearner(config.replace(expand="none")).fit(data)
    assert learner.progressive_loss < 0.5 * linear.progressive_loss
    heaviest = learner.to_model().top_weights(3)
    assert any(entry["name"] == "w1*w2" for entry in heaviest)
