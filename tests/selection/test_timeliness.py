"""Timeliness (Hu et al., section 5.2) against hand-computed areas; Oracle curves; held-out curves against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from polybeam.selection.timeliness import (
    HeldOutCurve,
    oracle_curve,
    plateau_alpha,
    stopping_cost,
    timeliness,
    value_at,
)

COSTS = np.array([0.0, 1.0, 3.0, 4.0])
VALUES = np.array([0.0, 0.2, 0.8, 0.9])


@pytest.mark.parametrize(
    "stop, area",
    [
        # Trapezoids by hand: [0, 1] gives (0 + 0.2) / 2 = 0.1, [1, 3] gives (0.2 + 0.8) = 1.0, [3, 4] gives 0.85.
        (1.0, 0.1),
        (3.0, 0.1 + 1.0),
        (4.0, 0.1 + 1.0 + 0.85),
        # A stop between prefixes: the value at 2 is interpolated, 0.5, so [1, 2] adds (0.2 + 0.5) / 2.
        (2.0, 0.1 + 0.35),
        # Inside the first segment: the value at 0.5 is 0.1.
        (0.5, 0.025),
        # Beyond the last cost the curve stays flat at 0.9: [4, 6] adds 1.8.
        (6.0, 0.1 + 1.0 + 0.85 + 1.8),
    ],
)
def test_timeliness_is_the_mean_height_of_the_curve_up_to_the_stop(stop, area):
    assert timeliness(COSTS, VALUES, stop=stop) == pytest.approx(area / stop, abs=1e-12)


def test_values_between_and_beyond_prefixes():
    assert value_at(COSTS, VALUES, 2.0) == pytest.approx(0.5)
    assert value_at(COSTS, VALUES, 3.5) == pytest.approx(0.85)
    assert value_at(COSTS, VALUES, 100.0) == pytest.approx(0.9)
    with pytest.raises(ValueError, match="stopping cost must be > 0"):
        timeliness(COSTS, VALUES, stop=0.0)


def test_a_curve_that_never_starts_explains_nothing_and_a_perfect_one_everything():
    costs = np.array([0.0, 2.0])
    assert timeliness(costs, np.array([0.0, 0.0]), stop=2.0) == 0.0
    # Reaching 1 at once (a step at cost 0+) approaches 1 as the first cost shrinks.
    assert timeliness(np.array([0.0, 1e-9, 2.0]), np.array([0.0, 1.0, 1.0]), stop=2.0) == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize(
    "alpha, cost",
    [(1.0, 4.0), (0.85, 3.0), (0.8 / 0.9, 3.0), (0.8 / 0.9 + 1e-6, 4.0), (0.2 / 0.9, 1.0), (0.1, 1.0), (0.5, 3.0)],
)
def test_the_stopping_cost_is_the_first_prefix_reaching_alpha_of_the_final_value(alpha, cost):
    assert stopping_cost(COSTS, VALUES, alpha=alpha) == cost


@pytest.mark.parametrize("alpha", [0.0, -0.5, 1.5, float("nan")])
def test_alpha_outside_zero_one_is_refused(alpha):
    with pytest.raises(ValueError, match="alpha must be in"):
        stopping_cost(COSTS, VALUES, alpha=alpha)


def test_the_plateau_rule():
    # 95% at cost 2, the next 1% only at cost 10 (80% of the total cost): a plateau at 0.95.
    assert plateau_alpha(np.array([0.0, 1, 2, 10]), np.array([0.0, 0.9, 0.95, 1.0])) == 0.95
    # 96% at cost 2: 0.95 and 0.96 stop at the same cost, 0.97 needs 8 more.
    assert plateau_alpha(np.array([0.0, 1, 2, 10]), np.array([0.0, 0.9, 0.96, 1.0])) == 0.96
    # The last 1% costs only 10% of the total: no plateau at any alpha.
    assert plateau_alpha(np.array([0.0, 9, 10]), np.array([0.0, 0.95, 1.0])) == 1.0
    # A linear curve has no plateau.
    assert plateau_alpha(np.arange(11.0), np.arange(11.0) / 10) == 1.0
    # Degenerate curves: nothing explained, or nothing spent.
    assert plateau_alpha(np.array([0.0, 1.0]), np.array([0.0, 0.0])) == 1.0


def test_the_oracle_orders_groups_by_gain_per_cost():
    costs = np.array([0.0, 2.0, 3.0, 7.0, 8.0])
    values = np.array([0.0, 0.2, 0.5, 0.9, 0.9])  # rates 0.1, 0.3, 0.1, 0.0
    oracle_costs, oracle_values = oracle_curve(costs, values)
    # The 0.3 segment first, then the two 0.1 segments in their order (2 then 4 long), then the flat one.
    np.testing.assert_allclose(oracle_costs, [0.0, 1.0, 3.0, 7.0, 8.0])
    np.testing.assert_allclose(oracle_values, [0.0, 0.3, 0.5, 0.9, 0.9])


segments = st.lists(st.tuples(st.floats(0.01, 10.0), st.floats(-0.3, 1.0)), min_size=1, max_size=8)


@given(parts=segments, stops=st.lists(st.floats(0.01, 1.5), min_size=1, max_size=4))
def test_the_oracle_keeps_the_totals_and_is_at_least_as_timely(parts, stops):
    # Held-out curves can fall as well as rise: the gains may be negative. The decreasing
    # rearrangement of the slopes dominates every ordering at every budget (Hardy-Littlewood).
    spent = np.array([cost for cost, _ in parts])
    gains = np.array([gain for _, gain in parts])
    costs = np.concatenate([[0.0], np.cumsum(spent)])
    values = np.concatenate([[0.0], np.cumsum(gains)])
    oracle_costs, oracle_values = oracle_curve(costs, values)
    assert oracle_costs[-1] == pytest.approx(costs[-1]) and oracle_values[-1] == pytest.approx(values[-1], abs=1e-9)
    assert oracle_costs[0] == 0.0 and oracle_values[0] == 0.0
    rates = np.diff(oracle_values) / np.diff(oracle_costs)
    assert np.all(np.diff(rates) <= 1e-9)
    # The same segments, re-ordered.
    assert sorted(np.diff(oracle_costs).round(9).tolist()) == sorted(spent.round(9).tolist())
    for fraction in stops:
        stop = fraction * costs[-1]
        assert timeliness(oracle_costs, oracle_values, stop=stop) >= timeliness(costs, values, stop=stop) - 1e-9
        for budget in (stop, stop / 2):
            assert value_at(oracle_costs, oracle_values, budget) >= value_at(costs, values, budget) - 1e-9


def test_the_oracle_of_a_held_out_curve_keeps_its_start_and_its_final_value():
    # Held-out curves start at the training mean's explained variance, -(mean_train - mean_test)^2 / var_test.
    costs = np.array([0.0, 1.0, 3.0])
    values = np.array([-0.05, 0.15, 0.55])
    _, oracle_values = oracle_curve(costs, values)
    assert oracle_values[0] == pytest.approx(values[0])
    assert oracle_values[-1] == pytest.approx(values[-1])


# -- held-out curves ------------------------------------------------------------------------------------

examples = st.lists(
    st.tuples(st.floats(-5, 5), st.floats(0.1, 3.0), st.lists(st.floats(-5, 5), min_size=3, max_size=3)),
    min_size=2,
    max_size=25,
)


def arrays(data):
    labels = np.array([label for label, _, _ in data])
    weights = np.array([weight for _, weight, _ in data])
    predictions = np.array([row for _, _, row in data])
    return predictions, labels, weights


@given(data=examples, cuts=st.lists(st.integers(0, 25), max_size=3))
def test_partial_curves_of_split_batches_merge_into_the_whole(data, cuts):
    predictions, labels, weights = arrays(data)
    whole = HeldOutCurve.of(predictions, labels, weights)
    bounds = [0, *sorted(min(cut, len(data)) for cut in cuts), len(data)]
    parts = [HeldOutCurve.of(predictions[a:b], labels[a:b], weights[a:b]) for a, b in zip(bounds, bounds[1:])]
    merged = parts[0].merge(parts[1:])
    np.testing.assert_allclose(merged.squared_errors, whole.squared_errors, rtol=1e-9, atol=1e-9)
    assert merged.n == pytest.approx(whole.n) and merged.sum_y == pytest.approx(whole.sum_y, abs=1e-9)
    assert merged.sum_y2 == pytest.approx(whole.sum_y2) and merged.examples == whole.examples == len(data)
    np.testing.assert_allclose(whole.squared_errors, weights @ (predictions - labels[:, None]) ** 2, rtol=1e-12)


def test_explained_variance_is_one_minus_sse_over_sst():
    rng = np.random.default_rng(0)
    labels = rng.normal(3.0, 2.0, size=200)
    weights = rng.uniform(0.2, 2.0, size=200)
    predictions = np.column_stack([np.full(200, 2.5), labels + rng.normal(size=200), labels, -labels])
    curve = HeldOutCurve.of(predictions[:120], labels[:120], weights[:120])
    curve.merge([HeldOutCurve.of(predictions[120:], labels[120:], weights[120:])])
    mean = np.average(labels, weights=weights)
    sst = weights @ (labels - mean) ** 2
    expected = [1 - weights @ (predictions[:, j] - labels) ** 2 / sst for j in range(4)]
    np.testing.assert_allclose(curve.explained_variance(), expected, rtol=1e-10)
    assert curve.explained_variance()[2] == 1.0 and curve.explained_variance()[0] < 0
    # Without weights every example counts once.
    unweighted = HeldOutCurve.of(predictions, labels)
    np.testing.assert_allclose(
        unweighted.explained_variance()[1],
        1 - np.sum((predictions[:, 1] - labels) ** 2) / np.sum((labels - labels.mean()) ** 2),
    )


def test_a_constant_response_or_no_examples_has_no_explained_variance():
    with pytest.raises(ValueError, match="constant"):
        HeldOutCurve.of(np.zeros((4, 2)), np.full(4, 2.0)).explained_variance()
    with pytest.raises(ValueError, match="no held-out examples"):
        HeldOutCurve.of(np.zeros((0, 2)), np.zeros(0)).explained_variance()
    with pytest.raises(ValueError, match="no held-out examples"):
        HeldOutCurve.of(np.zeros((3, 2)), np.array([1.0, 2.0, 3.0]), np.zeros(3)).explained_variance()


def test_a_constant_response_that_rounds_is_still_constant():
    curve = HeldOutCurve.of(np.column_stack([np.full(5, 0.1), np.zeros(5)]), np.full(5, 0.1))
    with pytest.raises(ValueError, match="constant"):
        curve.explained_variance()
