"""Fixtures of the engine suite: one worker pool, the data and the in-process reference for the session,
and each selected engine (``selection.py``), started by the package (``polybeam.engines.running``) before
its tests and stopped after them.

Everything lives in a fresh folder under /var/tmp (the pool's workers have a
private /tmp), removed at the end unless ``POLYBEAM_ENGINES_KEEP=1``. Each
engine's start-up time and the wall time of its runs are printed at the end
of the session (``benchmarks/bench_engines.py`` records them in
``benchmarks/results/engines.md``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from polybeam.engines import processes, running
from polybeam.engines.pools import start_worker_pool
from tests.engines import data as engine_data
from tests.engines.runs import define_runs, subset
from tests.engines.selection import selected
from tests.portable.cluster import SharedFolders, keep_or_remove, summary
from tests.portable.plan import Plan

SUMMARY = summary("engines")
# Runs at once on an engine (the Flink cluster has two slots a TaskManager; a Spark job server takes one
# job at a time: RunningEngine.parallel); the reference runs beside them.
PARALLEL = 2


@dataclass
class EngineSession(SharedFolders):
    """What a Plan needs: folders on the disk launcher and workers share, and the options of a job."""

    root: Path
    options: list[str]
    launcher_tmp: Path

    def portable_options(self, workers: int = 1) -> list[str]:
        return list(self.options)


@pytest.fixture(scope="session")
def engines_root():
    root = Path(tempfile.mkdtemp(prefix="polybeam-engines-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None))
    launcher_tmp = Path(tempfile.mkdtemp(prefix="polybeam-engine-launchers-"))
    try:
        yield root, launcher_tmp
    finally:
        shutil.rmtree(launcher_tmp, ignore_errors=True)
        keep_or_remove(root, "POLYBEAM_ENGINES_KEEP", SUMMARY, "engine suite")


@pytest.fixture(scope="session")
def engine_pool(engines_root):
    root, _ = engines_root
    # The pool's workers have a private /tmp where the machine allows it, as a cluster's cannot see the launcher's.
    pool, reason = start_worker_pool(root, private_tmp=True)
    SUMMARY.append(
        f"engine suite: worker pool at {pool.address}, "
        + ("private /tmp" if reason is None else f"SHARES the launcher's /tmp: {reason}")
    )
    try:
        yield pool
    finally:
        processes.stop(pool)


@pytest.fixture(scope="session")
def engine_data_files(engines_root):
    root, _ = engines_root
    return engine_data.write(root / "data")


@pytest.fixture(scope="session")
def reference_plan(engines_root, engine_data_files):
    """The in-process runs every engine is compared with, all submitted at once."""
    root, launcher_tmp = engines_root
    plan = Plan(EngineSession(root / "reference", [], launcher_tmp), parallel=PARALLEL)
    define_runs(plan, engine_data_files)
    plan.submit_all()
    try:
        yield plan
    finally:
        plan.shutdown()
        SUMMARY.append(f"engine suite: the in-process reference: {plan.timings()}")


def pytest_generate_tests(metafunc):
    if "engine" in metafunc.fixturenames:
        metafunc.parametrize("engine", selected() or ["none"], indirect=True, scope="session")


@pytest.fixture(scope="session")
def engine(request, engines_root, engine_pool, engine_data_files, reference_plan):
    """A started engine and the plan of its runs (submitted at once), as ``(RunningEngine, Plan)``."""
    name = request.param
    if name == "none":
        pytest.skip("POLYBEAM_ENGINES=none: no engine selected")
    missing = running.missing_for(name)
    if missing:
        SUMMARY.append(f"{name} engine skipped: {missing}")
        pytest.skip(f"{name} engine skipped: {missing}")
    root, launcher_tmp = engines_root
    started = running.start(name, root / "engines", engine_pool.address)
    plan = Plan(EngineSession(root / name, started.options, launcher_tmp), parallel=started.parallel or PARALLEL)
    began = time.monotonic()
    try:
        define_runs(plan, engine_data_files, reference_plan, only=subset(name))
        plan.submit_all()
        yield started, plan
    finally:
        plan.shutdown()
        SUMMARY.append(
            f"engine suite: {name} ({started.versions}) started in {started.startup_seconds:.1f} s; "
            f"its runs took {time.monotonic() - began:.0f} s"
        )
        SUMMARY.append(f"engine suite: {name}: {plan.timings()}")
        started.stop()
