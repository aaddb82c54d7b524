"""Smoke test of benchmarks/bench_averaging.py on tiny sizes (the scikit-learn reference left out)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.benchmarks.scripts import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_averaging")


@pytest.fixture(scope="module")
def data():
    return load_benchmark("bench_mixing").make_data(4000, 1000, seed=0)


def test_one_worker_is_the_single_learner_whatever_the_merge(bench, data):
    train, test = data
    config = bench.config_of("adaptive", 2)
    one = bench.one_learner(config, train, test, 2)
    for merge in bench.MERGES:
        losses, _ = bench.mixed(config, train, test, 1, 2, merge)
        assert losses == pytest.approx(one, abs=1e-12)


def test_the_finishing_stage_lowers_the_objective_from_the_average(bench, data):
    train, test = data
    _, origin = bench.mixed(bench.config_of("adaptive", 1), train, test, 4, 1, "weighted")
    batches = list(load_benchmark("bench_mixing").batches_of(train, 0, len(train)))
    curve = bench.lbfgs_curve(origin.to_model(), batches, test, [2, 6], l2=10.0)
    assert [row["passes"] for row in curve] == [2, 6]
    assert curve[1]["objective"] <= curve[0]["objective"]
    assert np.isfinite(curve[1]["loss"])
