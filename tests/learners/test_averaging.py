"""Per-coordinate weighted merges (polybeam.learners.averaging) against the plain-Python reference,
and their properties: order-free and associative."""

import pickle

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from polybeam.learners import averaging
from polybeam.learners.config import LearnerConfig
from polybeam.learners.linear import LinearLearner
from polybeam.learners.polynomial import make_learner
from tests.learners import reference_averaging
from tests.learners.test_linear import random_batch

BITS = 6


def test_slot_masses_match_the_reference():
    rng = np.random.default_rng(0)
    batches = [random_batch(rng, loss="logistic", n=60, bits=BITS) for _ in range(3)]
    for bias in (True, False):
        mass = np.zeros(1 << BITS)
        for batch in batches:
            averaging.add_mass(mass, batch.weights, batch.indptr, batch.indices, batch.values, bias)
        expected = np.zeros(1 << BITS)
        for slot, value in reference_averaging.slot_masses(batches, bias).items():
            expected[slot] = value
        np.testing.assert_allclose(mass, expected, rtol=1e-12)


arrays = st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=5, max_size=5)
masses = st.lists(st.one_of(st.just(0.0), st.floats(1e-3, 1e3)), min_size=5, max_size=5)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(arrays, masses, st.floats(0.01, 1.0)), min_size=1, max_size=5))
def test_weighted_mean_matches_the_reference(parts):
    weights = [np.array(w)[:, None] for w, _, _ in parts]
    slot_masses = [np.array(m) for _, m, _ in parts]
    shares = np.array([s for _, _, s in parts])
    shares /= shares.sum()
    expected = reference_averaging.weighted_average(
        [w[:, 0].tolist() for w in weights], [dict(enumerate(m)) for m in slot_masses], shares, 5
    )
    got = averaging.weighted_mean(weights, slot_masses, shares)[:, 0]
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)


def _learners(seed, sizes, config, importance=True):
    rng = np.random.default_rng(seed)
    return [
        make_learner(config).learn(random_batch(rng, loss=config.loss, n=n, bits=config.bits, importance=importance))
        for n in sizes
    ]


def _copies(learners):
    return [pickle.loads(pickle.dumps(learner)) for learner in learners]


CONFIGS = {
    "gsa": LearnerConfig(loss="logistic", bits=BITS, step="gsa"),
    "adaptive": LearnerConfig(loss="logistic", bits=BITS),
    "squared": LearnerConfig(loss="squared", bits=BITS),
}


@settings(max_examples=25, deadline=None)
@given(
    st.sampled_from(sorted(CONFIGS)),
    st.integers(0, 2**16),
    st.lists(st.integers(1, 40), min_size=2, max_size=5),
    st.randoms(use_true_random=False),
)
def test_merge_is_order_free(name, seed, sizes, random):
    learners = _learners(seed, sizes, CONFIGS[name])
    expected = _copies(learners)
    expected = expected[0].merge(expected[1:])
    shuffled = _copies(learners)
    random.shuffle(shuffled)
    merged = shuffled[0].merge(shuffled[1:])
    np.testing.assert_allclose(merged.weights, expected.weights, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(merged.sum_sq_grad_, expected.sum_sq_grad_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(merged.slot_mass_, expected.slot_mass_, rtol=1e-12)


@settings(max_examples=25, deadline=None)
@given(
    st.sampled_from(sorted(CONFIGS)),
    st.integers(0, 2**16),
    st.lists(st.integers(1, 40), min_size=3, max_size=6),
    st.data(),
)
def test_merge_is_associative(name, seed, sizes, data):
    """An average of averages (as a runner's merge tree or lifted combine makes them) is the average of all."""
    learners = _learners(seed, sizes, CONFIGS[name])
    flat = _copies(learners)
    flat = flat[0].merge(flat[1:])
    split = data.draw(st.integers(1, len(learners) - 1))
    left, right = _copies(learners[:split]), _copies(learners[split:])
    left, right = left[0].merge(left[1:]), right[0].merge(right[1:])
    nested = left.merge([right])
    np.testing.assert_allclose(nested.weights, flat.weights, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(nested.sum_sq_grad_, flat.sum_sq_grad_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(nested.slot_mass_, flat.slot_mass_, rtol=1e-12)
    assert nested.examples_seen == flat.examples_seen


def test_later_passes_start_counting_mass_afresh_and_keep_unseen_slots():
    config = CONFIGS["adaptive"]
    first = _learners(1, [80], config)[0]
    origin = first.copy().start_pass()
    assert not origin.slot_mass_.any()
    rng = np.random.default_rng(5)
    workers = [
        origin.copy().learn(random_batch(rng, loss="logistic", n=5, bits=BITS, max_features=3)) for _ in range(2)
    ]
    untouched = (workers[0].slot_mass_ == 0) & (workers[1].slot_mass_ == 0)
    merged = workers[0].merge(workers[1:])
    np.testing.assert_allclose(merged.weights[untouched], origin.weights[untouched], rtol=1e-12)


def test_mass_survives_pickling_and_state_bytes_counts_it():
    learner = _learners(2, [30], CONFIGS["gsa"])[0]
    restored = pickle.loads(pickle.dumps(learner))
    np.testing.assert_array_equal(restored.slot_mass_, learner.slot_mass_)
    state = learner.__getstate__()
    del state["slot_mass"]  # a state saved before slot masses: merges as the importance-weighted mean
    old = LinearLearner.__new__(LinearLearner)
    old.__setstate__(state)
    assert not old.slot_mass_.any()


def test_polynomial_merge_still_unites_and_freezes_parents():
    config = LearnerConfig(loss="logistic", bits=10, expand="apple", expand_after=20, apple_guard=False)
    learners = _learners(3, [120, 150], config, importance=False)
    assert all(learner.parents for learner in learners)
    united = {p for learner in learners for p in learner.parents}
    merged = learners[0].merge(learners[1:])
    assert set(merged.parents) == united and merged.frozen
    assert merged.linear.slot_mass_[0] >= 270.0  # every example once, and features that hash to slot 0
