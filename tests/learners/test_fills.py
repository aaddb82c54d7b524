"""A centred model's fills: an example that lacks a slot every training example had is given the slot's
training mean (a missing value), not 0; checked against adding the mean by hand, through model files and
per-key shards, and on real bundled data with a column left out."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from polybeam import datasets
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.linear import LinearLearner
from polybeam.learners.model import Model
from polybeam.learners.model_shards import ShardReader, shard_bytes
from polybeam.learners.polynomial import make_learner


def _dense_task(rows: int = 400, seed: int = 0) -> ExampleBatch:
    """Three numeric columns far from 0 (every example has them) and a sparse word."""
    random = np.random.RandomState(seed)
    examples = []
    for _ in range(rows):
        a, b, c = 50 + 5 * random.randn(), 3000 + 400 * random.randn(), 20 + random.randn()
        label = 1.0 if (a - 50) / 5 - (b - 3000) / 400 + random.randn() > 0 else -1.0
        features = {1: a, 2: b, 3: c}
        if random.rand() < 0.3:
            features[100 + random.randint(5)] = 1.0
        examples.append((label, features))
    return ExampleBatch.from_rows(examples, bits=10)


def test_a_centred_model_fills_the_slots_every_example_had_with_their_means():
    batch = _dense_task()
    model = LinearLearner(LearnerConfig(loss="logistic", bits=10)).learn(batch).to_model()
    assert model.fill_slots.tolist() == [1, 2, 3]
    np.testing.assert_allclose(model.fill_values, [batch.values[batch.indices == s].mean() for s in (1, 2, 3)])
    lacking = ExampleBatch.from_rows([(1.0, {1: 60.0, 3: 21.0}), (1.0, {})], bits=10)
    by_hand = ExampleBatch.from_rows(
        [(1.0, {1: 60.0, 2: model.fill_values[1], 3: 21.0}), (1.0, dict(zip((1, 2, 3), model.fill_values)))], bits=10
    )
    np.testing.assert_allclose(model.margins(lacking), model.margins(by_hand), rtol=1e-12)
    # A training example has every fill slot: its prediction is the plain w . x + b.
    plain = dataclasses.replace(model, fill_slots=None, fill_values=None)
    np.testing.assert_array_equal(model.margins(batch), plain.margins(batch))
    # The row with nothing predicts the centred model's mean, not the extrapolation to 0.
    assert abs(model.margins(lacking)[1]) < abs(plain.margins(lacking)[1])


def test_an_uncentred_model_has_no_fills():
    batch = _dense_task()
    assert (
        LinearLearner(LearnerConfig(loss="logistic", bits=10, center=False)).learn(batch).to_model().fill_slots is None
    )
    # Centring's race kept the uncentred learner (labels all alike: nothing to condition): its model, no fills.
    same = LinearLearner(LearnerConfig(loss="squared", bits=10)).learn(
        dataclasses.replace(batch, labels=np.ones(len(batch)))
    )
    model = same.to_model()
    assert model.metadata["centring"]["kept"] is False and model.fill_slots is None


def test_fills_survive_model_files_and_per_key_shards():
    model = (
        make_learner(LearnerConfig(loss="logistic", bits=10, expand="apple", passes=1)).learn(_dense_task()).to_model()
    )
    assert model.fill_slots is not None
    again = Model.from_bytes(model.to_bytes())
    np.testing.assert_array_equal(again.fill_slots, model.fill_slots)
    np.testing.assert_array_equal(again.fill_values, model.fill_values)
    data = shard_bytes([("a", model)])
    from_shard = ShardReader(lambda start, stop: data[start:stop]).model("a")
    np.testing.assert_array_equal(from_shard.fill_slots, model.fill_slots)
    np.testing.assert_array_equal(from_shard.fill_values, model.fill_values)
    lacking = ExampleBatch.from_rows([(1.0, {2: 2900.0}), (-1.0, {1: 40.0, 2: 3500.0, 3: 19.0})], bits=10)
    np.testing.assert_array_equal(again.margins(lacking), model.margins(lacking))


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.dictionaries(st.integers(1, 12), st.floats(-5, 5, allow_nan=False, allow_infinity=False), max_size=6),
        min_size=1,
        max_size=8,
    ),
    fills=st.lists(st.integers(1, 12), unique=True, max_size=5),
)
def test_filled_adds_exactly_the_missing_fill_slots(rows, fills):
    batch = ExampleBatch.from_rows([(0.0, row) for row in rows], bits=4)
    fills = np.array(sorted(fills), dtype=np.int64)
    model = Model(
        LearnerConfig(loss="squared", bits=4),
        np.zeros(0, np.int64),
        np.zeros(0),
        fill_slots=fills,
        fill_values=fills * 10.0,
    )
    filled = model.filled(batch)
    for i in range(len(rows)):
        got = dict(
            zip(
                filled.indices[filled.indptr[i] : filled.indptr[i + 1]].tolist(),
                filled.values[filled.indptr[i] : filled.indptr[i + 1]].tolist(),
            )
        )
        want = {slot: value for slot, value in zip(batch.row(i)[0].tolist(), batch.row(i)[1].tolist())}
        want.update({int(s): float(s) * 10 for s in fills if int(s) not in want})
        assert got == want


def test_on_real_data_a_missing_column_costs_little_instead_of_everything():
    # satellite: 36 numeric columns (pixel values 27-157), every row has them; 6 classes.
    data = datasets.load("satellite")
    order = np.random.RandomState(0).permutation(len(data))
    train, test = data.take(order[:3000]), data.take(order[3000:])
    model = make_learner(LearnerConfig(loss="softmax", classes=int(data.labels.max()), bits=18)).learn(train).to_model()
    assert model.fill_slots is not None and len(model.fill_slots) == 36
    dropped = int(model.fill_slots[0])
    keep = test.indices != dropped
    counts = np.add.reduceat(keep.astype(int), test.indptr[:-1])
    lacking = dataclasses.replace(
        test, indices=test.indices[keep], values=test.values[keep], indptr=np.concatenate([[0], np.cumsum(counts)])
    )
    plain = dataclasses.replace(model, fill_slots=None, fill_values=None)

    def error(m, batch):
        return float(np.mean(np.argmax(m.margins(batch), axis=1) + 1 != batch.labels))

    full, filled, zero = error(model, test), error(model, lacking), error(plain, lacking)
    # measured: all columns 0.155; the first column missing and filled 0.165, taken as 0: 0.348
    assert filled < full + 0.02 and zero > filled + 0.03
