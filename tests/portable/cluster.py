"""A local portable Beam "cluster" for tests: a worker pool, a one-worker and a two-worker job service.

:func:`start_cluster` starts the three services (see :mod:`services`) with
their folders under one shared root, which must be outside ``/tmp`` because
the pool's ``/tmp`` may be private (the pool is Beam's own, started by
``polybeam.engines.pools``), then runs ``probe_job.py`` through both job
services to learn what a job's workers really are: their process ids (one per
job on Beam's service, two on the wrapper) and whether a file the launcher
created in ``/tmp`` is visible to them (it must not be, for the pool to stand
for remote workers). :meth:`PortableCluster.stop` stops everything.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from polybeam.engines import processes
from polybeam.engines.pools import start_worker_pool
from tests.portable.commands import run_command
from tests.portable.services import start_job_service

PROBE = Path(__file__).resolve().parent / "probe_job.py"


def shared_root() -> Path:
    """A fresh folder the launcher and the workers both see: under /var/tmp (or $POLYBEAM_PORTABLE_DIR), never /tmp."""
    base = os.environ.get("POLYBEAM_PORTABLE_DIR")
    if not base:
        base = "/var/tmp" if os.path.isdir("/var/tmp") else os.path.expanduser("~")
    return Path(tempfile.mkdtemp(prefix="polybeam-portable-", dir=base))


class SharedFolders:
    """Folders of a suite's runs on the disk launcher and workers share (``root``), and the launchers' own
    temporary folder (``launcher_tmp``, in the launcher's /tmp: see PortableCluster)."""

    root: Path
    launcher_tmp: Path

    @property
    def launcher_env(self) -> dict:
        """The environment of launcher subprocesses (polybeam commands, probe jobs)."""
        return {**os.environ, "TMPDIR": str(self.launcher_tmp)}

    @property
    def launcher_dir(self) -> Path:
        """Where launchers run (the working directory of the polybeam subprocesses)."""
        path = self.root / "launcher"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def job_dir(self, name: str, *, create: bool = True) -> Path:
        """A fresh folder for a job's data and outputs, on the shared disk (``create=False``: only its path)."""
        path = self.root / "jobs" / name
        if create:
            path.mkdir(parents=True, exist_ok=False)
        return path


# What each suite says at the end of the session (title -> lines): the portable and engine suites add to
# theirs; under pytest-xdist a worker hands its lines to the controller, which prints them (tests/conftest.py).
SUMMARIES: dict[str, list[str]] = {}


def summary(title: str) -> list[str]:
    """The list of lines the suite ``title`` says at the end of the session."""
    return SUMMARIES.setdefault(title, [])


def write_summaries(terminalreporter) -> None:
    """Every suite's lines, each under its title (nothing for a suite without lines)."""
    for title, lines in SUMMARIES.items():
        if lines:
            terminalreporter.write_sep("-", title)
            for line in lines:
                terminalreporter.write_line(line)


def keep_or_remove(root: Path, variable: str, summary: list[str], suite: str) -> None:
    """At a session's end: keep ``root`` when ``$variable`` is set (saying so in ``summary``), else remove it."""
    if os.environ.get(variable):
        summary.append(f"{suite}: kept {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)


@dataclass
class PortableCluster(SharedFolders):
    """The running services, their shared root and what the probe jobs saw.

    ``launcher_tmp`` is the launchers' temporary folder: in the launcher's
    /tmp, so that isolated workers cannot see it either (a command that left
    its results there for the workers, or the reverse, must fail here as on a
    cluster), yet one folder the session removes, with the litter Beam's
    launcher leaves behind (a folder per job submission).
    """

    root: Path
    pool: processes.Service
    job_services: dict[int, processes.Service]
    no_private_tmp_reason: str | None
    launcher_tmp: Path
    probes: dict[int, dict] = field(default_factory=dict)

    def portable_options(self, workers: int = 1) -> list[str]:
        """Pipeline options that send a job to the job service with ``workers`` SDK workers per job."""
        # The job service decides the worker count; --direct_num_workers only tells polybeam how many
        # learners the first pass will have (apple spaces its epochs by it), as on the in-process side.
        hint = ["--direct_num_workers", str(workers)] if workers > 1 else []
        return [
            "--runner",
            "PortableRunner",
            "--job_endpoint",
            self.job_services[workers].address,
            "--environment_type",
            "EXTERNAL",
            "--environment_config",
            self.pool.address,
            *hint,
        ]

    @property
    def workers_isolated(self) -> bool:
        """True when no probe job's worker could see the launcher's /tmp marker."""
        return bool(self.probes) and all(probe["marker_seen"] == [False] for probe in self.probes.values())

    def isolation_note(self) -> str:
        """One line for the test output: whether the workers had a private /tmp, and if not why."""
        if self.workers_isolated:
            return (
                "portable suite: SDK workers ran with a private /tmp (own mount namespace): a file the "
                "launcher made in /tmp was invisible to them, as on a cluster"
            )
        if self.no_private_tmp_reason:
            reason = self.no_private_tmp_reason
            return f"portable suite: SDK workers SHARE the launcher's /tmp (plain worker pool): {reason}"
        return (
            "portable suite: SDK workers SHARE the launcher's /tmp: the pool started in its own mount "
            "namespace, yet a job's worker saw the launcher's /tmp file"
        )

    def stop(self) -> None:
        for service in [*self.job_services.values(), self.pool]:
            processes.stop(service)
        shutil.rmtree(self.launcher_tmp, ignore_errors=True)


def start_cluster(root: Path) -> PortableCluster:
    """Start the worker pool and both job services under ``root``, then probe them; stop all if anything fails."""
    started: list[processes.Service] = []
    launcher_tmp = Path(tempfile.mkdtemp(prefix="polybeam-portable-launchers-", dir="/tmp"))
    try:
        # The job services start while the pool does (each takes seconds to import Beam).
        job_services = {}
        for workers in (1, 2):
            job_services[workers] = start_job_service(root, workers=workers, wait=False)
            started.append(job_services[workers])
        pool, reason = start_worker_pool(root, shared=False, private_tmp=True)
        started.append(pool)
        for service in job_services.values():
            processes.wait_until_listening(service)
        cluster = PortableCluster(root, pool, job_services, reason, launcher_tmp)
        cluster.probes = probe(cluster)
        return cluster
    except BaseException:
        for service in reversed(started):
            processes.stop(service)
        shutil.rmtree(launcher_tmp, ignore_errors=True)
        raise


def probe(cluster: PortableCluster) -> dict[int, dict]:
    """Run probe_job.py through each job service (at once); what its workers reported, by workers per job."""
    # In the launcher's /tmp on purpose: the pool's workers must not see it.
    marker = cluster.launcher_tmp / "marker"
    marker.write_text("made by the launcher\n")

    def run(workers):
        output = cluster.job_dir(f"probe-{workers}w") / "observed"
        argv = [sys.executable, PROBE, "--output", output, "--marker", marker, *cluster.portable_options(workers)]
        return run_command(argv, cwd=cluster.launcher_dir, env=cluster.launcher_env).report

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip((1, 2), pool.map(run, (1, 2))))
