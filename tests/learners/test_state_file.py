"""Learner-state files and warm starts: exact continuation, clear refusals."""

from __future__ import annotations

import numpy as np
import pytest

from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.container import FormatError
from polybeam.learners.model import Model
from polybeam.learners.polynomial import make_learner
from polybeam.learners.state_file import learner_from_bytes, learner_to_bytes, read_learner_state
from polybeam.learners.warm_start import check_compatible, differences, initial_learner, learner_from_model


def xor_batch(rows: int, bits: int = 12, seed: int = 0, multiclass: bool = False) -> ExampleBatch:
    rng = np.random.default_rng(seed)
    x = rng.random((rows, 8)) < 0.5
    labels = (x[:, 0] ^ x[:, 1]).astype(float) * 2 - 1
    if multiclass:
        labels = 1.0 + x[:, 0] + x[:, 1]
    values = rng.uniform(0.5, 3.0, size=x.shape) * x
    return ExampleBatch.from_rows(
        [(y, {i + 1: v for i, v in enumerate(row) if v}) for y, row in zip(labels, values)], bits=bits
    )


CONFIGS = [
    LearnerConfig(loss="logistic", bits=12),
    LearnerConfig(loss="squared", bits=12, step="adaptive", learning_rate=0.5, gravity=0.01),
    LearnerConfig(loss="hinge", bits=12, step="decay", learning_rate=0.3, sparsity="round", truncate_threshold=0.01),
    LearnerConfig(loss="logistic", bits=12, step="constant", learning_rate=0.1, l2=0.001),
    LearnerConfig(loss="softmax", bits=12, classes=3, gravity=0.001),
    LearnerConfig(loss="squared", bits=12, expand="apple", repeat_factors=False),
    LearnerConfig(loss="logistic", bits=12, expand="apple", expand_rule="ssm", step="adaptive", learning_rate=0.5),
    LearnerConfig(loss="logistic", bits=12, expand="quadratic"),
]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.loss}-{c.step}-{c.expand}-{c.expand_rule}-{c.sparsity}")
def test_a_saved_state_continues_exactly_as_the_learner_would_have(config):
    batch = xor_batch(3000, multiclass=config.loss == "softmax")
    first, second = batch.rows_between(0, 1300), batch.rows_between(1300, 3000)
    straight = make_learner(config, total=6000).learn(first)
    saved = learner_to_bytes(straight, {"pass": 1})
    straight.learn(second)
    restored, info = read_learner_state(saved)
    restored.learn(second)
    a, b = straight.to_model(), restored.to_model()
    assert info == {"pass": 1}
    assert np.array_equal(a.slots, b.slots) and np.array_equal(a.weights, b.weights)
    assert a.metadata == b.metadata and a.expansion == b.expansion and dict(a.monomials) == dict(b.monomials)


def test_a_merged_apple_state_keeps_its_frozen_parents():
    config = LearnerConfig(loss="squared", bits=12, expand="apple", repeat_factors=False)
    batch = xor_batch(4000)
    left = make_learner(config, total=4000).learn(batch.rows_between(0, 2000))
    right = make_learner(config, total=4000).learn(batch.rows_between(2000, 4000))
    merged = left.merge([right])
    again = learner_from_bytes(learner_to_bytes(merged))
    assert again.frozen and again.parents == merged.parents


@pytest.mark.parametrize("damage", ["truncate", "flip", "model"])
def test_damaged_or_wrong_files_are_refused_clearly(damage):
    data = learner_to_bytes(make_learner(CONFIGS[0]).learn(xor_batch(100)))
    if damage == "truncate":
        data, message = data[:-10], "truncated"
    elif damage == "flip":
        data, message = data[:60] + bytes([data[60] ^ 1]) + data[61:], "corrupt"
    else:
        data, message = Model(CONFIGS[0], np.array([1]), np.array([0.5])).to_bytes(), "signature"
    with pytest.raises(FormatError, match=message):
        learner_from_bytes(data)


def test_a_warm_start_that_does_not_fit_names_every_difference():
    source = LearnerConfig(loss="logistic", bits=12, step="adaptive", learning_rate=1.0)
    run = LearnerConfig(loss="squared", bits=14, step="adaptive", learning_rate=0.1, expand="quadratic")
    found = differences(source, run)
    assert found == [
        "loss is logistic there, squared here",
        "bits is 12 there, 14 here",
        "expand is none there, quadratic here",
    ]
    with pytest.raises(ValueError, match=r"m\.model does not fit this run: loss is logistic there, squared here"):
        check_compatible(source, run, "m.model")
    check_compatible(source, source.replace(learning_rate=0.1, passes=3), "m.model")  # only how learning goes on


def linear_batch(rows: int, seed: int = 0) -> ExampleBatch:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, 6))
    labels = np.where(x @ np.array([2.0, -1.5, 1.0, 0.0, 0.5, -2.0]) + rng.logistic(size=rows) > 0, 1.0, -1.0)
    return ExampleBatch.from_rows([(y, {i + 1: v for i, v in enumerate(row)}) for y, row in zip(labels, x)], bits=12)


@pytest.mark.parametrize("step", ["gsa", "adaptive"])
def test_a_warm_start_from_a_model_file_starts_at_its_weights_and_keeps_learning(step):
    config = LearnerConfig(loss="logistic", bits=12, step=step)
    batch = linear_batch(4000)
    model = make_learner(config).learn(batch.rows_between(0, 2000)).to_model({"input_format": "libsvm"})
    warm = initial_learner(model.to_bytes(), config, "m.model")
    start = warm.to_model()
    assert np.array_equal(start.slots, model.slots) and np.allclose(start.weights, model.weights)
    if step == "gsa":
        assert warm.greedy_step == pytest.approx(model.metadata["greedy_step"])
    cold = make_learner(config).learn(batch.rows_between(2000, 4000))
    warm.learn(batch.rows_between(2000, 4000))
    assert warm.progressive_loss < cold.progressive_loss  # it starts where the model left off


def test_a_warm_apple_start_from_a_model_keeps_parents_and_product_names():
    config = LearnerConfig(loss="squared", bits=12, expand="apple", repeat_factors=False)
    model = make_learner(config, total=4000).learn(xor_batch(4000)).to_model()
    assert model.expansion.parents
    warm = learner_from_model(model, config)
    assert warm.frozen and warm.parents == list(model.expansion.parents)
    again = warm.to_model()
    assert {int(s): model.feature_name(s) for s in model.slots} == {int(s): again.feature_name(s) for s in again.slots}
