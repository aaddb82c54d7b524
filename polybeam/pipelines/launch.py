"""Launching a job: wait for it and read the report it wrote, or hand it over and return.

Every polybeam job writes its own JSON report (see
:class:`~polybeam.transforms.report.WriteReport`) next to its output, through
Beam's file systems. The launcher never reads a worker's local files or its
metrics to report on a job:

* waiting (the default), it waits for the job to finish and reads that report;
* with ``--no-wait`` (the default of a flex template's entry point) it
  returns as soon as the runner has the job, with the job's id and where its
  outputs and report will appear. Remote runners (Dataflow, Flink, Spark,
  Beam's portable job service) run the job on their own; the local runner
  runs in the launching process, so there the job is handed to a detached
  copy of the command, whose log sits next to the report.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions, StandardOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.transforms.environments import EmbeddedPythonGrpcEnvironment

from polybeam.formats.acceptance import InputRejected
from polybeam.formats.records import InputFileError
from polybeam.learners.background import wait_idle
from polybeam.learners.container import FormatError
from polybeam.learners.values import NonFiniteModel
from polybeam.pipelines.errors import OptionError
from polybeam.pipelines.forked_workers import forked_runner, wants_forked_workers
from polybeam.pipelines.options import DEFAULT_RUNNER, RunOptions
from polybeam.pipelines.runners import check_runner, runner_failure
from polybeam.pipelines.written_paths import check_outputs
from polybeam.selection.errors import AnytimeModelError
from polybeam.transforms.files import read_json
from polybeam.transforms.sources import CorruptInputError

# Runners that run the job inside the launching process.
LOCAL_RUNNERS = {None, "", DEFAULT_RUNNER, "DirectRunner", "BundleBasedDirectRunner", "SwitchingDirectRunner"}
# Set in the detached copy of a --no-wait command, so that it runs the job instead of detaching again.
DETACHED = "POLYBEAM_DETACHED_JOB"


class JobFailed(RuntimeError):
    """The runner reports that the job did not finish successfully."""


def runner_name(options: PipelineOptions) -> str:
    runner = options.view_as(StandardOptions).runner
    return runner if isinstance(runner, str) or runner is None else type(runner).__name__


def waits(options: PipelineOptions) -> bool:
    """Whether the launcher waits for the job (``--no-wait`` not given, or this is the detached copy)."""
    return not options.view_as(RunOptions).no_wait or os.environ.get(DETACHED) == "1"


def as_flags(options: PipelineOptions, *, drop: tuple[str, ...] = ("no_wait",)) -> list[str]:
    """The options as command-line flags (``--name=value``), without their defaults and ``drop``.

    >>> as_flags(PipelineOptions(["--loss", "logistic", "--no-wait", "--class-names", "a,b"]))
    ['--class_names=a,b', '--loss=logistic']
    """
    values = options.get_all_options(drop_default=True, retain_unknown_options=True)
    flags = []
    for name, value in sorted(values.items()):
        if name in drop or value is None:
            continue
        if isinstance(value, bool):
            if value:
                flags.append(f"--{name}")
        elif isinstance(value, tuple):  # comma-separated options (--class-names a,b)
            flags.append(f"--{name}={','.join(map(str, value))}")
        elif isinstance(value, list):
            flags += [f"--{name}={item}" for item in value]
        else:
            flags.append(f"--{name}={value}")
    return flags


def threaded_runner(options: PipelineOptions) -> FnApiRunner | None:
    """The local runner of a ``--direct_running_mode multi_threading`` run, whose workers send each
    element whole (None for any other run).

    Beam's threaded workers (``EmbeddedPythonGrpcEnvironment.default()``) also flush their output
    streams every second from a timer thread, which takes the bytes written so far even in the
    middle of an element: its window header, before the value's coder (a learner's pickling, Python
    code that gives up the GIL) has written the value. The runner decodes each flushed chunk on its
    own when it makes a side input of it (``commit_side_inputs_to_state``), so the value's bytes were
    read as a new element's header: a pass's learner state, its pickle's frame length read as a count
    of 1.9 billion global windows, made a list of 15 GB in one C call (the job was OOM-killed). With
    no timer (a negative limit, as Beam's own worker pool sets), a worker flushes only between
    elements, by size, and at the end.
    """
    direct = options.view_as(DirectOptions)
    if direct.direct_running_mode != "multi_threading" or runner_name(options) not in (None, "", DEFAULT_RUNNER):
        return None
    direct.direct_running_mode = "in_memory"  # (else the runner puts back Beam's default environment)
    return FnApiRunner(default_environment=EmbeddedPythonGrpcEnvironment(data_buffer_time_limit_ms=-1))


def _log_path(report_path: str) -> str:
    if "://" in report_path:
        return os.path.join(tempfile.gettempdir(), f"polybeam-{os.getpid()}-{int(time.time())}.log")
    return os.path.abspath(report_path) + ".log"


def detach(command: str, options: PipelineOptions, report_path: str) -> dict:
    """Run ``polybeam COMMAND`` with these options in a detached process; where to look for it."""
    log_path = _log_path(report_path)
    os.makedirs(os.path.dirname(log_path), exist_ok=True)  # the job would make its output's folder; it runs later
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "polybeam.pipelines.cli", command, *as_flags(options)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # not stopped by the launcher's terminal or its exit
            env={**os.environ, DETACHED: "1"},
        )
    return {"job_id": f"local-{process.pid}", "state": "RUNNING", "log": log_path}


# Errors a worker raises about the user's files, with messages written for the user (what is wrong with
# which file, and what to do): the command says them in one line, whatever runner relayed them.
USER_ERRORS = (CorruptInputError, InputFileError, FormatError, AnytimeModelError, NonFiniteModel)
USER_ERROR_LINE = re.compile(
    r"^polybeam\.[\w.]+\.(?:" + "|".join(kind.__name__ for kind in USER_ERRORS) + r"): (.+)$", re.MULTILINE
)
_WHILE_RUNNING = re.compile(r" \[while running '[^']*'\]$")


def user_error(error: BaseException) -> str | None:
    """The message of a user-facing worker error behind a failed job (the exception itself on the local
    runner, the worker's traceback text on a portable runner), or None.

    >>> user_error(RuntimeError("Traceback ...\\npolybeam.transforms.sources.CorruptInputError: a.gz: "
    ...                         "corrupt gzip data [while running 'Read/ReadBlocks']\\n"))
    'a.gz: corrupt gzip data'
    >>> user_error(RuntimeError("Traceback ...\\nZeroDivisionError: division by zero")) is None
    True
    """
    if isinstance(error, USER_ERRORS):
        text = str(error)
    else:
        found = USER_ERROR_LINE.findall(str(error))
        if not found:
            return None
        text = found[-1]
    return _WHILE_RUNNING.sub("", text.strip())


def _raise_rejection(facts: dict) -> None:
    """Raise InputRejected when this launch's job wrote that its input was refused (its failure report)."""
    try:
        written = read_json(facts["report"])
    except Exception:  # no report: the job failed before or for another reason
        return
    if written.get("failed") and written.get("launched") == facts["launched"] and written.get("error"):
        raise InputRejected(written["error"]) from None


def remove_sink_temporaries(outputs: dict) -> list[str]:
    """Remove the temporary folders Beam's file sinks leave beside a failed job's local outputs; their paths.

    A file sink writes its shards into ``beam-temp-NAME-UUID/`` beside ``NAME`` and renames them when the job
    finishes (``apache_beam.io.filebasedsink``); a job that fails leaves that folder behind, half written.
    ``outputs``: name -> path (or a prefix ending in ``*``), as :func:`launch` takes them.
    """
    removed = []
    for path in outputs.values():
        if not isinstance(path, str) or not path or "://" in path:
            continue
        folder, name = os.path.split(os.path.abspath(path.removesuffix("*")))
        for temporary in glob.glob(os.path.join(glob.escape(folder), f"beam-temp-{glob.escape(name)}-*")):
            if os.path.isdir(temporary):
                shutil.rmtree(temporary, ignore_errors=True)
                removed.append(temporary)
    return removed


def _raise_runner_failure(error: BaseException, options: PipelineOptions) -> None:
    """Raise OptionError when the runner could not start the job for want of an option (see runners)."""
    message = runner_failure(error, options)
    if message is not None:
        raise OptionError(message) from None


def _job_id(result) -> str | None:
    job_id = getattr(result, "job_id", None)
    if callable(job_id):
        return job_id()
    return job_id or getattr(result, "_job_id", None)


def launch(
    pipeline,
    options: PipelineOptions,
    facts: dict,
    *,
    outputs: dict,
    started: float,
    preload: Callable[[], None] | None = None,
) -> dict:
    """Run ``pipeline``; the job's report when waiting, else where the job's results will appear.

    ``facts`` are what the job's report says of it (:func:`~polybeam.pipelines.job_parts.job_facts`: its
    ``command``, its ``report`` path and the time it was ``launched``). ``outputs`` names the job's
    outputs (model, prediction prefix, ...) for the no-wait answer; ``started`` is the
    ``time.perf_counter()`` when the command began, for the reported wall time. A local
    multi-process run forks its workers from this process (see
    :mod:`polybeam.pipelines.forked_workers`), after ``preload()`` has loaded the kernels they
    will call.

    A job its input check refused (:class:`~polybeam.transforms.input_check.CheckInput`) raises
    :class:`InputRejected` with the check's message, whatever the runner made of the failure.
    """
    command, report = facts["command"], facts["report"]
    local = runner_name(options) in LOCAL_RUNNERS
    check_runner(options)
    check_outputs({**outputs, "report": report})
    if not waits(options):
        launched = {"command": command, "report": report, "outputs": outputs, "runner": runner_name(options)}
        if local:
            return {**launched, **detach(command, options, report)}
        try:
            result = pipeline.run()
        except Exception as error:
            _raise_runner_failure(error, options)
            raise
        return {**launched, "job_id": _job_id(result), "state": str(result.state)}
    workers = wants_forked_workers(options) if local else 0
    pool = None
    try:
        if workers:
            if preload is not None:
                preload()
            # The pipeline keeps its own copy of the options, which the runner reads.
            pipeline.runner, pool = forked_runner(pipeline.options, workers)
        elif local:
            pipeline.runner = threaded_runner(pipeline.options) or pipeline.runner
        try:
            state = pipeline.run().wait_until_finish()
        except Exception as error:
            wait_idle()  # (the learners' last progress lines before the failure's message)
            remove_sink_temporaries({**outputs, "report": report})
            _raise_rejection(facts)
            message = user_error(error)
            if message is not None:
                raise JobFailed(message) from None
            _raise_runner_failure(error, options)
            raise
    finally:
        if pool is not None:
            pool.close()
    if state is not None and str(state) not in ("DONE", "PipelineState.DONE"):
        _raise_rejection(facts)
        raise JobFailed(f"polybeam {command}: the job ended in state {state}")
    return {**read_json(report), "wall_seconds": time.perf_counter() - started}
