"""Fixtures of the portable-runner suite: one local portable "cluster" and its data for the whole session.

``portable_cluster`` starts, as separate processes (see ``cluster.py`` and
``services.py``): an external SDK worker pool with its own working directory
and, where the machine allows it, a private /tmp; Beam's local job service (one
SDK worker per job); and ``two_worker_job_service.py`` (two SDK workers per
job). Ports are free ports picked at start; each service is waited for until
it accepts connections. Data and outputs live in a fresh folder under /var/tmp
(the workers' /tmp is not the launcher's); launchers get a fresh TMPDIR inside
their own /tmp. Both are removed at the end with every service, whether tests
passed or failed (``POLYBEAM_PORTABLE_KEEP=1`` keeps the shared folder, with
the services' logs, for a post-mortem).

``portable_plan`` holds every command the tests compare (``runs.py``), run
side by side on the portable runner and in process, several at a time.

The session's last lines say whether the workers really had a private /tmp,
and if not, why; a fallback to a plain pool also raises a pytest warning.
"""

from __future__ import annotations

import os
import warnings

import pytest

from tests.portable import data
from tests.portable.cluster import keep_or_remove, shared_root, start_cluster, summary
from tests.portable.plan import Plan
from tests.portable.runs import define_runs

# Lines for the terminal summary (written by the fixture, read at the end of the session).
SUMMARY = summary("portable runner")


@pytest.fixture(scope="session")
def portable_cluster():
    root = shared_root()
    cluster = None
    try:
        cluster = start_cluster(root)
        note = cluster.isolation_note()
        SUMMARY.append(note)
        SUMMARY.append(
            f"portable suite: worker pool at {cluster.pool.address} (cwd {cluster.pool.log.parent}), job services "
            f"at {cluster.job_services[1].address} (1 worker per job, pids seen {cluster.probes[1]['pids']}) and "
            f"{cluster.job_services[2].address} (2 workers per job, pids seen {cluster.probes[2]['pids']})"
        )
        if not cluster.workers_isolated:
            warnings.warn(pytest.PytestWarning(note), stacklevel=1)
        yield cluster
    finally:
        if cluster is not None:
            cluster.stop()
        keep_or_remove(root, "POLYBEAM_PORTABLE_KEEP", SUMMARY, "portable suite")


@pytest.fixture(scope="session")
def portable_data(portable_cluster):
    """Splits of bundled spam and satellite, spam's as CSV with IDs, and the per-key task's files (whole and
    shards), on the disk the workers share."""
    folder = portable_cluster.job_dir("data")
    splits = {name: data.write_split(name, folder) for name in ("spam", "satellite")}
    ids = data.as_csv_with_ids(splits["spam"], features=57)
    return {
        **splits,
        "spam-csv-ids": ids,
        "per-key": data.write_per_key(folder / "per-key"),
        "timed": data.write_timed(folder / "timed"),
    }


@pytest.fixture(scope="session")
def portable_plan(portable_cluster, portable_data):
    """Every run of the suite (``runs.py``), all submitted at once so they overlap.

    ``POLYBEAM_PORTABLE_PREFETCH=0`` submits only what the selected tests ask
    for (handy when running one test); the default suits a whole-suite run.
    """
    plan = Plan(portable_cluster)
    define_runs(plan, portable_data)
    if os.environ.get("POLYBEAM_PORTABLE_PREFETCH", "1") != "0":
        plan.submit_all()
    try:
        yield plan
    finally:
        plan.shutdown()
        SUMMARY.append(f"portable suite: {plan.timings()}")
