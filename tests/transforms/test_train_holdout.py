"""Train's holdout in Beam: every pass judged on held-out examples, the best pass kept, learners
stopped early, per key and across partial learners, exactly as the pure learners' fit does."""

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.metrics.metric import MetricsFilter

from polybeam import datasets
from polybeam.learners.config import LearnerConfig
from polybeam.learners.holdout import split_holdout, training_count
from polybeam.learners.linear import LinearLearner
from polybeam.learners.polynomial import make_learner
from polybeam.transforms.train import Train, TrainFn
from tests.learners.test_holdout import noisy_logistic
from tests.transforms.test_train_evaluate_predict import run_collect

RUNNER = "FnApiRunner"


@pytest.fixture(scope="module")
def spam():
    batch = datasets.load("spam")
    return [batch.rows_between(start, min(start + 200, len(batch))) for start in range(0, len(batch), 200)]


def in_batches(batch, size=100):
    return [batch.rows_between(start, min(start + size, len(batch))) for start in range(0, len(batch), size)]


def run_with_metrics(build):
    """``(elements, {metric name: result})`` of a pipeline whose last PCollection ``build(p)`` returns."""
    _KEPT.clear()  # (the in-process runner's workers append here; each run starts empty)
    pipeline = beam.Pipeline(runner=RUNNER)
    build(pipeline) | beam.Map(_keep)
    result = pipeline.run()
    result.wait_until_finish()
    metrics = result.metrics().query(MetricsFilter().with_namespace("polybeam.train"))
    named = {}  # counters summed over the steps that count them; distributions by name (one step each here)
    for entry in metrics["counters"]:
        named[entry.key.metric.name] = named.get(entry.key.metric.name, 0) + entry.committed
    for entry in metrics["distributions"]:
        named[entry.key.metric.name] = entry.committed
    return list(_KEPT), named


_KEPT: list = []


def _keep(element):
    _KEPT.append(element)


@pytest.fixture(autouse=True)
def _empty_kept():
    _KEPT.clear()
    yield
    _KEPT.clear()


@pytest.mark.slow
@pytest.mark.parametrize("settings", [dict(loss="logistic"), dict(loss="squared", expand="apple", alpha=0.5)])
def test_train_judges_every_pass_as_fit_does(spam, settings):
    config = LearnerConfig(passes=4, holdout_min_examples=0, **settings)  # spam holds out ~460: judged anyway
    (model,) = run_collect(lambda p: p | beam.Create(spam) | Train(config))
    fitted = make_learner(config).fit(spam).to_model()
    holdout = model.metadata["holdout"]
    assert [entry["pass"] for entry in holdout["passes"]] == [1, 2, 3, 4]
    assert [entry["examples"] for entry in holdout["passes"]] == [4601 - training_count_of(spam, config)] * 4
    np.testing.assert_allclose(
        [e["holdout_loss"] for e in holdout["passes"]],
        [e["holdout_loss"] for e in fitted.metadata["holdout"]["passes"]],
        rtol=1e-9,
    )
    assert np.array_equal(model.slots, fitted.slots)
    np.testing.assert_allclose(model.weights, fitted.weights, rtol=1e-9, atol=1e-12)
    assert [p["examples"] for p in model.metadata["passes"]] == [training_count_of(spam, config)] * len(
        model.metadata["passes"]
    )


def training_count_of(batches, config):
    return sum(training_count(batch, config) for batch in batches)


@pytest.mark.slow
def test_a_learner_stopped_early_learns_no_more_and_its_best_pass_is_written():
    batches = in_batches(noisy_logistic(2))
    config = LearnerConfig(
        loss="logistic", bits=12, passes=12, learning_rate=1.0, holdout_min_examples=0, pass_schedule="constant"
    )
    (model,), metrics = run_with_metrics(lambda p: p | beam.Create(batches) | Train(config))
    fitted = LinearLearner(config).fit(batches)
    holdout = model.metadata["holdout"]
    # (centring's guard went on uncentred after the first pass here: 0.5511 against 0.5525 progressive loss)
    assert model.metadata["centring"] == fitted.to_model().metadata["centring"] and not fitted.centring_pays()
    assert holdout["best_pass"] == fitted.selection_.best_pass == 5
    assert holdout["stopped_after"] == 8
    np.testing.assert_allclose(model.weights, fitted.to_model().weights, rtol=1e-9)
    # Eight passes learned the examples that are not held out; the four after the stop learned nothing.
    assert metrics["learned_examples"] == 8 * training_count_of(batches, config)
    assert metrics["learners_stopped_early"] == 1
    assert {f"holdout_loss_micros_pass_{n}" for n in range(1, 9)} <= set(metrics)
    assert "holdout_loss_micros_pass_9" not in metrics
    best = metrics["holdout_loss_micros_pass_5"]
    assert best.count == 1 and best.sum == round(holdout["best_loss"] * 1e6)

    # The restart schedule, streamed pass by pass, is fit's: the same runs, rates and best pass.
    restarting = config.replace(pass_schedule="restart")
    (model,), metrics = run_with_metrics(lambda p: p | beam.Create(batches) | Train(restarting))
    fitted = LinearLearner(restarting).fit(batches)
    assert fitted.selection_.restarts >= 1
    assert model.metadata["holdout"]["passes"] == fitted.to_model().metadata["holdout"]["passes"]
    np.testing.assert_allclose(model.weights, fitted.to_model().weights, rtol=1e-9)


def test_per_key_learners_each_keep_their_own_holdout(spam):
    def halves(batch):
        return np.where(np.arange(len(batch)) % 3 == 0, "third", "rest")

    config = LearnerConfig(loss="logistic", passes=5, learning_rate=4.0, holdout_min_examples=0)
    models = dict(run_collect(lambda p: p | beam.Create(spam) | Train(config, key=halves)))
    assert set(models) == {"third", "rest"}
    for key, model in models.items():
        own = [part for batch in spam for name, part in batch.split_by(halves(batch)) if name == key]
        fitted = LinearLearner(config, per_key=True).fit(own)
        holdout = model.metadata["holdout"]
        assert holdout["best_pass"] == fitted.selection_.best_pass
        assert holdout["stopped_after"] == (fitted.selection_.last_pass if fitted.selection_.stopped else None)
        assert holdout["passes"][0]["examples"] == sum(len(part) - training_count(part, config) for part in own)
        np.testing.assert_allclose(model.weights, fitted.to_model().weights, rtol=1e-9, atol=1e-12)


def test_partial_learners_never_learn_held_out_examples(spam):
    """Parallel learners (a lifted combine's partial accumulators) hold out the same examples."""
    config = LearnerConfig(loss="logistic", passes=3)
    fn = TrainFn(config, output="state")
    partials = []
    for bundle in (spam[:10], spam[10:]):
        accumulator = fn.create_accumulator()
        for batch in bundle:
            accumulator = fn.add_input(accumulator, batch)
        partials.append(fn.compact(accumulator).settle())
    assert [learner.examples_seen for learner in partials] == [
        training_count_of(spam[:10], config),
        training_count_of(spam[10:], config),
    ]
    alone = LinearLearner(config)
    for batch in spam[:10]:
        alone.learn(split_holdout(batch, config)[0])
    np.testing.assert_array_equal(partials[0].weights, alone.weights)


def test_without_a_holdout_every_pass_learns_every_example_and_the_last_is_kept(spam):
    config = LearnerConfig(loss="logistic", passes=3, holdout_period=0)
    (model,) = run_collect(lambda p: p | beam.Create(spam) | Train(config))
    assert "holdout" not in model.metadata
    assert [p["examples"] for p in model.metadata["passes"]] == [4601] * 3


@pytest.mark.slow
def test_too_few_held_out_examples_release_the_holdout_as_fit_does(spam):
    # Spam holds out ~460 examples, fewer than the default 1000: pass 1 is scored, then every example is learned.
    config = LearnerConfig(loss="logistic", passes=3, small_holdout="release")
    (model,), metrics = run_with_metrics(lambda p: p | beam.Create(spam) | Train(config))
    fitted = LinearLearner(config).fit(spam).to_model()
    assert model.metadata["holdout"]["released"] and model.metadata["holdout"] == fitted.metadata["holdout"]
    np.testing.assert_allclose(model.weights, fitted.weights, rtol=1e-9, atol=1e-12)
    assert metrics["learned_examples"] == training_count_of(spam, config) + 2 * 4601
    assert "learners_stopped_early" not in metrics
