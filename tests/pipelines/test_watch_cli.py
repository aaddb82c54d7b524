"""`polybeam train --watch` end to end on Prism: files learned as they appear, versions in the folder, the
report reconciling, predict/evaluate/inspect on the folder, SIGTERM's last version, and a job killed with
SIGKILL and started again that learns every example exactly once. Skipped unless Prism is built."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from polybeam.engines import prism
from polybeam.transforms import version_folder
from tests.streaming_files import drop, vw_rows, wait_for_version

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not prism.fetched(), reason="Prism is not built: polybeam engines fetch prism"),
]


def command(incoming, models, *extra):
    return [
        sys.executable, "-m", "polybeam.pipelines.cli", "train", "--input", str(incoming / "*.vw"),
        "--format", "vw", "--loss", "logistic", "--watch", "0.3", "--model-every", "1", "--model", str(models),
        *extra,
    ]  # fmt: skip


def run(argv, timeout=180):
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_watch_learns_files_as_they_appear_and_the_folder_serves_evaluate_predict_and_inspect(tmp_path):
    incoming, models = tmp_path / "in", tmp_path / "models"
    incoming.mkdir()
    texts = [vw_rows(seed) for seed in range(3)]
    drop(incoming, "part-0.vw", texts[0])
    job = subprocess.Popen(command(incoming, models, "--stop-after-idle", "5"), stdout=subprocess.PIPE, text=True)
    wait_for_version(models, 1)
    drop(incoming, "part-1.vw", texts[1])
    wait_for_version(models, 2)
    drop(incoming, "part-2.vw", texts[2])
    out, _ = job.communicate(timeout=120)
    assert job.returncode == 0
    report = json.loads(out.strip().splitlines()[-1])
    assert report["records"] == report["examples"] == report["examples_learned"] == 1200 and report["reconciles"]
    assert report["files"] == 3 and report["versions"] == 3 and report["stopped_by"] == "idle"
    # the last version is one pass over the files in the order they came, as a batch job over them in order
    whole = tmp_path / "whole.vw"
    whole.write_text("".join(texts))
    batch = run([sys.executable, "-m", "polybeam.pipelines.cli", "train", "--input", str(whole), "--format", "vw",
                 "--loss", "logistic", "--model", str(tmp_path / "batch.model")])  # fmt: skip
    assert batch["examples"] == 1200
    from polybeam.transforms.model_io import read_model

    np.testing.assert_array_equal(
        version_folder.read_version_model(str(models)).dense_weights,
        read_model(str(tmp_path / "batch.model")).dense_weights,
    )
    evaluated = run([sys.executable, "-m", "polybeam.pipelines.cli", "evaluate", "--model", str(models),
                     "--input", str(whole), "--format", "vw", "--version", "1"])  # fmt: skip
    assert evaluated["model"].endswith("versions/000001.model") and evaluated["examples"] == 1200
    listed = subprocess.run([sys.executable, "-m", "polybeam.pipelines.cli", "inspect", "--model", str(models), "--json"],
                            capture_output=True, text=True, check=True)  # fmt: skip
    assert [entry["examples"] for entry in json.loads(listed.stdout)["versions"]] == [400, 800, 1200]


def test_sigterm_ends_the_job_with_a_last_version(tmp_path):
    incoming, models = tmp_path / "in", tmp_path / "models"
    incoming.mkdir()
    drop(incoming, "part-0.vw", vw_rows(0))
    job = subprocess.Popen(command(incoming, models, "--model-every", "300"), stdout=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not list((models / "files").glob("*.json")):  # (read, its examples waiting for a version due in 300 s)
        assert time.time() < deadline and job.poll() is None, "the file was not read"
        time.sleep(0.2)
    job.send_signal(signal.SIGTERM)
    out, _ = job.communicate(timeout=120)
    assert job.returncode == 0
    report = json.loads(out.strip().splitlines()[-1])
    assert report["stopped_by"] == "signal" and report["examples_learned"] == 400 and report["versions"] == 1


def test_a_job_killed_and_started_again_learns_every_example_exactly_once(tmp_path):
    incoming, models = tmp_path / "in", tmp_path / "models"
    incoming.mkdir()
    for i in range(2):
        drop(incoming, f"part-{i}.vw", vw_rows(i))
    job = subprocess.Popen(command(incoming, models), stdout=subprocess.PIPE, text=True)
    wait_for_version(models, 1)
    drop(incoming, "part-2.vw", vw_rows(2))
    time.sleep(0.5)
    job.kill()  # SIGKILL: no last version, maybe mid-file
    job.wait()
    killed_at = version_folder.latest_number(str(models))
    drop(incoming, "part-3.vw", vw_rows(3))
    report = run(command(incoming, models, "--stop-after-idle", "4"))
    index = version_folder.read_index(str(models))
    assert [entry["version"] for entry in index] == list(range(1, len(index) + 1)) and len(index) > killed_at
    assert sum(entry["learned"] for entry in index) == index[-1]["examples"] == 1600
    assert report["examples_learned"] == 1600 and report["records"] == 1600 and report["reconciles"]
