"""Many keys' models scored and evaluated at once, against each key's own Model and Evaluation.

References: ``Model.margins`` of a row's own model (missing values filled, values clipped to their
ranges, the bias), and ``Evaluation.for_model(model)`` fed each key's rows batch by batch, merged for
the overall figures.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.evaluation import Evaluation
from polybeam.learners.key_scoring import ScoringTable, scorable
from polybeam.learners.key_table import train_table
from polybeam.learners.keyed_evaluation import KeyedEvaluation
from polybeam.learners.model import Model

BITS = 8


def _model(rng, config: LearnerConfig, label_range) -> Model:
    slots = np.unique(rng.integers(0, 12, size=rng.integers(0, 8)))
    low = -rng.random(len(slots)) * 3 if rng.random() < 0.6 else None
    filled = slots[rng.random(len(slots)) < 0.5] if rng.random() < 0.7 else None
    return Model(
        config,
        slots,
        rng.normal(size=len(slots)),
        metadata={"label_min": label_range[0], "label_max": label_range[1]},
        clip_low=low,
        clip_high=None if low is None else -low * rng.uniform(0.5, 2.0, len(slots)),
        fill_slots=filled,
        fill_values=None if filled is None else rng.normal(size=len(filled)),
    )


def _batch(rng, rows: int) -> ExampleBatch:
    data = []
    for _ in range(rows):
        slots = rng.integers(0, 14, size=rng.integers(0, 6))
        values = rng.normal(size=len(slots)) * 4
        values[rng.random(len(slots)) < 0.2] = np.nan
        data.append((float(rng.choice([-1.0, 1.0, 0.0, 2.0])), dict(zip(slots.tolist(), values.tolist()))))
    return ExampleBatch.from_rows(data, bits=BITS)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 100_000), bias=st.booleans(), models=st.integers(1, 6), rows=st.integers(0, 30))
def test_each_row_gets_its_own_models_margin(seed, bias, models, rows):
    rng = np.random.default_rng(seed)
    config = LearnerConfig(loss="logistic", bits=BITS, bias=bias)
    own = [_model(rng, config, (0.0, 0.0)) for _ in range(models)]
    table = ScoringTable.from_models(config, own)
    batch = _batch(rng, rows)
    which = rng.integers(-1, models, size=rows)
    margins = table.margins(batch, which)
    for row in range(rows):
        expected = 0.0 if which[row] < 0 else own[which[row]].margins(batch.rows_between(row, row + 1))[0]
        assert margins[row] == expected


def test_a_table_of_trained_keys_scores_as_their_models():
    rng = np.random.default_rng(4)
    config = LearnerConfig(loss="squared", bits=BITS)
    counts = rng.integers(1, 11, size=40)
    batch = _batch(rng, int(counts.sum()))
    trained = train_table(config, batch, np.concatenate([[0], np.cumsum(counts)]), list(range(40)))
    table = ScoringTable.from_key_table(trained)
    probe = _batch(rng, 200)
    which = rng.integers(0, 40, size=200)
    margins = table.margins(probe, which)
    models = [model for _, model in trained]
    for row in range(200):
        assert margins[row] == models[which[row]].margins(probe.rows_between(row, row + 1))[0]
    np.testing.assert_array_equal(table.label_min, [m.metadata["label_min"] for m in models])


def test_what_a_table_cannot_score():
    config = LearnerConfig(loss="logistic", bits=BITS)
    indicated = Model(
        config,
        np.array([1]),
        np.array([1.0]),
        fill_slots=np.array([1]),
        fill_values=np.array([0.5]),
        fill_indicated=np.array([True]),
    )
    softmax = Model(LearnerConfig(loss="softmax", classes=3, bits=BITS), np.array([1]), np.ones((1, 3)))
    assert scorable(Model(config, np.array([1]), np.array([1.0])))
    assert not scorable(indicated) and not scorable(softmax)
    with pytest.raises(ValueError, match="linear models of one output"):
        ScoringTable.from_models(config, [indicated])


@pytest.mark.parametrize(
    "loss, label_range",
    [
        ("logistic", (0.0, 0.0)),
        ("squared", (-1.0, 2.0)),
        ("squared", (0.0, 0.0)),
        ("hinge", (0.0, 0.0)),
        ("quantile", (-1.0, 2.0)),
    ],
)
@pytest.mark.parametrize("seed", range(6))
def test_keyed_evaluation_reports_each_keys_evaluation_and_the_merged_one(loss, label_range, seed):
    rng = np.random.default_rng(seed)
    config = LearnerConfig(loss=loss, bits=BITS, **({"quantile_tau": 0.3} if loss == "quantile" else {}))
    keys = [f"k{i}" for i in range(7)]
    models = {key: _model(rng, config, label_range) for key in keys}
    table = ScoringTable.from_models(config, [models[key] for key in keys])
    own = {key: Evaluation.for_model(models[key]) for key in keys}
    parts = [KeyedEvaluation(loss, config.loss_parameter) for _ in range(3)]
    for part_number in range(6):
        batch = _batch(rng, int(rng.integers(0, 40)))
        if seed % 2:  # binary labels only: AUC and 0-1 error
            batch.labels[:] = np.where(batch.labels > 0, 1.0, -1.0)
        batch.weights[:] = rng.choice([1.0, 0.5, 2.0], size=len(batch))
        which = rng.integers(0, len(keys), size=len(batch))
        margins = table.margins(batch, which)
        part = parts[part_number % 3]
        ids = part.key_ids([keys[i] for i in range(len(keys))])
        part.add(ids[which], batch.labels, margins, batch.weights, table.label_min[which], table.label_max[which])
        for i, key in enumerate(keys):
            mine = np.flatnonzero(which == i)
            if len(mine):
                own[key].add_batch(models[key], batch.take(mine))
    merged = parts[0].merge(parts[1:])
    results = merged.results()
    for key in keys:
        expected, got = own[key].result(), results[key]
        assert got.keys() == expected.keys()
        for name, value in expected.items():
            if value is None or (isinstance(value, float) and np.isnan(value)):
                assert got[name] is None or np.isnan(got[name]), (key, name)
            else:
                assert got[name] == pytest.approx(value, rel=1e-12, abs=1e-12), (key, name)
    overall = Evaluation(loss, parameter=config.loss_parameter).merge(list(own.values())).result()
    got = merged.overall()
    for name, value in overall.items():
        if value is None or (isinstance(value, float) and np.isnan(value)):
            assert got[name] is None or np.isnan(got[name]), name
        else:
            assert got[name] == pytest.approx(value, rel=1e-12, abs=1e-12), name
