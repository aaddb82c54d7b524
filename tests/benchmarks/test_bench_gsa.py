"""Smoke test of benchmarks/bench_gsa.py: its core on a tiny configuration (two tasks, one split, two passes)."""

from __future__ import annotations

import importlib.util
import json
import math
import os

import numpy as np
import pytest

from tests.benchmarks.scripts import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_gsa")


@pytest.fixture(scope="module")
def spam_split(bench, tmp_path_factory):
    task = next(task for task in bench.TASKS if task.name == "spam")
    return task, bench.load_split(task, 0, str(tmp_path_factory.mktemp("splits")))


def test_split_is_80_20(spam_split):
    _, (train, test) = spam_split
    assert len(train) + len(test) == 4601
    assert len(test) == round(0.2 * 4601)


def test_scalings_use_training_statistics(bench, spam_split):
    _, (train, test) = spam_split
    raw = bench.scale_features(train, test, "raw")
    assert raw[0] is train and raw[1] is test

    scaled, scaled_test = bench.scale_features(train, test, "maxabs")
    largest = np.zeros(1 << train.bits)
    np.maximum.at(largest, scaled.indices, np.abs(scaled.values))
    assert np.allclose(largest[np.unique(train.indices)], 1.0)
    assert scaled_test.nnz == test.nnz  # sparsity kept; test values may exceed 1

    dense, _ = bench.scale_features(train, test, "minmax")
    matrix = dense.to_csr()
    columns = np.flatnonzero(matrix.getnnz(axis=0))
    values = matrix[:, columns].toarray()
    assert values.min() == pytest.approx(-1.0) and values.max() == pytest.approx(1.0)
    assert np.allclose(values.min(axis=0), -1.0) and np.allclose(values.max(axis=0), 1.0)


def test_online_normalised_gsa_ignores_feature_scale(bench, spam_split):
    task, (train, test) = spam_split
    config = bench.methods(task)[0].config(task)
    raw = bench.learning_curve(config, train, test, 1)
    scaled = bench.learning_curve(config, *bench.scale_features(train, test, "maxabs"), 1)
    assert raw["accuracy"] == pytest.approx(scaled["accuracy"], abs=2e-3)
    assert raw["greedy_step"][0] > 0


@pytest.mark.slow
def test_tiny_run_writes_report(bench, tmp_path):
    results = str(tmp_path / "results")
    argv = ["--seeds", "2", "--passes", "2", "--tasks", "spam,dna", "--scalings", "raw,maxabs", "--results", results]
    report = bench.main(argv)

    assert report["reported_passes"] == [1, 2]
    # Two tasks x two scalings x two GSA variants x two passes.
    assert len(report["targets"]) == 16
    for target in report["targets"]:
        assert target["best_sgd"].startswith("sgd-")
        assert 0.5 < target["gsa_accuracy"] <= 1.0
        assert target["met"] == (target["gap"] <= bench.ACCURACY_GAP)
    assert report["summary"]["spam"]["maxabs"]["gsa-exact"]["auc"][0] > 0.5
    assert bench.SGD_AT_GSA_STEP in report["runs"]["dna"]["maxabs"]

    with open(os.path.join(results, "gsa.json")) as handle:
        stored = json.loads(handle.read(), parse_constant=lambda name: pytest.fail(f"non-strict JSON: {name}"))
    assert stored["seeds"] == 2 and len(stored["runs"]["spam"]["raw"]["gsa"]) == 2
    plots = ("gsa.logloss.png", "gsa.accuracy.png") if importlib.util.find_spec("matplotlib") else ()
    assert report["plots"] == list(plots)
    for name in ("gsa.md", *plots):
        assert os.path.getsize(os.path.join(results, name)) > 0
    with open(os.path.join(results, "gsa.md")) as handle:
        markdown = handle.read()
    assert "Verdict" in markdown and "### dna (softmax, 3 classes), maxabs features" in markdown

    # The report can be rewritten from the JSON alone.
    rendered = bench.main(["--render", "--results", results])
    assert [t["gap"] for t in rendered["targets"]] == pytest.approx([t["gap"] for t in report["targets"]], abs=1e-4)
    assert math.isfinite(rendered["elapsed_seconds"])
