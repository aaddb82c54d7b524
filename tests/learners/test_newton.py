"""The finishing stage's Newton steps (polybeam.learners.newton): the summed Hessian against finite
differences of the gradient, additive in any grouping, carried by a sum exactly when its slots are few,
and the optimum reached in few evaluations where L-BFGS alone needs many more."""

import numpy as np
import pytest
import scipy.optimize
from hypothesis import given, settings
from hypothesis import strategies as st

from polybeam.learners import lbfgs, newton
from polybeam.learners.arrays import batch_from_arrays
from polybeam.learners.config import LearnerConfig
from polybeam.learners.linear import LinearLearner
from tests.learners.test_linear import random_batch

BITS = 4


def _sum(weights, batches, loss, bias=True, hessian=True):
    outputs = weights.shape[1]
    point = lbfgs.SparseWeights(np.arange(len(weights)), weights)
    total = lbfgs.LossGradient.on(point.slots, outputs, hessian=hessian)
    for batch in batches:
        total.add(point, batch, loss, bias)
    return total


@pytest.mark.parametrize("loss", ["logistic", "squared", "softmax", "poisson"])
@pytest.mark.parametrize("bias", [True, False])
def test_the_hessian_is_the_gradients_derivative(loss, bias):
    rng = np.random.default_rng(7)
    classes = 3 if loss == "softmax" else 0
    batches = [random_batch(rng, loss=loss, n=30, bits=BITS, classes=classes, scales=(0.5, 1.0)) for _ in range(2)]
    weights = rng.normal(scale=0.3, size=(1 << BITS, max(classes, 1)))
    hessian = _sum(weights, batches, loss, bias).hessian
    step = 1e-6
    numeric = np.zeros_like(hessian)
    for k, index in enumerate(np.ndindex(weights.shape)):
        up, down = weights.copy(), weights.copy()
        up[index] += step
        down[index] -= step
        difference = _sum(up, batches, loss, bias, False).gradient - _sum(down, batches, loss, bias, False).gradient
        numeric[:, k] = difference.reshape(-1) / (2 * step)
    np.testing.assert_allclose(hessian, numeric, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(hessian, hessian.T, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(
    st.integers(0, 2**16),
    st.lists(st.integers(1, 25), min_size=1, max_size=4),
    st.sampled_from(["logistic", "softmax"]),
)
def test_hessian_sums_are_additive_in_any_grouping_and_growth(seed, sizes, loss):
    """Parts that start on fewer slots (the first pass's sums grow as batches bring slots) merge, in any
    order, into the whole's Hessian."""
    rng = np.random.default_rng(seed)
    classes = 3 if loss == "softmax" else 0
    batches = [random_batch(rng, loss=loss, n=n, bits=BITS, classes=classes, max_features=4) for n in sizes]
    weights = rng.normal(size=(1 << BITS, max(classes, 1)))
    whole = _sum(weights, batches, loss)
    point = lbfgs.SparseWeights(np.array([0, 3], dtype=np.int64), weights[[0, 3]])
    parts = []
    for batch in batches:
        part = lbfgs.LossGradient.on(point.slots, point.outputs, hessian=True)
        parts.append(part.add(point.__class__(np.arange(1 << BITS), weights), batch, loss, True))
    parts = parts[::-1]
    merged = parts[0].merge(parts[1:]).aligned(np.arange(1 << BITS))
    np.testing.assert_allclose(merged.hessian, whole.hessian, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(merged.gradient, whole.gradient, rtol=1e-10, atol=1e-10)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**16), st.lists(st.integers(1, 12), min_size=2, max_size=5), st.integers(2, 12))
def test_a_sum_has_its_hessian_exactly_when_its_slots_are_few(seed, sizes, limit):
    """Whether the merged sum carries the Hessian depends on its slots alone, never on the grouping (a
    part that outgrew the limit drops it; so does any whole that holds that part)."""
    rng = np.random.default_rng(seed)
    batches = [random_batch(rng, loss="logistic", n=n, bits=BITS, max_features=3) for n in sizes]
    weights = rng.normal(size=(1 << BITS, 1))
    point = lbfgs.SparseWeights(np.array([0], dtype=np.int64), weights[:1])
    original = newton.NEWTON_PARAMETERS
    newton.NEWTON_PARAMETERS = limit
    try:
        parts = [lbfgs.LossGradient.on(point.slots, 1, hessian=True) for _ in batches]
        for part, batch in zip(parts, batches):
            part.add(lbfgs.SparseWeights(np.arange(1 << BITS), weights), batch, "logistic", True)
        order = rng.permutation(len(parts))
        merged = parts[order[0]].merge([parts[k] for k in order[1:]])
    finally:
        newton.NEWTON_PARAMETERS = original
    assert (merged.hessian is not None) == (len(merged.slots) <= limit)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**16), st.lists(st.integers(1, 12), min_size=2, max_size=5), st.integers(1, 60))
def test_a_sum_has_its_hessian_exactly_when_its_examples_are_few_enough(seed, sizes, cap):
    """The examples count too (a Hessian over a million examples costs hours): a sum drops it once its
    examples times its parameters squared pass the budget, in any grouping."""
    rng = np.random.default_rng(seed)
    batches = [random_batch(rng, loss="logistic", n=n, bits=BITS, max_features=3) for n in sizes]
    weights = rng.normal(size=(1 << BITS, 1))
    everywhere = lbfgs.SparseWeights(np.arange(1 << BITS), weights)
    parameters = 1 << BITS  # (every slot from the start: only the examples grow)
    original = newton.HESSIAN_BUDGET
    newton.HESSIAN_BUDGET = cap * parameters**2
    try:
        parts = [lbfgs.LossGradient.on(everywhere.slots, 1, hessian=True) for _ in batches]
        for part, batch in zip(parts, batches):
            part.add(everywhere, batch, "logistic", True)
        order = rng.permutation(len(parts))
        merged = parts[order[0]].merge([parts[k] for k in order[1:]])
    finally:
        newton.HESSIAN_BUDGET = original
    assert (merged.hessian is not None) == (merged.examples <= cap)


def _correlated_pixels(seed=0, n=400, features=12, classes=4):
    """Unscaled, strongly correlated columns (as an image's neighbouring pixels: 0-16 counts of a few
    shared strokes), several classes: the conditioning scikit-learn's digits has, small."""
    rng = np.random.default_rng(seed)
    strokes = rng.normal(size=(n, 3))
    mixing = rng.normal(size=(3, features))
    x = np.clip(np.round(8 + 4 * strokes @ mixing + rng.normal(scale=0.5, size=(n, features))), 0, 16)
    margins = (x - 8) @ rng.normal(scale=0.3, size=(features, classes))
    labels = np.argmax(margins + rng.gumbel(size=margins.shape), axis=1) + 1.0
    return batch_from_arrays(x, labels, bits=BITS)


def _objective(batch, l2, classes):
    shape = (1 << BITS, classes)

    def fun(flat):
        total = lbfgs.LossGradient.of(flat.reshape(shape), [batch], "softmax", True)
        value, gradient = lbfgs.regularised(total, flat.reshape(shape), l2, True)
        return value, gradient.ravel()

    return fun


@pytest.mark.parametrize("l2", [0.1, 1.0])
def test_newton_steps_reach_the_optimum_where_lbfgs_alone_does_not(l2, monkeypatch):
    batch = _correlated_pixels()
    config = LearnerConfig(loss="softmax", classes=4, bits=BITS)
    learner = LinearLearner(config)
    learner.learn(batch)
    online = learner.to_model()
    fun = _objective(batch, l2, 4)
    best = scipy.optimize.minimize(
        fun, np.zeros((1 << BITS) * 4), jac=True, method="L-BFGS-B",
        options={"maxiter": 50_000, "gtol": 1e-12, "ftol": 1e-16},
    )  # fmt: skip
    newton_model = lbfgs.finish(online, [batch], passes=15, l2=l2, period=0)
    assert fun(newton_model.dense_weights.reshape(-1))[0] <= best.fun * (1 + 1e-6)
    history = newton_model.metadata["lbfgs"]["objective"]
    assert history == sorted(history, reverse=True)
    monkeypatch.setattr(newton, "NEWTON_PARAMETERS", 0)  # L-BFGS alone
    lbfgs_model = lbfgs.finish(online, [batch], passes=30, l2=l2, period=0)
    assert fun(lbfgs_model.dense_weights.reshape(-1))[0] > best.fun * (1 + 1e-3)


def test_a_converged_optimiser_stops_asking_for_the_hessian():
    batch = _correlated_pixels(seed=1, n=200)
    learner = LinearLearner(LearnerConfig(loss="softmax", classes=4, bits=BITS))
    learner.learn(batch)
    stage = lbfgs.Finishing(learner.to_model(), 1.0, period=0)
    asked, accepted = [], []
    for _ in range(25):
        asked.append(stage.points()[0].newton)
        stage.told(stage.sums([batch]))
        accepted.append(len(stage.optimisers[0].history))
    assert stage.optimisers[0].converged and asked[0] and asked[1] and not asked[-1]
    converged_at = asked.index(False)
    assert converged_at < 15
    assert len(set(accepted[converged_at - 1 :])) == 1  # no point accepted once converged


def test_newton_steps_are_left_out_where_the_hessian_would_cost_too_much(monkeypatch):
    batch = _correlated_pixels(seed=1, n=200)
    learner = LinearLearner(LearnerConfig(loss="softmax", classes=4, bits=BITS))
    learner.learn(batch)
    stage = lbfgs.Finishing(learner.to_model(), 1.0, period=0)
    stage.told(stage.sums([batch]))
    parameters = len(stage.active) * 4
    monkeypatch.setattr(newton, "HESSIAN_BUDGET", 200 * parameters**2 - 1)  # (just below: 200 examples)
    assert stage.examples == 200 and not stage.points()[0].newton
    monkeypatch.setattr(newton, "HESSIAN_BUDGET", 200 * parameters**2)
    assert stage.points()[0].newton


def test_newton_direction_is_minus_the_inverse_hessian_times_the_gradient():
    rng = np.random.default_rng(2)
    a = rng.normal(size=(6, 6))
    hessian = a @ a.T + np.eye(6)
    gradient = rng.normal(size=6)
    np.testing.assert_allclose(newton.newton_direction(hessian, gradient), -np.linalg.solve(hessian, gradient))
    assert newton.newton_direction(np.zeros((3, 3)), np.ones(3)) is None


def test_a_penalty_toward_an_anchor_is_weighed_per_coordinate_and_leaves_the_bias_out():
    rng = np.random.default_rng(3)
    weights, anchor, scale = rng.normal(size=(6, 2)), rng.normal(size=(6, 2)), rng.uniform(0.1, 2, size=12)
    total = _sum(np.zeros((6, 2)), [_correlated_pixels(n=30, features=5, classes=2)], "softmax")
    value, gradient = lbfgs.regularised(total, weights, 3.0, True, anchor, scale)
    by_hand = (weights - anchor) * scale.reshape(6, 2)
    by_hand[0] = 0.0
    assert value == pytest.approx(total.loss + 1.5 * float(np.sum(by_hand * (weights - anchor))))
    np.testing.assert_allclose(gradient, total.gradient + 3.0 * by_hand)


@pytest.mark.parametrize("newton_steps", [True, False])
def test_an_optimiser_pulled_toward_an_anchor_reaches_that_objectives_optimum(newton_steps, monkeypatch):
    batch = _correlated_pixels(seed=2, n=300)
    shape = (1 << BITS, 4)
    rng = np.random.default_rng(0)
    anchor = rng.normal(scale=0.05, size=shape)  # (small: no class's probability vanishes at the start)
    anchor -= anchor.mean(axis=1, keepdims=True)  # (a softmax optimiser keeps every row's classes summing to 0)
    scale = np.repeat(rng.uniform(0.5, 5.0, size=shape[0]), shape[1])  # (and weighs a row's classes alike)

    def fun(flat):
        total = lbfgs.LossGradient.of(flat.reshape(shape), [batch], "softmax", True)
        value, gradient = lbfgs.regularised(total, flat.reshape(shape), 20.0, True, anchor, scale)
        return value, gradient.ravel()

    best = scipy.optimize.minimize(
        fun, anchor.ravel(), jac=True, method="L-BFGS-B", options={"maxiter": 50_000, "gtol": 1e-12, "ftol": 1e-16}
    )
    if not newton_steps:
        monkeypatch.setattr(newton, "NEWTON_PARAMETERS", 0)
    optimiser = lbfgs.Lbfgs(anchor, l2=20.0, anchor=anchor, scale=scale, shift_invariant=True)
    for _ in range(15 if newton_steps else 200):
        point = lbfgs.SparseWeights(np.arange(shape[0]), optimiser.point(), newton=newton_steps)
        optimiser.told(_sum(point.rows, [batch], "softmax", hessian=newton_steps))
    assert fun(optimiser.weights)[0] <= best.fun * (1 + 1e-6)
    # (far from the unpenalised optimum and from the anchor: the penalty pulled without holding it there)
    assert 0.05 < np.abs(optimiser.weights.reshape(shape)[1:] - anchor[1:]).max()
    with pytest.raises(ValueError, match="alike"):
        lbfgs.Lbfgs(anchor, l2=1.0, anchor=anchor, scale=np.arange(1.0, 65.0), shift_invariant=True)
