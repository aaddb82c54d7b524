"""``polybeam engines`` from an installed package, the options it prints for the shell, and what a runner that
cannot start its job server says (one line naming what to pass)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from polybeam.engines import flink, prism, spark
from polybeam.pipelines import logs
from polybeam.pipelines.cli import main
from polybeam.pipelines.runners import engine_of, runner_failure

ROOT = Path(__file__).resolve().parents[2]
# What Beam 2.77 raises when it cannot download Flink's job server (apache_beam.utils.subprocess_server).
FLINK_DOWNLOAD = (
    "Unable to fetch remote job server jar at https://repo.maven.apache.org/maven2/org/apache/beam/"
    "beam-runners-flink-2.2-job-server/2.77.0/beam-runners-flink-2.2-job-server-2.77.0.jar: HTTP Error 404: Not "
    "Found. Also failed to fetch from Google Maven mirror at https://maven-central.storage-download.googleapis.com/"
    "maven2/org/apache/beam/beam-runners-flink-2.2-job-server/2.77.0/beam-runners-flink-2.2-job-server-2.77.0.jar: "
    "<urlopen error [Errno -2] Name or service not known>. If no Internet access at runtime, stage the jar at "
    "/root/.apache_beam/cache/jars/beam-runners-flink-2.2-job-server-2.77.0.jar"
)


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("POLYBEAM_ENGINE_CACHE", str(tmp_path / "engines"))
    return tmp_path / "engines"


def _fetched_flink(cache: Path) -> Path:
    jar = cache / flink.JOB_SERVER.name / f"{flink.JOB_SERVER.name}.jar"
    jar.parent.mkdir(parents=True)
    jar.write_bytes(b"")
    return jar


@pytest.mark.slow
@pytest.mark.subprocess
def test_polybeam_engines_works_from_the_built_package_without_the_checkout(tmp_path):
    """The files a wheel takes (setup.py's build_py: the package and its data, the POMs Maven resolves the job
    servers from) run ``polybeam engines`` in a folder where the checkout's ``engines/`` is not importable."""
    build = tmp_path / "build"
    environment = {**os.environ, "POLYBEAM_NO_KERNEL_CACHE": "1"}
    command = [sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(build)]
    subprocess.run(command, cwd=ROOT, env=environment, check=True, capture_output=True)
    assert sorted(path.name for path in (build / "polybeam" / "engines" / "poms").iterdir()) == [
        "flink-job-server.xml",
        "spark-job-server.xml",
    ]
    installed = {**os.environ, "PYTHONPATH": str(build), "POLYBEAM_ENGINE_CACHE": str(tmp_path / "cache")}

    def polybeam(*argv):
        cli = [sys.executable, "-m", "polybeam.pipelines.cli", *argv]
        return subprocess.run(cli, cwd=tmp_path, env=installed, capture_output=True, text=True, timeout=120)

    done = polybeam("engines", "--help")
    assert done.returncode == 0 and "{fetch,options,start}" in done.stdout
    done = polybeam("engines", "fetch", "--help")
    assert done.returncode == 0 and "usage: polybeam engines fetch [-h] ENGINE [ENGINE ...]" in done.stdout
    done = polybeam("engines", "options", "flink")
    assert done.returncode == 1 and done.stderr.strip() == (
        f"polybeam engines: error: flink: Beam's Flink job server is not fetched (no {tmp_path / 'cache'}/"
        f"{flink.JOB_SERVER.name}/{flink.JOB_SERVER.name}.jar): run polybeam engines fetch flink (needs Java 17 "
        "and Maven)"
    )
    where = subprocess.run(
        [sys.executable, "-c", "import polybeam.engines.jobserver as j; print(j.POMS)"],
        cwd=tmp_path,
        env=installed,
        capture_output=True,
        text=True,
    )
    assert where.stdout.strip() == str(build / "polybeam" / "engines" / "poms")
    checkout_only = subprocess.run([sys.executable, "-m", "engines", "--help"], cwd=tmp_path, env=installed)
    assert checkout_only.returncode != 0  # (python -m engines is the checkout's alias, not shipped)


def test_engines_fetch_through_polybeam_says_how_to_run_on_what_it_built(monkeypatch, capsys):
    monkeypatch.setattr(flink, "fetch", lambda: [Path("/cache/flink.jar")])
    assert main(["engines", "fetch", "flink"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "flink: /cache/flink.jar",
        "to run a polybeam command on one: polybeam COMMAND ... $(polybeam engines options ENGINE), ENGINE: flink",
        "or start one here for many commands: polybeam engines start ENGINE",
    ]


def test_engines_options_are_one_shell_word_each(cache, capsys):
    jar = _fetched_flink(cache)
    assert main(["engines", "options", "flink"]) == 0
    assert capsys.readouterr().out.split() == [
        "--runner=FlinkRunner",
        f"--flink_job_server_jar={jar}",
        "--flink_master=[local]",
    ]
    assert main(["engines", "options", "flink", "--master", "jobmanager:8081"]) == 0
    assert capsys.readouterr().out.split()[-1] == "--flink_master=jobmanager:8081"
    # Beam parses them as it would the pairs.
    options = PipelineOptions(flink.polybeam_options()).get_all_options()
    assert options["flink_job_server_jar"] == str(jar) and options["flink_master"] == "[local]"


def test_spark_options_carry_the_job_servers_jvm_properties(cache, monkeypatch, capsys):
    home = cache / f"pyspark-{spark.SPARK_VERSION}" / "pyspark"
    (home / "jars").mkdir(parents=True)
    for name in (f"spark-core_2.12-{spark.SPARK_VERSION}.jar", "scala-library-2.12.18.jar"):
        (home / "jars" / name).write_bytes(b"")
    jar = spark.job_server(home).jar
    (jar.parent / "lib").mkdir(parents=True)
    jar.write_bytes(b"")
    (jar.parent / "lib" / "guava-33.3.1-android.jar").write_bytes(b"")
    assert main(["engines", "options", "spark", "--master", "local[3]"]) == 0
    words = capsys.readouterr().out.split()
    assert words[:3] == ["--runner=SparkRunner", f"--spark_job_server_jar={jar}", "--spark_master_url=local[3]"]
    assert f"--job_server_jvm_properties=-Dspark.executor.extraClassPath={jar.parent}/lib/guava-33.3.1-android.jar" in (
        words
    )
    assert all(word.startswith("--") for word in words)


def test_options_of_an_engine_not_fetched_say_how_to_fetch_it(cache, capsys):
    assert main(["engines", "options", "prism"]) == 1
    assert capsys.readouterr().err.strip() == (
        f"polybeam engines: error: prism: Prism v{prism.beam_version()} is not fetched: run polybeam engines fetch "
        "prism (needs Go 1.22+)"
    )


def test_starting_an_engine_not_fetched_says_how_to_fetch_it(cache, capsys):
    assert main(["engines", "start", "flink"]) == 1
    assert capsys.readouterr().err.strip() == (
        "polybeam engines: error: flink: Flink is not fetched: run polybeam engines fetch flink (needs Java 17 and "
        "Maven)"
    )


def test_only_an_engine_with_a_standalone_cluster_starts_as_one(capsys):
    assert main(["engines", "start", "prism", "--cluster"]) == 2
    assert capsys.readouterr().err.strip() == (
        "polybeam engines: error: --cluster: Prism has no standalone cluster (engines with one: flink, spark) (see "
        "polybeam engines --help)"
    )


@pytest.mark.parametrize(
    "runner, engine",
    [
        ("FlinkRunner", "flink"),
        ("flink", "flink"),
        ("SparkRunner", "spark"),
        ("apache_beam.runners.portability.prism_runner.PrismRunner", "prism"),
        ("PortableRunner", "portable"),
        (None, None),
    ],
)
def test_the_engine_of_a_runner_name(runner, engine):
    assert engine_of(runner) == engine


def test_a_failed_download_of_flinks_job_server_says_what_to_pass(cache):
    options = PipelineOptions(["--runner", "FlinkRunner"])
    assert runner_failure(RuntimeError(FLINK_DOWNLOAD), options) == (
        "--runner FlinkRunner: Beam could not download its Flink job server from https://repo.maven.apache.org/maven2/"
        "org/apache/beam/beam-runners-flink-2.2-job-server/2.77.0/beam-runners-flink-2.2-job-server-2.77.0.jar (HTTP "
        "Error 404: Not Found); pass --flink_job_server_jar PATH: polybeam engines fetch flink builds one from package "
        "registries (needs Java 17 and Maven), then $(polybeam engines options flink) passes it"
    )
    _fetched_flink(cache)
    assert runner_failure(RuntimeError(FLINK_DOWNLOAD), options).endswith(
        "pass --flink_job_server_jar PATH: polybeam engines fetch flink built one: add $(polybeam engines options flink)"
    )
    assert runner_failure(RuntimeError(FLINK_DOWNLOAD), PipelineOptions([])) is None  # (not a Flink job)
    assert runner_failure(ZeroDivisionError("x"), options) is None


def test_beams_warning_that_it_downloads_a_job_server_is_one_line():
    text = (
        "   WARNING: Apache Beam is downloading dependencies from a public repository at runtime.\n"
        "   This may pose security risks or cause instability due to repository availability.\n"
        "   URL: https://repo.maven.apache.org/maven2/x.jar\n"
        "   Destination: /root/.apache_beam/cache/jars/x.jar\n"
        "   Consider pre-staging dependencies or using a private repository mirror.\n"
    )
    record = logging.LogRecord("apache_beam.utils.subprocess_server", logging.WARNING, "", 0, text, (), None)
    assert logs.readable(record)
    assert record.getMessage() == (
        "Beam is downloading https://repo.maven.apache.org/maven2/x.jar at run time (pre-stage it to run offline)"
    )
