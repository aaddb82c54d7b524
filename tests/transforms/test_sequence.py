"""SequenceGroups, WritePrefixes, ApplyAnytime and EvaluateAnytime on the local runner, against in-process results."""

from __future__ import annotations

import json

import apache_beam as beam
import numpy as np
import pytest

from polybeam import datasets
from polybeam.learners.batch import ExampleBatch
from polybeam.selection.anytime import AnytimeModel, prefix_records
from polybeam.selection.groups import GroupSpec
from polybeam.selection.statistics import GramStatistics
from polybeam.selection.timeliness import HeldOutCurve
from polybeam.transforms.read import ReadExamples
from polybeam.transforms.sequence import (
    SKIPPED,
    ApplyAnytime,
    EvaluateAnytime,
    SequenceGroups,
    WritePrefixes,
)

RUNNER = "FnApiRunner"
METHODS = ("cs-g-omp", "cs-g-fr")

_COLLECTED: list = []


def _collect(element, tag):
    # Module-level, so the pickled DoFn refers to this very list; the FnApiRunner runs bundles in this process.
    _COLLECTED.append((tag, element))


def run_tagged(build):
    """Run a pipeline; ``build(p)`` returns {tag: PCollection}; returns {tag: [elements]}."""
    _COLLECTED.clear()
    with beam.Pipeline(runner=RUNNER) as p:
        for tag, collection in build(p).items():
            collection | f"Collect{tag}" >> beam.Map(_collect, tag)
    found: dict = {}
    for tag, element in _COLLECTED:
        found.setdefault(tag, []).append(element)
    _COLLECTED.clear()
    return found


@pytest.fixture(scope="module")
def spam_spec():
    return GroupSpec.load(datasets.group_spec_path("spam"))


@pytest.fixture(scope="module")
def spam_batches():
    """Bundled spam in 5 batches (as a reader would emit them)."""
    batch = datasets.load("spam")
    return [batch.take(np.arange(start, min(start + 1000, len(batch)))) for start in range(0, len(batch), 1000)]


def in_process(spec, batches, **options):
    statistics = GramStatistics.for_columns(spec.slots, bits=spec.bits)
    for batch in batches:
        statistics.add(batch)
    return prefix_records(spec, statistics, **options)


@pytest.mark.slow
def test_sequenced_prefixes_equal_in_process_ones_and_are_written_in_rank_order(tmp_path, spam_spec, spam_batches):
    paths = {method: str(tmp_path / f"{method}.jsonl") for method in METHODS}

    def build(p):
        batches = p | beam.Create(spam_batches, reshuffle=False)
        outputs = {}
        for method in METHODS:
            sequenced = batches | f"Sequence{method}" >> SequenceGroups(spam_spec, method=method, ridge=1e-6, seed=0)
            sequenced.prefixes | f"Write{method}" >> WritePrefixes(paths[method])
            outputs[method] = sequenced.prefixes
            outputs[f"{method}-skipped"] = sequenced[SKIPPED]
        return outputs

    found = run_tagged(build)
    for method in METHODS:
        expected = in_process(spam_spec, spam_batches, method=method, ridge=1e-6)
        assert len(expected) == 13 and not found.get(f"{method}-skipped")
        produced = sorted(found[method], key=lambda record: record["rank"])
        assert [r["rank"] for r in produced] == list(range(1, 14))
        assert [r["group"] for r in produced] == [r["group"] for r in expected]
        for got, want in zip(produced, expected):
            assert got["seed"] == 0 and got["examples"] == 4601 and got["method"] == method
            assert set(got) - {"seed"} == set(want)
            assert list(got["weights"]) == list(want["weights"])
            np.testing.assert_allclose(
                list(got["weights"].values()), list(want["weights"].values()), rtol=1e-9, atol=1e-9
            )
            assert got["intercept"] == pytest.approx(want["intercept"], rel=1e-9, abs=1e-9)
            assert got["explained_variance"] == pytest.approx(want["explained_variance"], abs=1e-9)
            assert got["cumulative_cost"] == pytest.approx(want["cumulative_cost"])
        # The file holds the same prefixes, one per line, in rank order, and loads as a model.
        lines = open(paths[method]).read().splitlines()
        written = [json.loads(line) for line in lines]
        assert [r["rank"] for r in written] == list(range(1, 14))
        assert [r["group"] for r in written] == [r["group"] for r in expected]
        model = AnytimeModel.load(paths[method])
        assert model.method == method
        assert model.prefixes[-1]["explained_variance"] == pytest.approx(expected[-1]["explained_variance"], abs=1e-9)
    # The two methods order the same groups differently and end at the same full model.
    omp, fr = (sorted(found[m], key=lambda r: r["rank"]) for m in METHODS)
    assert omp[-1]["explained_variance"] == pytest.approx(fr[-1]["explained_variance"], abs=1e-6)


def test_duplicate_and_constant_groups_are_skipped_with_reasons(tmp_path):
    # Feature 4 always equals feature 1 and feature 5 is always 3: groups "dup" and "const" add nothing.
    rng = np.random.default_rng(0)
    lines = []
    for _ in range(300):
        a, b, c = rng.normal(size=3)
        label = 2 * a - b + 0.5 * c + rng.normal() * 0.1
        lines.append(f"{label:.6f} 1:{a:.6f} 2:{b:.6f} 3:{c:.6f} 4:{a:.6f} 5:3\n")
    path = tmp_path / "dup.libsvm"
    path.write_text("".join(lines))
    spec = GroupSpec.from_json(
        {
            "groups": [
                {"name": "first", "features": [1], "cost": 1.0},
                {"name": "second", "features": [2], "cost": 1.0},
                {"name": "third", "features": [3], "cost": 1.0},
                {"name": "dup", "features": [4], "cost": 1.5},
                {"name": "const", "features": [5], "cost": 0.5},
            ]
        },
        bits=10,
    )

    def build(p):
        read = p | ReadExamples(str(path), bits=10, labels="real")
        outputs = {}
        for method in METHODS:
            sequenced = read.examples | f"Sequence{method}" >> SequenceGroups(spec, method=method, ridge=1e-6)
            outputs[method] = sequenced.prefixes
            outputs[f"{method}-skipped"] = sequenced[SKIPPED]
        return outputs

    found = run_tagged(build)
    for method in METHODS:
        order = [r["group"] for r in sorted(found[method], key=lambda r: r["rank"])]
        skipped = {r["group"]: r for r in found[f"{method}-skipped"]}
        assert sorted(order) == ["first", "second", "third"], (method, order)
        assert set(skipped) == {"dup", "const"}
        assert "linear combinations" in skipped["dup"]["reason"]
        assert "constant" in skipped["const"]["reason"]
        assert skipped["dup"]["cost"] == 1.5 and skipped["const"]["cost"] == 0.5
        assert max(found[method], key=lambda r: r["rank"])["explained_variance"] > 0.99


def test_write_prefixes_writes_skipped_records(tmp_path):
    path = str(tmp_path / "skipped.jsonl")
    records = [{"group": "dup", "cost": 1.5, "reason": "its features are linear combinations of ..."}]
    with beam.Pipeline(runner=RUNNER) as p:
        p | beam.Create(records) | WritePrefixes(path)
    assert [json.loads(line)["group"] for line in open(path)] == ["dup"]


def test_apply_and_evaluate_anytime_equal_the_model_in_process(spam_spec, spam_batches):
    train, test = spam_batches[:4], spam_batches[4:] + [spam_batches[0].take(np.arange(300))]
    models = {method: AnytimeModel(in_process(spam_spec, train, method=method, ridge=1e-6)) for method in METHODS}
    model = models["cs-g-omp"]
    budget = model.prefixes[4]["cumulative_cost"] + 0.25  # pays for 5 groups, not 6
    available = [prefix["group"] for prefix in model.prefixes[:3]] + [model.prefixes[7]["group"]]

    def build(p):
        batches = p | beam.Create(test, reshuffle=False)
        return {
            "budget": batches | "Budget" >> ApplyAnytime(model, budget=budget),
            "groups": batches | "Groups" >> ApplyAnytime(model, groups=available),
            "all": batches | "All" >> ApplyAnytime(model),
            "curves": batches | "Evaluate" >> EvaluateAnytime(models),
        }

    found = run_tagged(build)
    whole = ExampleBatch.concat(test)

    def predictions(tag):
        scored = sorted(found[tag], key=lambda s: len(s.labels))  # the two batches differ in size
        expected_sizes = sorted(len(b) for b in test)
        assert [len(s.labels) for s in scored] == expected_sizes
        by_size = {len(b): b for b in test}
        return [(s, by_size[len(s.labels)]) for s in scored]

    assert model.prefix_for_budget(budget) == 5 and model.prefix_for_groups(available) == 3
    for tag, expected in (
        ("budget", lambda b: model.predict(b, budget=budget)),
        ("groups", lambda b: model.predict(b, groups=available)),
        ("all", lambda b: model.predict(b)),
    ):
        for scored, batch in predictions(tag):
            np.testing.assert_allclose(scored.predictions, expected(batch), rtol=1e-12, atol=1e-12)
            np.testing.assert_array_equal(scored.labels, batch.labels)
    for scored, batch in predictions("budget"):
        np.testing.assert_allclose(scored.predictions, model.predict(batch, prefix=5), rtol=1e-12)
        assert np.max(np.abs(scored.predictions - model.predict(batch, prefix=6))) > 1e-6

    curves = dict(found["curves"])
    assert set(curves) == set(METHODS)
    for method, curve in curves.items():
        everything = models[method].predict_prefixes(whole)
        assert everything.shape == (len(whole), 14) and curve.examples == len(whole)
        sse = ((everything - whole.labels[:, None]) ** 2).sum(axis=0)
        sst = ((whole.labels - whole.labels.mean()) ** 2).sum()
        np.testing.assert_allclose(curve.explained_variance(), 1 - sse / sst, rtol=1e-9, atol=1e-12)
        local = HeldOutCurve.of(everything, whole.labels, whole.weights)
        np.testing.assert_allclose(curve.squared_errors, local.squared_errors, rtol=1e-9)
        assert 0.5 < curve.explained_variance()[-1] < 0.7


def test_apply_anytime_takes_one_way_of_choosing_the_prefix():
    model = AnytimeModel([])
    with pytest.raises(ValueError, match="not both"):
        ApplyAnytime(model, budget=1.0, groups=["a"])
