"""Run the ``polybeam`` command in a subprocess, on the portable runner or in process, and read its report.

Every command prints one JSON object on the last line of stdout; the helpers
return it parsed, and fail the test with the command line and the end of its
stderr when the command failed. A subprocess per run keeps runs independent (no
Beam or numba state shared with pytest) and lets runs overlap (see ``plan.py``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

COMMAND_TIMEOUT = 300
# The in-process runs to compare with: Beam's FnApiRunner as polybeam picks it
# when no --runner is given, with one worker or with two. Which examples each
# worker gets is the runner's choice (it partitions a stage's input among its
# workers), the same whether the workers are threads, processes or, through the
# two-worker job service, the pool's processes; so two worker threads give the
# same model as two worker processes (checked: identical to the last bit) at
# 2 s of CPU per run instead of 5 (no worker processes to start). The portable
# side is what runs real separate worker processes.
IN_PROCESS_OPTIONS = {
    1: [],
    2: ["--direct_num_workers", "2", "--direct_running_mode", "multi_threading"],
}


@dataclass
class CommandRun:
    """A finished command: its arguments, exit code, output and wall time."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def failure(self) -> str:
        tail = "\n".join(self.stderr.strip().splitlines()[-25:])
        return f"`{' '.join(self.argv)}` exited with {self.returncode}:\n{tail}"

    @property
    def report(self) -> dict:
        """The JSON object on the last line of stdout (the test fails here if the command did)."""
        if self.returncode != 0:
            raise AssertionError(self.failure())
        lines = self.stdout.strip().splitlines()
        if not lines:
            raise AssertionError(f"`{' '.join(self.argv)}` printed nothing\n{self.failure()}")
        return json.loads(lines[-1])


def wait_for_json(path: Path, timeout: float = 120) -> dict:
    """The JSON object a job writes to ``path``, once the file exists and parses (a job may still be writing it)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return json.loads(Path(path).read_text())
        except (OSError, ValueError):
            if time.monotonic() > deadline:
                raise AssertionError(f"no complete JSON report at {path} after {timeout} s") from None
            time.sleep(0.2)


def run_command(argv: Sequence, *, cwd: Path, env: dict | None = None, timeout: float = COMMAND_TIMEOUT) -> CommandRun:
    """Run ``argv`` (strings or paths) and capture what it prints."""
    argv = [str(arg) for arg in argv]
    started = time.perf_counter()
    try:
        done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as expired:
        stderr = expired.stderr.decode(errors="replace") if isinstance(expired.stderr, bytes) else expired.stderr or ""
        return CommandRun(argv, -1, "", f"timed out after {timeout} s\n{stderr}", time.perf_counter() - started)
    return CommandRun(argv, done.returncode, done.stdout, done.stderr, time.perf_counter() - started)


# First of a run's arguments when it is not a polybeam command but a Python program (a script, or ``-m``
# and a module) taking the same Beam options: a user's own pipeline, or Beam YAML's runner.
PYTHON = "python"


def polybeam(args: Sequence, options: Sequence[str], *, cwd: Path, env: dict | None = None) -> CommandRun:
    """``polybeam ARGS OPTIONS`` as the installed command runs it (``ARGS = [PYTHON, ...]``: ``python ...``)."""
    if args and args[0] == PYTHON:
        return run_command([sys.executable, *args[1:], *options], cwd=cwd, env=env)
    return run_command([sys.executable, "-m", "polybeam.pipelines.cli", *args, *options], cwd=cwd, env=env)


def run_portable(cluster, args: Sequence, *, workers: int = 1) -> dict:
    """Run a polybeam command on the portable runner (the one- or two-worker job service); its JSON report."""
    return polybeam(args, cluster.portable_options(workers), cwd=cluster.launcher_dir, env=cluster.launcher_env).report


def run_in_process(cluster, args: Sequence, *, workers: int = 1) -> dict:
    """Run the same command on polybeam's default in-process runner (``workers`` 1 or 2); its JSON report."""
    return polybeam(args, IN_PROCESS_OPTIONS[workers], cwd=cluster.launcher_dir, env=cluster.launcher_env).report
