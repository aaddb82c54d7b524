"""Train with the L-BFGS finishing stage (lbfgs_passes) through Beam: the same model as the stage run
in one process from the same online model, its holdout the learner's held-out examples."""

import apache_beam as beam
import numpy as np
import pytest

from polybeam.learners import lbfgs
from polybeam.learners.holdout import training_part
from polybeam.learners.polynomial import make_learner
from polybeam.transforms.train import Train
from tests.learners.test_linear import random_batch
from tests.transforms.test_train_evaluate_predict import run_collect

BITS = 8


@pytest.fixture(scope="module")
def batches():
    rng = np.random.default_rng(7)
    return [random_batch(rng, loss="logistic", n=150, bits=BITS, scales=(1.0,)) for _ in range(4)]


@pytest.mark.slow
@pytest.mark.parametrize("passes, min_held", [(1, 1000), (2, 1000), (2, 0)])
def test_train_with_the_finishing_stage_matches_it_in_one_process(batches, passes, min_held):
    """The stage sums its training part over the examples the holdout period does not hold out, and
    judges every point on those it does, across workers as in one process."""
    settings = dict(loss="logistic", bits=BITS, passes=passes, holdout_min_examples=min_held)
    (finished,) = run_collect(lambda p: p | beam.Create(batches) | Train(**settings, lbfgs_passes=6, lbfgs_l2=0.5))
    # The online passes as Train runs them on one bundle: with the stage to follow, even one pass holds out
    # (and the holdout is never released), so that the stage judges on examples the online model never saw.
    online = make_learner(finished.config).fit(batches).to_model()
    assert finished.config.lbfgs_passes == 6 and finished.config.lbfgs_l2 == 0.5
    summary = finished.metadata["lbfgs"]
    assert summary["evaluations"] == 6 and summary["l2_grid"] == [0.5] and summary["decided_on"] == "holdout"
    expected = lbfgs.finish(online, batches, passes=6, l2=0.5, period=online.config.holdout_period)
    np.testing.assert_allclose(finished.dense_weights, expected.dense_weights, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(summary["holdout_losses"], expected.metadata["lbfgs"]["holdout_losses"], rtol=1e-9)
    assert summary["kept"] == expected.metadata["lbfgs"]["kept"]


def test_the_finishing_stage_is_not_per_key():
    with pytest.raises(ValueError, match="per key"):
        Train(loss="logistic", lbfgs_passes=2, key=lambda batch: 0)


def test_the_finishing_stage_optimises_apples_expanded_features(batches):
    settings = dict(loss="logistic", bits=BITS, expand="apple", expand_after=50, apple_guard=False)
    (finished,) = run_collect(lambda p: p | beam.Create(batches) | Train(**settings, lbfgs_passes=5))
    learner = make_learner(finished.config)  # (one streaming pass: apple on its doubling schedule)
    for batch in batches:
        learner.learn(training_part(batch, finished.config))
    online = learner.to_model()
    assert online.expansion is not None and finished.expansion == online.expansion
    expected = lbfgs.finish(online, batches, passes=5, l2=finished.config.lbfgs_l2)
    np.testing.assert_allclose(finished.dense_weights, expected.dense_weights, rtol=1e-7, atol=1e-9)
    summary = finished.metadata["lbfgs"]
    assert summary["l2_grid"] == list(lbfgs.L2_GRID) and summary["kept"] == expected.metadata["lbfgs"]["kept"]


def test_summing_losses_and_gradients_leaves_the_parts_unchanged():
    """The bundles' parts are input elements of the sum: a CombineFn must not change them (it summed
    the next part into the first one)."""
    from polybeam.learners.lbfgs import LossGradient
    from polybeam.transforms.lbfgs_stage import SumLossGradients

    parts = [
        LossGradient(1.0, np.ones((4, 1)), np.ones((4, 1)), 1.0, 1),
        LossGradient(2.0, np.full((4, 1), 2.0), np.ones((4, 1)), 1.0, 1),
    ]
    combine = SumLossGradients()
    total = combine.create_accumulator()
    for part in parts:
        total = combine.add_input(total, part)
    total = combine.extract_output(combine.merge_accumulators([total, combine.create_accumulator()]))
    assert total.loss == 3.0 and total.gradient.ravel().tolist() == [3.0] * 4 and total.examples == 2
    assert parts[0].loss == 1.0 and parts[0].gradient.ravel().tolist() == [1.0] * 4 and parts[0].examples == 1


def test_averages_of_more_than_two_learners_are_finished_by_default(batches):
    """The finishing stage runs unless told not to when the online model is an average of more than two
    learners, says why and records its passes; after one learner it does nothing, even where its stages
    were built because nobody knew how many learners the runner would make."""
    settings = dict(loss="logistic", bits=BITS, passes=2)

    def trained(**options):
        train = Train(**settings, **options)
        (model,) = run_collect(lambda p: p | beam.Create(batches) | train)
        return model

    averaged = trained(in_memory=True, learners=4)
    assert averaged.metadata["learners_averaged"] == 4
    assert averaged.config.lbfgs_passes == lbfgs.AFTER_AVERAGING_PASSES
    summary = averaged.metadata["lbfgs"]
    assert summary["why"] == "each pass averaged 4 learners" and summary["evaluations"] == averaged.config.lbfgs_passes
    assert summary["kept"] == "online" or summary["holdout_loss"] < summary["online_holdout_loss"]
    plain = trained(in_memory=True, learners=4, lbfgs_after_averaging=0)
    assert "lbfgs" not in plain.metadata and plain.config.lbfgs_passes == 0
    assert Train(**settings, learners=2).finishing == (0, None)  # (no stages where at most two average)

    one = trained()  # one bundle, one learner
    unknown = trained(learners=None)  # stages built, nothing to finish
    assert "lbfgs" not in unknown.metadata and "learners_averaged" not in unknown.metadata
    np.testing.assert_array_equal(unknown.weights, one.weights)
    assert unknown.config == one.config


def test_in_memory_learners_are_refused_when_unknown():
    with pytest.raises(ValueError, match="learners=N"):
        Train(loss="logistic", in_memory=True, learners=None)
