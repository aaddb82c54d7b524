"""Services as processes: start one in its own process group, wait until it listens, stop it and all it started.

Every service runs as its own process in its own session (process group), so
that stopping it also stops what it started (a worker pool's SDK workers, a
Flink TaskManager's children) and nothing else: :func:`stop` signals that
group by the service's PID, then waits for the service so it is reaped. A
service also receives SIGTERM when its launcher dies, so a killed test run
leaves nothing behind.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

# Workers are started by a pool as plain ``python``: this interpreter must come first on PATH.
PYTHON_BIN = os.path.dirname(sys.executable)
STARTUP_SECONDS = 60
STOP_SECONDS = 10


@dataclass
class Service:
    """A running service process, its port and its log file."""

    name: str
    process: subprocess.Popen
    port: int
    log: Path
    notes: list[str] = field(default_factory=list)

    @property
    def address(self) -> str:
        return f"localhost:{self.port}"

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def free_port() -> int:
    """A TCP port nobody listens on right now (the service binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("localhost", 0))
        return probe.getsockname()[1]


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("localhost", port), timeout=0.5):
            return True
    except OSError:
        return False


def wait_until_listening(service: Service, timeout: float = STARTUP_SECONDS) -> None:
    """Wait for the service's port to accept connections; fail with its log if it exits or never does."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if service.process.poll() is not None:
            raise RuntimeError(
                f"{service.name} exited with code {service.process.returncode} before listening on "
                f"{service.port}:\n{service.log_tail()}"
            )
        if _answers(service.port):
            return
        time.sleep(0.1)
    raise RuntimeError(
        f"{service.name} did not listen on port {service.port} within {timeout} s:\n{service.log_tail()}"
    )


def _environment(extra: dict | None = None) -> dict:
    env = {**os.environ, **(extra or {})}
    env["PATH"] = PYTHON_BIN + os.pathsep + env.get("PATH", "")
    return env


def _die_with_launcher() -> None:
    """In the child, before exec: receive SIGTERM when the launcher dies.

    Services run in their own session (see stop()), so a pytest killed
    outright (a CI timeout) would otherwise leave them running; with this
    they stop too. Linux only; elsewhere a no-op.
    """
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def start(name: str, argv: list[str], port: int, workdir: Path, env: dict | None = None) -> Service:
    """Start ``argv`` in ``workdir`` (its output in ``workdir/NAME.log``) as the service ``name`` on ``port``."""
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / f"{name}.log"
    with open(log, "wb") as handle:
        process = subprocess.Popen(
            argv,
            cwd=workdir,
            env=_environment(env),
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: see stop()
            preexec_fn=_die_with_launcher,
        )
    return Service(name, process, port, log)


def stop(service: Service | None) -> None:
    """Stop a service and everything in its process group (the pool's workers), then reap it."""
    if service is None:
        return
    group = service.process.pid  # start_new_session: the group's id is the leader's PID
    for sig, wait in ((signal.SIGTERM, STOP_SECONDS), (signal.SIGKILL, STOP_SECONDS)):
        try:
            os.killpg(group, sig)
        except ProcessLookupError:
            break  # nothing of the group is left
        try:
            service.process.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    if service.process.poll() is None:
        service.process.wait()
    # Finished workers the pool never reaped (zombies) pass to init when the pool exits, and
    # init reaps them; wait for that, killing any worker that outlived its pool, so nothing of
    # the group is left when the session ends. (A zombie still counts as a group member.)
    deadline = time.monotonic() + STOP_SECONDS
    while time.monotonic() < deadline:
        try:
            os.killpg(group, signal.SIGKILL)
        except ProcessLookupError:
            return
        time.sleep(0.1)
