"""Smoke test of benchmarks/bench_apple_step.py on scikit-learn's breast cancer (bundled: no download)."""

from __future__ import annotations

import json

import pytest

from tests.benchmarks.scripts import load_benchmark

pytest.importorskip("sklearn")


def test_every_setting_runs_and_the_summary_compares_each_with_its_default(tmp_path):
    bench = load_benchmark("bench_apple_step")
    out = tmp_path / "results"
    arguments = ["--tasks", "sk_breast_cancer", "--seeds", "0", "--cache", str(tmp_path / "cache")]
    assert bench.main([*arguments, "--out", str(out), "--splits", str(tmp_path / "splits")]) == 0
    report = json.loads((out / "apple_step.json").read_text())
    errors = {name: run["error"] for name, run in report["results"]["sk_breast_cancer"]["0"].items()}
    assert set(errors) == set(bench.SETTINGS) and all(0 <= error < 0.2 for error in errors.values())
    summary = {row["setting"]: row for row in report["summary"]}
    assert summary["squared, apple"]["wins"] == summary["squared, apple"]["losses"] == 0  # (itself)
    assert summary["squared, apple, gsa"]["against"] == "squared, apple"
    assert "| sk_breast_cancer |" in (out / "apple_step.md").read_text()
