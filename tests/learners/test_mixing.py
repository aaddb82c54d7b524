"""Parameter mixing in one process (polybeam.learners.mixing): passes split over N learners as N workers
would learn them, checked against the combine that averages workers' learners on Beam."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from polybeam.learners import mixing
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.fitting import train_passes
from polybeam.learners.polynomial import make_learner
from polybeam.transforms.passes import MergeLearnersFn, TrainFn
from tests.learners.test_linear import random_batch

BITS = 8


def _labels(batches) -> list:
    return [label for batch in batches for label in batch.labels.tolist()]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 30), min_size=1, max_size=6), st.integers(1, 40))
def test_shares_cut_the_rows_in_order_into_near_equal_parts(sizes, learners):
    counter = iter(range(10_000))
    parts = [ExampleBatch.from_rows([(float(next(counter)), {1: 1.0}) for _ in range(size)]) for size in sizes]
    cut = mixing.shares(parts, learners)
    assert len(cut) == learners
    assert [label for share in cut for label in _labels(share)] == _labels(parts)
    lengths = [sum(len(batch) for batch in share) for share in cut]
    assert max(lengths) - min(lengths) <= 1


def _batches(loss="logistic", count=6, rows=90, seed=0, classes=0):
    rng = np.random.default_rng(seed)
    return [random_batch(rng, loss=loss, n=rows, bits=BITS, classes=classes) for _ in range(count)]


def _state(learner) -> np.ndarray:
    return learner.to_model().weights


def test_one_learner_is_a_plain_pass():
    config = LearnerConfig(loss="logistic", bits=BITS)
    batches = _batches()
    plain = make_learner(config)
    for batch in batches:
        plain.learn(batch)
    mixed = mixing.mixed_pass(make_learner(config), mixing.shares(batches, 1))
    np.testing.assert_array_equal(_state(mixed), _state(plain))


def _as_workers_on_beam(config, batches, learners: int, passes: int):
    """The passes as Train's combines run them: pass 1 TrainFn (an accumulator per worker, merged), later
    passes copies of the average (``start_pass``) merged by MergeLearnersFn, each worker its share."""
    cut = mixing.shares(batches, learners)
    first = TrainFn(config, output="state")
    accumulators = []
    for share in cut:
        accumulator = first.create_accumulator()
        for batch in share:
            accumulator = first.add_input(accumulator, (batch, None))
        accumulators.append(first.compact(accumulator))
    state = first.extract_output(first.merge_accumulators(accumulators))
    later = MergeLearnersFn(config, output="state")
    for _ in range(passes - 1):
        accumulator = later.create_accumulator()
        for share in cut:
            learner = state.copy().start_pass()
            for batch in share:
                learner.learn(batch)
            accumulator = later.add_input(accumulator, learner.compact())
        state = later.extract_output(accumulator)
    return state


def test_passes_match_the_combines_that_average_workers_on_beam():
    # More learners than one merge group takes: the grouped merges give the all-at-once average.
    learners = mixing.MERGE_GROUP * 2 + 3
    for settings_ in ({"loss": "logistic"}, {"loss": "squared", "step": "gsa"}, {"loss": "softmax", "classes": 3}):
        config = LearnerConfig(bits=BITS, passes=3, holdout_period=0, **settings_)
        batches = _batches(settings_["loss"], count=8, rows=70, classes=settings_.get("classes", 0))
        mixed = train_passes(make_learner(config), batches, 3, learners=learners)
        expected = _as_workers_on_beam(config, batches, learners, 3)
        np.testing.assert_allclose(_state(mixed), _state(expected), rtol=1e-9, atol=1e-12)
        assert mixed.examples_seen == expected.examples_seen


def test_the_average_of_many_learners_differs_from_one_learner_and_the_holdout_judges_it():
    config = LearnerConfig(loss="logistic", bits=BITS, passes=4, holdout_min_examples=0)
    batches = _batches(count=10, rows=100)
    one = train_passes(make_learner(config), batches, 4)
    many = train_passes(make_learner(config), batches, 4, learners=16)
    assert not np.allclose(_state(one), _state(many))
    assert len(many.selection_.history) >= 1  # every pass of the average was judged on the holdout
    assert many.examples_seen == one.examples_seen


def test_more_learners_than_examples_make_as_many_learners_as_there_are_examples():
    config = LearnerConfig(loss="logistic", bits=BITS, passes=1, holdout_period=0)
    batch = _batches(count=1, rows=5)[0]
    learner = mixing.mixed_pass(make_learner(config), mixing.shares([batch], 12))
    assert learner.examples_seen == 5


def test_apple_learners_space_their_epochs_over_their_share_of_a_pass():
    assert mixing.learner_total(1000, 3, 1) == 3000
    assert mixing.learner_total(1000, 3, 8) == 125
    config = LearnerConfig(loss="logistic", bits=BITS, passes=2, holdout_period=0, expand="apple")
    batches = _batches(count=10, rows=200)
    mixed = train_passes(make_learner(config), batches, 2, learners=4)
    assert mixed.to_model().config.expand == "apple"
