"""Starting an external SDK worker pool: the processes an engine sends a job's Python work to.

With ``--environment_type EXTERNAL --environment_config HOST:PORT`` a Beam
runner asks the pool at that address to start its SDK workers, so workers are
processes of their own, apart from the launcher, as on a cluster. The pool
(:func:`start_worker_pool`) is a service of :mod:`~polybeam.engines.processes`:
its own process group and working folder, stopped with all its workers.

Where allowed it also runs in a private mount namespace with an empty tmpfs
over ``/tmp`` (``unshare -m``, root only): its workers then cannot see the
launcher's ``/tmp``, as a cluster's workers cannot see the launcher's disk.
Where that is not allowed the pool runs plainly and the reason is returned.

>>> print(private_tmp_script(Path("/var/tmp/hold"), keep=["/tmp/venv"]))
set -e
mkdir -p /var/tmp/hold/0
mount --bind /tmp/venv /var/tmp/hold/0
mount -t tmpfs -o mode=1777 polybeam-private-tmp /tmp
mkdir -p /tmp/venv
mount --move /var/tmp/hold/0 /tmp/venv
exec "$@"
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

import polybeam
from polybeam.engines.processes import Service, free_port, start, stop, wait_until_listening

# Where polybeam's source is (a checkout, or site-packages): a shared pool's workers find polybeam there.
SOURCE_ROOT = Path(polybeam.__file__).resolve().parent.parent
PRIVATE_TMP_NOTE = "private /tmp (tmpfs in its own mount namespace)"


def paths_to_keep(private_tmp: str = "/tmp") -> list[str]:
    """Folders the pool's workers need that live under ``/tmp`` (the Python environment, polybeam's source)."""
    candidates = {sys.prefix, sys.base_prefix, str(SOURCE_ROOT)}
    inside = []
    for path in sorted(os.path.realpath(candidate) for candidate in candidates):
        if path == private_tmp or path.startswith(private_tmp + os.sep):
            inside.append(path)
    return inside


def private_tmp_script(holding: Path, keep: Sequence[str] | None = None) -> str:
    """Shell lines that hide /tmp behind an empty tmpfs, bind-mounting back what the workers need (``keep``,
    by default :func:`paths_to_keep`), then run their arguments.

    A kept path is first bind-mounted to a holding folder outside /tmp (the
    tmpfs will cover the original), then moved back under the new /tmp.
    """
    keep = paths_to_keep() if keep is None else keep
    lines = ["set -e"]
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
        return "mounting a private /tmp needs root (unshare -m), and this runs unprivileged"
    if shutil.which("unshare") is None:
        return "the unshare command is not installed"
    return None


def start_worker_pool(
    workdir: Path,
    *,
    env: dict | None = None,
    name: str = "worker-pool",
    shared: bool = True,
    private_tmp: bool = False,
) -> tuple[Service, str | None]:
    """An external SDK worker pool in ``workdir / name``, and why its workers share the launcher's /tmp (None:
    they have a private one).

    ``env``: variables its workers get besides the launcher's. ``shared``:
    polybeam's pool (:mod:`polybeam.engines.worker_pool`), which several
    runner processes, such as two Flink TaskManagers, can share; else Beam's
    own. ``private_tmp``: try a private /tmp (:func:`why_no_private_tmp`);
    without it, or where it fails, the pool runs plainly. (Whether the workers
    really cannot see the launcher's /tmp is for a job to show.)
    """
    pool_dir = workdir / name
    pool_dir.mkdir(parents=True, exist_ok=True)
    if shared:  # the pool runs in its own folder: it finds polybeam (and its engines) through the path
        path = (env or {}).get("PYTHONPATH", os.environ.get("PYTHONPATH"))  # (a path of env's own is kept)
        env = {**(env or {}), "PYTHONPATH": os.pathsep.join(filter(None, [str(SOURCE_ROOT), path]))}
    reason = why_no_private_tmp() if private_tmp else "not asked for a private one"
    if reason is None:
        holding = pool_dir / "holding"
        holding.mkdir(exist_ok=True)
        port = free_port()
        wrapper = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", private_tmp_script(holding)]
        service = start(name, [*wrapper, "sh", *_pool_command(port, shared)], port, pool_dir, env)
        try:
            wait_until_listening(service)
            service.notes.append(PRIVATE_TMP_NOTE)
            return service, None
        except RuntimeError as error:
            reason = f"unshare -m with a tmpfs over /tmp failed: {str(error).splitlines()[-1]}"
            stop(service)
    port = free_port()
    service = start(name, _pool_command(port, shared), port, pool_dir, env)
    wait_until_listening(service)
    service.notes.append(f"plain pool, shares the launcher's /tmp: {reason}")
    return service, reason


def _pool_command(port: int, shared: bool) -> list[str]:
    module = "polybeam.engines.worker_pool" if shared else "apache_beam.runners.worker.worker_pool_main"
    return [sys.executable, "-m", module, "--service_port", str(port)]
