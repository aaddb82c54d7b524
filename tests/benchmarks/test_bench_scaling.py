"""Smoke test of benchmarks/bench_scaling.py: one measured run of each kind, and the report it renders."""

from __future__ import annotations

import pytest

from polybeam.datasets.synthetic import PlantedPolynomial, write_dataset
from tests.benchmarks.scripts import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_scaling")


# Enough examples (~2.5 MB) that the read splits into more than one range: a worker without one has no bundle to run.
EXAMPLES = 8000


@pytest.mark.slow
def test_a_measured_run_reports_time_loss_and_each_workers_memory(bench, tmp_path):
    path = write_dataset(str(tmp_path), EXAMPLES, PlantedPolynomial(seed=1), formats=("libsvm",))["libsvm"]
    one = bench.train_once(path, str(tmp_path / "one.model"), (), (), {})
    two = bench.train_once(path, str(tmp_path / "two.model"), (), bench.TWO_WORKERS, {})
    assert one["examples"] == two["examples"] == EXAMPLES
    assert one["workers"] == 1 and all(mib > 10 for mib in one["worker_peak_rss_mib"])
    # Two forked workers share the read ranges; on a busy machine one may take them all before the other
    # starts (Beam's local runner never rebalances), so the report names one or two (tests/pipelines/
    # test_forked_workers.py checks that both really run).
    assert two["workers"] in (1, 2)
    assert 0 < one["progressive_loss"] < 1 and one["pipeline_seconds"] < one["whole_seconds"]


@pytest.mark.slow
def test_a_profiled_run_breaks_the_time_down_per_part_and_worker(bench, tmp_path):
    path = write_dataset(str(tmp_path), EXAMPLES, PlantedPolynomial(seed=1), formats=("libsvm",))["libsvm"]
    profile = bench.profile_once(path, str(tmp_path / "p.model"), (), bench.TWO_WORKERS, {}, str(tmp_path / "events"))
    parts = profile["parts"]
    assert parts["import Beam"] > 0 and parts["main stage (read, parse, learn)"] > 0
    assert 0 < parts["main stage (read, parse, learn)"] < parts["pipeline (run_train)"]
    assert len(profile["workers"]) in (1, 2)  # the forked workers that read a share of the input (see above)
    # Each worker's parse and learn time is its own; on a loaded machine one worker can finish every bundle
    # before the other starts, so only the worker that read must show both.
    assert all(worker["parse CPU"] >= 0 and worker["learn CPU"] >= 0 for worker in profile["workers"])
    assert any(worker["parse CPU"] > 0 and worker["learn CPU"] > 0 for worker in profile["workers"])


def test_targets_and_report(bench):
    def run(seconds, loss, whole):
        return {
            "pipeline_seconds": seconds,
            "pipeline_seconds_median": seconds,
            "whole_seconds": whole,
            "whole_seconds_median": whole,
            "cpu_seconds": 1.0,
            "progressive_loss": loss,
            "worker_peak_rss_mib": [300.0],
        }

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
    assert met["parallel_efficiency"] == pytest.approx(2.0) and met["parallel_efficiency_met"]
    assert met["loss_ratio"] == pytest.approx(1.008) and met["loss_met"]
    assert met["default_command_vs_vw_whole"] == pytest.approx(2.0 / 1.8) and met["default_command_vs_vw_met"]
    assert met["help_met"]
    text = bench.render(
        {
            "examples": 10,
            "repeats": 1,
            "machine": {"cpus": 2, "python": "3", "vowpalwabbit": "9"},
            "results": results,
            "targets": met,
        }
    )
    assert "**2.00x**" in text and "**1.0080**" in text and "**1.11x**" in text and "Vowpal Wabbit" in text
