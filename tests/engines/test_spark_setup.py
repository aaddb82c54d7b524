"""The Spark engine's pieces that need no Spark running: the launcher's class path, version checks, fetching.

Fetching needs Java, Maven and the registries; the test that builds the real
job-server jar skips, naming what is missing, where they are not here.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from polybeam.engines import command as cli
from polybeam.engines import jobserver, spark
from polybeam.engines.tools import EngineUnavailable, require
from tests.engines.selection import skip_unless_selected

SPARK_JARS = [
    f"spark-core_2.12-{spark.SPARK_VERSION}.jar",
    f"spark-streaming_2.12-{spark.SPARK_VERSION}.jar",
    "scala-library-2.12.18.jar",
    "log4j-slf4j2-impl-2.20.0.jar",
]


def fake_spark_home(folder: Path, names: list[str]) -> Path:
    (folder / "jars").mkdir(parents=True)
    for name in names:
        (folder / "jars" / name).write_bytes(b"")
    return folder


def class_path(jar: Path) -> list[str]:
    """The Class-Path entries of a launcher jar's manifest (continuation lines joined)."""
    text = zipfile.ZipFile(jar).read("META-INF/MANIFEST.MF").decode().replace("\r\n ", "")
    line = next(line for line in text.splitlines() if line.startswith("Class-Path: "))
    return line.removeprefix("Class-Path: ").split()


def test_scala_version_comes_from_spark_core_and_scala_library():
    assert spark.scala_of(SPARK_JARS) == "2.12"
    with pytest.raises(EngineUnavailable, match="no single Scala version"):
        spark.scala_of(["spark-core_2.13-4.0.0.jar", "scala-library-2.12.18.jar"])
    with pytest.raises(EngineUnavailable, match="no single Scala version"):
        spark.scala_of(["scala-library-2.12.18.jar"])


def test_spark_jars_must_match_the_runners_scala_and_the_pinned_version(tmp_path):
    home = fake_spark_home(tmp_path / "ok", SPARK_JARS)
    assert [jar.name for jar in spark.spark_jars(home)] == sorted(SPARK_JARS)
    scala_213 = fake_spark_home(tmp_path / "213", ["spark-core_2.13-3.5.9.jar", "scala-library-2.13.8.jar"])
    with pytest.raises(EngineUnavailable, match="Scala 2.13; Beam's spark-3 runner needs 2.12"):
        spark.spark_jars(scala_213)
    other = fake_spark_home(tmp_path / "other", ["spark-core_2.12-3.4.4.jar", "scala-library-2.12.17.jar"])
    with pytest.raises(EngineUnavailable, match=f"is 3.4.4, expected {spark.SPARK_VERSION}"):
        spark.spark_jars(other)


def test_the_launcher_names_beams_jars_then_every_spark_jar(tmp_path, monkeypatch):
    """Built from a stand-in Maven that 'resolves' two jars: Beam's first (relative), then Spark's (absolute URIs)."""
    monkeypatch.setenv("POLYBEAM_ENGINE_CACHE", str(tmp_path / "cache"))
    home = fake_spark_home(tmp_path / "pyspark", SPARK_JARS)
    server = spark.job_server(home)
    assert server.main_class == spark.DRIVER and server.name.startswith(f"spark-{spark.SPARK_VERSION}-")

    def fake_maven(command, **kwargs):
        lib = Path(next(arg for arg in command if arg.startswith("-DoutputDirectory=")).split("=", 1)[1])
        for name in ("beam-runners-spark-3-2.62.0.jar", "beam-sdks-java-core-2.62.0.jar"):
            (lib / name).write_bytes(b"")
        return jobserver.subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(jobserver, "require", lambda *programs: {program: program for program in programs})
    monkeypatch.setattr(jobserver.subprocess, "run", fake_maven)
    entries = class_path(jobserver.build(server))
    assert entries[:2] == ["lib/beam-runners-spark-3-2.62.0.jar", "lib/beam-sdks-java-core-2.62.0.jar"]
    assert entries[2:] == [(home / "jars" / name).as_uri() for name in sorted(SPARK_JARS)]


def fake_job_server(tmp_path, monkeypatch) -> Path:
    jar = tmp_path / "server" / "server.jar"
    (jar.parent / "lib").mkdir(parents=True)
    for name in ("guava-33.3.1-android.jar", "failureaccess-1.0.2.jar", "beam-sdks-java-core-2.62.0.jar"):
        (jar.parent / "lib" / name).write_bytes(b"")
    monkeypatch.setattr(spark, "job_server_jar", lambda: jar)
    return jar


def test_runner_options_put_beams_guava_first_on_executors_and_the_driver_on_loopback(tmp_path, monkeypatch):
    jar = fake_job_server(tmp_path, monkeypatch)
    options = spark.runner_options("local[2]")
    assert options[:6] == [
        "--runner",
        "SparkRunner",
        "--spark_job_server_jar",
        str(jar),
        "--spark_master_url",
        "local[2]",
    ]
    lib = jar.parent / "lib"
    assert options[6:] == [
        "--job_server_jvm_properties=-Dspark.driver.host=127.0.0.1",
        "--job_server_jvm_properties=-Dspark.driver.bindAddress=127.0.0.1",
        f"--job_server_jvm_properties=-Dspark.executor.extraClassPath={lib}/guava-33.3.1-android.jar:"
        f"{lib}/failureaccess-1.0.2.jar",
    ]  # nothing staged on a local master


def test_executors_on_a_cluster_stage_one_manifest_naming_beams_jars_in_the_cache(tmp_path, monkeypatch):
    jar = fake_job_server(tmp_path, monkeypatch)
    assert spark.job_options("local") == spark.job_options("local[2]") == []
    options = spark.job_options("spark://127.0.0.1:7077")
    assert options == ["--files_to_stage", str(jar.parent / "executor-class-path.jar")]
    assert spark.runner_options("spark://127.0.0.1:7077")[-2:] == options
    assert class_path(Path(options[1])) == [path.as_uri() for path in sorted((jar.parent / "lib").glob("*.jar"))]
    assert "Main-Class" not in zipfile.ZipFile(options[1]).read("META-INF/MANIFEST.MF").decode()


def test_a_job_server_for_many_jobs_gets_the_jvm_options_beams_spark_runner_gives_its_own(tmp_path, monkeypatch):
    from apache_beam.runners.portability.spark_runner import SPARK_JAR_JOB_SERVER_JVM_ARGS

    jar = fake_job_server(tmp_path, monkeypatch)
    started = {}

    def fake_start(name, argv, port, workdir, env=None):
        started.update(name=name, argv=argv)
        return "service"

    monkeypatch.setattr(jobserver, "require", lambda *programs: {program: program for program in programs})
    monkeypatch.setattr(jobserver.processes, "start", fake_start)
    monkeypatch.setattr(jobserver.processes, "wait_until_listening", lambda service, timeout: None)
    assert spark.serve(tmp_path / "work", "spark://127.0.0.1:7077") == "service"
    argv = started["argv"]
    assert argv[0] == "java" and argv[argv.index("-jar") + 1] == str(jar)
    jvm = argv[1 : argv.index("-jar")]
    assert jvm[: len(SPARK_JAR_JOB_SERVER_JVM_ARGS)] == SPARK_JAR_JOB_SERVER_JVM_ARGS
    assert jvm[len(SPARK_JAR_JOB_SERVER_JVM_ARGS) :] == [
        f"-D{name}={value}" for name, value in spark.properties().items()
    ]
    assert argv[argv.index("--spark-master-url") + 1] == "spark://127.0.0.1:7077"


def test_spark_home_says_how_to_fetch_it(tmp_path, monkeypatch):
    monkeypatch.setenv("POLYBEAM_ENGINE_CACHE", str(tmp_path))
    with pytest.raises(EngineUnavailable, match="polybeam engines fetch spark"):
        spark.spark_home()


def test_the_pom_leaves_spark_and_logging_to_pyspark():
    pom = (jobserver.POMS / "spark-job-server.xml").read_text()
    assert "<artifactId>beam-runners-spark-3</artifactId>" in pom and f"<version>{spark.BEAM_VERSION}</version>" in pom
    assert "<groupId>org.apache.spark</groupId>" not in pom  # Spark is pyspark's, on the class path after Beam's


def test_fetch_is_dispatched_by_engine_name(monkeypatch, capsys):
    monkeypatch.setattr(spark, "fetch", lambda: [Path("/cache/spark-home"), Path("/cache/spark.jar")])
    assert cli.main(["fetch", "spark"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "spark: /cache/spark-home /cache/spark.jar"

    def unavailable():
        raise EngineUnavailable("missing mvn")

    monkeypatch.setattr(spark, "fetch", unavailable)
    assert cli.main(["fetch", "spark"]) == 1
    assert "spark: missing mvn" in capsys.readouterr().err


def test_the_real_job_server_jar_names_beams_runner_and_spark():
    """Builds (or reuses from the cache) the real launcher: Java and Maven needed, and the registries."""
    skip_unless_selected("spark-embedded", "spark-cluster")
    try:
        require("java", "mvn")
    except EngineUnavailable as missing:
        pytest.skip(f"building the Spark job server needs Java and Maven: {missing}")
    try:
        jar = spark.job_server_jar()
    except EngineUnavailable as unavailable:
        pytest.skip(f"Spark or Beam's runner could not be fetched here: {unavailable}")
    entries = class_path(jar)
    assert f"lib/beam-runners-spark-3-{spark.BEAM_VERSION}.jar" in entries
    assert any(entry.endswith(f"/spark-core_{spark.RUNNER_SCALA}-{spark.SPARK_VERSION}.jar") for entry in entries)
    assert not any("slf4j-api-1." in entry for entry in entries)  # Spark's slf4j 2 binds log4j2
    assert all((jar.parent / entry).exists() for entry in entries if entry.startswith("lib/"))
