"""Smoke test of benchmarks/bench_pass_schedule.py on scikit-learn's iris (bundled: no download)."""

from __future__ import annotations

import json

import pytest

from tests.benchmarks.scripts import load_benchmark

pytest.importorskip("sklearn")


def test_iris_runs_both_schedules_with_the_holdout_forced_on(tmp_path):
    bench = load_benchmark("bench_pass_schedule")
    out = tmp_path / "results"
    arguments = ["--only", "sk_iris", "--seeds", "0", "--cache", str(tmp_path / "cache"), "--out", str(out)]
    assert bench.main([*arguments, "--splits", str(tmp_path / "splits")]) == 0
    report = json.loads((out / "pass_schedule.json").read_text())
    assert report["judged"] == [] and {count["tasks"] for count in report["small tally"]} == {1}
    rows = {row["schedule"]: row for row in report["small"]}
    assert set(rows) == {"constant", "restart", "default", "release", "1 pass", "restart, refit"}
    for row in rows.values():
        assert row["passes"] == 20 and 0.0 < row["loss"] < 0.5 and 0.0 <= row["error"] < 0.2
        assert 1 <= row["passes run"][0] <= 20
    assert rows["constant"]["restarts"] == [0] and rows["1 pass"]["passes run"] == [1]
    # Measured: one pass 0.2021 log loss; 20 passes 0.0757 (seed 0).
    assert rows["default"]["loss"] < rows["1 pass"]["loss"]
    assert "Small data with the holdout forced on" in (out / "pass_schedule.md").read_text()
