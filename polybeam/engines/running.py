"""Starting an engine for many jobs, as a cluster's users run one, and stopping it with all it started.

A started engine (:class:`RunningEngine`) is a job server for many jobs (the
engine module's ``serve``), on a standalone cluster for the ``-cluster``
setups (its master and workers, each its own process), and an external SDK
worker pool (:mod:`polybeam.engines.pools`) that its Python work goes to, so
that workers are processes apart from the launcher, as on a cluster. Its
``options`` send a job to it (``--runner PortableRunner --job_endpoint ...
--environment_type EXTERNAL --environment_config POOL``). The setups come from
:data:`~polybeam.engines.specs.ENGINE_SPECS`:

* ``flink-embedded``: Beam's Flink job server, each job on an embedded Flink
  (``--flink_master [local]``);
* ``flink-cluster``: the same job server on a standalone Flink cluster, a
  JobManager and two TaskManagers (two slots each: two jobs at once),
  parallelism 2;
* ``spark-embedded`` / ``spark-cluster``: Beam's Spark job server on
  ``local[2]`` / a standalone Spark master with two workers, one job at a
  time (Spark allows one SparkContext per JVM; see ``polybeam.engines.spark.serve``);
* ``prism``: Beam's Prism runner as a job service.

``polybeam engines start ENGINE [--cluster]`` starts one and prints its
options; the engine suite (``tests/engines``) and ``benchmarks/bench_engines.py``
start theirs here too, sharing one worker pool among the engines they start.

>>> list(SETUPS)
['flink-embedded', 'flink-cluster', 'spark-embedded', 'spark-cluster', 'prism']
>>> setup_of("spark-cluster")[0].name, setup_of("spark-cluster")[1]
('spark', True)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from polybeam.engines import processes
from polybeam.engines.pools import start_worker_pool
from polybeam.engines.specs import ENGINE_SPECS, EngineSpec
from polybeam.engines.tools import EngineUnavailable, require

# Jobs' parallelism, and a standalone cluster's workers (TaskManagers, Spark workers): this machine's 2 cores.
PARALLELISM = 2
# Every way an engine starts: its setup's name -> (its entry, whether it is a standalone cluster).
SETUPS: dict[str, tuple[EngineSpec, bool]] = {
    spec.setup(cluster): (spec, cluster)
    for spec in ENGINE_SPECS.values()
    for cluster in ((False, True) if spec.cluster else (False,))
}


@dataclass
class RunningEngine:
    """A started engine: the options of its jobs, its processes and what stops them, its start-up time
    and what it runs on."""

    name: str
    options: list[str] = field(default_factory=list)
    startup_seconds: float = 0.0
    versions: str = ""
    # Jobs at once its job server runs (None: as many as sent).
    parallel: int | None = None
    services: list[processes.Service] = field(default_factory=list)
    stoppers: list[Callable[[], None]] = field(default_factory=list)

    @property
    def job_endpoint(self) -> str:
        return self.options[self.options.index("--job_endpoint") + 1]

    @property
    def pool_address(self) -> str:
        return self.options[self.options.index("--environment_config") + 1]

    def exited(self) -> processes.Service | None:
        """A process of the engine that has ended (it cannot take jobs as it should), or None."""
        return next((service for service in self.services if service.process.poll() is not None), None)

    def stop(self) -> None:
        """Stop everything it started, the last started first."""
        for stopper in reversed(self.stoppers):
            stopper()
        self.stoppers.clear()


def portable_options(job_endpoint: str, pool_address: str, *extra: str) -> list[str]:
    """The options that send a job to the job service at ``job_endpoint``, its Python work to the external
    worker pool at ``pool_address``."""
    return [
        "--runner",
        "PortableRunner",
        "--job_endpoint",
        job_endpoint,
        "--environment_type",
        "EXTERNAL",
        "--environment_config",
        pool_address,
        *extra,
    ]


def setup_of(name: str) -> tuple[EngineSpec, bool]:
    """The entry of setup ``name`` and whether it is a standalone cluster; ValueError naming the setups."""
    try:
        return SETUPS[name]
    except KeyError:
        raise ValueError(f"unknown engine setup {name!r}; the setups are {', '.join(SETUPS)}") from None


def missing_for(name: str) -> str | None:
    """Why setup ``name`` cannot start here (the programs missing and how to get them), or None."""
    try:
        require(*setup_of(name)[0].needs)
    except EngineUnavailable as error:
        return str(error)
    return None


def start(
    name: str,
    workdir: Path,
    pool_address: str | None = None,
    *,
    private_tmp: bool = False,
    parallelism: int = PARALLELISM,
) -> RunningEngine:
    """Start setup ``name`` (:data:`SETUPS`), its folders and logs under ``workdir / name``.

    Its jobs' Python work goes to the worker pool at ``pool_address``; without
    one it starts a pool of its own (with a private /tmp if ``private_tmp``,
    where allowed), stopped with it. What is built on first use (a job server,
    Prism) is built here then, and counts in the start-up time; the pool does
    not. If anything fails to start, what did start is stopped.
    """
    spec, cluster = setup_of(name)
    module = spec.load()
    folder = workdir / name
    engine = RunningEngine(name, parallel=spec.jobs_at_once)
    try:
        if pool_address is None:
            pool, _ = start_worker_pool(folder, private_tmp=private_tmp)
            _started(engine, pool)
            pool_address = pool.address
        began = time.monotonic()
        master = spec.default_master
        engine.versions = module.versions()
        if cluster:
            standalone = module.standalone(folder / "cluster", parallelism).start()
            engine.stoppers.append(standalone.stop)
            engine.services += standalone.services
            master = standalone.master
            engine.versions += ", standalone cluster"
        server = module.serve(folder, master)
        _started(engine, server)
        engine.options = portable_options(server.address, pool_address, *module.served_options(master, parallelism))
        engine.startup_seconds = time.monotonic() - began
    except BaseException:
        engine.stop()
        raise
    return engine


def _started(engine: RunningEngine, service: processes.Service) -> None:
    engine.services.append(service)
    engine.stoppers.append(lambda: processes.stop(service))
