"""Monomial identities: order-free, multiplicity-aware keys; slots; names."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from polybeam.learners.monomials import Monomial, extend, key_of_factors, product_slot

factors = st.lists(st.integers(0, 2**30 - 1), min_size=1, max_size=6)


@given(factors, st.randoms(use_true_random=False))
def test_the_key_does_not_depend_on_the_order_of_the_factors(slots, random):
    shuffled = list(slots)
    random.shuffle(shuffled)
    assert key_of_factors(np.array(slots)) == key_of_factors(np.array(shuffled))
    assert Monomial.of(slots) == Monomial.of(shuffled)


@given(factors, st.integers(0, 2**30 - 1))
def test_multiplying_by_a_factor_extends_the_key(slots, slot):
    key = np.uint64(key_of_factors(np.array(slots)))
    assert extend(key, slot) == key_of_factors(np.array([*slots, slot]))
    assert Monomial.of(slots).times(slot) == Monomial.of([*slots, slot])


def test_repeated_factors_are_different_monomials():
    assert Monomial.of([7]).key != Monomial.of([7, 7]).key != Monomial.of([7, 7, 7]).key
    assert Monomial.of([1, 1, 2]).key != Monomial.of([1, 2, 2]).key
    assert Monomial.of([3, 3]).degree == 2


def test_no_two_small_monomials_share_a_key():
    # Every monomial of degree 1 to 3 over 60 base features (multisets included): 39,710 keys.
    keys = {
        Monomial(combination).key
        for degree in (1, 2, 3)
        for combination in itertools.combinations_with_replacement(range(60), degree)
    }
    assert len(keys) == 60 + 60 * 61 // 2 + 60 * 61 * 62 // 6


def test_products_spread_over_the_slots_like_random_hashing():
    bits = 12
    mask = (1 << bits) - 1
    slots = np.array([product_slot(Monomial((a, b)).key, mask) for a, b in itertools.combinations(range(300), 2)])
    assert slots.min() >= 0 and slots.max() <= mask
    # With n products thrown uniformly into m slots, a fraction 1 - exp(-n / m) of the slots is hit.
    n, m = len(slots), 1 << bits
    expected = 1.0 - np.exp(-n / m)
    assert len(np.unique(slots)) / m == pytest.approx(expected, abs=0.01)
    # Consecutive base slots must not give consecutive (or equal) product slots.
    assert len({product_slot(Monomial((0, b)).key, mask) for b in range(1, 200)}) > 190


def test_base_features_keep_their_own_slot():
    assert Monomial.of([12]).slot(bits=18) == 12
    assert Monomial.of([12, 57]).slot(bits=18) != Monomial.of([57]).slot(bits=18)
    assert 0 <= Monomial.of([12, 57, 57]).slot(bits=10) < 1024


def test_names_list_the_factors_once_with_their_powers():
    assert Monomial.of([57, 12]).name() == "w12*w57"
    assert Monomial.of([5, 3, 5]).name({5: "age", 3: "income"}) == "income*age^2"


@pytest.mark.parametrize("bad", [(), (-1, 2), (5, 3)])
def test_bad_factor_lists_are_refused(bad):
    with pytest.raises(ValueError):
        Monomial(bad)
