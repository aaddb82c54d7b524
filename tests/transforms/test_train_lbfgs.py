"""Train with the L-BFGS finishing stage (lbfgs_passes) through Beam: the same model as the stage run
in one process from the same online model, on the training examples only."""

import apache_beam as beam
import numpy as np
import pytest

from polybeam.learners import lbfgs
from polybeam.learners.holdout import training_part
from polybeam.transforms.train import Train, _held_out_of_training
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
    """With a holdout that judges (min_held=0), the stage sums over the training examples only."""
    settings = dict(loss="logistic", bits=BITS, passes=passes, holdout_min_examples=min_held)
    (online,) = run_collect(lambda p: p | beam.Create(batches) | Train(**settings))
    (finished,) = run_collect(lambda p: p | beam.Create(batches) | Train(**settings, lbfgs_passes=6, lbfgs_l2=0.5))
    assert finished.config.lbfgs_passes == 6 and finished.config.lbfgs_l2 == 0.5
    summary = finished.metadata["lbfgs"]
    assert summary["evaluations"] == 6 and summary["l2"] == 0.5
    assert summary["objective"][-1] < summary["objective"][0]
    config = online.config
    assert _held_out_of_training(online, config) == (passes > 1 and min_held == 0)
    training = [training_part(b, config) for b in batches] if _held_out_of_training(online, config) else batches
    expected = lbfgs.finish(online, training, passes=6, l2=0.5)
    np.testing.assert_allclose(finished.dense_weights, expected.dense_weights, rtol=1e-7, atol=1e-9)
    assert finished.metadata["lbfgs"]["objective"] == pytest.approx(expected.metadata["lbfgs"]["objective"], rel=1e-9)


def test_the_finishing_stage_is_not_per_key():
    with pytest.raises(ValueError, match="per key"):
        Train(loss="logistic", lbfgs_passes=2, key=lambda batch: 0)


def test_the_finishing_stage_optimises_apples_expanded_features(batches):
    settings = dict(loss="logistic", bits=BITS, expand="apple", expand_after=50, apple_guard=False)
    (online,) = run_collect(lambda p: p | beam.Create(batches) | Train(**settings))
    (finished,) = run_collect(lambda p: p | beam.Create(batches) | Train(**settings, lbfgs_passes=5))
    assert online.expansion is not None and finished.expansion == online.expansion
    expected = lbfgs.finish(online, batches, passes=5, l2=finished.config.lbfgs_l2)
    np.testing.assert_allclose(finished.dense_weights, expected.dense_weights, rtol=1e-7, atol=1e-9)
    objective = finished.metadata["lbfgs"]["objective"]
    assert objective[-1] < objective[0]


def test_summing_losses_and_gradients_leaves_the_parts_unchanged():
    """The bundles' parts are input elements of the sum: a CombineFn must not change them (it summed
    the next part into the first one)."""
    from polybeam.learners.lbfgs import LossGradient
    from polybeam.transforms.train import _SumLossGradients

    parts = [
        LossGradient(1.0, np.ones((4, 1)), np.ones((4, 1)), 1.0, 1),
        LossGradient(2.0, np.full((4, 1), 2.0), np.ones((4, 1)), 1.0, 1),
    ]
    combine = _SumLossGradients()
    total = combine.create_accumulator()
    for part in parts:
        total = combine.add_input(total, part)
    total = combine.extract_output(combine.merge_accumulators([total, combine.create_accumulator()]))
    assert total.loss == 3.0 and total.gradient.ravel().tolist() == [3.0] * 4 and total.examples == 2
    assert parts[0].loss == 1.0 and parts[0].gradient.ravel().tolist() == [1.0] * 4 and parts[0].examples == 1
