"""Smoke tests of benchmarks/bench_apple.py and bench_planted_monomial.py on tiny configurations."""

from __future__ import annotations

import importlib.util
import json
import os

import pytest

from tests.benchmarks.scripts import load_benchmark

HAS_VW = importlib.util.find_spec("vowpalwabbit") is not None  # the bench extra; CI runs without it


@pytest.mark.slow
def test_relative_error_study_runs_and_reports(tmp_path):
    bench = load_benchmark("bench_apple")
    report = bench.main(
        [
            "--tasks",
            "dna-binary",
            "--seeds",
            "1",
            "--rates",
            "0.5",
            "--methods",
            "lin,quad,cubic,apple(1),apple-stream(1)",
            "--results",
            str(tmp_path),
            *([] if HAS_VW else ["--no-vw"]),
        ]
    )
    rows = report["summary"]["dna-binary"]
    # eq. 2: the baselines span [0, 1]; apple and VW are put on the same scale.
    assert sorted(rows[f"polybeam:{key}"]["relative_error"] for key in ("lin", "quad", "cubic"))[::2] == [0.0, 1.0]
    assert rows["polybeam:apple(1)"]["relative_error"] is not None and rows["polybeam:lin"]["relative_time"] == 1.0
    versus = report["targets"]["apple_vs_vw_stage_poly"]["1"]
    assert sum(versus.values()) == (1 if HAS_VW else 0) and ("vw:stage_poly(1)" in rows) == HAS_VW
    with open(os.path.join(tmp_path, "apple.json")) as handle:
        saved = json.load(handle)
    assert bench.render(saved) == open(os.path.join(tmp_path, "apple.md")).read()


def test_planted_monomial_benchmark_finds_the_monomial(tmp_path):
    bench = load_benchmark("bench_planted_monomial")
    assert bench.main(["--examples", "20000", "--seeds", "1", "--noise", "0", "--results", str(tmp_path)]) == 0
    with open(os.path.join(tmp_path, "planted_monomial.json")) as handle:
        (run,) = json.load(handle)["runs"]
    assert run["hidden_rank"] == 1
    assert "w4*w17*w42*w88" in [name for stage in run["stages"] for name in stage["dividing_hidden"]]
