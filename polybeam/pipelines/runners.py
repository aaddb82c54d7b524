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

from polybeam.engines.specs import ENGINE_SPECS
from polybeam.pipelines.errors import OptionError

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
    spec = ENGINE_SPECS[engine]
    try:
        fetched = spec.load().fetched()
    except Exception:  # a cache that cannot be looked at: say how to build it
        fetched = False
    if fetched:
        return f"polybeam engines fetch {engine} built one: add $(polybeam engines options {engine})"
    return (
        f"polybeam engines fetch {engine} builds one from package registries (needs {spec.needs_text}), "
        f"then $(polybeam engines options {engine}) passes it"
    )


def _artifact(engine: str, *, downloaded: bool = False) -> str:
    """What Beam runs ``engine`` with, for messages: its job server, or its binary."""
    spec = ENGINE_SPECS[engine]
    if spec.artifact == "job server":
        owner = "its" if downloaded else "Beam's"
        return f"{owner} {spec.title} job server"
    return spec.title if downloaded else f"{spec.title}'s binary"


def check_runner(options: PipelineOptions) -> None:
    """Raise :class:`~polybeam.pipelines.errors.OptionError` when the runner cannot start as asked: a job
    server jar or Prism binary that is not there, or the portable runner without a job service."""
    engine = engine_of(options.view_as(StandardOptions).runner)
    given = options.get_all_options(retain_unknown_options=True)
    if engine in ENGINE_SPECS:
        option = ENGINE_SPECS[engine].artifact_option
        path = given.get(option)
        if path and _is_missing_file(path):
            raise OptionError(f"--{option} {path}: no such file ({_artifact(engine)}); {_fetch_hint(engine)}")
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
    if engine not in ENGINE_SPECS:
        return None
    spec = ENGINE_SPECS[engine]
    text = str(error)
    download = _DOWNLOAD_FAILED.search(text)
    if download:
        return (
            f"--runner {runner}: Beam could not download {_artifact(engine, downloaded=True)} from "
            f"{download.group(1)} ({_reason(text, download)}); pass --{spec.artifact_option} PATH: "
            f"{_fetch_hint(engine)}"
        )
    if isinstance(error, FileNotFoundError) and spec.artifact == "job server" and "java" in text:
        return (
            f"--runner {runner} starts {_artifact(engine)} with java, which is not on PATH: install a Java 17 runtime"
        )
    return None


def _reason(text: str, download: re.Match) -> str:
    """What went wrong with the download, briefly (an HTTP status, a name that does not resolve)."""
    rest = text[download.end() :].split(". ", 1)[0]
    return rest.strip().rstrip(".") or "no answer"
