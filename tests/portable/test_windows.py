"""Models per event-time window through Beam's portable runner, side by side with in-process runs (``runs.py``):
``train --window fixed:1d`` writes the same folder (index and every day's model, each recording its window),
and ``evaluate`` of it gives the same metrics per window."""

from __future__ import annotations

import json

import pytest

from tests.portable.compare import assert_close, assert_same_model, assert_same_report

pytestmark = pytest.mark.portable


def test_train_a_model_per_window(portable_plan):
    runs = portable_plan["train/windowed/1w"]
    report = runs.in_process.report
    assert report["reconciles"] and report["dead_letters"] == 2 and len(report["windows"]) == 3
    assert_same_report(runs)
    index = json.loads((runs.in_process_dir / "models" / "index.json").read_text())
    assert (
        json.loads((runs.portable_dir / "models" / "index.json").read_text())["entries"].keys()
        == index["entries"].keys()
    )
    for entry in index["entries"].values():
        assert_same_model(runs.portable_dir / "models" / entry["file"], runs.in_process_dir / "models" / entry["file"])


def test_evaluate_per_window(portable_plan):
    runs = portable_plan["evaluate/windowed/1w"]
    report = runs.in_process.report
    assert report["examples"] == 300 and len(report["windows"]) == 3
    assert_close(runs.portable.report["windows"], report["windows"], "windows")
    assert_same_report(runs)
