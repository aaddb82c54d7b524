"""Group specifications resolve as the readers hash; Gram statistics equal numpy's and merge by summation."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from polybeam.learners.batch import ExampleBatch
from polybeam.learners.hashing import feature_slot
from polybeam.selection.groups import GroupSpec, GroupSpecError
from polybeam.selection.statistics import GramStatistics, UnassignedFeatureError, check_memory, estimate_bytes

BITS = 10


def test_features_resolve_to_the_readers_slots():
    spec = GroupSpec.from_json(
        {
            "groups": [
                {"name": "words", "features": [1, 2, "3-5", "capital_run_length"], "cost": 2.5},
                {"name": "vw", "features": ["f^a"], "cost": 1},
            ]
        },
        bits=BITS,
    )
    words, vw = spec.groups
    assert words.slots == (1, 2, 3, 4, 5, feature_slot("capital_run_length", BITS))
    assert vw.slots == (feature_slot("a", BITS, "f"),) and words.cost == 2.5
    assert spec.group_of_column.tolist() == [0] * 6 + [1]
    assert spec.column_of_slot()[3] == 2 and spec.column_of_slot()[9] == -1


@pytest.mark.parametrize(
    "data, message",
    [
        ("not json", "not valid JSON"),
        ({"group": []}, '"groups"'),
        ({"groups": []}, "no groups"),
        ({"groups": [{"features": [1], "cost": 1}]}, "name"),
        ({"groups": [{"name": "a", "features": [], "cost": 1}]}, "non-empty list"),
        ({"groups": [{"name": "a", "features": [1]}]}, "needs a cost"),
        ({"groups": [{"name": "a", "features": [1], "cost": 0}]}, "cost > 0"),
        ({"groups": [{"name": "a", "features": [1], "cost": float("nan")}]}, "cost > 0"),
        ({"groups": [{"name": "a", "features": [0], "cost": 1}]}, "1-based"),
        ({"groups": [{"name": "a", "features": ["5-2"], "cost": 1}]}, "1 <= a <= b"),
        ({"groups": [{"name": "a", "features": [1.5], "cost": 1}]}, "neither"),
        ({"groups": [{"name": "a", "features": [1], "cost": 1}, {"name": "a", "features": [2], "cost": 1}]}, "twice"),
        (
            {"groups": [{"name": "a", "features": ["1-3"], "cost": 1}, {"name": "b", "features": [3], "cost": 1}]},
            "one group only",
        ),
    ],
)
def test_bad_specifications_say_what_to_fix(data, message):
    with pytest.raises(GroupSpecError, match=message):
        GroupSpec.from_json(data, bits=BITS)


def test_a_default_group_gathers_the_unnamed_features():
    spec = GroupSpec.from_json({"groups": [{"name": "a", "features": ["1-2"], "cost": 1}]}, bits=BITS)
    assert spec.unassigned([1, 2, 5, 9]) == [5, 9]
    extended = spec.with_default([1, 2, 5, 9], name="other", cost=3.0)
    assert extended.groups[-1].slots == (5, 9) and extended.groups[-1].cost == 3.0
    assert spec.with_default([1, 2], name="other", cost=3.0) is spec
    with pytest.raises(GroupSpecError, match="already"):
        spec.with_default([7], name="a", cost=1.0)


rows = st.lists(
    st.tuples(
        st.floats(-3, 3, allow_nan=False),
        st.floats(0.25, 2.0),
        st.dictionaries(st.integers(1, 6), st.floats(-2, 2, allow_nan=False), max_size=6),
    ),
    min_size=1,
    max_size=30,
)


def as_batch(data):
    return ExampleBatch.from_rows([(y, x) for y, _, x in data], bits=BITS, weights=[w for _, w, _ in data])


@given(data=rows, cut=st.integers(0, 30))
def test_statistics_equal_numpy_and_merge_by_summation(data, cut):
    columns = np.array([4, 1, 2, 3, 5, 6])  # any order of the groups' slots
    whole = GramStatistics.for_columns(columns, bits=BITS).add(as_batch(data))
    x = np.array([[features.get(int(slot), 0.0) for slot in columns] for _, _, features in data])
    y = np.array([label for label, _, _ in data])
    w = np.array([weight for _, weight, _ in data])
    np.testing.assert_allclose(whole.xtx, x.T @ (w[:, None] * x), atol=1e-9)
    np.testing.assert_allclose(whole.xty, x.T @ (w * y), atol=1e-9)
    np.testing.assert_allclose(whole.sum_x, w @ x, atol=1e-9)
    assert whole.n == pytest.approx(w.sum()) and whole.yty == pytest.approx(w @ y**2)
    assert whole.sum_y == pytest.approx(w @ y, abs=1e-9)
    cut = min(cut, len(data))
    first = GramStatistics.for_columns(columns, bits=BITS)
    if cut:
        first.add(as_batch(data[:cut]))
    second = pickle.loads(pickle.dumps(GramStatistics.for_columns(columns, bits=BITS)))  # shipped between workers
    if cut < len(data):
        second.add(as_batch(data[cut:]))
    merged = first.merge([second])
    np.testing.assert_allclose(merged.xtx, whole.xtx, atol=1e-9)
    np.testing.assert_allclose(merged.xty, whole.xty, atol=1e-9)
    assert merged.examples == len(data) and merged.n == pytest.approx(whole.n)


def test_features_in_no_group_are_refused_and_memory_is_checked_first():
    stats = GramStatistics.for_columns(np.array([1, 2]), bits=BITS)
    with pytest.raises(UnassignedFeatureError, match=r"\[7\]"):
        stats.add(ExampleBatch.from_rows([(1.0, {1: 1.0, 7: 2.0})], bits=BITS))
    assert estimate_bytes(2000) < 40 << 20
    with pytest.raises(MemoryError, match="limit"):
        check_memory(100_000)


@pytest.mark.parametrize("seed", range(3))
def test_dense_and_sparse_products_agree(seed, monkeypatch):
    # Rows go through a dense BLAS product when dense enough, a sparse one otherwise: same sums either way,
    # with blocks of rows smaller than the batch.
    from polybeam.selection import statistics as module

    rng = np.random.default_rng(seed)
    rows = [
        (
            float(rng.normal()),
            {
                int(j): float(rng.normal())
                for j in rng.choice(np.arange(1, 13), size=rng.integers(1, 12), replace=False)
            },
        )
        for _ in range(57)
    ]
    batch = ExampleBatch.from_rows(rows, bits=6, weights=rng.uniform(0.5, 2.0, size=57))
    results = []
    for fraction, block in ((0.0, 40), (2.0, 1 << 22)):
        monkeypatch.setattr(module, "DENSE_FRACTION", fraction)
        monkeypatch.setattr(module, "DENSE_BLOCK_ENTRIES", block)
        results.append(GramStatistics.for_columns(np.arange(1, 13), bits=6).add(batch))
    dense, sparse_ = results
    for name in ("xtx", "xty", "sum_x"):
        np.testing.assert_allclose(getattr(dense, name), getattr(sparse_, name), rtol=1e-12, atol=1e-12)
    assert dense.n == pytest.approx(sparse_.n) and dense.yty == pytest.approx(sparse_.yty)
