"""Streaming training on each engine: ``polybeam train --watch`` learns files as they appear, one version
after another, ends on SIGTERM with a last version, and its last model equals one batch pass over the
files in their arrival order (the engine suite's streaming test: Prism, and Flink in streaming mode)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import numpy as np
import pytest

from polybeam.engines import flink, prism, running
from polybeam.transforms import version_folder
from polybeam.transforms.model_io import read_model
from tests.engines.selection import skip_unless_selected
from tests.streaming_files import drop, vw_rows, wait_for_version

pytestmark = [pytest.mark.engines, pytest.mark.slow]

ENGINE_OPTIONS = {
    "prism": lambda: prism.polybeam_options(),
    "flink-embedded": lambda: [*flink.runner_options(flink.job_server_jar()), "--environment_type", "LOOPBACK"],
}


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
