"""The runners by the names users give them: ``FlinkRunner`` with the built job-server jar on an embedded
Flink, ``PrismRunner`` and ``DirectRunner`` finding the built Prism offline (no option), each training the
bundled spam split with the in-process counts and progressive loss (one file: one learner, as in process)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from polybeam import datasets
from polybeam.engines import flink, prism, running
from tests.engines.selection import skip_unless_selected

pytestmark = pytest.mark.engines


@pytest.fixture(scope="module")
def spam_train(tmp_path_factory):
    train, _ = datasets.write_split("spam", str(tmp_path_factory.mktemp("spam")))
    return train


def train(train_file: str, model, *options: str, logs: list | None = None) -> dict:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "polybeam.pipelines.cli",
            "train",
            "--input",
            train_file,
            "--loss",
            "logistic",
            "--model",
            str(model),
            *options,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    if logs is not None:
        logs.append(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def needs(engine: str) -> None:
    skip_unless_selected(engine)
    missing = running.missing_for(engine)
    if missing:
        pytest.skip(f"{engine} engine skipped: {missing}")


@pytest.fixture(scope="module")
def in_process(spam_train, tmp_path_factory):
    return train(spam_train, tmp_path_factory.mktemp("in-process") / "m.model")


def same_training(report: dict, reference: dict) -> None:
    keys = ("records", "examples", "examples_trained", "dead_letters", "reconciles")
    assert {k: report[k] for k in keys} == {k: reference[k] for k in keys}
    assert report["progressive_loss"] == pytest.approx(reference["progressive_loss"], rel=1e-9)


def test_flink_runner_with_the_built_job_server_jar(spam_train, in_process, tmp_path):
    needs("flink-embedded")
    report = train(
        spam_train,
        tmp_path / "m.model",
        *flink.runner_options(flink.job_server_jar()),
        "--environment_type",
        "LOOPBACK",
    )
    assert report["runner"] == "FlinkRunner"
    same_training(report, in_process)


@pytest.mark.parametrize("runner", ["PrismRunner", "DirectRunner"])
def test_prism_by_name_offline(spam_train, in_process, tmp_path, runner):
    needs("prism")
    prism.install_for_beam()
    logs = []
    report = train(spam_train, tmp_path / "m.model", "--runner", runner, logs=logs)
    same_training(report, in_process)
    # It ran on the built binary, not on a fallback (the DirectRunner name falls back to the FnApiRunner).
    assert prism.release_name(prism.beam_version()) in logs[0]
    assert "falling back" not in logs[0].lower()
