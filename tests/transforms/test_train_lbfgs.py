"""Train with the L-BFGS finishing stage (lbfgs_passes) through Beam: the same model as the stage run
in one process from the same online model, on the training examples only."""

import numpy as np
import pytest

from polybeam.learners import lbfgs
from polybeam.learners.holdout import training_part
from polybeam.transforms.train import Train
from tests.learners.test_linear import random_batch
from tests.transforms.test_train_evaluate_predict import run_collect

import apache_beam as beam

BITS = 8


@pytest.fixture(scope="module")
def batches():
    rng = np.random.default_rng(7)
    return [random_batch(rng, loss="logistic", n=150, bits=BITS, scales=(1.0,)) for _ in range(4)]


@pytest.mark.parametrize("passes", [1, 2])
def test_train_with_the_finishing_stage_matches_it_in_one_process(batches, passes):
    settings = dict(loss="logistic", bits=BITS, passes=passes)
    (online,) = run_collect(lambda p: p | beam.Create(batches) | Train(**settings))
    (finished,) = run_collect(lambda p: p | beam.Create(batches) | Train(**settings, lbfgs_passes=6, lbfgs_l2=0.5))
    assert finished.config.lbfgs_passes == 6 and finished.config.lbfgs_l2 == 0.5
    summary = finished.metadata["lbfgs"]
    assert summary["evaluations"] == 6 and summary["l2"] == 0.5
    assert summary["objective"][-1] < summary["objective"][0]
    config = online.config
    training = [training_part(b, config) for b in batches] if config.holds_out else batches
    expected = lbfgs.finish(online, training, passes=6, l2=0.5)
    np.testing.assert_allclose(finished.dense_weights, expected.dense_weights, rtol=1e-7, atol=1e-9)
    assert finished.metadata["lbfgs"]["objective"] == pytest.approx(expected.metadata["lbfgs"]["objective"], rel=1e-9)


def test_the_finishing_stage_is_not_per_key():
    with pytest.raises(ValueError, match="per key"):
        Train(loss="logistic", lbfgs_passes=2, key=lambda batch: 0)
