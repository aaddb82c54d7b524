"""Start the job services of the local portable Beam "cluster": Beam's local job service, and our wrapper of
it with several SDK workers per job (``two_worker_job_service.py``).

Each is a process in its own process group (``polybeam.engines.processes``: start,
wait until listening, stop with all it started). The cluster's worker pool is
the package's (``polybeam.engines.pools.start_worker_pool``), with a private
/tmp where the machine allows it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from polybeam.engines.processes import Service, free_port, start, wait_until_listening

HERE = Path(__file__).resolve().parent


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
