"""The engines the suite runs on, each started for the session and stopped after it.

An engine is a way to run polybeam's commands: the options that send a job
to it (``options``), the services it needs (a job server; for a standalone
cluster its master and workers), and how long it took to start. Every engine
sends Python work to the session's one external worker pool (a
``polybeam.engines.worker_pool``, whose workers have a private /tmp), so that workers
are other processes that cannot see the launcher's files, as on a cluster.

* ``flink-embedded``: Beam's Flink job server, each job on an embedded Flink
  (``--flink_master [local]``);
* ``flink-cluster``: the same job server on a standalone Flink cluster, a
  JobManager and two TaskManagers (two slots each: two jobs at once),
  parallelism 2;
* ``spark-embedded`` / ``spark-cluster``: Beam's Spark job server on
  ``local[2]`` / a standalone Spark master with two workers, one job at a
  time (Spark allows one SparkContext per JVM; see ``polybeam.engines.spark.serve``);
* ``prism``: Beam's Prism runner as a job service.

One job server serves all of an engine's jobs (``--runner PortableRunner
--job_endpoint``); ``test_engine_runners.py`` trains the way users name the
runners (``--runner FlinkRunner --flink_job_server_jar JAR``, ``PrismRunner``,
``DirectRunner``).
``POLYBEAM_ENGINES`` (comma-separated names, or ``all``) selects the engines;
CI runs ``DEFAULT_ENGINES``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from polybeam.engines import flink, prism, processes, spark
from polybeam.engines.tools import EngineUnavailable, require

# CI runs embedded Flink; the standalone cluster (POLYBEAM_ENGINES=flink-cluster, or all) adds several minutes
# that CI's time limit no longer leaves.
DEFAULT_ENGINES = ("flink-embedded",)
# Beam's runners start and stop an SDK environment per task unless told to keep it: kept, one worker
# per TaskManager serves every stage of a job (measured on a loaded machine: 85-89 s -> 55-59 s a train
# on the Flink cluster).
KEEP_WORKERS = ["--environment_cache_millis", "600000"]
PARALLELISM = 2


@dataclass
class RunningEngine:
    """A started engine: the options of its jobs, what to stop, its start-up time and what it runs on."""

    name: str
    options: list[str]
    startup_seconds: float
    versions: str
    # Runs at once (conftest.PARALLEL unless the engine's job server runs one job at a time).
    parallel: int | None = None
    stoppers: list[Callable[[], None]] = field(default_factory=list)

    def stop(self) -> None:
        for stopper in reversed(self.stoppers):
            stopper()
        self.stoppers.clear()


def _portable(job_server: processes.Service, pool_address: str, *extra: str) -> list[str]:
    return [
        "--runner",
        "PortableRunner",
        "--job_endpoint",
        job_server.address,
        "--environment_type",
        "EXTERNAL",
        "--environment_config",
        pool_address,
        *extra,
    ]


def _flink_embedded(workdir: Path, pool_address: str) -> RunningEngine:
    started = time.monotonic()
    server = flink.serve(workdir)
    engine = RunningEngine(
        "flink-embedded",
        _portable(server, pool_address, *KEEP_WORKERS, "--parallelism", str(PARALLELISM)),
        time.monotonic() - started,
        flink.VERSIONS,
    )
    engine.stoppers.append(lambda: processes.stop(server))
    return engine


def _flink_cluster(workdir: Path, pool_address: str) -> RunningEngine:
    started = time.monotonic()
    # Two slots a TaskManager: two jobs of parallelism 2 at once, as the suite sends them (PARALLEL).
    cluster = flink.StandaloneFlink(
        workdir / "flink-cluster", task_managers=PARALLELISM, slots=2, memory_mb=2560
    ).start()
    try:
        server = flink.serve(workdir, cluster.master)
    except BaseException:
        cluster.stop()
        raise
    engine = RunningEngine(
        "flink-cluster",
        _portable(server, pool_address, *KEEP_WORKERS, "--parallelism", str(PARALLELISM)),
        time.monotonic() - started,
        f"{flink.VERSIONS}, standalone cluster",
    )
    engine.stoppers += [cluster.stop, lambda: processes.stop(server)]
    return engine


def _prism(workdir: Path, pool_address: str) -> RunningEngine:
    started = time.monotonic()
    server = prism.serve(workdir)
    engine = RunningEngine(
        "prism",
        _portable(server, pool_address),
        time.monotonic() - started,
        f"Prism v{prism.beam_version()} (go install)",
    )
    engine.stoppers.append(lambda: processes.stop(server))
    return engine


def _spark(
    name: str, workdir: Path, pool_address: str, master_url: str, started: float, versions: str
) -> RunningEngine:
    server = spark.serve(workdir, master_url)
    options = _portable(server, pool_address, *KEEP_WORKERS, *spark.job_options(master_url))
    engine = RunningEngine(name, options, time.monotonic() - started, versions, parallel=1)
    engine.stoppers.append(lambda: processes.stop(server))
    return engine


def _spark_embedded(workdir: Path, pool_address: str) -> RunningEngine:
    return _spark("spark-embedded", workdir, pool_address, f"local[{PARALLELISM}]", time.monotonic(), spark.VERSIONS)


def _spark_cluster(workdir: Path, pool_address: str) -> RunningEngine:
    started = time.monotonic()
    spark.job_server_jar()
    cluster = spark.StandaloneSpark(workdir / "spark-cluster", workers=PARALLELISM).start()
    try:
        engine = _spark(
            "spark-cluster", workdir, pool_address, cluster.master_url, started, f"{spark.VERSIONS}, standalone cluster"
        )
    except BaseException:
        cluster.stop()
        raise
    engine.stoppers.insert(0, cluster.stop)  # after the job server
    return engine


STARTERS: dict[str, Callable[[Path, str], RunningEngine]] = {
    "flink-embedded": _flink_embedded,
    "flink-cluster": _flink_cluster,
    "spark-embedded": _spark_embedded,
    "spark-cluster": _spark_cluster,
    "prism": _prism,
}
# What each engine needs on this machine (a missing one skips that engine, saying so).
NEEDS = {
    "flink-embedded": ("java", "mvn"),
    "flink-cluster": ("java", "mvn"),
    "spark-embedded": ("java", "mvn"),
    "spark-cluster": ("java", "mvn"),
    "prism": ("go",),
}


def selected() -> list[str]:
    """The engines to run: ``POLYBEAM_ENGINES`` (names, ``all``, or ``none``), else DEFAULT_ENGINES."""
    chosen = os.environ.get("POLYBEAM_ENGINES", ",".join(DEFAULT_ENGINES)).strip()
    if chosen == "none":
        return []
    names = list(STARTERS) if chosen == "all" else [name.strip() for name in chosen.split(",") if name.strip()]
    unknown = [name for name in names if name not in STARTERS]
    if unknown:
        raise ValueError(f"POLYBEAM_ENGINES: unknown engines {unknown}; known: {sorted(STARTERS)}")
    return names


def missing_for(name: str) -> str | None:
    """Why ``name`` cannot run here (a program missing), or None."""
    try:
        require(*NEEDS[name])
    except EngineUnavailable as error:
        return f"{name} engine skipped: {error}"
    return None


def start(name: str, workdir: Path, pool_address: str) -> RunningEngine:
    return STARTERS[name](workdir / name, pool_address)
