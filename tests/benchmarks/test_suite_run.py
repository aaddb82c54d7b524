"""Smoke test of benchmarks/suite/run.py: the protocol's splits, the runners and the report, on bundled data."""

from __future__ import annotations

import doctest
import json
import os
import sys

import numpy as np
import pytest

SUITE = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "suite")


@pytest.fixture(scope="module")
def suite():
    sys.path[:0] = [SUITE, os.path.dirname(SUITE)]
    import runners
    import splits

    return runners, splits


def test_the_suite_modules_doctests_pass(suite):
    runners, splits = suite
    for module in (runners, splits):
        assert doctest.testmod(module).failed == 0


def test_splits_never_mix_test_rows_into_training(suite, tmp_path):
    _, splits = suite
    data = tmp_path / "data.libsvm"
    data.write_text("".join(f"{1 if i % 3 else -1} 1:{i}\n" for i in range(1000)))
    split = splits.make_split(str(data), str(tmp_path / "s"), seed=7)
    rows = {part: open(split.path(part)).read().splitlines() for part in splits.PARTS}
    assert not set(rows["train"]) & set(rows["test"])
    assert sorted(rows["train"] + rows["test"]) == sorted(data.read_text().splitlines())
    assert rows["fit"] + rows["valid"] == rows["train"]
    other = splits.make_split(str(data), str(tmp_path / "t"), seed=8)
    assert open(other.test).read() != open(split.test).read()


def test_polybeam_runner_uses_the_command_lines_configuration(suite):
    runners, _ = suite
    task = runners.Task("t", "multiclass", 4, 10)
    config = runners.polybeam_config(runners.polybeam_flags(task, "--passes", "3"))
    assert (config.loss, config.classes, config.passes) == ("softmax", 4, 3)
    assert runners.polybeam_config(runners.polybeam_flags(runners.Task("r", "regression", None, 3))).loss == "squared"


@pytest.mark.slow
def test_quick_run_writes_a_report_with_every_learner(tmp_path):
    pytest.importorskip("sklearn")
    pytest.importorskip("vowpalwabbit")
    sys.path[:0] = [SUITE, os.path.dirname(SUITE)]
    import run

    assert run.main(["--quick", "--cache", str(tmp_path / "cache"), "--out", str(tmp_path / "out")]) == 0
    report = json.loads((tmp_path / "out" / "suite.json").read_text())
    results = report["results"]
    assert {"sk_breast_cancer", "sk_wine", "sk_digits", "sk_diabetes"} <= set(results)
    cancer = results["sk_breast_cancer"]["summary"]
    assert set(cancer) == set(run.LEARNERS) - {"sklearn ridgecv"}  # the added peer is for regression tasks
    assert all(0 <= entry["error"] <= 1 for entry in cancer.values())
    diabetes = results["sk_diabetes"]["summary"]
    assert diabetes["sklearn ridgecv"]["error"] < 0.8 and diabetes["polybeam"]["error"] < 1.0  # issue 22
    assert cancer["sklearn batch"]["error"] < 0.1  # the batch optimum on scaled features: a few percent
    assert "vw stage_poly" not in results["sk_digits"]["summary"]  # multiclass: no polynomial peers
    assert np.isfinite(results["sk_diabetes"]["summary"]["polybeam"]["error"])
    markdown = (tmp_path / "out" / "suite.md").read_text()
    assert (
        "## Targets" in markdown and "Regression (issue 22), one pass never worse than predicting the mean" in markdown
    )


@pytest.mark.slow
def test_quick_sparsity_protocol_chooses_on_validation_and_reports_every_method(tmp_path):
    pytest.importorskip("sklearn")
    pytest.importorskip("vowpalwabbit")
    sys.path[:0] = [SUITE, os.path.dirname(SUITE)]
    import run
    import sparsity

    out = tmp_path / "out"
    assert run.main(["--sparsity", "--quick", "--cache", str(tmp_path / "cache"), "--out", str(out)]) == 0
    result = json.loads((out / "suite_sparsity.json").read_text())["results"]["sk_breast_cancer+random1000"]
    for method in sparsity.METHODS:
        seed = result["runs"][method][0]
        curve = seed["validation"]["curve"]
        assert [point["strength"] for point in curve] == list(sparsity.GRIDS[method])
        # The chosen strength is a grid point within 1% of the unregularised validation accuracy.
        chosen = [point for point in curve if point["strength"] == seed["chosen"]]
        assert chosen and chosen[0]["accuracy"] >= 0.99 * seed["validation"]["unregularised"]
        assert 0.0 <= seed["test"]["random_zero"] <= 1.0
    # The strongest L1 empties scikit-learn's model: every random weight is exactly 0 there.
    assert result["runs"]["sklearn"][0]["validation"]["curve"][-1]["random_zero"] == 1.0
    assert (out / "suite_sparsity.png").exists()
