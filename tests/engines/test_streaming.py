"""Streaming training on each engine: ``polybeam train --watch`` learns files as they appear, one version
after another, ends on SIGTERM with a last version, and its last model equals one batch pass over the
files in their arrival order (the engine suite's streaming test: Prism, and Flink in streaming mode)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from polybeam.engines import flink, prism, running
from polybeam.transforms import version_folder
from polybeam.transforms.model_io import read_model
from tests.engines.selection import skip_unless_selected

pytestmark = [pytest.mark.engines, pytest.mark.slow]

ENGINE_OPTIONS = {
    "prism": lambda: prism.polybeam_options(),
    "flink-embedded": lambda: [*flink.runner_options(flink.job_server_jar()), "--environment_type", "LOOPBACK"],
}


def vw_rows(seed: int, rows: int = 400) -> str:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, 3))
    y = np.where(x @ np.array([1.0, -1.0, 2.0]) + rng.logistic(size=rows) > 0, 1, -1)
    return "".join(f"{label} | a:{r[0]:.5f} b:{r[1]:.5f} c:{r[2]:.5f}\n" for label, r in zip(y, x))


def drop(folder, name: str, text: str) -> None:
    (folder / f".{name}").write_text(text)
    os.rename(folder / f".{name}", folder / name)


def wait_for_version(models, number: int, job, timeout: float = 240.0) -> None:
    deadline = time.time() + timeout
    while (version_folder.latest_number(str(models)) or 0) < number:
        assert job.poll() is None, "the streaming job ended early"
        assert time.time() < deadline, f"no version {number} within {timeout} s"
        time.sleep(0.3)


@pytest.mark.parametrize("setup", sorted(ENGINE_OPTIONS))
def test_train_watch_learns_files_as_they_appear_on_the_engine(setup, tmp_path):
    skip_unless_selected(setup)
    missing = running.missing_for(setup)
    if missing:
        pytest.skip(f"{setup} engine skipped: {missing}")
    incoming, models = tmp_path / "in", tmp_path / "models"
    incoming.mkdir()
    texts = [vw_rows(seed) for seed in range(2)]
    drop(incoming, "part-0.vw", texts[0])
    command = [
        sys.executable, "-m", "polybeam.pipelines.cli", "train", "--input", str(incoming / "*.vw"), "--format", "vw",
        "--loss", "logistic", "--watch", "0.5", "--model-every", "1", "--model", str(models),
        *ENGINE_OPTIONS[setup](),
    ]  # fmt: skip
    job = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_version(models, 1, job)
        drop(incoming, "part-1.vw", texts[1])
        wait_for_version(models, 2, job)
        job.send_signal(signal.SIGTERM)
        out, err = job.communicate(timeout=240)
    finally:
        if job.poll() is None:
            job.kill()
    assert job.returncode == 0, err[-3000:]
    report = json.loads(out.strip().splitlines()[-1])
    assert report["stopped_by"] == "signal" and report["examples_learned"] == 800 and report["reconciles"]
    whole = tmp_path / "whole.vw"
    whole.write_text("".join(texts))
    batch = subprocess.run(
        [sys.executable, "-m", "polybeam.pipelines.cli", "train", "--input", str(whole), "--format", "vw",
         "--loss", "logistic", "--model", str(tmp_path / "batch.model")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert batch.returncode == 0, batch.stderr[-3000:]
    np.testing.assert_array_equal(
        version_folder.read_version_model(str(models)).dense_weights,
        read_model(str(tmp_path / "batch.model")).dense_weights,
    )
