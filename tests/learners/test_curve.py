"""The learning curve: points at doubling counts that equal a fresh learner's figures after exactly that many
examples, whatever the batching; merged point by point; saved with the learner and in the model."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.curve import LearningCurve
from polybeam.learners.linear import LinearLearner
from polybeam.learners.polynomial import make_learner

CONFIGS = [
    LearnerConfig(loss="logistic"),
    LearnerConfig(loss="squared", gravity=0.02),
    LearnerConfig(loss="squared", gravity=0.05, sparsity="truncate", truncate_every=3),
    LearnerConfig(loss="hinge", step="gsa"),
    LearnerConfig(loss="softmax", classes=3),
]


def rows(n: int, seed: int = 0, classes: int = 0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        features = {int(k): float(rng.normal()) for k in rng.integers(1, 40, size=4)}
        label = float(rng.integers(1, classes + 1)) if classes else float(np.sign(sum(features.values())) or 1.0)
        out.append((label, features))
    return out


def batch_of(config, n=300, seed=0):
    return ExampleBatch.from_rows(rows(n, seed, config.classes))


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.loss}-{c.step}-{c.sparsity}")
def test_each_point_is_a_fresh_learners_figures_after_that_many_examples(config):
    batch = batch_of(config)
    learner = LinearLearner(config).learn(batch)
    counts = [p["examples"] for p in learner.curve_.points]
    assert counts == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    for point in learner.curve_.points:
        reference = LinearLearner(config).learn(batch.rows_between(0, point["examples"]))
        assert point["progressive_loss"] == pytest.approx(reference.progressive_loss, rel=1e-12)
        weights = reference.weights
        assert point["nonzero"] == np.count_nonzero(weights.any(axis=1) if weights.ndim == 2 else weights)
        assert point["nonzero"] == reference.nonzero_slots()
        assert point["pass"] == 1 and point["weight"] == point["examples"]


@settings(max_examples=25, deadline=None)
@given(
    cuts=st.lists(st.integers(1, 299), max_size=6, unique=True),
    sparse=st.sampled_from(
        [
            {"gravity": 0.01},
            {"gravity": 0.01, "sparsity": "truncate", "truncate_every": 7},
            {"sparsity": "round", "truncate_threshold": 0.05, "truncate_every": 5},
            {},
        ]
    ),
)
def test_batching_changes_neither_the_points_nor_the_learning(cuts, sparse):
    config = LearnerConfig(loss="logistic", **sparse)
    batch = batch_of(config)
    whole = LinearLearner(config).learn(batch)
    pieces = LinearLearner(config)
    edges = [0, *sorted(cuts), len(batch)]
    for start, stop in zip(edges, edges[1:]):
        pieces.learn(batch.rows_between(start, stop))
    assert pieces.curve_.points == whole.curve_.points
    np.testing.assert_array_equal(pieces.raw_, whole.raw_)
    # ... and a learner that never stops for a point learns the same weights.
    unstopped = LinearLearner(config)
    unstopped.curve_.in_pass = 1 << 40
    unstopped.learn(batch)
    np.testing.assert_array_equal(unstopped.raw_, whole.raw_)


def test_passes_start_their_own_points_and_the_state_keeps_them():
    config = LearnerConfig(loss="logistic", passes=2)
    batch = batch_of(config, n=100)
    learner = LinearLearner(config).fit(batch)
    passes = [(p["pass"], p["examples"]) for p in learner.curve_.points]
    assert passes == [(1, 1), (1, 2), (1, 4), (1, 8), (1, 16), (1, 32), (1, 64)] + [
        (2, 1),
        (2, 2),
        (2, 4),
        (2, 8),
        (2, 16),
        (2, 32),
        (2, 64),
    ]
    again = pickle.loads(pickle.dumps(learner))
    assert again.curve_.points == learner.curve_.points and again.curve_.in_pass == learner.curve_.in_pass
    model = learner.to_model()
    assert model.metadata["learning_curve"] == learner.curve_.points
    polynomial = make_learner(LearnerConfig(loss="squared", expand="apple")).learn(batch)
    assert [p["examples"] for p in polynomial.to_model().metadata["learning_curve"]] == [1, 2, 4, 8, 16, 32, 64]


point_lists = st.lists(
    st.tuples(st.integers(0, 50), st.floats(0, 50), st.floats(0, 100), st.integers(0, 30)), max_size=6
)


def curve_of(entries, pass_number, earlier=()):
    curve = LearningCurve([dict(p) for p in earlier])
    for examples, weight, loss, nonzero in entries:
        curve.record(pass_number=pass_number, examples=examples, weight=weight, loss=loss, nonzero=nonzero)
    return curve


@settings(max_examples=60, deadline=None)
@given(parts=st.lists(point_lists, min_size=1, max_size=4))
def test_merging_adds_the_kth_points_and_is_associative(parts):
    earlier = curve_of([(1, 1.0, 0.5, 2), (2, 2.0, 0.9, 3)], 1).points
    curves = [curve_of(entries, 2, earlier) for entries in parts]
    merged = LearningCurve.merged(curves, 2)
    assert merged.points[:2] == earlier  # the shared earlier pass, once
    current = merged.points[2:]
    for rank, point in enumerate(current):
        mine = [entries[rank] for entries in parts if len(entries) > rank]
        assert point["examples"] == sum(e[0] for e in mine)
        assert point["weight"] == pytest.approx(sum(e[1] for e in mine))
        assert point["loss"] == pytest.approx(sum(e[2] for e in mine))
        assert point["nonzero"] == max(e[3] for e in mine)
        expected = point["loss"] / point["weight"] if point["weight"] > 0 else None
        assert (
            point["progressive_loss"] == pytest.approx(expected)
            if expected is not None
            else point["progressive_loss"] is None
        )
    assert len(current) == max(len(entries) for entries in parts)
    if len(curves) > 2:  # merging merges gives the same sums
        nested = LearningCurve.merged([LearningCurve.merged(curves[:2], 2), *curves[2:]], 2)
        for a, b in zip(nested.points, merged.points):
            assert a["examples"] == b["examples"] and a["nonzero"] == b["nonzero"]
            assert a["loss"] == pytest.approx(b["loss"]) and a["weight"] == pytest.approx(b["weight"])


def test_merged_learners_keep_their_points_and_their_listener():
    config = LearnerConfig(loss="logistic")
    seen = []
    a = LinearLearner(config)
    a.curve_.progress = lambda point, curve: seen.append(point["examples"])
    a.learn(batch_of(config, 40, 1))
    b = LinearLearner(config).learn(batch_of(config, 20, 2))
    a.merge([b])
    assert seen == [1, 2, 4, 8, 16, 32]
    assert [p["examples"] for p in a.curve_.points] == [2, 4, 8, 16, 32, 32]
    assert a.curve_.progress is not None and a.curve_.in_pass == 60


@pytest.mark.parametrize(
    "settings",
    [
        {"loss": "logistic", "gravity": 0.002},
        {"loss": "logistic", "gravity": 0.05, "sparsity": "truncate", "truncate_every": 4, "truncate_threshold": 0.3},
        {"loss": "squared", "step": "gsa", "gravity": 0.05, "sparsity": "truncate"},
        {
            "loss": "squared",
            "step": "constant",
            "learning_rate": 0.1,
            "sparsity": "round",
            "truncate_threshold": 0.02,
            "truncate_every": 3,
        },
        {"loss": "hinge", "gravity": 0.02, "sparsity": "subgradient", "truncate_threshold": 0.01},
        {"loss": "softmax", "classes": 3, "gravity": 0.002},
        {"loss": "logistic", "l2": 0.01, "gravity": 0.01, "sparsity": "truncate"},
    ],
)
def test_the_count_is_the_weights_in_force(settings):
    config = LearnerConfig(**settings)
    learner = LinearLearner(config).learn(batch_of(config, 500, 3))
    before = learner.raw_.copy(), learner.synced_.copy()
    weights = learner.copy().weights  # (settles the copy)
    expected = np.count_nonzero(weights.any(axis=1) if weights.ndim == 2 else weights)
    assert learner.nonzero_slots() == expected > 0
    np.testing.assert_array_equal(learner.raw_, before[0])
    np.testing.assert_array_equal(learner.synced_, before[1])


def test_points_every_n_examples_are_a_fresh_learners_figures_and_survive_state_and_merges():
    # (center=False: one learner; centring's guard would race a second, whose curve a model of it records)
    config = LearnerConfig(loss="logistic", passes=2, holdout_period=0, center=False)
    batch = batch_of(config, n=250)
    learner = LinearLearner(config)
    learner.curve_.every = 60
    learner.fit(batch)
    passes = [(p["pass"], p["examples"]) for p in learner.curve_.points]
    assert passes == [(p, n) for p in (1, 2) for n in (60, 120, 180, 240)]
    for point in learner.curve_.points[:4]:
        reference = LinearLearner(config).learn(batch.rows_between(0, point["examples"]))
        assert point["progressive_loss"] == pytest.approx(reference.progressive_loss, rel=1e-12)
        assert point["nonzero"] == reference.nonzero_slots()
    again = pickle.loads(pickle.dumps(learner))
    assert again.curve_.every == 60 and again.curve_.points == learner.curve_.points
    # Two learners of one pass: the k-th points (each at k * 60 of its own examples) add up.
    a, b = LinearLearner(config), LinearLearner(config)
    a.curve_.every = b.curve_.every = 60
    a.learn(batch.rows_between(0, 130))
    b.learn(batch.rows_between(130, 250))
    a.merge([b])
    assert a.curve_.every == 60 and [p["examples"] for p in a.curve_.points] == [120, 240]
    with pytest.raises(ValueError, match="every N > 0"):
        LearningCurve(every=-1)
