"""Smoke test of benchmarks/bench_mixing.py: its simulation of Train's parameter mixing on tiny sizes."""

from __future__ import annotations

import importlib.util
import json
import math
import os

import numpy as np
import pytest

from tests.benchmarks.scripts import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_mixing")


@pytest.fixture(scope="module")
def data(bench):
    return bench.make_data(6000, 2000, seed=0)


def test_shards_cover_every_example_once(bench):
    bounds = bench.shard_bounds(1001, 8)
    assert bounds[0][0] == 0 and bounds[-1][1] == 1001
    assert all(stop == start for (_, stop), (start, _) in zip(bounds, bounds[1:]))
    assert max(stop - start for start, stop in bounds) - min(stop - start for start, stop in bounds) <= 1


@pytest.mark.parametrize("key", ["linear", "apple", "apple-shard"])
def test_one_worker_is_the_single_learner(bench, data, key):
    train, test = data
    setting = bench.BY_KEY[key]
    run = bench.run_mixing(setting, 2, 1, train, test, (1, 2))
    assert bench.same_learner(run["final"], bench.single_learner(setting, 2, train))
    assert run["by_pass"][-1]["loss"] == pytest.approx(
        bench.evaluate(bench.single_learner(setting, 2, train), test)["loss"], abs=0
    )


def test_averaging_copies_of_one_learner_changes_nothing(bench, data):
    train, _ = data
    learner = bench.learn_shard(bench.make_learner(bench.BY_KEY["linear"].config(1)), train, 0, 3000)
    merged, costs = bench.merge_partials([bench.ship(learner)] * 4)
    assert np.allclose(merged.weights, learner.weights, rtol=1e-12, atol=0)
    assert costs["merge_peak_bytes"] > 0 and costs["merge_seconds"] >= 0


@pytest.mark.slow
def test_quick_run_writes_sane_results(bench, tmp_path):
    results = str(tmp_path / "results")
    report = bench.main(["--quick", "--examples", "6000", "--test-examples", "2000", "--results", results])

    assert report["workers"] == [1, 2, 4, 8] and report["reported_passes"] == [1, 2]
    assert all(check["identical"] for check in report["checks"]) and len(report["checks"]) == 2
    for setting in ("linear", "apple"):
        for workers in report["workers"]:
            for passes in (1, 2):
                loss = bench.figure(report, setting, workers, passes)
                assert 0.2 < loss < math.log(2) + 0.1
                assert 0.0 < bench.figure(report, setting, workers, passes, "error") < 0.5
    # More workers: more (smaller) partial learners to shuffle, and a one-shot average no better than one learner.
    linear = {r["workers"]: r for r in report["runs"] if r["setting"] == "linear"}
    assert linear[8]["by_pass"][0]["shuffled_bytes"] > linear[1]["by_pass"][0]["shuffled_bytes"]
    assert bench.figure(report, "linear", 8, 1) > bench.figure(report, "linear", 1, 1)
    # One pass: each worker expands after 1000, 2000, ... of its own examples (a shard of 750 never does).
    apple = {
        r["workers"]: r["by_pass"][0]["parents"] for r in report["runs"] if r["setting"] == "apple" and r["passes"] == 1
    }
    assert all(apple[n] > 0 for n in (1, 2, 4)) and apple[8] == 0

    plots = ("mixing.png",) if importlib.util.find_spec("matplotlib") else ()
    for name in ("mixing.json", "mixing.md", *plots):
        assert os.path.getsize(os.path.join(results, name)) > 0
    with open(os.path.join(results, "mixing.md")) as handle:
        markdown = handle.read()
    assert "## Findings" in markdown and "| N | loss 1p |" in markdown and "identical" in markdown

    # The report can be rewritten from the JSON alone.
    with open(os.path.join(results, "mixing.json")) as handle:
        stored = json.load(handle)
    assert bench.render(stored) == markdown
