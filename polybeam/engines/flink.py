"""Apache Flink for polybeam: Beam's Flink job server, and a standalone Flink cluster of separate JVMs.

The job server (``job_server_jar``) is Beam's Flink runner for Flink 1.19 with
its dependencies, from Maven (see ``jobserver``). Those dependencies are a
whole Flink 1.19 runtime, so the same class path also starts a standalone
cluster (:class:`StandaloneFlink`): a JobManager (``StandaloneSessionCluster
Entrypoint``) and TaskManagers (``TaskManagerRunner``), each its own JVM with
one task slot, as Flink's ``start-cluster.sh`` would start them from a Flink
distribution (``flink-dist`` itself is not served here). Beam's classes are on
the TaskManagers' class path, as when Beam's jar is put in Flink's ``lib/``.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from polybeam.engines import jobserver, processes
from polybeam.engines.tools import EngineUnavailable, require

BEAM_VERSION = "2.62.0"
FLINK_VERSION = "1.19"
FLINK_RELEASE = "1.19.0"  # what beam-runners-flink-1.19 2.62.0 depends on
VERSIONS = f"Flink {FLINK_RELEASE}, Beam Flink job server {BEAM_VERSION}"
JOB_SERVER = jobserver.JobServer(
    f"flink-{FLINK_VERSION}-job-server-{BEAM_VERSION}",
    jobserver.POMS / "flink-job-server.xml",
    "org.apache.beam.runners.flink.FlinkJobServerDriver",
)
# What Flink's own scripts give its JVMs on Java 17 (Flink's default env.java.opts.all): its
# serializers reach into these packages.
JAVA_17_OPENS = [
    f"--add-opens=java.base/{package}=ALL-UNNAMED"
    for package in (
        "java.lang",
        "java.net",
        "java.io",
        "java.nio",
        "sun.nio.ch",
        "java.lang.reflect",
        "java.text",
        "java.time",
        "java.util",
        "java.util.concurrent",
        "java.util.concurrent.atomic",
        "java.util.concurrent.locks",
    )
] + [
    f"--add-exports={module}=ALL-UNNAMED"
    for module in (
        "java.base/sun.net.util",
        "java.management/sun.management",
        "java.rmi/sun.rmi.registry",
        "java.security.jgss/sun.security.krb5",
    )
]
STARTUP_SECONDS = 90
RESULT_PREFIX = "BASH_JAVA_UTILS_EXEC_RESULT:"
# INFO to standard output, which processes.start sends to the service's log file.
LOG4J = """rootLogger.level = INFO
rootLogger.appenderRef.console.ref = console
appender.console.name = console
appender.console.type = Console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss,SSS} %-5p %c{1} - %m%n
"""


def job_server_jar(*, force: bool = False) -> Path:
    """Beam's Flink job server (built into the cache on first use)."""
    return jobserver.build(JOB_SERVER, force=force)


def fetch() -> list[Path]:
    """What Flink needs: the job server (its class path also runs a standalone cluster)."""
    return [job_server_jar()]


def fetched() -> bool:
    """Whether the job server is built (``polybeam engines fetch flink``)."""
    return JOB_SERVER.jar.exists()


def polybeam_options(master: str = "[local]") -> list[str]:
    """The options that run a polybeam command on Flink at ``master`` through the job server fetched before
    (``polybeam engines options flink``); EngineUnavailable, saying how to fetch it, when it is not."""
    if not fetched():
        raise EngineUnavailable(
            f"Beam's Flink job server is not fetched (no {JOB_SERVER.jar}): run polybeam engines fetch flink "
            "(needs Java 17 and Maven)"
        )
    return ["--runner=FlinkRunner", f"--flink_job_server_jar={JOB_SERVER.jar}", f"--flink_master={master}"]


def runner_options(jar: Path, master: str = "[local]", parallelism: int | None = None) -> list[str]:
    """polybeam options for Beam's FlinkRunner through ``jar``, on ``master`` (``[local]``: embedded Flink)."""
    options = ["--runner", "FlinkRunner", "--flink_job_server_jar", str(jar), "--flink_master", master]
    if parallelism:
        options += ["--parallelism", str(parallelism)]
    return options


def versions() -> str:
    """What a started Flink runs (:mod:`polybeam.engines.running`)."""
    return VERSIONS


def serve(workdir: Path, master: str = "[local]") -> processes.Service:
    """Beam's Flink job server for many jobs, on ``master`` (``[local]``: each job on an embedded Flink)."""
    return jobserver.serve(job_server_jar(), ["--flink-master", master], workdir, "flink-job-server")


def served_options(master: str, parallelism: int) -> list[str]:
    """What a job sent to :func:`serve`'s job server adds to the portable runner's options: its workers kept
    for the whole job (``jobserver.KEEP_WORKERS``) and its ``parallelism``."""
    return [*jobserver.KEEP_WORKERS, "--parallelism", str(parallelism)]


def standalone(workdir: Path, workers: int) -> StandaloneFlink:
    """A standalone Flink cluster of ``workers`` TaskManagers (not started), for :func:`serve` on its master.

    Two slots a TaskManager: two jobs of parallelism ``workers`` run at once
    (the engine suite sends two), and a larger heap than Flink's default, for
    Beam's portable operators.
    """
    return StandaloneFlink(workdir, task_managers=workers, slots=2, memory_mb=2560)


@dataclass
class StandaloneFlink:
    """A JobManager and ``task_managers`` TaskManagers (``slots`` task slots each) on free ports, logs under
    ``workdir``.

    >>> cluster = StandaloneFlink(Path("/var/tmp/flink-doc"))  # doctest: +SKIP
    >>> cluster.start(); cluster.master  # doctest: +SKIP
    'localhost:40123'
    """

    workdir: Path
    task_managers: int = 2
    slots: int = 1  # per TaskManager
    memory_mb: int = 1536
    services: list = field(default_factory=list)
    rest_port: int = 0

    @property
    def master(self) -> str:
        """The address the FlinkRunner submits to (``--flink_master``): the JobManager's REST endpoint."""
        return f"localhost:{self.rest_port}"

    def start(self) -> StandaloneFlink:
        java = require("java")["java"]
        lib = job_server_jar().parent / "lib"
        self.rest_port = processes.free_port()
        conf = self._write_conf(processes.free_port())
        class_path = str(lib / "*")
        started_at = time.monotonic()
        try:
            self._start(
                java,
                class_path,
                conf,
                "jobmanager",
                "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint",
                self.rest_port,
            )
            processes.wait_until_listening(self.services[0], timeout=STARTUP_SECONDS)
            for number in range(1, self.task_managers + 1):
                self._start(
                    java,
                    class_path,
                    conf,
                    f"taskmanager-{number}",
                    "org.apache.flink.runtime.taskexecutor.TaskManagerRunner",
                    self.rest_port,
                )
            self._wait_for_task_managers(started_at + STARTUP_SECONDS)
        except BaseException:
            self.stop()
            raise
        return self

    def _write_conf(self, rpc_port: int) -> Path:
        conf = self.workdir / "conf"
        conf.mkdir(parents=True, exist_ok=True)
        settings = {
            "jobmanager.rpc.address": "localhost",
            "jobmanager.rpc.port": rpc_port,
            "jobmanager.bind-host": "localhost",
            "taskmanager.bind-host": "localhost",
            "taskmanager.host": "localhost",
            "rest.address": "localhost",
            "rest.bind-address": "localhost",
            "rest.port": self.rest_port,
            "blob.server.port": 0,
            "taskmanager.numberOfTaskSlots": self.slots,
            "parallelism.default": self.task_managers,
            "jobmanager.memory.process.size": f"{self.memory_mb}m",
            "taskmanager.memory.process.size": f"{self.memory_mb}m",
            # Beam's portable operators keep elements (bytes) on the heap, and sort little: a heap
            # larger than Flink's default share, at the expense of managed memory.
            "taskmanager.memory.managed.fraction": 0.1,
            # A batch job of polybeam's has dozens of exchanges, each wanting its own network buffers
            # (256 MB a slot: with less, two jobs at once on two slots failed for want of buffers).
            "taskmanager.memory.network.min": f"{256 * self.slots}m",
            "taskmanager.memory.network.max": f"{256 * self.slots}m",
            # Beam's classes are on every JVM's class path: load them from there, never twice.
            "classloader.resolve-order": "parent-first",
            "io.tmp.dirs": str(self.workdir / "io"),
        }
        # flink-conf.yaml's flat "key: value" lines (Flink 1.19 reads it when config.yaml is absent).
        (conf / "flink-conf.yaml").write_text("".join(f"{key}: {value}\n" for key, value in settings.items()))
        (conf / "log4j2.properties").write_text(LOG4J)
        return conf

    def _start(self, java: str, class_path: str, conf: Path, name: str, main_class: str, port: int) -> None:
        jvm, dynamic = _resource_parameters(java, class_path, conf, "JM" if name == "jobmanager" else "TM")
        argv = [
            java,
            *jvm,
            *JAVA_17_OPENS,
            f"-Dlog4j.configurationFile={conf / 'log4j2.properties'}",
            "-cp",
            class_path,
            main_class,
            "--configDir",
            str(conf),
            *dynamic,
        ]
        self.services.append(processes.start(name, argv, port, self.workdir / name))

    def _wait_for_task_managers(self, deadline: float) -> None:
        registered = 0
        while time.monotonic() < deadline:
            for service in self.services:
                if service.process.poll() is not None:
                    raise EngineUnavailable(
                        f"Flink {service.name} exited with {service.process.returncode}:\n{service.log_tail()}"
                    )
            try:
                with urllib.request.urlopen(f"http://{self.master}/taskmanagers", timeout=2) as answer:
                    registered = len(json.load(answer)["taskmanagers"])
            except OSError:
                registered = 0
            if registered >= self.task_managers:
                return
            time.sleep(0.5)
        logs = "\n".join(f"--- {service.name}\n{service.log_tail(15)}" for service in self.services)
        raise EngineUnavailable(f"Flink: {registered} of {self.task_managers} TaskManagers registered in time\n{logs}")

    def stop(self) -> None:
        for service in reversed(self.services):
            processes.stop(service)
        self.services.clear()

    def __enter__(self) -> StandaloneFlink:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _resource_parameters(java: str, class_path: str, conf: Path, process: str) -> tuple[list[str], list[str]]:
    """The JVM options and dynamic settings Flink's scripts give a JobManager (``JM``) or TaskManager (``TM``).

    Flink derives them from the configured process size with ``BashJavaUtils``
    (heap, direct and metaspace limits; the memory split and CPU cores a
    TaskManager must be started with), which is what ``jobmanager.sh`` and
    ``taskmanager.sh`` call; so does this.
    """
    command = [
        java,
        "-cp",
        class_path,
        "org.apache.flink.runtime.util.bash.BashJavaUtils",
        f"GET_{process}_RESOURCE_PARAMS",
        "--configDir",
        str(conf),
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    results = [line.split(":", 1)[1] for line in result.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if result.returncode != 0 or len(results) < 2:
        raise EngineUnavailable(f"Flink could not size its {process} ({' '.join(command)}):\n{result.stdout[-2000:]}")
    return results[-2].split(), results[-1].split()
