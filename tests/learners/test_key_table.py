"""Keys' learners as one table against each key's own learner.

Reference: ``make_learner(config, sparse=True)`` fitting a key's rows alone, as ``TrainShard`` trains a
key, then ``to_model``: the table's model of every key must be that model (weights to rounding, value
ranges, fills, metadata), for every loss of one output, step rule and switch the table takes.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.fitting import train_passes
from polybeam.learners.key_table import TABLE_ROWS, learns_as_table, table_keys, train_table
from polybeam.learners.polynomial import make_learner
from tests.learners.model_equality import assert_same_model

BITS = 10
METADATA = {"input_format": "csv"}
CONFIGS = {
    "logistic": dict(loss="logistic"),
    "squared": dict(loss="squared"),
    "hinge": dict(loss="hinge"),
    "logistic-gsa": dict(loss="logistic", step="gsa"),
    "squared-gsa-raw": dict(loss="squared", step="gsa", normalized=False),
    "logistic-constant-l2": dict(loss="logistic", step="constant", learning_rate=0.3, l2=0.01),
    "logistic-decay": dict(loss="logistic", step="decay", learning_rate=0.5),
    "logistic-no-center": dict(loss="logistic", center=False),
    "squared-no-bias": dict(loss="squared", bias=False),
    "quantile": dict(loss="quantile", quantile_tau=0.3),
    "adaptive-unnormalised": dict(loss="logistic", normalized=False),
}


@st.composite
def keyed_rows(draw):
    """Keys of 1 to TABLE_ROWS rows: few slots (slot 0, the bias's, among them), NaN and zero importances."""
    keys = draw(st.integers(1, 12))
    rows, counts = [], []
    for _ in range(keys):
        count = draw(st.integers(1, TABLE_ROWS))
        counts.append(count)
        for _ in range(count):
            slots = draw(st.lists(st.integers(0, 12), max_size=6))
            values = draw(
                st.lists(
                    st.one_of(st.floats(-50, 50, allow_nan=False), st.just(float("nan")), st.just(1.0)),
                    min_size=len(slots),
                    max_size=len(slots),
                )
            )
            label = draw(st.sampled_from([-1.0, 1.0, 0.0, 2.5]))
            weight = draw(st.sampled_from([1.0, 1.0, 1.0, 0.5, 2.0, 0.0]))
            rows.append((label, dict(zip(slots, values)), weight))
    return rows, np.concatenate([[0], np.cumsum(counts)])


def _batch(rows) -> ExampleBatch:
    batch = ExampleBatch.from_rows([(label, features) for label, features, _ in rows], bits=BITS)
    batch.weights[:] = [weight for _, _, weight in rows]
    return batch


def _own_models(config, batch, bounds):
    models = []
    for start, stop in zip(bounds[:-1], bounds[1:]):
        learner = make_learner(config, sparse=True)
        train_passes(learner, [batch.rows_between(int(start), int(stop))], 1, cross_validate=False)
        models.append(learner.to_model(METADATA))
    return models


@pytest.mark.parametrize("name", sorted(CONFIGS))
@settings(max_examples=25, deadline=None)
@given(data=keyed_rows())
def test_each_keys_model_from_the_table_is_its_own_learners(name, data):
    rows, bounds = data
    config = LearnerConfig(bits=BITS, **CONFIGS[name])
    batch = _batch(rows)
    keys = [f"key {k}" for k in range(len(bounds) - 1)]
    table = train_table(config, batch, bounds, keys, METADATA)
    assert len(table) == len(keys)
    for (key, model), own, expected_key in zip(table, _own_models(config, batch, bounds), keys):
        assert key == expected_key
        assert_same_model(model, own)
    assert table.nonzero_weights().tolist() == [len(own.slots) for own in _own_models(config, batch, bounds)]


def test_keys_of_real_rows_match_their_own_learners():
    # The bundled spam data's unscaled columns, ten rows a key (the last key fewer), a few values missing.
    from polybeam import datasets

    spam = datasets.load("spam", bits=BITS, binary=True).rows_between(0, 995)
    values = spam.values.copy()
    values[np.random.default_rng(3).random(len(values)) < 0.05] = np.nan
    batch = dataclasses.replace(spam, values=values)
    bounds = np.append(np.arange(0, 995, TABLE_ROWS), 995)
    for config in (LearnerConfig(loss="logistic", bits=BITS), LearnerConfig(loss="squared", bits=BITS, step="gsa")):
        table = train_table(config, batch, bounds, list(range(len(bounds) - 1)), METADATA)
        for (_, model), own in zip(table, _own_models(config, batch, bounds)):
            assert_same_model(model, own)


def test_which_settings_and_keys_learn_as_a_table():
    assert learns_as_table(LearnerConfig(loss="logistic"))
    for settings_ in (
        dict(loss="softmax", classes=3),
        dict(loss="logistic", expand="apple"),
        dict(loss="logistic", passes=2),
        dict(loss="logistic", sparsity="truncate", gravity=0.01),
        dict(loss="logistic", offset_prior=1.0),
    ):
        assert not learns_as_table(LearnerConfig(**settings_))
        assert not table_keys(LearnerConfig(**settings_), np.array([1, 2])).any()
    assert table_keys(LearnerConfig(loss="logistic"), np.array([1, TABLE_ROWS, TABLE_ROWS + 1])).tolist() == [
        True,
        True,
        False,
    ]
    with pytest.raises(ValueError, match="1 to 10 consecutive rows"):
        train_table(LearnerConfig(loss="logistic", bits=BITS), _batch([(1.0, {1: 1.0}, 1.0)] * 11), [0, 11], ["a"])


def test_a_key_whose_state_overflows_fails_as_its_own_learner_does():
    config = LearnerConfig(loss="squared", bits=BITS, scale_labels=False)
    rows = [(1.0, {2: 1.0}, 1.0), (1e300, {1: 1e30}, 1.0), (-1e300, {1: -1e30}, 1.0), (1e300, {1: 1e30}, 1.0)]
    batch = _batch(rows)
    with pytest.raises(Exception) as own:
        _own_models(config, batch, np.array([0, 1, 4]))
    with pytest.raises(type(own.value), match="not finite") as table:
        train_table(config, batch, np.array([0, 1, 4]), ["fine", "overflows"])
    assert str(table.value) == str(own.value)
