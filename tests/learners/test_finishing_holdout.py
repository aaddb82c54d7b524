"""The finishing stage never returns a model worse on its holdout than the online model it started from,
and its default L2 does not make scikit-learn's bundled breast cancer and iris data worse (issue 31:
accuracy 0.956 -> 0.870 and 0.921 -> 0.816 with --lbfgs-passes 5 at the old default L2 of 10)."""

import numpy as np
import pytest

from polybeam.learners import lbfgs
from polybeam.learners.arrays import batch_from_arrays
from polybeam.learners.config import LearnerConfig
from polybeam.learners.holdout import holdout_rows
from polybeam.learners.model import unjudged_finishing_line
from polybeam.learners.polynomial import make_learner

datasets = pytest.importorskip("sklearn.datasets")


def split(name: str, seed: int):
    data = getattr(datasets, f"load_{name}")()
    order = np.random.default_rng(seed).permutation(len(data.target))
    cut = len(order) * 4 // 5
    if name == "iris":
        labels, config = data.target + 1.0, LearnerConfig(loss="softmax", classes=3)
    else:
        labels, config = np.where(data.target > 0, 1.0, -1.0), LearnerConfig(loss="logistic")
    train = batch_from_arrays(data.data[order[:cut]], labels[order[:cut]], bits=config.bits)
    test = batch_from_arrays(data.data[order[cut:]], labels[order[cut:]], bits=config.bits)
    return config, train, test


def accuracy(model, batch) -> float:
    margins = model.margins(batch)
    if margins.ndim == 2:
        return float(np.mean(np.argmax(margins, axis=1) + 1 == batch.labels))
    return float(np.mean(np.where(margins > 0, 1.0, -1.0) == batch.labels))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["breast_cancer", "iris"])
def test_the_default_finishing_stage_costs_no_accuracy(name):
    # Measured over 5 seeds: the online models' mean test accuracy 0.958 (breast cancer) and 0.940
    # (iris); the old default (L2 10, no holdout) 0.837 and 0.920; now 0.951 and 0.940. Breast cancer's
    # seed 0: its 45 held-out examples chose the L2 0.1 optimum (held-out log loss 0.114 -> 0.061), which
    # errs on four more of its 114 test rows (test log loss 0.115 -> 0.172), since the optimiser reaches
    # that optimum (centred coordinates, Newton steps), not only its neighbourhood: three more, and
    # 0.196, with L-BFGS steps alone. The other seeds keep the online model. (docs/defaults.md: the grid
    # and holdout on the suite.)
    online_accuracy, finished_accuracy = [], []
    for seed in range(5):
        config, train, test = split(name, seed)
        online = make_learner(config).learn(train).to_model()
        finished = lbfgs.finish(online, [train], passes=5, l2=config.lbfgs_l2, seed=config.seed)
        summary = finished.metadata["lbfgs"]
        assert summary["holdout_loss"] <= summary["online_holdout_loss"]
        online_accuracy.append(accuracy(online, test))
        finished_accuracy.append(accuracy(finished, test))
    assert np.mean(finished_accuracy) >= np.mean(online_accuracy) - 0.008


def test_the_online_model_is_kept_and_said_so_when_no_point_beats_it():
    config, train, _ = split("breast_cancer", 0)
    online = make_learner(config).learn(train).to_model()
    finished = lbfgs.finish(online, [train], passes=2, l2=100.0)  # one L-BFGS step from a huge penalty
    summary = finished.metadata["lbfgs"]
    assert summary["kept"] == "online" and summary["decided_on"] == "holdout"
    np.testing.assert_array_equal(finished.dense_weights, online.dense_weights)
    assert finished.clip_low is not None  # the online model as it was, its value ranges too


def test_too_few_held_out_examples_keep_the_online_model_and_the_line_says_why():
    config, train, _ = split("iris", 0)
    online = make_learner(config).learn(train).to_model()
    finished = lbfgs.finish(online, [train], passes=3, l2=None, seed=config.seed)
    summary = finished.metadata["lbfgs"]
    held = int(np.count_nonzero(holdout_rows(train, config.holdout_period, config.seed)))
    assert summary["holdout_examples"] == held < lbfgs.MIN_HELD_OUT == summary["holdout_judges_from"]
    assert summary["kept"] == "online"
    assert unjudged_finishing_line(summary).startswith(
        f"the online model is kept: {held} held-out examples are too few"
    )


def test_every_point_is_judged_on_the_held_out_examples_only():
    config, train, _ = split("breast_cancer", 1)
    online = make_learner(config).learn(train).to_model()
    stage = lbfgs.Finishing(online, None, period=10, seed=0)
    sums = stage.sums([train])
    held = int(np.count_nonzero(holdout_rows(train, 10, 0)))
    assert sums.held_count == held and sums.totals[0].examples == len(train) - held
    stage.told(sums)
    assert len(stage.points()) == len(lbfgs.L2_GRID) + len(lbfgs.TOWARD_ONLINE) and stage.summary()["l2_grid"] == list(
        lbfgs.L2_GRID
    )


def test_candidates_pulled_toward_the_online_model_lie_between_it_and_the_optimum():
    config, train, _ = split("breast_cancer", 0)
    online = make_learner(config).learn(train).to_model()
    stage = lbfgs.Finishing(online, None, period=10, seed=0)
    for _ in range(4):
        stage.told(stage.sums([train]))
    assert all(opt.anchor is None for opt in stage.optimisers[: len(lbfgs.L2_GRID)])  # (the grid's pull toward 0)
    toward = {candidate: opt for candidate, opt in zip(lbfgs.TOWARD_ONLINE, stage.optimisers[len(lbfgs.L2_GRID) :])}
    anchor, scale = toward[("curvature", 1.0)].anchor, toward[("curvature", 1.0)].scale
    # (in the penalty's own metric a stronger pull ends nearer the online model, for any convex loss)
    distance = {candidate: np.sqrt(np.sum(scale * (opt.weights - anchor) ** 2)) for candidate, opt in toward.items()}
    assert 0 < distance[("curvature", 1.0)] < distance[("curvature", 0.1)] and distance[("weights", 0.1)] > 0
    summary = stage.summary()
    assert summary["toward_online"] == [{"weighed_by": w, "strength": c} for w, c in lbfgs.TOWARD_ONLINE]
    assert lbfgs.Finishing(online, 1.0).summary()["toward_online"] == []  # (an L2 given: that penalty alone)


def test_a_model_too_large_for_newton_steps_has_no_candidates_pulled_toward_it(monkeypatch):
    from polybeam.learners import newton

    monkeypatch.setattr(newton, "NEWTON_PARAMETERS", 0)  # (L-BFGS's own early stop pulls toward it)
    config, train, _ = split("breast_cancer", 0)
    online = make_learner(config).learn(train).to_model()
    stage = lbfgs.Finishing(online, None, period=10, seed=0)
    stage.told(stage.sums([train]))
    assert len(stage.optimisers) == len(lbfgs.L2_GRID) and stage.summary()["toward_online"] == []
