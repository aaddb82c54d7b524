"""Missing values (NaN entries) learned and predicted at their features' means: the kernel against a
slow reference, merges, states, and every learner's model predicting a missing value as its mean."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.indicators import indicator_slots
from polybeam.learners.linear import LinearLearner
from polybeam.learners.missing import INDICATED_AFTER, MissingValues
from polybeam.learners.model import Model
from polybeam.learners.polynomial import PolynomialLearner
from polybeam.learners.warm_start import learner_from_model

NAN = math.nan

# A row: slot -> value (NaN: missing), over a few slots so that slots repeat across rows.
rows_strategy = st.lists(
    st.dictionaries(
        st.integers(1, 6),
        st.one_of(st.just(NAN), st.floats(-100, 100, allow_nan=False).filter(lambda v: v != 0.0)),
        max_size=5,
    ),
    min_size=1,
    max_size=30,
)


def reference_fill(
    rows: list[dict[int, float]], bits: int = 8
) -> tuple[list[list[tuple[int, float]]], dict[int, float]]:
    """Slow reference: each missing value is the mean of its slot's values over the rows before it
    (a row without the slot counts 0, one where it was missing does not count), followed by its indicator
    (value 1) once the slot was missing INDICATED_AFTER times before; and the final means."""
    sums: dict[int, float] = {}
    missing: dict[int, int] = {}
    filled = []
    for seen, row in enumerate(rows):
        out = []
        for slot, value in row.items():
            if math.isnan(value):
                present = seen - missing.get(slot, 0)
                out.append((slot, sums.get(slot, 0.0) / present if present > 0 else 0.0))
                if missing.get(slot, 0) >= INDICATED_AFTER:
                    out.append((int(indicator_slots(np.array([slot]), bits)[0]), 1.0))
            else:
                out.append((slot, value))
        for slot, value in row.items():
            if math.isnan(value):
                missing[slot] = missing.get(slot, 0) + 1
            else:
                sums[slot] = sums.get(slot, 0.0) + value
        filled.append(out)
    means = {}
    for slot in set(sums) | set(missing):
        present = len(rows) - missing.get(slot, 0)
        means[slot] = sums.get(slot, 0.0) / present if present > 0 else 0.0
    return filled, means


def batch_of(rows, bits=6) -> ExampleBatch:
    return ExampleBatch.from_rows([(0.0, row) for row in rows], bits=bits)


def entries_of(rows) -> list[tuple[int, float]]:
    return [entry for row in rows for entry in row]


@settings(max_examples=60, deadline=None)
@given(rows=rows_strategy, cut=st.integers(0, 30), bits=st.sampled_from([3, 6]))
def test_fill_matches_the_reference_over_any_batching(rows, cut, bits):
    """Filled values and final means as the slow reference gives them, whatever the batches' bounds and
    whether the slots fit a sparse table or turn it dense (3 bits: 8 slots, past its limit at once)."""
    rows = [dict(sorted(row.items())) for row in rows]
    expected, means = reference_fill(rows, bits)
    missing = MissingValues(bits=bits)
    cut = min(cut, len(rows))
    slots, values = [], []
    for part in (rows[:cut], rows[cut:]):
        if part:
            filled = missing.fill(batch_of(part, bits))
            slots.extend(filled.indices.tolist())
            values.extend(filled.values.tolist())
    assert slots == [slot for slot, _ in entries_of(expected)]
    np.testing.assert_allclose(values, [value for _, value in entries_of(expected)], rtol=1e-12, atol=1e-12)
    slots = np.arange(1, 7)
    np.testing.assert_allclose(missing.means(slots), [means.get(int(s), 0.0) for s in slots], atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(parts=st.lists(rows_strategy, min_size=1, max_size=4))
def test_merged_first_passes_add_up_and_frozen_means_stay(parts):
    """Learners of one first pass merge into the means of all their rows (in any order); past the first
    pass the means are frozen: filling learns nothing, and merging keeps them once."""
    learners = []
    for part in parts:
        missing = MissingValues(bits=6)
        missing.fill(batch_of(part))
        learners.append(missing)
    _, means = reference_fill([row for part in parts for row in part])
    slots = np.arange(1, 7)
    expected = [means.get(int(s), 0.0) for s in slots]
    merged = MissingValues.merged(learners)
    np.testing.assert_allclose(merged.means(slots), expected, atol=1e-9)
    np.testing.assert_allclose(MissingValues.merged(learners[::-1]).means(slots), expected, atol=1e-9)
    merged.freeze()
    again = merged.copy()
    filled = again.fill(batch_of(parts[0]))
    np.testing.assert_allclose(again.means(slots), expected, atol=1e-9)
    original = batch_of(parts[0])
    expected_entries = []
    for slot, value in zip(original.indices.tolist(), original.values.tolist()):
        if not math.isnan(value):
            expected_entries.append((slot, value))
            continue
        expected_entries.append((slot, merged.means(np.array([slot]))[0]))
        if merged.indicated(np.array([slot]))[0]:  # (frozen: every missing value of an indicated slot)
            expected_entries.append((indicator(slot, 6), 1.0))
    assert list(zip(filled.indices.tolist(), filled.values.tolist())) == expected_entries
    np.testing.assert_allclose(MissingValues.merged([merged, again]).means(slots), expected, atol=1e-9)


def test_a_state_keeps_the_means_sparse_or_dense():
    for bits in (3, 12):  # 3: dense past 1 slot of 8
        missing = MissingValues(bits=bits)
        missing.fill(batch_of([{1: 2.0, 2: NAN}, {1: NAN, 2: 4.0}, {1: 6.0}], bits))
        restored = MissingValues.from_state(missing.to_state(), bits)
        slots = np.array([1, 2, 5])
        assert restored.means(slots).tolist() == missing.means(slots).tolist() == [4.0, 2.0, 0.0]
        assert (restored.table is None) == (missing.table is None) == (bits == 3)


def test_a_slot_never_seen_is_filled_with_zero_when_frozen():
    missing = MissingValues(bits=12)
    missing.fill(batch_of([{1: 2.0}], 12))
    missing.freeze()
    assert missing.fill(batch_of([{1: NAN, 9: NAN, 3: 5.0}], 12)).values.tolist() == [2.0, 0.0, 5.0]


# -- learners and models -------------------------------------------------------------------------------


def column_data(rows=400, seed=0, missing_share=0.2):
    """A label from two columns far from 0 (a year-like column and a mass-like one), some values missing."""
    rng = np.random.default_rng(seed)
    year = rng.normal(2000.0, 5.0, rows)
    mass = rng.normal(4000.0, 600.0, rows)
    labels = np.where((year - 2000.0) / 5.0 + (mass - 4000.0) / 600.0 + rng.normal(0, 0.5, rows) > 0, 1.0, 0.0)
    data = []
    for i in range(rows):
        row = {1: year[i], 2: mass[i]}
        for slot in (1, 2):
            if rng.random() < missing_share:
                row[slot] = NAN
        data.append((labels[i], row))
    return data


def indicator(slot: int, bits: int) -> int:
    return int(indicator_slots(np.array([slot]), bits)[0])


def test_a_learner_fills_as_the_reference_and_its_model_predicts_a_missing_value_at_the_mean():
    data = column_data()
    filled, means = reference_fill([row for _, row in data])
    config = LearnerConfig(loss="logistic", bits=8)
    with_nan = LinearLearner(config).learn(ExampleBatch.from_rows(data, bits=8))
    prefilled = LinearLearner(config).learn(
        ExampleBatch.from_rows([(label, dict(row)) for (label, _), row in zip(data, filled)], bits=8)
    )
    model = with_nan.to_model()
    assert np.array_equal(model.weights, prefilled.to_model().weights)
    assert dict(zip(model.fill_slots.tolist(), model.fill_values.tolist())) == pytest.approx(means)
    # Both columns were missing in ~80 rows: their missing values bring indicators, which the model learned.
    assert model.fill_indicated.tolist() == [True, True]
    assert {indicator(1, 8), indicator(2, 8)} <= set(model.slots.tolist())
    as_means = {1: means[1], indicator(1, 8): 1.0, 2: means[2], indicator(2, 8): 1.0}
    first, second = model.predict(ExampleBatch.from_rows([(0.0, {1: NAN, 2: NAN}), (0.0, as_means)], bits=8))
    assert first == pytest.approx(second, abs=1e-12)
    assert 0.2 < first < 0.8  # an average row, not a 0-gram one from year 0


def test_a_feature_missing_in_few_examples_brings_no_indicator():
    """The penguins case: a row or two without measurements would teach an indicator's weight their labels."""
    data = column_data(missing_share=0.0)
    data[5][1][1] = NAN
    data[50][1][1] = data[50][1][2] = NAN
    config = LearnerConfig(loss="logistic", bits=8)
    model = LinearLearner(config).learn(ExampleBatch.from_rows(data, bits=8)).to_model()
    assert not model.fill_indicated.any()
    assert indicator(1, 8) not in set(model.slots.tolist())
    _, means = reference_fill([row for _, row in data])
    first, second = model.predict(ExampleBatch.from_rows([(0.0, {1: NAN, 2: NAN}), (0.0, means)], bits=8))
    assert first == pytest.approx(second, abs=1e-12)


def test_a_missing_row_scores_as_an_average_one_where_absent_would_be_extreme():
    """The penguins case: a row with every value missing. Read as absent (0, a value no row had), the
    centred model scores it far outside anything training saw; filled, it scores as the mean row."""
    data = column_data(missing_share=0.0)
    config = LearnerConfig(loss="logistic", bits=8, passes=1)
    model = LinearLearner(config).learn(ExampleBatch.from_rows(data, bits=8)).to_model()
    missing_row, absent_row = model.predict(ExampleBatch.from_rows([(0.0, {1: NAN, 2: NAN}), (0.0, {})], bits=8))
    assert 0.1 < missing_row < 0.9
    assert not 0.1 < absent_row < 0.9


def test_the_means_are_learned_in_the_first_pass_only():
    data = column_data()
    learner = LinearLearner(LearnerConfig(loss="logistic", bits=8))
    batch = ExampleBatch.from_rows(data, bits=8)
    learner.learn(batch)
    means = learner.missing_.means(np.array([1, 2]))
    learner.start_pass()
    learner.learn(ExampleBatch.from_rows([(1.0, {1: 1e6, 2: NAN})] * 50, bits=8))
    assert learner.missing_.means(np.array([1, 2])).tolist() == means.tolist()


@pytest.mark.parametrize("loss", ["logistic", "softmax", "squared"])
def test_merged_learners_fill_with_the_means_of_all_their_examples(loss):
    data = column_data(seed=1)
    if loss == "softmax":
        data = [(label + 1.0, row) for label, row in data]
    config = LearnerConfig(loss=loss, bits=8, classes=2 if loss == "softmax" else 0)
    halves = [LinearLearner(config).learn(ExampleBatch.from_rows(part, bits=8)) for part in (data[:150], data[150:])]
    merged = halves[0].merge(halves[1:])
    _, means = reference_fill([row for _, row in data])
    model = merged.to_model()
    assert dict(zip(model.fill_slots.tolist(), model.fill_values.tolist())) == pytest.approx(means)
    restored = Model.from_bytes(model.to_bytes())
    assert restored.fill_values.tolist() == model.fill_values.tolist()
    copy = merged.copy()
    assert copy.missing_.means(np.array([1, 2])).tolist() == merged.missing_.means(np.array([1, 2])).tolist()


def test_a_polynomial_model_fills_before_its_products():
    data = column_data(seed=2)
    config = LearnerConfig(loss="logistic", bits=10, expand="quadratic")
    learner = PolynomialLearner(config, total=len(data)).learn(ExampleBatch.from_rows(data, bits=10))
    _, means = reference_fill([row for _, row in data])
    model = learner.to_model()
    assert {1, 2} <= set(model.fill_slots.tolist())
    as_mean = {1: means[1], indicator(1, 10): 1.0, 2: 3000.0}
    nan_row, mean_row = model.predict(ExampleBatch.from_rows([(0.0, {1: NAN, 2: 3000.0}), (0.0, as_mean)], bits=10))
    assert nan_row == pytest.approx(mean_row, abs=1e-12)


def test_a_model_file_keeps_fills_without_value_ranges():
    model = Model(
        LearnerConfig(loss="squared"), np.array([0, 3]), np.array([0.5, 2.0]), fill_slots=[3], fill_values=[1.5]
    )
    loaded = Model.from_bytes(model.to_bytes())
    assert loaded.clip_low is None and loaded.fill_values.tolist() == [1.5]
    assert loaded.predict(ExampleBatch.from_rows([(0.0, {3: NAN})])).tolist() == [3.5]


def test_a_model_file_without_fills_reads_a_missing_value_as_zero():
    model = Model(LearnerConfig(loss="squared"), np.array([0, 3]), np.array([0.5, 2.0]))
    loaded = Model.from_bytes(model.to_bytes())
    assert loaded.fill_slots is None
    assert loaded.predict(ExampleBatch.from_rows([(0.0, {3: NAN})])).tolist() == [0.5]


def test_a_warm_start_begins_at_the_models_means():
    data = column_data(seed=3)
    config = LearnerConfig(loss="logistic", bits=8)
    model = LinearLearner(config).learn(ExampleBatch.from_rows(data, bits=8)).to_model()
    learner = learner_from_model(model, config)
    means = dict(zip(model.fill_slots.tolist(), model.fill_values.tolist()))
    assert learner.missing_.means(np.array([1, 2])) == pytest.approx([means[1], means[2]])
    assert learner.missing_.indicated(np.array([1, 2])).tolist() == model.fill_indicated.tolist() == [True, True]
    learner.learn(ExampleBatch.from_rows([(1.0, {1: NAN, 2: NAN})], bits=8))
    continued = learner.to_model()
    assert continued.fill_values == pytest.approx(model.fill_values)
    assert continued.fill_indicated.tolist() == [True, True]
