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
    assert report["judged"] == [] and report["small tally"]["tasks"] == 1
    rows = {row["schedule"]: row for row in report["small"]}
    assert set(rows) == {"constant", "restart"}
    for row in rows.values():
        assert row["passes"] == 20 and 0.0 < row["loss"] < 0.5 and 0.0 <= row["error"] < 0.2
        assert 1 <= row["passes run"][0] <= 20
    assert rows["constant"]["restarts"] == [0]
    assert "Small data with the holdout forced on" in (out / "pass_schedule.md").read_text()
