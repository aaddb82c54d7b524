"""Every step rule and loss survives adversarial input: weights stay finite, steps never go negative."""

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from polybeam.learners import kernels
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.greedy import greedy_step, softmax_greedy_step
from polybeam.learners.linear import LinearLearner
from polybeam.learners.losses import HINGE, LOGISTIC, QUANTILE, SQUARED

BITS = 6
VALUES = st.one_of(
    st.floats(-1e3, 1e3, allow_nan=False),
    # (up to the largest value a learner takes: polybeam.learners.values; beyond it learn() refuses)
    st.sampled_from([0.0, 1e-300, -1e-300, 3.4e38, -3.4e38, 1e150 / 1e112, 1e-8, 1.0, -1.0]),
)


@st.composite
def batches(draw, classes=0):
    n = draw(st.integers(1, 25))
    rows = []
    for _ in range(n):
        k = draw(st.integers(0, 6))  # empty examples included
        features = {draw(st.integers(0, (1 << BITS) - 1)): draw(VALUES) for _ in range(k)}
        if classes:
            label = float(draw(st.integers(1, classes)))
        else:
            label = draw(st.sampled_from([-1.0, 0.0, 1.0, 1.0, 1.0]))  # often single-class
        rows.append((label, features))
    importances = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 1e6]), min_size=n, max_size=n))
    return ExampleBatch.from_rows(rows, bits=BITS, weights=importances)


RULES = [
    dict(step="gsa"),
    dict(step="gsa", safe_updates=False),
    dict(step="adaptive"),
    dict(step="adaptive", normalized=False),
    dict(step="constant", learning_rate=0.1),
    dict(step="decay", learning_rate=1.0),
    dict(step="inverse", l2=0.01),
    dict(step="gsa", gravity=0.01),
    dict(step="adaptive", gravity=0.1, truncate_every=3, truncate_threshold=0.1),
    dict(step="constant", learning_rate=0.1, sparsity="round", truncate_threshold=0.01),
    dict(step="gsa", sparsity="subgradient", gravity=0.01, truncate_threshold=0.001),
]


@pytest.mark.parametrize("loss", ["squared", "logistic", "hinge", "softmax"])
@pytest.mark.parametrize("rule", RULES, ids=lambda r: "-".join(f"{k}={v}" for k, v in r.items()))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_weights_stay_finite_under_adversarial_batches(loss, rule, data):
    classes = 3 if loss == "softmax" else 0
    if loss == "softmax" and rule.get("step") == "gsa" and rule.get("safe_updates") is False:
        rule = dict(rule, safe_updates=True)  # softmax always takes plain steps; the flag is moot
    config = LearnerConfig(loss=loss, bits=BITS, classes=classes, **rule)
    learner = LinearLearner(config)
    for _ in range(data.draw(st.integers(1, 3))):
        learner.learn(data.draw(batches(classes)))
    model = learner.to_model()
    assert np.all(np.isfinite(model.dense_weights))
    # The progressive loss is a mean over importance weight: undefined (NaN) only
    # without any; extreme values may make it infinite, never NaN.
    assert not np.isnan(learner.progressive_loss) or learner.stats_[kernels.WEIGHT_SUM] == 0
    if learner.greedy_step is not None:
        assert 0.0 <= learner.greedy_step < np.inf


@settings(max_examples=300, deadline=None)
@given(
    loss=st.sampled_from([SQUARED, LOGISTIC, HINGE]),
    p=st.floats(-1e6, 1e6, allow_nan=False),
    y=st.sampled_from([-1.0, 1.0]),
    xx=st.one_of(st.floats(0, 1e308), st.just(np.inf)),
    target=st.floats(0.51, 0.999),
    exact=st.booleans(),
)
@example(loss=LOGISTIC, p=0.0, y=-1.0, xx=5e-324, target=0.75, exact=True)  # underflow, found by CI
@example(loss=LOGISTIC, p=0.0, y=1.0, xx=5e-324, target=0.75, exact=False)
@example(loss=SQUARED, p=0.0, y=1.0, xx=5e-324, target=0.95, exact=False)
def test_greedy_steps_are_never_negative_or_infinite(loss, p, y, xx, target, exact):
    step = greedy_step(loss, p, y, xx, target, exact)
    assert 0.0 <= step < np.inf


@settings(max_examples=300, deadline=None)
@given(
    scores=st.lists(st.floats(-700, 700), min_size=2, max_size=6),
    xx=st.floats(0, 1e308),
    target=st.floats(0.51, 0.999),
    data=st.data(),
)
def test_softmax_greedy_steps_are_never_negative_or_infinite(scores, xx, target, data):
    scores = np.array(scores)
    probabilities = np.exp(scores - scores.max())
    probabilities /= probabilities.sum()
    label = data.draw(st.integers(0, len(scores) - 1))
    step = softmax_greedy_step(probabilities, label, xx, target)
    assert 0.0 <= step < np.inf


def test_logistic_greedy_step_is_softmax_eq10_for_two_classes():
    # Eq. 16 is eq. 10 for two classes, doubled (the paper's section 3.4).
    for p in np.linspace(-4, 4, 17):
        for y in (-1.0, 1.0):
            p1 = 1.0 / (1.0 + np.exp(-p))
            probabilities = np.array([1.0 - p1, p1])
            label = 1 if y > 0 else 0
            assert greedy_step(LOGISTIC, p, y, 3.0, 0.95, False) == pytest.approx(
                2.0 * softmax_greedy_step(probabilities, label, 3.0, 0.95), rel=1e-12, abs=1e-15
            )


@pytest.mark.parametrize("loss,target", [(SQUARED, None), (HINGE, None), (LOGISTIC, 0.9), (QUANTILE, None)])
def test_a_greedy_step_fits_the_example(loss, target):
    # One plain step of the greedy size lands exactly on the example's target.
    from polybeam.learners.losses import loss_derivative

    p, y, xx, tau = -0.3, 1.0, 2.5, 0.3
    step = greedy_step(loss, p, y, xx, target or 0.95, True, tau)
    after = p - step * loss_derivative(loss, p, y, tau) * xx
    goal = {SQUARED: y, HINGE: 1.0, LOGISTIC: np.log(0.9 / 0.1), QUANTILE: y}
    assert after == pytest.approx(goal[loss], rel=1e-12)


def test_single_class_data_and_empty_examples_learn_quietly():
    rows = [(1.0, {})] * 20 + [(1.0, {3: 2.0})] * 20
    for loss in ("logistic", "hinge", "squared"):
        for step in ("gsa", None):  # the paper's rule and the loss's default
            config = LearnerConfig(loss=loss, bits=BITS, step=step)
            learner = LinearLearner(config).learn(ExampleBatch.from_rows(rows, bits=BITS))
            assert np.all(np.isfinite(learner.weights))
            assert config.step != "gsa" or learner.greedy_step >= 0
