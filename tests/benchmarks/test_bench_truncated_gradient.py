"""Smoke test of benchmarks/bench_truncated_gradient.py on a tiny configuration (polybeam's methods only)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from tests.benchmarks.scripts import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_truncated_gradient")


def test_split_adds_random_binary_features(bench, tmp_path):
    data = bench.build_split(0, str(tmp_path), random_features=200, rows=1000)
    assert len(data.train) + len(data.test) == 1000 and len(data.test) == 200
    assert data.features == bench.SPAM_FEATURES + 200
    matrix = data.train.to_csr()[:, data.random_start : data.features + 1]
    assert set(np.unique(matrix.data)) == {1.0}
    assert matrix.nnz / (matrix.shape[0] * matrix.shape[1]) == pytest.approx(bench.RANDOM_DENSITY, abs=0.01)
    # Spam's features are log-scaled into [0, 1] on the training rows.
    spam = data.train.to_csr()[:, 1 : bench.SPAM_FEATURES + 1]
    assert spam.data.min() >= 0.0 and spam.max() == pytest.approx(1.0)


def test_tiny_run_matches_the_eager_paper_and_writes_report(bench, tmp_path):
    out = str(tmp_path)
    argv = [
        "--out",
        out,
        "--seeds",
        "1",
        "--rows",
        "800",
        "--grid",
        "4",
        "--passes",
        "2",
        "--random-features",
        "100",
        "--periods",
        "1",
        "10",
        "--no-vw",
        "--no-sklearn",
        "--no-plot",
    ]
    report = bench.main(argv)

    seed = report["seeds"][0]
    assert set(seed["figure1"]) == set(bench.POLYBEAM_METHODS)
    # polybeam's lazy kernels against eqs. 4-6 applied to every weight at every step.
    for check in seed["details"]["eager_check"]:
        assert check["max_abs_difference"] < 1e-9, check
    for method, entry in seed["figure1"].items():
        assert 0.0 <= entry["fraction_removed"] <= 1.0
        assert entry["accuracy"] >= 0.99 * seed["baselines"][method]["accuracy"] - 1e-12
    # The sweep ends with gravity 1: every weight of plain TG is gone.
    assert seed["curves"]["tg_inf"][-1]["nonzero"] == 0

    with open(os.path.join(out, "truncated_gradient.json")) as handle:
        assert json.load(handle)["protocol"]["random_features"] == 100
    with open(os.path.join(out, "truncated_gradient.md")) as handle:
        assert "Figure 1" in handle.read()
