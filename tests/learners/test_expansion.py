"""Polynomial expansion against a plain-Python reference of apple's feature set S_k."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polybeam.learners.batch import ExampleBatch
from polybeam.learners.expansion import Expander, expand_all_products
from polybeam.learners.monomials import Monomial

BITS = 20


def reference_expansion(row: dict[int, float], parents: set[Monomial], max_degree: int, repeat_factors: bool):
    """The row's monomials {monomial: value}: base features, then x_i * m for every parent m reached."""
    values = {Monomial.of([slot]): value for slot, value in row.items()}
    queue = list(values)
    for monomial in queue:  # grows while we walk it: breadth-first
        if monomial not in parents or monomial.degree >= max_degree:
            continue
        for slot, value in row.items():
            if not repeat_factors and slot in monomial.factors:
                continue
            child = monomial.times(slot)
            if child not in values:
                values[child] = values[monomial] * value
                queue.append(child)
    return values


def expanded_rows(batch: ExampleBatch, degrees: np.ndarray):
    return [
        sorted(
            (int(batch.indices[k]), int(degrees[k]), float(batch.values[k]))
            for k in range(batch.indptr[row], batch.indptr[row + 1])
        )
        for row in range(len(batch))
    ]


def expected_rows(rows, parents, max_degree, repeat_factors):
    return [
        sorted(
            (monomial.slot(BITS), monomial.degree, value)
            for monomial, value in reference_expansion(row, parents, max_degree, repeat_factors).items()
        )
        for row in rows
    ]


base_slots = st.integers(1, 12)
rows_strategy = st.lists(
    st.dictionaries(base_slots, st.sampled_from([1.0, 2.0, -0.5, 3.0]), min_size=0, max_size=6), min_size=1, max_size=5
)
monomials_strategy = st.lists(base_slots, min_size=1, max_size=3).map(Monomial.of)


@settings(max_examples=150)
@given(
    rows=rows_strategy,
    parents=st.sets(monomials_strategy, max_size=8),
    max_degree=st.integers(1, 5),
    repeat_factors=st.booleans(),
)
def test_expansion_matches_the_reference(rows, parents, max_degree, repeat_factors):
    expander = Expander(parents, bits=BITS, max_degree=max_degree, repeat_factors=repeat_factors)
    batch = ExampleBatch.from_rows([(1.0, row) for row in rows], bits=BITS)
    expected = expected_rows(rows, parents, max_degree, repeat_factors)
    # Twice: the dedupe table's stamps carry over between calls.
    for _ in range(2):
        expanded = expander.expand(batch)
        assert expanded_rows(expanded, expander.last_degrees) == expected
        assert expanded.labels.tolist() == batch.labels.tolist()


def test_each_monomial_appears_once_however_many_parents_reach_it():
    # x1*x2 is a child of parent x1 and of parent x2: one feature.
    expander = Expander([Monomial.of([1]), Monomial.of([2])], bits=BITS, repeat_factors=False)
    expanded = expander.expand(ExampleBatch.from_rows([(1.0, {1: 1.0, 2: 1.0, 3: 1.0})], bits=BITS))
    assert sorted(expander.monomials_of(expanded)[0]) == ["w1", "w1*w2", "w1*w3", "w2", "w2*w3", "w3"]


def test_children_of_children_up_to_the_maximum_degree():
    parents = [Monomial.of([1]), Monomial.of([1, 2]), Monomial.of([1, 2, 3])]
    row = {1: 1.0, 2: 1.0, 3: 1.0, 4: 1.0}
    for max_degree, longest in [(1, 1), (2, 2), (3, 3), (6, 4)]:
        expander = Expander(parents, bits=BITS, max_degree=max_degree, repeat_factors=False)
        expander.expand(ExampleBatch.from_rows([(1.0, row)], bits=BITS))
        assert expander.last_degrees.max() == longest


def test_large_rows_grow_the_tables():
    # 300 base features with the first 40 as parents: 300 + 40*300 - ... products in one row,
    # far beyond the initial room and dedupe table.
    row = {slot: 1.0 for slot in range(1, 301)}
    parents = [Monomial.of([slot]) for slot in range(1, 41)]
    expander = Expander(parents, bits=BITS)
    expanded = expander.expand(ExampleBatch.from_rows([(1.0, row), (0.0, {1: 2.0})], bits=BITS))
    pairs = {frozenset((a, b)) if a != b else (a,) for a in range(1, 41) for b in range(1, 301)}
    assert expanded.indptr[1] == 300 + len(pairs)
    assert expanded.indptr[2] - expanded.indptr[1] == 2  # x1 and x1^2
    assert expanded.values[-1] == 4.0


def test_products_are_traced_back_to_their_monomials():
    parents = [Monomial.of([2]), Monomial.of([2, 5])]
    expander = Expander(parents, bits=BITS)
    expanded = expander.expand(ExampleBatch.from_rows([(1.0, {2: 1.0, 5: 1.0, 9: 1.0})], bits=BITS))
    found = {
        expander.monomial_of_slot(int(slot), int(degree))
        for slot, degree in zip(expanded.indices, expander.last_degrees)
    }
    expected = reference_expansion({2: 1.0, 5: 1.0, 9: 1.0}, set(parents), 6, True)
    assert found == set(expected)


def test_no_parents_leaves_the_batch_as_it_was():
    batch = ExampleBatch.from_rows([(1.0, {3: 2.0, 4: 1.0}), (-1.0, {})], bits=BITS)
    expanded = Expander([], bits=BITS).expand(batch)
    assert expanded.indptr.tolist() == batch.indptr.tolist()
    assert expanded.indices.tolist() == batch.indices.tolist()
    assert expanded.values.tolist() == batch.values.tolist()


def test_bits_must_match():
    with pytest.raises(ValueError, match="bits"):
        Expander([], bits=10).expand(ExampleBatch.from_rows([(1.0, {1: 1.0})], bits=12))


@settings(max_examples=100)
@given(rows=rows_strategy, degree=st.sampled_from([2, 3]), repeat_factors=st.booleans())
def test_all_pairs_and_triples_match_the_reference(rows, degree, repeat_factors):
    import itertools

    batch = ExampleBatch.from_rows([(1.0, row) for row in rows], bits=BITS)
    expanded, degrees = expand_all_products(batch, degree, repeat_factors=repeat_factors)
    choose = itertools.combinations_with_replacement if repeat_factors else itertools.combinations
    expected = []
    for row in rows:
        items = sorted(row.items())
        entries = [(slot, 1, value) for slot, value in items]
        for d in range(2, degree + 1):
            for combo in choose(items, d):
                monomial = Monomial.of([slot for slot, _ in combo])
                entries.append((monomial.slot(BITS), d, float(np.prod([value for _, value in combo]))))
        expected.append(sorted(entries))
    actual = expanded_rows(expanded, degrees)
    assert [[(s, d, pytest.approx(v)) for s, d, v in row] for row in actual] == [
        [(s, d, pytest.approx(v)) for s, d, v in row] for row in expected
    ]


def test_quadratic_pairs_share_slots_with_apples_products():
    batch = ExampleBatch.from_rows([(1.0, {3: 1.0, 9: 2.0})], bits=BITS)
    quadratic, _ = expand_all_products(batch, 2, repeat_factors=False)
    apple = Expander([Monomial.of([3])], bits=BITS, repeat_factors=False).expand(batch)
    assert sorted(quadratic.indices.tolist()) == sorted(apple.indices.tolist())
    with pytest.raises(ValueError, match="quadratic"):
        expand_all_products(batch, 4)


def test_a_row_that_repeats_a_slot_still_gets_each_product_once():
    # Hash collisions can put two features of one example in one slot; products must not double.
    batch = ExampleBatch(
        labels=np.ones(1),
        weights=np.ones(1),
        indptr=np.array([0, 4]),
        indices=np.array([3, 5, 3, 7], dtype=np.int32),
        values=np.ones(4),
        bits=BITS,
    )
    parents = [Monomial.of([3]), Monomial.of([5]), Monomial.of([3, 5])]
    expander = Expander(parents, bits=BITS)
    expanded = expander.expand(batch)
    products = [
        expander.monomial_of_slot(int(slot), int(degree))
        for slot, degree in zip(expanded.indices, expander.last_degrees)
        if degree > 1
    ]
    assert len(products) == len(set(products))
    expected = set(reference_expansion({3: 1.0, 5: 1.0, 7: 1.0}, set(parents), 6, True)) - {
        Monomial.of([s]) for s in (3, 5, 7)
    }
    assert set(products) == expected


def reference_interactions(row, interactions, repeat_factors):
    """VW's -q / --cubic in plain Python: per namespace letter used r times, r-combinations of its features."""
    import itertools
    from collections import Counter

    combine = itertools.combinations_with_replacement if repeat_factors else itertools.combinations
    products = []
    for interaction in sorted({tuple(sorted(text.encode())) for text in interactions}):
        per_letter = [
            list(combine([f for f in row if f[2] == letter], times))
            for letter, times in sorted(Counter(interaction).items())
        ]
        for choice in itertools.product(*per_letter):
            factors = [feature for group in choice for feature in group]
            monomial = Monomial.of([slot for slot, _, _ in factors])
            products.append((monomial.slot(BITS), len(factors), float(np.prod([value for _, value, _ in factors]))))
    return products


namespaced_rows = st.lists(
    st.lists(st.tuples(st.integers(1, 12), st.sampled_from([1.0, 2.0, -0.5]), st.sampled_from(b"abc ")), max_size=7),
    min_size=1,
    max_size=4,
)
interaction_lists = st.lists(st.text(alphabet="abc ", min_size=2, max_size=3), min_size=1, max_size=3)


@given(rows=namespaced_rows, interactions=interaction_lists, repeat_factors=st.booleans())
def test_namespace_interactions_match_the_reference(rows, interactions, repeat_factors):
    from polybeam.learners.expansion import expand_namespace_interactions

    batch = ExampleBatch(
        labels=np.ones(len(rows)),
        weights=np.ones(len(rows)),
        indptr=np.cumsum([0] + [len(row) for row in rows]).astype(np.int64),
        indices=np.array([f[0] for row in rows for f in row], dtype=np.int32),
        values=np.array([f[1] for row in rows for f in row], dtype=np.float64),
        namespaces=np.array([f[2] for row in rows for f in row], dtype=np.uint8),
        bits=BITS,
    )
    expanded, degrees = expand_namespace_interactions(batch, interactions, repeat_factors=repeat_factors)
    got = expanded_rows(expanded, degrees)
    for row, found in zip(rows, got):
        expected = sorted(
            [(slot, 1, value) for slot, value, _ in row] + reference_interactions(row, interactions, repeat_factors)
        )
        assert found == expected  # values are products of 1, 2 and -0.5: exact


def test_namespace_interactions_need_namespaces_and_valid_letters():
    from polybeam.learners.config import LearnerConfig
    from polybeam.learners.expansion import Expansion

    with pytest.raises(ValueError, match="VW text"):
        Expansion("quadratic", interactions=("ab",)).expand(ExampleBatch.from_rows([(1.0, {1: 1.0})], bits=BITS))
    with pytest.raises(ValueError, match="cubic"):
        LearnerConfig(expand="quadratic", interactions=("abc",))
    with pytest.raises(ValueError, match="wildcard"):
        LearnerConfig(expand="quadratic", interactions=("a:",))
    with pytest.raises(ValueError, match="quadratic or cubic"):
        LearnerConfig(expand="apple", interactions=("ab",))
    assert Expansion.from_dict(Expansion("cubic", interactions=("ba", "abc")).to_dict()).interactions == ("ba", "abc")


def test_reused_output_buffers_give_the_same_batches_and_stay_valid_for_a_ring():
    from polybeam.learners.expansion import RING

    rng = np.random.default_rng(2)
    batches = [
        ExampleBatch.from_rows(
            [
                (1.0, {int(s): 1.0 for s in rng.choice(np.arange(1, 30), size=rng.integers(1, 9))})
                for _ in range(rng.integers(1, 40))
            ],
            bits=BITS,
        )
        for _ in range(8)
    ]
    parents = [Monomial.of([s]) for s in range(1, 12)] + [Monomial.of([1, 2])]
    fresh, reusing = Expander(parents, bits=BITS), Expander(parents, bits=BITS)
    expected = [fresh.expand(batch) for batch in batches]
    window = []
    for batch, want in zip(batches, expected):
        window.append((reusing.expand(batch, reuse=True), want))
        window = window[-(RING - 1) :]  # the results of the last RING - 1 calls are all intact
        for got, wanted in window:
            assert np.array_equal(got.indptr, wanted.indptr)
            assert np.array_equal(got.indices, wanted.indices) and np.array_equal(got.values, wanted.values)
    assert np.array_equal(fresh.slot_trace, reusing.slot_trace)


@given(rows=rows_strategy, degree=st.sampled_from([2, 3]), repeat_factors=st.booleans())
def test_all_products_trace_names_every_product_slot(rows, degree, repeat_factors):
    from polybeam.learners.expansion import new_product_trace, unpack_factors

    batch = ExampleBatch.from_rows([(1.0, row) for row in rows], bits=BITS - 2)  # 18 bits: 3 factors fit
    trace = new_product_trace(batch.bits, degree)
    expanded, degrees = expand_all_products(batch, degree, repeat_factors=repeat_factors, slot_trace=trace)
    products = expanded.indices[degrees > 1]
    for slot, factors in zip(products.tolist(), unpack_factors(trace[products], batch.bits).tolist()):
        monomial = Monomial.of([f for f in factors if f >= 0])
        assert monomial.slot(batch.bits) == slot and monomial.degree >= 2
