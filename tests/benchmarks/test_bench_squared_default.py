"""Smoke test of benchmarks/bench_squared_default.py: its core on one small task, one seed."""

from __future__ import annotations

import numpy as np
import pytest

from tests.benchmarks.scripts import load_benchmark

pytest.importorskip("sklearn")


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_squared_default")


def test_unscaled_tasks_have_their_offset_unit_and_missing_values(bench):
    rows = bench.unscaled_task(0, rows=500, r_squared=0.5, unit=1e4, offset=1e5, missing=0.2)
    labels = np.array([label for label, _ in rows])
    assert len(rows) == 500 and abs(labels.mean() - 1e5) < 2e3 and 5e3 < labels.std() < 2e4
    numeric = [sum(1 for j in features if j <= 8) for _, features in rows]
    assert 0.7 < np.mean(numeric) / 8 < 0.9  # 20% of the numeric values missing
    counts = bench.unscaled_task(0, rows=500, noise="counts")
    assert all(label >= 0 and label == int(label) for label, _ in counts)


def test_the_regression_table_shows_the_noise_floor_and_the_default_near_ridge(bench):
    task = {"normal, R^2 0.2": bench.TASKS["normal, R^2 0.2"]}
    learners = {
        name: bench.LEARNERS[name] for name in ("gsa (the old default)", "adaptive 0.5, labels scaled (the default)")
    }
    result = bench.regression([0], tasks=task, learners=learners)["normal, R^2 0.2"]
    assert result["gsa (the old default)"]["1"] > result["ridgecv"] + 0.1
    assert result["adaptive 0.5, labels scaled (the default)"]["20"] < result["ridgecv"] + 0.02


def test_the_report_renders(bench):
    report = {
        "started": "now",
        "seconds": 1.0,
        "seeds": [0],
        "machine": {"cpus": 2},
        "regression": {"t": {"ridgecv": 0.5, **{name: {"1": 0.6, "20": 0.5} for name in bench.LEARNERS}}},
        "hinge": {"h": {name: {"1": 0.1, "5": 0.1} for name in bench.HINGE_LEARNERS}},
    }
    markdown = bench.render(report)
    assert "| t | 0.500 |" in markdown and "| h |" in markdown
