"""Anytime prefixes against least squares computed directly, budgets, and the prefix file format."""

from __future__ import annotations

import json

import numpy as np
import pytest

from polybeam.learners.batch import ExampleBatch
from polybeam.selection.anytime import (
    AnytimeModel,
    AnytimeModelError,
    prefix_records,
    sequence_statistics,
)
from polybeam.selection.groups import GroupSpec
from polybeam.selection.statistics import GramStatistics

BITS = 6
# Four groups over LIBSVM features 1..8 (slots = indices at these bits), deliberately not in column order.
SPEC = GroupSpec.from_json(
    {
        "groups": [
            {"name": "pair", "features": [3, 1], "cost": 1.5},
            {"name": "single", "features": [2], "cost": 0.7},
            {"name": "triple", "features": ["4-6"], "cost": 2.0},
            {"name": "last", "features": [8, 7], "cost": 1.1},
        ]
    },
    bits=BITS,
)


def dense_data(seed=0, n=80, weighted=False):
    """Features with different means and scales (so standardising matters), a linear response plus noise."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 8)) * rng.uniform(0.5, 10, size=8) + rng.normal(size=8) * 5
    x[:, 4] += 0.6 * x[:, 0]  # a correlation across groups
    y = x @ rng.normal(size=8) + 3.0 + rng.normal(size=n)
    w = rng.uniform(0.2, 3.0, size=n) if weighted else np.ones(n)
    rows = [(float(y[i]), {j + 1: float(x[i, j]) for j in range(8)}) for i in range(n)]
    batch = ExampleBatch.from_rows(rows, bits=BITS, weights=w)
    return x, y, w, batch


def statistics_of(batch, spec=SPEC):
    return GramStatistics.for_columns(spec.slots, bits=spec.bits).add(batch)


def columns_of(record):
    """The 0-based columns of x the prefix's groups use (the feature names are LIBSVM indices)."""
    return [int(name) - 1 for name in record["weights"]]


def weighted_fit(x, y, w, *, intercept=True):
    design = np.column_stack([x, np.ones(len(x))]) if intercept else x
    root = np.sqrt(w)
    coefficients = np.linalg.lstsq(design * root[:, None], y * root, rcond=None)[0]
    return coefficients, design @ coefficients


@pytest.mark.parametrize("method", ["cs-g-omp", "cs-g-fr"])
def test_every_prefix_predicts_the_least_squares_fit_with_intercept(method):
    x, y, w, batch = dense_data(seed=1)
    records = prefix_records(SPEC, statistics_of(batch), method=method, ridge=0.0)
    model = AnytimeModel(records)
    assert len(records) == 4 and sorted(r["group"] for r in records) == ["last", "pair", "single", "triple"]
    all_predictions = model.predict_prefixes(batch)
    np.testing.assert_allclose(all_predictions[:, 0], y.mean(), rtol=1e-12)
    total = np.sum((y - y.mean()) ** 2)
    for k, record in enumerate(records, 1):
        columns = columns_of(record)
        # The prefix uses exactly the features of the groups chosen so far.
        expected_columns = [
            int(f) - 1
            for name in record["groups"]
            for f in next(g for g in SPEC.groups if g.name == name).feature_names
        ]
        assert sorted(columns) == sorted(expected_columns)
        coefficients, fitted = weighted_fit(x[:, columns], y, w)
        np.testing.assert_allclose(model.predict(batch, prefix=k), fitted, rtol=1e-8, atol=1e-8)
        np.testing.assert_allclose(all_predictions[:, k], fitted, rtol=1e-8, atol=1e-8)
        np.testing.assert_allclose(list(record["weights"].values()), coefficients[:-1], rtol=1e-7, atol=1e-9)
        assert record["intercept"] == pytest.approx(coefficients[-1], rel=1e-7, abs=1e-9)
        # The recorded training explained variance is 1 - SSE / SST of that fit.
        assert record["explained_variance"] == pytest.approx(1 - np.sum((y - fitted) ** 2) / total, abs=1e-9)
        assert record["rank"] == k and record["method"] == method and record["examples"] == 80
    assert [r["cumulative_cost"] for r in records] == pytest.approx(np.cumsum([r["cost"] for r in records]))


@pytest.mark.parametrize("method", ["cs-g-omp", "cs-g-fr"])
def test_importance_weights_give_weighted_least_squares(method):
    x, y, w, batch = dense_data(seed=2, weighted=True)
    model = AnytimeModel(prefix_records(SPEC, statistics_of(batch), method=method, ridge=0.0))
    np.testing.assert_allclose(model.mean_response, np.average(y, weights=w), rtol=1e-12)
    for k, record in enumerate(model.prefixes, 1):
        _, fitted = weighted_fit(x[:, columns_of(record)], y, w)
        np.testing.assert_allclose(model.predict(batch, prefix=k), fitted, rtol=1e-8, atol=1e-8)
        # Not the unweighted fit: the weights matter on this data.
        _, unweighted = weighted_fit(x[:, columns_of(record)], y, np.ones_like(w))
        assert np.max(np.abs(unweighted - fitted)) > 1e-3


def test_integer_importance_weights_equal_repeating_the_examples():
    x, y, _, _ = dense_data(seed=3, n=40)
    repeats = np.arange(40) % 3 + 1
    weighted = ExampleBatch.from_rows(
        [(y[i], {j + 1: x[i, j] for j in range(8)}) for i in range(40)], bits=BITS, weights=repeats.astype(float)
    )
    repeated = ExampleBatch.from_rows(
        [(y[i], {j + 1: x[i, j] for j in range(8)}) for i in range(40) for _ in range(repeats[i])], bits=BITS
    )
    one = prefix_records(SPEC, statistics_of(weighted), method="cs-g-fr")
    other = prefix_records(SPEC, statistics_of(repeated), method="cs-g-fr")
    assert [r["group"] for r in one] == [r["group"] for r in other]
    for a, b in zip(one, other):
        np.testing.assert_allclose(list(a["weights"].values()), list(b["weights"].values()), rtol=1e-8, atol=1e-10)
        assert a["explained_variance"] == pytest.approx(b["explained_variance"], abs=1e-10)


def test_without_standardizing_prefixes_are_least_squares_without_intercept():
    # standardize=False centres nothing: C = X'WX / n, b = X'Wy / n, so the model has no intercept
    # (the records' intercept is mean_y - w'mean_x with both means recorded as 0) and explained
    # variance is a fraction of y'Wy / n; the empty prefix predicts 0, the model of no feature.
    x, y, w, batch = dense_data(seed=4, weighted=True)
    problem, result = sequence_statistics(SPEC, statistics_of(batch), method="cs-g-omp", standardize=False)
    assert not problem.standardize and problem.mean_y == 0.0 and not problem.mean_x.any()
    records = prefix_records(SPEC, statistics_of(batch), method="cs-g-omp", standardize=False)
    model = AnytimeModel(records)
    np.testing.assert_array_equal(model.predict(batch, prefix=0), np.zeros(len(y)))
    assert [r["group"] for r in records] == [SPEC.groups[step.group].name for step in result.steps]
    for k, record in enumerate(records, 1):
        assert record["intercept"] == 0.0 and record["standardize"] is False
        coefficients, fitted = weighted_fit(x[:, columns_of(record)], y, w, intercept=False)
        np.testing.assert_allclose(model.predict(batch, prefix=k), fitted, rtol=1e-8, atol=1e-8)
        np.testing.assert_allclose(list(record["weights"].values()), coefficients, rtol=1e-7, atol=1e-9)
        assert record["explained_variance"] == pytest.approx(1 - (w @ (y - fitted) ** 2) / (w @ y**2), abs=1e-9)
    # On this data (features with non-zero means, response with an offset) that is not the intercept fit.
    _, fitted_with_intercept = weighted_fit(x, y, w)
    _, fitted_without = weighted_fit(x, y, w, intercept=False)
    np.testing.assert_allclose(model.predict(batch), fitted_without, rtol=1e-8, atol=1e-8)
    assert np.max(np.abs(fitted_with_intercept - fitted_without)) > 1e-3


# -- budgets and available groups, on hand-made prefixes -------------------------------------------------


def hand_record(rank, group, cost, cumulative, weight, *, slot, intercept=0.0, mean_y=10.0, bits=BITS):
    """A prefix of one feature per group: weights accumulate over the groups so far."""
    return {
        "rank": rank,
        "group": group,
        "cost": cost,
        "cumulative_cost": cumulative,
        "explained_variance": 0.1 * rank,
        "weights": weight,
        "intercept": intercept,
        "slots": slot,
        "standardization": {"mean_y": mean_y, "scale_y": 1.0, "mean": {}, "scale": {}},
        "bits": bits,
    }


def hand_records():
    # Costs 0.1, 0.2, 0.7: the cumulative costs 0.1, 0.30000000000000004, 1.0 are sums of floats.
    costs = [0.1, 0.2, 0.7]
    cumulative = np.cumsum(costs).tolist()
    records, weights, slots = [], {}, {}
    for rank, (name, cost, total) in enumerate(zip(["a", "b", "c"], costs, cumulative), 1):
        weights = {**weights, name: float(rank)}
        slots = {**slots, name: rank}
        records.append(hand_record(rank, name, cost, total, weights, slot=slots, intercept=float(rank * 100)))
    return records


def probe_batch():
    # One example with x_1 = 1, x_2 = 10, x_3 = 100: prefix k predicts 100 k + sum_{i<=k} i * 10^(i-1).
    return ExampleBatch.from_rows([(0.0, {1: 1.0, 2: 10.0, 3: 100.0})], bits=BITS)


EXPECTED = [10.0, 101.0, 221.0, 621.0]  # the training mean, then each prefix


@pytest.mark.parametrize(
    "budget, prefix",
    [
        (0.0, 0),
        (0.0999, 0),
        (0.1, 1),
        (0.2999, 1),
        (0.3, 2),
        (0.30000000000000004, 2),
        (0.9999, 2),
        (1.0, 3),
        (1e9, 3),
        (-1.0, 0),
    ],
)
def test_a_budget_buys_the_longest_prefix_whose_cumulative_cost_fits(budget, prefix):
    model = AnytimeModel(hand_records())
    assert model.prefix_for_budget(budget) == prefix
    assert model.predict(probe_batch(), budget=budget).tolist() == [EXPECTED[prefix]]


@pytest.mark.parametrize(
    "available, prefix",
    [(set(), 0), ({"b", "c"}, 0), ({"a"}, 1), ({"a", "c"}, 1), ({"a", "b"}, 2), ({"c", "b", "a", "zz"}, 3)],
)
def test_interrupted_prefixes_stop_at_the_first_unavailable_group(available, prefix):
    model = AnytimeModel(hand_records())
    assert model.prefix_for_groups(available) == prefix
    assert model.predict(probe_batch(), groups=available).tolist() == [EXPECTED[prefix]]


def test_prefix_choices_are_exclusive_and_the_default_is_the_whole_sequence():
    model = AnytimeModel(hand_records())
    batch = probe_batch()
    assert model.predict(batch).tolist() == [EXPECTED[-1]]
    assert model.predict_prefixes(batch).tolist() == [EXPECTED]
    for choices in ({"budget": 1.0, "groups": {"a"}}, {"budget": 1.0, "prefix": 1}, {"groups": {"a"}, "prefix": 1}):
        with pytest.raises(ValueError, match="one of budget, groups or prefix"):
            model.predict(batch, **choices)
    costs, values = model.curve()
    np.testing.assert_allclose(costs, [0.0, 0.1, 0.3, 1.0])
    np.testing.assert_allclose(values, [0.0, 0.1, 0.2, 0.3])


def test_below_the_first_cost_the_sequenced_model_predicts_the_training_mean():
    _, y, w, batch = dense_data(seed=5, weighted=True)
    model = AnytimeModel(prefix_records(SPEC, statistics_of(batch), method="cs-g-omp"))
    first = model.prefixes[0]["cumulative_cost"]
    np.testing.assert_allclose(model.predict(batch, budget=first * 0.99), np.average(y, weights=w), rtol=1e-12)
    assert model.prefix_for_budget(first) == 1
    np.testing.assert_array_equal(model.predict(batch, budget=first), model.predict(batch, prefix=1))


# -- the prefix file ------------------------------------------------------------------------------------


def test_saved_prefixes_load_back_with_identical_predictions(tmp_path):
    _, _, _, batch = dense_data(seed=6, weighted=True)
    model = AnytimeModel(prefix_records(SPEC, statistics_of(batch), method="cs-g-fr", ridge=1e-3))
    path = str(tmp_path / "prefixes.jsonl")
    model.save(path)
    lines = open(path).read().splitlines()
    assert [json.loads(line)["rank"] for line in lines] == [1, 2, 3, 4]
    loaded = AnytimeModel.load(path)
    assert loaded.prefixes == model.prefixes
    assert loaded.method == "cs-g-fr" and loaded.bits == BITS
    np.testing.assert_array_equal(loaded.predict_prefixes(batch), model.predict_prefixes(batch))


def write_lines(path, lines):
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


def valid_lines():
    return [json.dumps(record) for record in hand_records()]


def test_a_line_that_is_not_json_is_refused_with_its_line_number(tmp_path):
    lines = valid_lines()
    path = write_lines(tmp_path / "p.jsonl", [lines[0], "", lines[1], '{"rank": 3, oops'])
    with pytest.raises(AnytimeModelError, match=r"p\.jsonl, line 4: not a JSON object"):
        AnytimeModel.load(path)


def test_blank_lines_are_ignored(tmp_path):
    path = write_lines(tmp_path / "p.jsonl", ["", *valid_lines(), "   "])
    assert len(AnytimeModel.load(path).prefixes) == 3


def test_a_missing_file_is_refused(tmp_path):
    with pytest.raises(AnytimeModelError, match="cannot read anytime prefixes"):
        AnytimeModel.load(str(tmp_path / "nothing.jsonl"))


def _modified(change):
    records = hand_records()
    change(records)
    return records


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda r: r.__setitem__(1, {**r[1], "rank": 3}), r"prefix 2 has rank 3: prefixes must come in order"),
        (lambda r: r.reverse(), r"prefix 1 has rank 3"),
        (lambda r: r[1].pop("intercept"), r"prefix 2 lacks intercept"),
        (lambda r: [r[2].pop(key) for key in ("slots", "standardization")], r"prefix 3 lacks slots, standardization"),
        (lambda r: r[2]["weights"].__setitem__("a", float("nan")), r"prefix 3: weights and intercept must be finite"),
        (lambda r: r[0].__setitem__("intercept", float("inf")), r"prefix 1: weights and intercept must be finite"),
        (lambda r: r[1]["weights"].__setitem__("b", "2.0"), r"prefix 2: weights and intercept must be finite"),
        (
            lambda r: r[0]["slots"].__setitem__("a", 1 << BITS),
            r"prefix 1: every slot must be an integer in \[0, 2\^6\)",
        ),
        (lambda r: r[0]["slots"].__setitem__("a", -1), r"prefix 1: every slot must be an integer"),
        (lambda r: r[0]["slots"].__setitem__("a", 1.0), r"prefix 1: every slot must be an integer"),
        (
            lambda r: r[2].__setitem__("cumulative_cost", 0.2),
            r"prefix 3: cumulative_cost 0.2 must be a number >= the previous",
        ),
        (lambda r: r[0].__setitem__("cumulative_cost", -0.1), r"prefix 1: cumulative_cost -0.1 must be"),
        (lambda r: r[1].__setitem__("cumulative_cost", float("nan")), r"prefix 2: cumulative_cost nan must be"),
        (lambda r: r[1]["slots"].pop("a"), r"prefix 2: weights and slots must be objects naming the same features"),
    ],
)
def test_malformed_prefix_files_say_what_is_wrong(tmp_path, change, message):
    records = _modified(change)
    path = write_lines(tmp_path / "bad.jsonl", [json.dumps(record) for record in records])
    with pytest.raises(AnytimeModelError, match=message) as raised:
        AnytimeModel.load(path)
    assert "bad.jsonl" in str(raised.value)
    with pytest.raises(AnytimeModelError, match=message):
        AnytimeModel(records)


@pytest.mark.parametrize("line", ["[1, 2]", "17", "null"])
def test_a_json_line_that_is_not_an_object_is_refused(tmp_path, line):
    path = write_lines(tmp_path / "bad.jsonl", [valid_lines()[0], line])
    with pytest.raises(AnytimeModelError, match="prefix 2 is not a JSON object"):
        AnytimeModel.load(path)


def test_a_batch_hashed_to_other_bits_is_refused():
    model = AnytimeModel(hand_records())
    other = ExampleBatch.from_rows([(0.0, {1: 1.0})], bits=BITS + 2)
    with pytest.raises(AnytimeModelError, match=r"hashed to 8 bits but the prefixes to 6.*--bits 6"):
        model.predict(other)
    with pytest.raises(AnytimeModelError, match="8 bits"):
        model.predict_prefixes(other)


def test_an_empty_model_predicts_zero():
    model = AnytimeModel([])
    assert model.prefix_for_budget(5.0) == 0 and model.method == ""
    np.testing.assert_array_equal(model.predict(ExampleBatch.from_rows([(1.0, {1: 2.0})], bits=18)), [0.0])
