"""``polybeam engines start``: an engine started here takes a job sent with the options it prints, and SIGTERM
stops it with everything it started. On Prism, the quickest engine to start (a few seconds)."""

from __future__ import annotations

import json
import selectors
import signal
import socket
import subprocess
import sys
import time

import pytest

from polybeam import datasets
from polybeam.engines import prism, running

pytestmark = pytest.mark.engines
STARTUP_SECONDS = 120


def first_line(process: subprocess.Popen, timeout: float) -> str:
    """The first line of the process's standard output, or fail with its standard error."""
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            process.terminate()
            pytest.fail(f"no options printed in {timeout} s:\n{process.communicate(timeout=30)[1]}")
    line = process.stdout.readline()
    if not line:
        pytest.fail(f"polybeam engines start ended with {process.wait()}:\n{process.stderr.read()}")
    return line


def answers(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            return True
    except OSError:
        return False


def test_a_started_engine_takes_a_job_from_the_options_it_prints_and_sigterm_stops_it(tmp_path):
    missing = running.missing_for("prism")
    if missing:
        pytest.skip(f"prism engine skipped: {missing}")
    if not prism.fetched():
        pytest.skip("Prism is not fetched here: polybeam engines fetch prism")
    train, _ = datasets.write_split("spam", str(tmp_path))
    workdir = tmp_path / "engine"
    command = [sys.executable, "-m", "polybeam.pipelines.cli", "engines", "start", "prism", "--workdir", str(workdir)]
    engine = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        options = first_line(engine, STARTUP_SECONDS).split()
        assert options[:1] == ["--runner=PortableRunner"]
        given = dict(option.split("=", 1) for option in options)
        assert given["--environment_type"] == "EXTERNAL"
        endpoints = [given["--job_endpoint"], given["--environment_config"]]
        assert all(answers(address) for address in endpoints)

        job = [sys.executable, "-m", "polybeam.pipelines.cli", "train", "--input", train, "--loss", "logistic"]
        done = subprocess.run(
            [*job, "--model", str(tmp_path / "m.model"), *options], capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr[-3000:]
        report = json.loads(done.stdout.strip().splitlines()[-1])
        with open(train, "rb") as lines:
            assert report["examples"] == sum(1 for _ in lines) and report["dead_letters"] == 0
        assert report["runner"] == "PortableRunner"

        engine.send_signal(signal.SIGTERM)
        assert engine.wait(timeout=60) == 0
        stderr = engine.stderr.read()
        assert "prism (Prism v" in stderr and "prism: stopping" in stderr
        deadline = time.monotonic() + 10
        while any(answers(address) for address in endpoints) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(answers(address) for address in endpoints)
        assert (workdir / "prism" / "worker-pool" / "worker-pool.log").exists()  # a given folder is kept
    finally:
        if engine.poll() is None:
            engine.terminate()
            engine.wait(timeout=60)
