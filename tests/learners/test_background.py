"""BackgroundLearner: learning on a helper thread gives exactly the caller-thread result, and errors surface."""

from __future__ import annotations

import pickle
import time

import numpy as np
import pytest

from polybeam import datasets
from polybeam.learners import background
from polybeam.learners.background import BackgroundLearner
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.linear import LinearLearner
from polybeam.learners.polynomial import make_learner


@pytest.fixture(scope="module")
def batches():
    spam = datasets.load("spam")
    return [spam.take(np.arange(start, min(start + 300, len(spam)))) for start in range(0, len(spam), 300)]


@pytest.mark.parametrize("settings", [{"loss": "logistic"}, {"loss": "squared", "expand": "apple", "alpha": 0.5}])
def test_background_learning_equals_learning_in_the_caller(batches, settings):
    config = LearnerConfig(**settings)
    direct = make_learner(config, total=4601)
    for batch in batches:
        direct.learn(batch)
    wrapped = BackgroundLearner(make_learner(config))
    for batch in batches:
        wrapped.learn(batch, total=4601)
    learner = wrapped.settle()
    assert learner.progressive_loss == direct.progressive_loss
    np.testing.assert_array_equal(learner.to_model().dense_weights, direct.to_model().dense_weights)


def test_pickling_waits_for_queued_batches(batches):
    wrapped = BackgroundLearner(LinearLearner(LearnerConfig(loss="logistic")))
    for batch in batches:
        wrapped.learn(batch)
    restored = pickle.loads(pickle.dumps(wrapped))
    assert restored.settle().examples_seen == 4601


def test_a_learning_error_reaches_the_caller():
    wrapped = BackgroundLearner(LinearLearner(LearnerConfig(bits=10)))
    wrongly_hashed = ExampleBatch.from_rows([(1.0, {1: 1.0})], bits=12)
    with pytest.raises(ValueError, match="bits"):
        wrapped.learn(wrongly_hashed)
        wrapped.settle()


def test_on_one_core_it_learns_in_the_callers_thread(monkeypatch, batches):
    monkeypatch.setattr(background, "available_cores", lambda: 1)
    wrapped = BackgroundLearner(LinearLearner(LearnerConfig(loss="logistic")))
    wrapped.learn(batches[0])
    assert not wrapped._pending and wrapped.learner.examples_seen == len(batches[0])


def test_concurrent_learners_share_one_expansion_helper(monkeypatch):
    """Apple learners of concurrent bundles (multi_threading workers) ask for the expansion helper at
    once; each used to see none yet and start its own (the others' threads never shut down)."""
    from polybeam.learners import polynomial
    from tests.concurrency import all_at_once

    started = []

    class SlowToStart(polynomial.ThreadPoolExecutor):
        def __init__(self, *args, **kwargs):
            time.sleep(0.05)  # a loaded machine: the other threads ask meanwhile
            started.append(self)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(polynomial, "ThreadPoolExecutor", SlowToStart)
    monkeypatch.setattr(polynomial, "available_cores", lambda: 2)
    monkeypatch.setattr(polynomial, "_helper", None)
    try:
        helpers = all_at_once(polynomial._expansion_thread)
    finally:
        for executor in started:
            executor.shutdown()
    assert len(started) == 1
    assert all(helper is started[0] for helper in helpers)
