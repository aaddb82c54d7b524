"""What Beam's runners need before they can run a job, checked at launch, and their failures to start, in one line.

Beam's Flink and Spark runners start a Java job server from a jar: the one
``--flink_job_server_jar`` / ``--spark_job_server_jar`` names, else one Beam
downloads from Maven Central when the job starts. Its Prism runner downloads
a Go binary from GitHub unless ``--prism_location`` names one, and its
portable runner submits to the job service at ``--job_endpoint``. Offline, or
with a path that does not exist, each fails with a traceback of Beam's (the
Flink one 160 lines long, after trying two mirrors). Here a path that does not
exist and a missing endpoint fail before anything runs (:func:`check_runner`),
and a download that failed is said in one line naming what to pass
(:func:`runner_failure`); ``polybeam engines fetch flink|spark|prism`` builds
what each needs from package registries (:mod:`polybeam.engines`).

>>> engine_of("FlinkRunner"), engine_of("flink"), engine_of("apache_beam.runners.portability.spark_runner.SparkRunner")
('flink', 'flink', 'spark')
>>> check_runner(PipelineOptions(["--runner", "PortableRunner"]))
Traceback (most recent call last):
...
polybeam.pipelines.errors.OptionError: --runner PortableRunner submits to a running job service: give its --job_endpoint HOST:PORT (a Flink or Spark job server, Prism), or name the engine (--runner FlinkRunner, SparkRunner, PrismRunner)
"""

from __future__ import annotations

import os
import re
import urllib.parse

from apache_beam.options.pipeline_options import PipelineOptions, PortableOptions, StandardOptions

from polybeam.pipelines.errors import OptionError

# Beam's runners by the engine they run on; the option naming each one's job server or binary.
JAR_OPTIONS = {"flink": "flink_job_server_jar", "spark": "spark_job_server_jar"}
ENGINE_NAMES = {"flink": "Flink", "spark": "Spark", "prism": "Prism"}
# Beam's messages when a download it needs fails (apache_beam.utils.subprocess_server, prism_runner).
_DOWNLOAD_FAILED = re.compile(r"Unable to fetch remote (?:job server jar|prism binary) at (\S+?):? ")


def engine_of(runner: str | None) -> str | None:
    """The engine a ``--runner`` value runs on (``flink``, ``spark``, ``prism``, ``portable``, ...), by Beam's
    spelling rules (any case, ``Runner`` optional, or a dotted class path); None for the local default."""
    if not runner:
        return None
    name = runner.rpartition(".")[2].lower()
    return name.removesuffix("runner") or name


def _is_missing_file(path: str) -> bool:
    return not urllib.parse.urlparse(path).scheme and not os.path.exists(path)


def _fetch_hint(engine: str) -> str:
    """How to get what ``engine`` needs without Beam's download (naming it when it is built already)."""
    from polybeam.engines.command import engine as engine_module

    try:
        fetched = engine_module(engine).fetched()
    except Exception:  # a cache that cannot be looked at: say how to build it
        fetched = False
    if fetched:
        return f"polybeam engines fetch {engine} built one: add $(polybeam engines options {engine})"
    needs = "Go" if engine == "prism" else "Java 17 and Maven"
    return (
        f"polybeam engines fetch {engine} builds one from package registries (needs {needs}), "
        f"then $(polybeam engines options {engine}) passes it"
    )


def check_runner(options: PipelineOptions) -> None:
    """Raise :class:`~polybeam.pipelines.errors.OptionError` when the runner cannot start as asked: a job
    server jar or Prism binary that is not there, or the portable runner without a job service."""
    engine = engine_of(options.view_as(StandardOptions).runner)
    given = options.get_all_options(retain_unknown_options=True)
    if engine in JAR_OPTIONS:
        jar = given.get(JAR_OPTIONS[engine])
        if jar and _is_missing_file(jar):
            raise OptionError(
                f"--{JAR_OPTIONS[engine]} {jar}: no such file (Beam's {ENGINE_NAMES[engine]} job server); "
                + _fetch_hint(engine)
            )
    elif engine == "prism":
        location = given.get("prism_location")
        if location and _is_missing_file(location):
            raise OptionError(f"--prism_location {location}: no such file (Prism's binary); {_fetch_hint('prism')}")
    elif engine == "portable" and not options.view_as(PortableOptions).job_endpoint:
        raise OptionError(
            "--runner PortableRunner submits to a running job service: give its --job_endpoint HOST:PORT "
            "(a Flink or Spark job server, Prism), or name the engine (--runner FlinkRunner, SparkRunner, PrismRunner)"
        )


def runner_failure(error: BaseException, options: PipelineOptions) -> str | None:
    """One line saying why the runner could not start the job and what to pass, or None when ``error`` is
    not a runner's failure to start (a download that failed, ``java`` missing)."""
    runner = options.view_as(StandardOptions).runner
    engine = engine_of(runner)
    if engine not in ENGINE_NAMES:
        return None
    text = str(error)
    download = _DOWNLOAD_FAILED.search(text)
    if download:
        what = "Prism" if engine == "prism" else f"its {ENGINE_NAMES[engine]} job server"
        option = "--prism_location PATH" if engine == "prism" else f"--{JAR_OPTIONS[engine]} PATH"
        return (
            f"--runner {runner}: Beam could not download {what} from {download.group(1)} "
            f"({_reason(text, download)}); pass {option}: {_fetch_hint(engine)}"
        )
    if isinstance(error, FileNotFoundError) and engine in JAR_OPTIONS and "java" in text:
        return f"--runner {runner} starts Beam's {ENGINE_NAMES[engine]} job server with java, which is not on PATH: install a Java 17 runtime"
    return None


def _reason(text: str, download: re.Match) -> str:
    """What went wrong with the download, briefly (an HTTP status, a name that does not resolve)."""
    rest = text[download.end() :].split(". ", 1)[0]
    return rest.strip().rstrip(".") or "no answer"
