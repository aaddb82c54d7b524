"""Start and stop the processes of a local portable Beam "cluster": a worker pool and job services.

Every service runs as its own process in its own session (process group), so
that stopping it also stops what it started (the pool's SDK workers) and
nothing else: :func:`stop` signals that group by the service's PID, then waits
for the service so it is reaped.

The worker pool can run in a private mount namespace with an empty tmpfs over
``/tmp`` (``unshare -m``, root only): its workers then cannot see the launcher's
``/tmp``, as a cluster's workers cannot see the launcher's disk. Where that is
not allowed the pool runs plainly and the reason is returned, for the test
output to show.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import polybeam

HERE = Path(__file__).resolve().parent
# Workers are started by the pool as plain ``python``: this interpreter must come first on PATH.
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
    raise RuntimeError(f"{service.name} did not listen on port {service.port} within {timeout} s:\n{service.log_tail()}")


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


def _start(name: str, argv: list[str], port: int, workdir: Path, env: dict | None = None) -> Service:
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / f"{name}.log"
    with open(log, "wb") as handle:
        process = subprocess.Popen(
            argv, cwd=workdir, env=_environment(env), stdin=subprocess.DEVNULL, stdout=handle, stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: see stop()
            preexec_fn=_die_with_launcher,
        )  # fmt: skip
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


def start_job_service(workdir: Path, *, workers: int = 1, wait: bool = True, bundle_attempts: int = 1) -> Service:
    """Beam's local job service (one SDK worker per job), or with ``workers > 1`` or ``bundle_attempts > 1``
    our wrapper (several workers per job; failed bundles retried).

    With ``wait=False`` it returns at once (call :func:`wait_until_listening`), so services can start together.
    """
    port = free_port()
    if bundle_attempts > 1:
        argv = [sys.executable, str(HERE / "two_worker_job_service.py"), "--port", str(port), "--workers",
                str(workers), "--bundle-attempts", str(bundle_attempts)]  # fmt: skip
        name = f"retrying-job-service-{workers}-workers"
    elif workers == 1:
        argv = [sys.executable, "-m", "apache_beam.runners.portability.local_job_service_main", "--port", str(port)]
        name = "job-service-1-worker"
    else:
        argv = [sys.executable, str(HERE / "two_worker_job_service.py"), "--port", str(port), "--workers", str(workers)]
        name = f"job-service-{workers}-workers"
    service = _start(name, argv, port, workdir / name)
    if wait:
        wait_until_listening(service)
    return service


def paths_to_keep(private_tmp: str = "/tmp") -> list[str]:
    """Directories the pool's workers need that live under ``/tmp`` (the Python environment, polybeam's source)."""
    candidates = {sys.prefix, sys.base_prefix, str(Path(polybeam.__file__).resolve().parent.parent)}
    inside = []
    for path in sorted(os.path.realpath(candidate) for candidate in candidates):
        if path == private_tmp or path.startswith(private_tmp + os.sep):
            inside.append(path)
    return inside


def private_tmp_script(holding: Path) -> str:
    """Shell lines that hide /tmp behind an empty tmpfs, bind-mounting back what the workers need.

    A kept path is first bind-mounted to a holding directory outside /tmp (the
    tmpfs will cover the original), then moved back under the new /tmp.
    """
    lines = ["set -e"]
    keep = paths_to_keep()
    for index, path in enumerate(keep):
        lines += [f"mkdir -p {holding}/{index}", f"mount --bind {shlex.quote(path)} {holding}/{index}"]
    lines.append("mount -t tmpfs -o mode=1777 polybeam-private-tmp /tmp")
    for index, path in enumerate(keep):
        lines += [f"mkdir -p {shlex.quote(path)}", f"mount --move {holding}/{index} {shlex.quote(path)}"]
    lines.append('exec "$@"')
    return "\n".join(lines)


def why_no_private_tmp() -> str | None:
    """Why a private /tmp cannot be tried here, or None when it can."""
    if not sys.platform.startswith("linux"):
        return f"mount namespaces need Linux, this is {sys.platform}"
    if os.geteuid() != 0:
        return "mounting a private /tmp needs root (unshare -m), and the tests run unprivileged"
    if shutil.which("unshare") is None:
        return "the unshare command is not installed"
    if os.environ.get("POLYBEAM_PORTABLE_PLAIN_POOL"):
        return "POLYBEAM_PORTABLE_PLAIN_POOL is set"
    return None


def start_worker_pool(workdir: Path, *, env: dict | None = None, name: str = "worker-pool") -> tuple[Service, str | None]:
    """An external SDK worker pool with its own working directory, and a private /tmp where allowed
    (``env``: variables its workers get besides the launcher's).

    Returns the pool and None when it runs with a private /tmp, or the reason
    it does not. (Whether the workers really cannot see the launcher's /tmp
    is for a job to show: see ``probe_job.py``.)
    """
    pool_dir = workdir / name
    pool_dir.mkdir(parents=True, exist_ok=True)
    reason = why_no_private_tmp()
    if reason is None:
        holding = pool_dir / "holding"
        holding.mkdir(exist_ok=True)
        port = free_port()
        wrapper = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", private_tmp_script(holding), "sh"]
        service = _start(name, wrapper + _pool_command(port), port, pool_dir, env)
        try:
            wait_until_listening(service)
            service.notes.append("private /tmp (tmpfs in its own mount namespace)")
            return service, None
        except RuntimeError as error:
            reason = f"unshare -m with a tmpfs over /tmp failed: {str(error).splitlines()[-1]}"
            stop(service)
    port = free_port()
    service = _start(name, _pool_command(port), port, pool_dir, env)
    wait_until_listening(service)
    service.notes.append(f"plain pool, shares the launcher's /tmp: {reason}")
    return service, reason


def _pool_command(port: int) -> list[str]:
    return [sys.executable, "-m", "apache_beam.runners.worker.worker_pool_main", "--service_port", str(port)]
