"""Smoke test of benchmarks/bench_truncation_cost.py on a tiny run: every form and step rule timed and reported."""

from __future__ import annotations

import json

import pytest

from tests.benchmarks.scripts import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_truncation_cost")


@pytest.mark.slow
def test_tiny_run_times_both_forms_for_every_step_rule(bench, tmp_path):
    assert bench.main(["--examples", "3000", "--repeats", "1", "--results", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "truncation_cost.json").read_text())
    assert set(report["overheads"]) == {f"{form}, {step}" for form in bench.FORMS for step in bench.STEP_RULES}
    for name, entry in report["overheads"].items():
        assert entry["changed"]["sparsity"] == name.split(", ")[0] and entry["changed"]["gravity"] > 0
        assert entry["base_seconds"] > 0 and entry["changed_seconds"] > 0
        # The tiny gravity leaves the models comparable: the truncated learner learns as well.
        assert entry["changed_progressive_loss"] == pytest.approx(entry["base_progressive_loss"], rel=0.05)
    markdown = (tmp_path / "truncation_cost.md").read_text()
    assert markdown.count("| cumulative |") == 3 and markdown.count("| truncate |") == 3
