"""A sparse learner (a row per slot touched, for per-key learners) learns exactly what a dense one does.

The dense learner is the reference: every step rule, loss, sparsity rule and
centring must give the same model, the same statistics, the same merge and the
same state after pickling, whether the state holds every slot or only the
slots touched, including a sparse state that turns dense midway.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.linear import LinearLearner, state_bytes
from polybeam.learners.polynomial import make_learner
from polybeam.learners.slot_table import SlotTable, dense_limit


def _batch(rng, rows: int, bits: int, loss: str, width: int = 200) -> ExampleBatch:
    examples = []
    for _ in range(rows):
        slots = rng.integers(1, width, size=rng.integers(1, 6))
        features = {int(slot): float(rng.normal()) for slot in slots}
        if loss == "softmax":
            label = float(rng.integers(1, 4))
        elif loss == "squared":
            label = float(rng.normal())
        else:
            label = float(rng.integers(0, 2))
        examples.append((label, features))
    return ExampleBatch.from_rows(examples, bits=bits)


SETTINGS = [
    dict(loss="logistic"),
    dict(loss="logistic", learning_rate=0.5),
    dict(loss="squared"),
    dict(loss="squared", learning_rate=0.5, scale_labels=False),
    dict(loss="hinge", step="constant", learning_rate=0.1),
    dict(loss="logistic", step="decay", learning_rate=0.1, center=False),
    dict(loss="softmax", classes=3),
    dict(loss="softmax", classes=3, learning_rate=0.5, sparsity="truncate", gravity=1e-3),
    dict(loss="logistic", sparsity="truncate", gravity=1e-3),
    dict(loss="logistic", learning_rate=0.5, sparsity="cumulative", gravity=1e-3),
    dict(loss="squared", sparsity="round", gravity=1e-3, truncate_threshold=0.01),
    dict(loss="logistic", sparsity="subgradient", gravity=1e-3, truncate_threshold=0.01),
    dict(loss="logistic", l2=1e-3),
]


def _same(dense: LinearLearner, sparse: LinearLearner) -> None:
    expected, got = dense.to_model(), sparse.to_model()
    np.testing.assert_array_equal(got.slots, expected.slots)
    np.testing.assert_allclose(got.weights, expected.weights, rtol=1e-12, atol=1e-12)
    for bound in ("clip_low", "clip_high"):
        if getattr(expected, bound) is not None:
            np.testing.assert_array_equal(getattr(got, bound), getattr(expected, bound))
    np.testing.assert_allclose(sparse.stats_, dense.stats_, rtol=1e-12, atol=1e-12)
    assert got.names == expected.names


@pytest.mark.parametrize("settings_", SETTINGS, ids=lambda s: "-".join(f"{k}={v}" for k, v in s.items()))
def test_sparse_learns_merges_and_pickles_as_dense(settings_):
    rng = np.random.default_rng(7)
    config = LearnerConfig(bits=12, **settings_)
    batches = [_batch(rng, 40, 12, config.loss) for _ in range(4)]
    dense, sparse = LinearLearner(config), LinearLearner(config, sparse=True)
    for batch in batches[:2]:
        dense.learn(batch)
        sparse.learn(batch)
    assert sparse.sparse and len(sparse.raw_) < 1 << 12
    _same(dense, sparse)

    other_dense, other_sparse = LinearLearner(config), LinearLearner(config, sparse=True)
    other_dense.learn(batches[2])
    other_sparse.learn(batches[2])
    dense.merge([other_dense])
    sparse.merge([other_sparse])
    _same(dense, sparse)

    dense, sparse = pickle.loads(pickle.dumps(dense)), pickle.loads(pickle.dumps(sparse))
    assert sparse.sparse
    dense.start_pass().learn(batches[3])
    sparse.start_pass().learn(batches[3])
    _same(dense, sparse)
    np.testing.assert_allclose(sparse.predict(batches[0]), dense.predict(batches[0]), rtol=1e-12)


def test_a_sparse_state_turns_dense_past_its_limit_and_learns_on_the_same():
    rng = np.random.default_rng(3)
    config = LearnerConfig(bits=8, loss="logistic", learning_rate=0.5)
    dense, sparse = LinearLearner(config), LinearLearner(config, sparse=True)
    limit = dense_limit(8)
    turned = False
    for _ in range(6):
        batch = _batch(rng, 8, 8, "logistic", width=255)
        dense.learn(batch)
        sparse.learn(batch)
        turned = turned or not sparse.sparse
    assert turned and limit == 32
    _same(dense, sparse)


def test_merging_sparse_and_dense_states_gives_the_dense_merge():
    rng = np.random.default_rng(5)
    config = LearnerConfig(bits=10, loss="squared")
    batches = [_batch(rng, 30, 10, "squared") for _ in range(3)]
    reference = [LinearLearner(config).learn(batch) for batch in batches]
    mixed = [
        LinearLearner(config, sparse=True).learn(batches[0]),
        LinearLearner(config).learn(batches[1]),
        LinearLearner(config, sparse=True).learn(batches[2]),
    ]
    reference[0].merge(reference[1:])
    mixed[0].merge(mixed[1:])
    assert not mixed[0].sparse
    _same(reference[0], mixed[0])


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), order=st.permutations([0, 1, 2, 3]))
def test_a_sparse_merge_does_not_depend_on_the_order_of_the_learners(seed, order):
    rng = np.random.default_rng(seed)
    config = LearnerConfig(bits=12, loss="logistic", learning_rate=0.5)
    batches = [_batch(rng, int(rng.integers(1, 20)), 12, "logistic") for _ in range(4)]

    def merged(sequence):
        learners = [LinearLearner(config, sparse=True).learn(batches[i]) for i in sequence]
        return learners[0].merge(learners[1:])

    first, second = merged([0, 1, 2, 3]), merged(order)
    assert first.sparse and second.sparse
    np.testing.assert_array_equal(first.table_.slots, second.table_.slots)
    np.testing.assert_allclose(first.raw_, second.raw_, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(first.to_model().weights, second.to_model().weights, rtol=1e-12, atol=1e-15)


def test_a_sparse_state_costs_its_rows_not_its_bits():
    config = LearnerConfig(bits=22, loss="logistic", center=False)
    learner = LinearLearner(config, sparse=True)
    learner.learn(ExampleBatch.from_rows([(1.0, {5: 1.0, 9: 2.0}), (0.0, {5: -1.0})], bits=22))
    arrays = learner.raw_.nbytes + learner.feature_scale_.nbytes + learner.sum_sq_grad_.nbytes
    assert arrays < 4096 < state_bytes(config)
    assert len(pickle.dumps(learner)) < 8192
    assert learner.to_model().slots.tolist() == [0, 5, 9]


def test_set_weights_on_a_sparse_state():
    config = LearnerConfig(bits=12, loss="squared", center=False)
    dense, sparse = LinearLearner(config), LinearLearner(config, sparse=True)
    slots, weights = np.array([0, 7, 300]), np.array([0.5, -1.0, 2.0])
    dense.set_weights(slots, weights)
    sparse.set_weights(slots, weights)
    batch = ExampleBatch.from_rows([(1.0, {7: 1.0, 300: 0.5})], bits=12)
    np.testing.assert_allclose(sparse.predict(batch), dense.predict(batch))
    np.testing.assert_array_equal(sparse.weights, dense.weights)


def test_slot_table_reference():
    """Rows come in the order slots are first seen (new slots of one call in slot order); find is -1 for others."""
    table = SlotTable()
    seen = [0]
    rng = np.random.default_rng(0)
    for _ in range(20):
        indices = rng.integers(0, 50, size=rng.integers(1, 10))
        rows = table.rows_of(indices)
        for slot in sorted(set(indices.tolist()) - set(seen)):
            seen.append(slot)
        assert [seen.index(slot) for slot in indices.tolist()] == rows.tolist()
    assert table.slots.tolist() == seen
    assert table.find(np.array([1000])).tolist() == [-1]


def test_make_learner_sparse_for_linear():
    assert make_learner(LearnerConfig(), sparse=True).sparse
