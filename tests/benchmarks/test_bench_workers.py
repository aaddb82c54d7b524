"""Smoke test of benchmarks/bench_workers.py on tiny sizes: one learner is the N = 1 row, and averages of
more than two learners are finished by the defaults and never end worse on the holdout than the average."""

from __future__ import annotations

import pytest

from tests.benchmarks.scripts import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_workers")


def test_many_workers_are_finished_and_one_learner_is_not(bench):
    batches, test, bits = bench.make_task("dense", 6000, 2000)
    one = bench.run_workers(batches, test, bits, 1, 2)
    assert one["lbfgs_passes"] == 0 and one["loss"] == one["average_loss"]
    two = bench.run_workers(batches, test, bits, 2, 2)
    assert two["lbfgs_passes"] == 0  # two learners' average is kept as it is
    many = bench.run_workers(batches, test, bits, 16, 2)
    assert many["lbfgs_passes"] > 0 and many["kept"] in ("lbfgs", "online")
    assert many["finishing_seconds"] >= 0
    assert bench.seen_share(batches, 16) > 0.9  # nearly every worker sees nearly every feature


def test_the_report_renders_with_its_verdicts(bench, tmp_path):
    report = bench.main(["--quick", "--tasks", "dense", "--workers", "1,64", "--results", str(tmp_path)])
    rows = report["tasks"]["dense"]
    assert [row["workers"] for row in rows] == [1, 64] and rows[0]["ratio"] == 1.0
    text = (tmp_path / "workers_quick.md").read_text()
    assert "dense, 64 workers x 5 passes" in text
