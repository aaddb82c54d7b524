"""Smoke test of benchmarks/bench_integrity.py: findings replayed end to end say what the contract does."""

from __future__ import annotations

import pytest

from tests.benchmarks.scripts import load_benchmark

pytest.importorskip("sklearn")


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_integrity")


@pytest.mark.slow
def test_labels_one_and_two_train_both_classes_and_lacking_columns_are_refused(bench, tmp_path):
    scratch = bench.Scratch(str(tmp_path))
    labels = bench.finding_labels_one_two(scratch)["now"]
    assert labels.startswith("exit 0") and "1 is the negative class, 2 the positive one" in labels
    assert "0 dead letters" in labels and "auc 0.99" in labels  # (the model saw the 2s: AUC measured)
    columns = bench.finding_missing_columns(scratch)["now"]
    assert "3 lacking: exit 2:" in columns and "lacks 3 of the model's 30 feature columns" in columns
    assert "with --missing-columns allow: loss" in columns


@pytest.mark.slow
def test_the_report_is_written_for_the_findings_asked_for(bench, tmp_path):
    assert bench.main(["--results", str(tmp_path), "--only", "11"]) == 0
    assert not list(tmp_path.iterdir())  # (a partial run writes no report)
    found = bench.finding_headerless_file(bench.Scratch(str(tmp_path)))["now"]
    assert found.startswith("exit 1:") and "its first line looks like a record, not a header" in found
