"""Smoke test of benchmarks/bench_convergence.py on scikit-learn's iris (bundled: no download)."""

from __future__ import annotations

import json

import pytest

from tests.benchmarks.scripts import load_benchmark

pytest.importorskip("sklearn")


def test_iris_reaches_the_optimum_and_the_report_says_so(tmp_path):
    bench = load_benchmark("bench_convergence")
    out = tmp_path / "results"
    arguments = ["--tasks", "sk_iris", "--cache", str(tmp_path / "cache"), "--out", str(out), "--command-tasks", ""]
    assert bench.main([*arguments, "--splits", str(tmp_path / "splits")]) == 0
    report = json.loads((out / "convergence.json").read_text())
    (result,) = report["results"]
    assert [run["run"] for run in result["runs"][:3]] == ["1 pass", "5 passes", "20 passes"]
    # Measured: 0.1% of the optimum in 6, 5 and 5 evaluations at L2 0.1, 1 and 10 (Newton steps; L-BFGS alone
    # took 17, 12 and 9).
    assert all(
        row["evaluations to 0.1%"] is not None and row["evaluations to 0.1%"] <= 10 for row in result["finishing"]
    )
    assert all(row["gap at 30"] >= -1e-6 for row in result["finishing"])  # (the optimum is the lower reference)
    (summary,) = report["summary"]
    assert summary["task"] == "sk_iris" and summary["measure"] == "error" and summary["met"]
    assert summary["most evaluations"] == max(row["evaluations to 0.1%"] for row in result["finishing"])
    text = (out / "convergence.md").read_text()
    assert "## sk_iris" in text and "## Summary" in text and "## Whole commands" not in text


def test_whole_commands_are_timed_in_fresh_processes(tmp_path):
    bench = load_benchmark("bench_convergence")
    data = tmp_path / "train.libsvm"
    data.write_text("".join(f"{1 + i % 3} 1:{i % 7} 2:{i % 5}\n" for i in range(60)))
    from runners import Task  # (load_benchmark put benchmarks/suite on the path)

    split = type("Split", (), {"train": str(data)})()
    rows = bench.command_rows({"name": "tiny"}, split, Task("tiny", "multiclass", 3, 2))
    assert [row["command"] for row in rows] == list(bench.COMMANDS)
    assert all(row["seconds"] > 0 for row in rows)
