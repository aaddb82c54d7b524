"""Start the services of a local portable Beam "cluster": a worker pool and job services.

Each is a process in its own process group (``polybeam.engines.processes``: start,
wait until listening, stop with all it started).

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
import sys
from pathlib import Path

import polybeam
from polybeam.engines.processes import Service, free_port, start, stop, wait_until_listening

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent.parent
__all__ = ["Service", "free_port", "start", "stop", "wait_until_listening", "start_job_service", "start_worker_pool"]


def start_job_service(workdir: Path, *, workers: int = 1, wait: bool = True, bundle_attempts: int = 1) -> Service:
    """Beam's local job service (one SDK worker per job), or with ``workers > 1`` or ``bundle_attempts > 1``
    our wrapper (several workers per job; failed bundles retried).

    With ``wait=False`` it returns at once (call :func:`wait_until_listening`), so services can start together.
    """
    port = free_port()
    if bundle_attempts > 1:
        argv = [
            sys.executable,
            str(HERE / "two_worker_job_service.py"),
            "--port",
            str(port),
            "--workers",
            str(workers),
            "--bundle-attempts",
            str(bundle_attempts),
        ]
        name = f"retrying-job-service-{workers}-workers"
    elif workers == 1:
        argv = [sys.executable, "-m", "apache_beam.runners.portability.local_job_service_main", "--port", str(port)]
        name = "job-service-1-worker"
    else:
        argv = [sys.executable, str(HERE / "two_worker_job_service.py"), "--port", str(port), "--workers", str(workers)]
        name = f"job-service-{workers}-workers"
    service = start(name, argv, port, workdir / name)
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


def start_worker_pool(
    workdir: Path, *, env: dict | None = None, name: str = "worker-pool", shared: bool = False
) -> tuple[Service, str | None]:
    """An external SDK worker pool with its own working directory, and a private /tmp where allowed
    (``env``: variables its workers get besides the launcher's; ``shared``: a pool that several runner
    processes, such as two Flink TaskManagers, can share: ``polybeam.engines.worker_pool``).

    Returns the pool and None when it runs with a private /tmp, or the reason
    it does not. (Whether the workers really cannot see the launcher's /tmp
    is for a job to show: see ``probe_job.py``.)
    """
    pool_dir = workdir / name
    pool_dir.mkdir(parents=True, exist_ok=True)
    if shared:  # the pool runs in its own folder: it finds polybeam (and its engines) through the path
        path = (env or {}).get("PYTHONPATH", os.environ.get("PYTHONPATH"))  # (a path of env's own is kept)
        env = {**(env or {}), "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT), path]))}
    reason = why_no_private_tmp()
    if reason is None:
        holding = pool_dir / "holding"
        holding.mkdir(exist_ok=True)
        port = free_port()
        wrapper = [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "--",
            "sh",
            "-c",
            private_tmp_script(holding),
            "sh",
        ]
        service = start(name, wrapper + _pool_command(port, shared), port, pool_dir, env)
        try:
            wait_until_listening(service)
            service.notes.append("private /tmp (tmpfs in its own mount namespace)")
            return service, None
        except RuntimeError as error:
            reason = f"unshare -m with a tmpfs over /tmp failed: {str(error).splitlines()[-1]}"
            stop(service)
    port = free_port()
    service = start(name, _pool_command(port, shared), port, pool_dir, env)
    wait_until_listening(service)
    service.notes.append(f"plain pool, shares the launcher's /tmp: {reason}")
    return service, reason


def _pool_command(port: int, shared: bool = False) -> list[str]:
    module = "polybeam.engines.worker_pool" if shared else "apache_beam.runners.worker.worker_pool_main"
    return [sys.executable, "-m", module, "--service_port", str(port)]
