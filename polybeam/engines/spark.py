"""Spark for Beam's Spark runner: Spark 3.5 from pyspark's jars, a job server, and a standalone cluster.

Beam's Spark 3 runner declares Spark ``provided``, and its shaded job-server
jar (which would bundle it) is not served here. Spark itself comes from the
``pyspark`` wheel's ``jars/`` folder, installed with ``pip install --target``
into the engine cache, never into the running environment (pyspark must not
change its packages); that folder is also a Spark home for a standalone
cluster. The job server's launcher jar names Beam's runner and its
dependencies (``poms/spark-job-server.xml``) and then every Spark jar.

>>> job_server().main_class
'org.apache.beam.runners.spark.SparkJobServerDriver'
>>> scala_of(["spark-core_2.12-3.5.9.jar", "scala-library-2.12.18.jar"])
'2.12'
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from polybeam.engines import jobserver, processes
from polybeam.engines.tools import EngineUnavailable, cache_dir, joined_options, require

BEAM_VERSION = "2.62.0"  # see poms/spark-job-server.xml for why not newer
SPARK_VERSION = "3.5.9"
VERSIONS = f"Spark {SPARK_VERSION} (pyspark's jars), Beam Spark job server {BEAM_VERSION}"
# Beam's spark-3 runner is built against spark-core_2.12 (its POM); Spark's jars must be for the same Scala.
RUNNER_SCALA = "2.12"
DRIVER = "org.apache.beam.runners.spark.SparkJobServerDriver"
WORKERS = 2
STARTUP_SECONDS = 120
SPARK_CORE = re.compile(r"spark-core_(\d+\.\d+)-(\d[\w.\-]*)\.jar$")
SCALA_LIBRARY = re.compile(r"scala-library-(\d+\.\d+)\.[\w.\-]+\.jar$")
# Spark's processes bind to the loopback interface only (a job server's driver too: see runner_options).
LOCAL_ENV = {"SPARK_LOCAL_IP": "127.0.0.1"}
# Jars a Spark executor must load before Spark's own: on every executor Beam deserialises the pipeline
# options, which sets up its file systems, and Beam's GCS one needs Guava 33 where Spark's jars/ hold
# Guava 14 (first attempts then fail with NoSuchMethodError Preconditions.checkState(boolean, String, long)).
EXECUTOR_FIRST = ("guava-*.jar", "failureaccess-*.jar")


def pyspark_folder() -> Path:
    """Where ``pyspark`` is installed with ``pip install --target`` (its package folder is the Spark home)."""
    return cache_dir() / f"pyspark-{SPARK_VERSION}"


def spark_home(*, fetch: bool = False) -> Path:
    """Spark's home (``bin/``, ``jars/``): pyspark's package folder, installed into the cache with ``fetch``."""
    home = pyspark_folder() / "pyspark"
    if not (home / "jars").is_dir():
        if not fetch:
            raise EngineUnavailable(
                f"Spark {SPARK_VERSION} is not fetched (no {home / 'jars'}): run polybeam engines fetch spark"
            )
        install_pyspark()
    return home


def install_pyspark() -> None:
    """``pip install --no-deps --target`` pyspark into the cache (a partial folder renamed when complete)."""
    partial = pyspark_folder().with_suffix(".partial")
    shutil.rmtree(partial, ignore_errors=True)
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-deps",
        "--no-compile",
        "--target",
        str(partial),
        f"pyspark=={SPARK_VERSION}",
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise EngineUnavailable(f"pip could not install pyspark=={SPARK_VERSION}: {result.stderr.strip()[-500:]}")
    shutil.rmtree(pyspark_folder(), ignore_errors=True)
    partial.replace(pyspark_folder())


def spark_jars(home: Path) -> list[Path]:
    """Spark's jars in ``home``, checked to be Spark ``SPARK_VERSION`` for Scala ``RUNNER_SCALA``."""
    jars = sorted((home / "jars").glob("*.jar"))
    scala = scala_of([jar.name for jar in jars])
    if scala != RUNNER_SCALA:
        raise EngineUnavailable(
            f"Spark in {home} is built for Scala {scala}; Beam's spark-3 runner needs {RUNNER_SCALA}"
        )
    versions = {match[2] for jar in jars if (match := SPARK_CORE.match(jar.name))}
    if versions != {SPARK_VERSION}:
        raise EngineUnavailable(f"Spark in {home} is {', '.join(sorted(versions))}, expected {SPARK_VERSION}")
    return jars


def scala_of(jar_names: list[str]) -> str:
    """The Scala version of a Spark distribution from its jar names; spark-core's and scala-library's must agree."""
    core = {match[1] for name in jar_names if (match := SPARK_CORE.match(name))}
    library = {match[1] for name in jar_names if (match := SCALA_LIBRARY.match(name))}
    if len(core) != 1 or core != library:
        raise EngineUnavailable(
            f"no single Scala version: spark-core for {sorted(core)}, scala-library {sorted(library)}"
        )
    return core.pop()


def job_server(home: Path | None = None) -> jobserver.JobServer:
    """The Spark job server: Beam's runner from Maven, then the Spark jars in ``home`` (if given)."""
    extra = tuple(str(jar) for jar in spark_jars(home)) if home is not None else ()
    name = f"spark-{SPARK_VERSION}-job-server-{BEAM_VERSION}"
    return jobserver.JobServer(name, jobserver.POMS / "spark-job-server.xml", DRIVER, extra)


def job_server_jar(*, force: bool = False) -> Path:
    """The launcher jar for ``--spark_job_server_jar``, fetching Spark and building it the first time."""
    return jobserver.build(job_server(spark_home(fetch=True)), force=force)


def properties(host: str = "127.0.0.1") -> dict[str, str]:
    """The Spark properties a job server's driver needs here (JVM system properties of the job server):
    the driver on ``host``, and Beam's Guava before Spark's on executors (``EXECUTOR_FIRST``).

    On a cluster the executors' extra class path names jars in this machine's cache: their workers must
    see the same paths (true of :class:`StandaloneSpark`; elsewhere install them there).
    """
    lib = job_server_jar().parent / "lib"
    first = [str(path) for pattern in EXECUTOR_FIRST for path in sorted(lib.glob(pattern))]
    return {
        "spark.driver.host": host,
        "spark.driver.bindAddress": host,
        "spark.executor.extraClassPath": ":".join(first),
    }


def is_local(master_url: str) -> bool:
    """Whether ``master_url`` runs Spark inside the driver (``local``, ``local[N]``): nothing is staged."""
    return master_url == "local" or master_url.startswith("local[")


def executor_jar() -> Path:
    """A jar of one manifest whose class path names the job server's own jars (Beam's runner and its
    dependencies) by absolute path, for executors on a cluster (see :func:`job_options`)."""
    lib = job_server_jar().parent / "lib"
    return jobserver.write_manifest_jar(
        lib.parent / "executor-class-path.jar", [jar.as_uri() for jar in sorted(lib.glob("*.jar"))]
    )


def job_options(master_url: str) -> list[str]:
    """Pipeline options of a job on ``master_url``: on a cluster, executors load Beam from the cache.

    Left alone, Beam's Spark runner stages the driver's whole class path to
    every executor of every job (``filesToStage``: the launcher, 132 Beam jars
    and Spark's own 252, 419 MB copied into each executor's folder per job).
    Staged instead is :func:`executor_jar`, whose manifest names Beam's jars
    where they are: an executor's class loader follows it, loading the same
    classes in the same order (Spark's first, as for staged jars); 14 KB.
    Its workers must see the cache's paths (true of :class:`StandaloneSpark`).
    """
    return [] if is_local(master_url) else ["--files_to_stage", str(executor_jar())]


def runner_options(master_url: str, *, host: str = "127.0.0.1") -> list[str]:
    """Beam options that run a pipeline on Spark at ``master_url`` (``local[N]`` or ``spark://HOST:PORT``)
    through this job server, started by Beam for the job, its driver on ``host``."""
    return [
        "--runner",
        "SparkRunner",
        "--spark_job_server_jar",
        str(job_server_jar()),
        "--spark_master_url",
        master_url,
        *[f"--job_server_jvm_properties=-D{name}={value}" for name, value in properties(host).items()],
        *job_options(master_url),
    ]


def fetched() -> bool:
    """Whether Spark's jars and the job server are in the cache (``polybeam engines fetch spark``)."""
    return (pyspark_folder() / "pyspark" / "jars").is_dir() and job_server().jar.exists()


def polybeam_options(master_url: str = "local[2]") -> list[str]:
    """The options that run a polybeam command on Spark at ``master_url`` through the job server fetched before
    (``polybeam engines options spark``), as ``--name=value`` words; EngineUnavailable when it is not fetched."""
    if not fetched():
        raise EngineUnavailable(
            f"Spark {SPARK_VERSION} and Beam's Spark job server are not fetched (no {job_server().jar}): run "
            "polybeam engines fetch spark (needs Java 17 and Maven)"
        )
    return joined_options(runner_options(master_url))


def serve(workdir: Path, master_url: str, *, host: str = "127.0.0.1") -> processes.Service:
    """A Spark job server for many jobs (``--runner PortableRunner --job_endpoint``) on ``master_url``.

    Spark allows one SparkContext per JVM, and Beam's runner keeps its metrics
    accumulator in a static field: this job server runs one job at a time.
    Its JVM gets what Beam's ``SparkRunner`` gives the job servers it starts.
    """
    from apache_beam.runners.portability.spark_runner import SPARK_JAR_JOB_SERVER_JVM_ARGS

    jvm_options = [*SPARK_JAR_JOB_SERVER_JVM_ARGS, *(f"-D{name}={value}" for name, value in properties(host).items())]
    return jobserver.serve(
        job_server_jar(), ["--spark-master-url", master_url], workdir, "spark-job-server", jvm_options=jvm_options
    )


def served_options(master_url: str, parallelism: int) -> list[str]:
    """What a job sent to :func:`serve`'s job server adds to the portable runner's options: its workers kept
    for the whole job (``jobserver.KEEP_WORKERS``) and, on a cluster, Beam's jars (:func:`job_options`).
    (Spark's parallelism is its master's: ``local[N]``, or the cluster's cores.)"""
    return [*jobserver.KEEP_WORKERS, *job_options(master_url)]


def versions() -> str:
    """What a started Spark runs (:mod:`polybeam.engines.running`)."""
    return VERSIONS


def fetch() -> list[Path]:
    """Everything Spark needs: pyspark's jars and the job-server jar (what ``polybeam engines fetch spark`` does)."""
    return [spark_home(fetch=True), job_server_jar()]


def standalone(workdir: Path, workers: int) -> StandaloneSpark:
    """A standalone Spark cluster of a master and ``workers`` workers (not started), for :func:`serve`."""
    return StandaloneSpark(workdir, workers=workers)


class StandaloneSpark:
    """A Spark standalone cluster: a master and ``workers`` workers, each its own JVM, on free local ports.

    ``start()`` returns once the master reports every worker ALIVE, or fails
    with the logs' tails; ``stop()`` ends each process group. Logs (and the
    workers' executor folders) go to ``workdir``. Use as a context manager::

        with StandaloneSpark(Path("/var/tmp/spark")) as cluster:
            options = runner_options(cluster.master_url)   # spark://127.0.0.1:PORT
    """

    def __init__(self, workdir: Path, *, workers: int = WORKERS, cores: int = 1, memory: str = "1g") -> None:
        self.workdir = Path(workdir)
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.services: list[processes.Service] = []
        self.master_url = ""
        self.ui_url = ""

    def __enter__(self) -> StandaloneSpark:
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    @property
    def master(self) -> str:
        """The master's URL (``spark://127.0.0.1:PORT``), what :func:`serve` takes."""
        return self.master_url

    def start(self, timeout: float = STARTUP_SECONDS) -> StandaloneSpark:
        java = require("java")["java"]
        home = spark_home(fetch=True)
        class_path = f"{home / 'conf'}:{home / 'jars'}/*"
        # A worker starts executors with Spark's launcher library, which needs the Spark home and, outside
        # Spark's own scripts (load-spark-env.sh), the Scala version of its jars.
        env = {**LOCAL_ENV, "SPARK_HOME": str(home), "SPARK_SCALA_VERSION": RUNNER_SCALA}
        port, ui_port = processes.free_port(), processes.free_port()
        self.master_url, self.ui_url = f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui_port}"
        try:
            master = [
                java,
                "-Xmx512m",
                "-cp",
                class_path,
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(ui_port),
            ]
            self.services.append(processes.start("spark-master", master, port, self.workdir, env))
            processes.wait_until_listening(self.services[0], timeout)
            for index in range(self.workers):
                worker_dir = self.workdir / f"worker-{index}"
                worker = [
                    java,
                    "-Xmx512m",
                    "-cp",
                    class_path,
                    "org.apache.spark.deploy.worker.Worker",
                    self.master_url,
                    "--host",
                    "127.0.0.1",
                    "--cores",
                    str(self.cores),
                    "--memory",
                    self.memory,
                    "--webui-port",
                    "0",
                    "--work-dir",
                    str(worker_dir / "work"),
                ]
                self.services.append(processes.start(f"spark-worker-{index}", worker, 0, worker_dir, env))
            self._wait_for_workers(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def alive_workers(self) -> int:
        """How many workers the master's JSON status page lists as ALIVE (0 while it does not answer)."""
        try:
            with urllib.request.urlopen(f"{self.ui_url}/json", timeout=2) as response:
                status = json.load(response)
        except OSError:
            return 0
        return sum(1 for worker in status.get("workers", []) if worker.get("state") == "ALIVE")

    def _wait_for_workers(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            exited = [service for service in self.services if service.process.poll() is not None]
            if exited:
                raise EngineUnavailable(
                    f"{exited[0].name} exited with code {exited[0].process.returncode}:\n{self.log_tails()}"
                )
            if self.alive_workers() >= self.workers:
                return
            time.sleep(0.5)
        raise EngineUnavailable(
            f"Spark master saw {self.alive_workers()} of {self.workers} workers ALIVE after {timeout} s:\n{self.log_tails()}"
        )

    def log_tails(self, lines: int = 15) -> str:
        return "\n".join(f"--- {service.log}\n{service.log_tail(lines)}" for service in self.services)

    def stop(self) -> None:
        for service in reversed(self.services):
            processes.stop(service)
        self.services = []
