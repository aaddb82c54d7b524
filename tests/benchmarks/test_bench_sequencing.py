"""Smoke test of benchmarks/bench_sequencing.py: its timing study and report on a tiny configuration."""

from __future__ import annotations

import pytest

from tests.benchmarks.scripts import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_sequencing")


def test_timing_study_sequences_every_group(bench):
    rows = bench.timing_study([6])
    assert rows[0]["groups"] == 6 and rows[0]["features"] == 30
    assert all(rows[0][method] > 0 for method in ("cs-g-omp", "cs-g-fr", "doubling", "sparse"))


def test_report_tables_list_every_method(bench):
    methods = {
        method: {"timeliness": 0.5, "oracle_timeliness": 0.52, "final_explained_variance": 0.6}
        for method in bench.METHODS
    }
    run = {"alpha": 0.99, "stopping_cost": 3.0, "methods": methods}
    report = {
        "splits": 1,
        "timeliness": {"toy": {"splits": [run], "mean": bench._means([run])}},
        "timing": [
            {
                "groups": 6,
                "features": 30,
                "cs-g-omp": 0.01,
                "cs-g-fr": 0.02,
                "doubling": 0.02,
                "sparse": 0.03,
                "fr_over_omp": 2.0,
            }
        ],
    }
    text = bench.markdown(report)
    assert "| toy | 0.99 | 0.5000 |" in text
    assert all(method in text for method in bench.METHODS)
    assert "2.0x" in text
