"""A Beam job-server jar built from Maven Central: the runner artifact, its dependencies, and a launcher.

Beam publishes each runner's job server as a shaded jar
(``beam-runners-flink-1.19-job-server``), but its driver class lives in the
runner artifact itself (``beam-runners-flink-1.19``), which a partial mirror
of Maven Central may serve when the shaded jar is not. So: Maven resolves the
runner with its dependencies into ``lib/``, and a launcher jar of one manifest
names them on its class path (relative, so the folder can move) with the
driver as its main class. ``java -jar`` runs it as it would run Beam's jar,
which is what ``--flink_job_server_jar`` / ``--spark_job_server_jar`` do.
"""

from __future__ import annotations

import subprocess
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from polybeam.engines import processes
from polybeam.engines.tools import EngineUnavailable, cache_dir, require

POMS = Path(__file__).resolve().parent / "poms"
# A manifest line holds at most 72 bytes; longer ones continue on lines starting with a space.
MANIFEST_LINE = 72
STARTUP_SECONDS = 90
# Beam's Java runners start and stop a job's SDK environment per task unless told to keep it: kept, one
# worker per TaskManager serves every stage of a job (measured on a loaded machine: 85-89 s -> 55-59 s a
# train on the Flink cluster). For jobs sent to a job server of serve().
KEEP_WORKERS = ["--environment_cache_millis", "600000"]


@dataclass(frozen=True)
class JobServer:
    """What to build: a name, the POM whose dependencies make up the class path, and the driver class."""

    name: str
    pom: Path
    main_class: str
    extra_class_path: tuple[str, ...] = ()  # more jars (absolute paths), e.g. an engine's own distribution

    @property
    def folder(self) -> Path:
        return cache_dir() / self.name

    @property
    def jar(self) -> Path:
        return self.folder / f"{self.name}.jar"


def manifest(main_class: str | None, class_path: list[str]) -> bytes:
    """A jar manifest naming ``main_class`` (if any) and ``class_path`` (wrapped as the format wants).

    >>> print(manifest("a.Main", ["lib/x.jar"]).decode().replace("\\r\\n", "\\n").strip())
    Manifest-Version: 1.0
    Main-Class: a.Main
    Class-Path: lib/x.jar
    """

    def wrapped(line: str) -> bytes:
        data = line.encode()
        pieces = [data[:MANIFEST_LINE]]
        data = data[MANIFEST_LINE:]
        while data:
            pieces.append(b" " + data[: MANIFEST_LINE - 1])
            data = data[MANIFEST_LINE - 1 :]
        return b"\r\n".join(pieces)

    lines = [
        "Manifest-Version: 1.0",
        *([f"Main-Class: {main_class}"] if main_class else []),
        "Class-Path: " + " ".join(class_path),
    ]
    return b"\r\n".join(wrapped(line) for line in lines) + b"\r\n\r\n"


def build(server: JobServer, *, force: bool = False) -> Path:
    """The launcher jar of ``server``, resolved with Maven into the cache the first time (or with ``force``)."""
    if server.jar.exists() and not force:
        return server.jar
    tools = require("mvn", "java")
    lib = server.folder / "lib"
    lib.mkdir(parents=True, exist_ok=True)
    command = [
        tools["mvn"],
        "-q",
        "-B",
        "-f",
        str(server.pom),
        "dependency:copy-dependencies",
        f"-DoutputDirectory={lib}",
        "-DincludeScope=runtime",
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        errors = [line for line in result.stdout.splitlines() + result.stderr.splitlines() if "ERROR" in line]
        raise EngineUnavailable(
            f"Maven could not resolve {server.pom.name}: {' '.join(errors[:2]) or result.stderr[-500:]}"
        )
    class_path = [f"lib/{jar.name}" for jar in sorted(lib.glob("*.jar"))] + [
        Path(extra).as_uri() for extra in server.extra_class_path
    ]
    return write_manifest_jar(server.jar, class_path, server.main_class)


def write_manifest_jar(jar: Path, class_path: list[str], main_class: str | None = None) -> Path:
    """Write ``jar``, a jar of one manifest (``class_path``, ``main_class``), whole or not at all."""
    partial = jar.with_suffix(".partial")
    with zipfile.ZipFile(partial, "w") as written:
        written.writestr("META-INF/MANIFEST.MF", manifest(main_class, class_path))
    partial.replace(jar)  # only a finished jar counts as cached
    return jar


def serve(
    jar: Path, arguments: list[str], workdir: Path, name: str = "job-server", *, jvm_options: Sequence[str] = ()
) -> processes.Service:
    """Run a job server from ``jar`` until stopped (``arguments``: the engine's, e.g. ``--flink-master``;
    ``jvm_options``: the JVM's, before ``-jar``, e.g. ``-Dspark.driver.host=127.0.0.1``).

    One job server for many jobs (``--runner PortableRunner --job_endpoint
    localhost:PORT``), as a cluster's users run it, saves each job the JVM's
    start-up that ``--flink_job_server_jar`` costs (Beam starts one per job).
    The expansion service is off: polybeam has no cross-language transforms.
    """
    java = require("java")["java"]
    port = processes.free_port()
    argv = [
        java,
        *jvm_options,
        "-jar",
        str(jar),
        *arguments,
        "--job-port",
        str(port),
        "--artifact-port",
        "0",
        "--expansion-port",
        "-1",
        "--artifacts-dir",
        str(workdir / name / "artifacts"),
    ]
    service = processes.start(name, argv, port, workdir / name)
    processes.wait_until_listening(service, timeout=STARTUP_SECONDS)
    return service
