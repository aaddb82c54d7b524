"""Smoke test of benchmarks/bench_scaling.py: one measured run of each kind, and the report it renders."""

from __future__ import annotations

import pytest

from polybeam.datasets.synthetic import PlantedPolynomial, write_dataset
from tests.benchmarks.scripts import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_scaling")


def test_a_measured_run_reports_time_loss_and_each_workers_memory(bench, tmp_path):
    path = write_dataset(str(tmp_path), 2000, PlantedPolynomial(seed=1), formats=("libsvm",))["libsvm"]
    one = bench.train_once(path, str(tmp_path / "one.model"), (), (), {})
    two = bench.train_once(path, str(tmp_path / "two.model"), (), bench.TWO_WORKERS, {})
    assert one["examples"] == two["examples"] == 2000
    assert one["workers"] == 1 and all(mib > 10 for mib in one["worker_peak_rss_mib"])
    assert two["workers"] == 2  # two worker processes learned a share each
    assert 0 < one["progressive_loss"] < 1 and one["pipeline_seconds"] < one["whole_seconds"]


def test_targets_and_report(bench):
    def run(seconds, loss, whole):
        return {"pipeline_seconds": seconds, "pipeline_seconds_median": seconds, "whole_seconds": whole,
                "cpu_seconds": 1.0, "progressive_loss": loss, "worker_peak_rss_mib": [300.0]}  # fmt: skip

    results = {
        "configurations": {
            "1 worker": run(1.2, 0.50, 2.0),
            "1 worker, 1 core": run(2.0, 0.50, 2.7),
            "2 workers (forked)": run(1.0, 0.504, 1.7),
            "2 workers (started afresh, Beam's way)": run(2.5, 0.505, 3.2),
        },
        "fixed": {name: 0.3 for name in bench.CONFIGURATIONS},
        "vw": {"whole_seconds": 1.8, "average_loss": 0.49, "peak_rss_mib": 40.0},
        "help_seconds": 0.1,
    }
    met = bench.targets(results)
    assert met["speedup_vs_one_core_worker"] == pytest.approx(2.0) and met["speedup_met"]
    assert met["progressive_loss_gap"] == pytest.approx(0.008) and met["loss_gap_met"]
    assert met["vw_met"] and met["help_met"]
    text = bench.render({"examples": 10, "repeats": 1, "machine": {"cpus": 2, "python": "3", "vowpalwabbit": "9"},
                         "results": results, "targets": met})  # fmt: skip
    assert "**2.00x** faster" in text and "Vowpal Wabbit" in text
