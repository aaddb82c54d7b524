"""The engines by name, and what each needs and can do: one table for ``polybeam engines``, starting an engine,
the runners' messages and the tests.

An engine is one :class:`EngineSpec` in :data:`ENGINE_SPECS` and one module,
``polybeam/engines/NAME.py`` (with its POM in ``poms/`` when Maven builds its
job server), that does what the entry says. Every place that treats engines
differently asks the entry, never the name. The module gives:

- ``fetch()``: build what the engine needs into the cache, the paths it made;
  ``fetched()``: whether they are there (``polybeam engines fetch``);
- ``polybeam_options(master)``: the options that run a polybeam command on it,
  Beam starting the job server for the job (``polybeam engines options``);
- ``versions()``: what it runs, in one line (the engine, its job server);
- ``serve(workdir, master)``: a job server for many jobs, a
  :class:`~polybeam.engines.processes.Service` (``master``: the entry's
  ``default_master``, or a standalone cluster's);
- ``served_options(master, parallelism)``: what a job sent to that job server
  adds to the portable runner's options;
- with ``cluster=True``, ``standalone(workdir, workers)``: a standalone cluster
  of separate processes on this machine, with ``start()`` (returning it),
  ``stop()``, its ``master`` (what ``serve`` then takes) and its ``services``.

:mod:`polybeam.engines.running` starts an engine from these (``polybeam engines start``).

>>> list(ENGINE_SPECS)
['flink', 'spark', 'prism']
>>> spark = engine_spec("spark")
>>> spark.needs_text, spark.setups
('Java 17 and Maven', ('spark-embedded', 'spark-cluster'))
>>> engine_spec("prism").setups
('prism',)
>>> engine_spec("dask")
Traceback (most recent call last):
...
KeyError: "unknown engine 'dask'; the engines are flink, spark, prism"
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

# How messages name the programs an engine needs (tools.INSTALL_HINTS says how to install each).
PROGRAM_TITLES = {"java": "Java 17", "mvn": "Maven", "go": "Go 1.22+"}
# What an engine's fetch builds, and so what Beam downloads without it: a job-server jar it runs with java,
# or a binary.
ARTIFACTS = ("job server", "binary")


@dataclass(frozen=True)
class EngineSpec:
    """An engine and what it needs and can do.

    Parameters
    ----------
    name : str
        Its name: ``polybeam engines fetch|options|start NAME``, and the
        engine of a ``--runner`` (``FlinkRunner`` is ``flink``: ``TITLE``
        then ``Runner`` is the runner Beam names after it).
    title : str
        How messages and pages name it ("Flink").
    module : str
        Its module (see the module's text for what it gives), imported only
        when the engine is used.
    needs : tuple of str
        The programs on PATH that fetching and starting it need (``java``,
        ``mvn``, ``go``): a machine without one skips its tests, saying so.
    master : str
        What ``--master`` means to it, for ``polybeam engines options --help``.
    default_master : str or None
        Where it runs unless told: ``polybeam engines options`` passes it,
        and it is the master of the engine started embedded (None: it has
        no master, it runs on this machine).
    artifact : {"job server", "binary"}
        What ``fetch`` builds and Beam would otherwise download: a job-server
        jar that Beam runs with ``java``, or a binary.
    artifact_option : str
        The Beam option naming that artifact (``flink_job_server_jar``),
        which a runner's messages tell the user to pass.
    cluster : bool
        Whether it can also start as a standalone cluster on this machine
        (the module's ``standalone``): its setups are then ``NAME-embedded``
        and ``NAME-cluster``, else ``NAME`` alone.
    jobs_at_once : int or None
        How many jobs its job server runs at once (None: as many as sent;
        Spark's: 1, one SparkContext per JVM).
    """

    name: str
    title: str
    module: str
    needs: tuple[str, ...]
    master: str
    default_master: str | None
    artifact: str
    artifact_option: str
    cluster: bool = False
    jobs_at_once: int | None = None

    def load(self) -> ModuleType:
        """The engine's module."""
        return importlib.import_module(self.module)

    @property
    def needs_text(self) -> str:
        """The programs it needs, for messages ("Java 17 and Maven")."""
        return " and ".join(PROGRAM_TITLES[program] for program in self.needs)

    def setup(self, cluster: bool = False) -> str:
        """The name of a way it starts (:mod:`polybeam.engines.running`): ``NAME-embedded`` or
        ``NAME-cluster``, or ``NAME`` alone when it has no cluster; ValueError for a cluster it lacks."""
        if cluster and not self.cluster:
            raise ValueError(f"{self.title} has no standalone cluster")
        if not self.cluster:
            return self.name
        return f"{self.name}-cluster" if cluster else f"{self.name}-embedded"

    @property
    def setups(self) -> tuple[str, ...]:
        """Every way it starts: embedded, then as a standalone cluster when it has one."""
        return tuple(self.setup(cluster) for cluster in ((False, True) if self.cluster else (False,)))


ENGINE_SPECS: dict[str, EngineSpec] = {
    spec.name: spec
    for spec in (
        EngineSpec(
            name="flink",
            title="Flink",
            module="polybeam.engines.flink",
            needs=("java", "mvn"),
            master="Flink's master: [local] (embedded) or a JobManager's HOST:PORT",
            default_master="[local]",
            artifact="job server",
            artifact_option="flink_job_server_jar",
            cluster=True,
        ),
        EngineSpec(
            name="spark",
            title="Spark",
            module="polybeam.engines.spark",
            needs=("java", "mvn"),
            master="Spark's master URL: local[N] or spark://HOST:PORT",
            default_master="local[2]",
            artifact="job server",
            artifact_option="spark_job_server_jar",
            cluster=True,
            jobs_at_once=1,
        ),
        EngineSpec(
            name="prism",
            title="Prism",
            module="polybeam.engines.prism",
            needs=("go",),
            master="(Prism runs on this machine: no master)",
            default_master=None,
            artifact="binary",
            artifact_option="prism_location",
        ),
    )
}


def engine_spec(name: str) -> EngineSpec:
    """The entry of engine ``name``; KeyError naming the engines for another name."""
    try:
        return ENGINE_SPECS[name]
    except KeyError:
        raise KeyError(f"unknown engine {name!r}; the engines are {', '.join(ENGINE_SPECS)}") from None
