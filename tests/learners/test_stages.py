"""Apple's schedule, expansion sizes and parent picking."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from polybeam.learners.monomials import Monomial
from polybeam.learners.stages import ExpansionSchedule, expansion_size, pick_parents, slot_magnitudes


@given(total=st.integers(0, 10**7), stages=st.integers(0, 8))
def test_known_totals_get_equally_spaced_epochs(total, stages):
    boundaries = ExpansionSchedule(total=total, stages=stages).boundaries()
    assert boundaries == sorted(set(boundaries))
    assert all(0 < b < total for b in boundaries)
    if total >= stages + 1:
        assert len(boundaries) == stages
        epochs = np.diff([0, *boundaries, total])
        assert epochs.max() - epochs.min() <= 1


def test_streams_double_the_epochs():
    schedule = ExpansionSchedule(first=500, stages=4)
    assert schedule.boundaries() == [500, 1000, 2000, 4000]
    assert schedule.next_boundary(0) == 500
    assert schedule.next_boundary(1000) == 2000
    assert schedule.next_boundary(4000) is None


@pytest.mark.parametrize("bad", [dict(stages=-1), dict(first=0), dict(total=-5)])
def test_bad_schedules_are_refused(bad):
    with pytest.raises(ValueError):
        ExpansionSchedule(**bad)


def test_expansion_size_is_mean_nonzeros_to_the_alpha():
    assert expansion_size(49.0, 1.0) == 49
    assert expansion_size(49.0, 0.5) == 7
    assert expansion_size(49.0, 0.0) == 1
    assert expansion_size(0.0, 1.0) == 1
    with pytest.raises(ValueError):
        expansion_size(10.0, -1.0)


def test_magnitudes_are_normalised_and_take_the_largest_class():
    weights = np.array([[0.5, -2.0], [0.1, 0.0], [0.0, 0.0]])
    assert slot_magnitudes(weights, None).tolist() == [2.0, 0.1, 0.0]
    assert slot_magnitudes(weights[:, 0], np.array([10.0, 0.0, 3.0])).tolist() == [5.0, 0.1, 0.0]


def known(slots):
    return lambda slot: Monomial.of([slot]) if slot in slots else None


def test_the_heaviest_non_parents_become_parents():
    magnitudes = np.array([0.0, 5.0, 1.0, 3.0, 4.0, 2.0])
    parents = [Monomial.of([4])]
    chosen = pick_parents(magnitudes, known({1, 2, 3, 4, 5}), parents, 2)
    assert chosen == [Monomial.of([1]), Monomial.of([3])]
    # Slots no known monomial owns are passed over; zero weights are never picked.
    assert pick_parents(magnitudes, known({2}), [], 3) == [Monomial.of([2])]


def test_the_fallback_rule_adds_a_smallest_degree_non_parent():
    magnitudes = np.zeros(8)
    magnitudes[7] = 9.0  # the product's slot
    product = Monomial.of([1, 2])
    candidates = [(0.5, Monomial.of([3])), (0.7, Monomial.of([5])), (1.0, Monomial.of([1])), (9.0, product)]
    chosen = pick_parents(
        magnitudes,
        lambda slot: product if slot == 7 else None,
        [Monomial.of([1])],
        2,
        rule="fallback",
        smallest_degree_candidates=lambda: candidates,
    )
    # One by weight (the product), then the heaviest degree-1 monomial that is not a parent yet.
    assert chosen == [product, Monomial.of([5])]


def test_unknown_rules_are_refused():
    with pytest.raises(ValueError, match="rule"):
        pick_parents(np.ones(3), known({0}), [], 1, rule="ssm-typo")
