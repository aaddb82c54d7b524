"""``--input -`` and ``--output -``: a job's examples from standard input, its predictions to standard output.

A Beam job reads and writes files, on workers that may run anywhere. So the
launcher copies its standard input into a temporary file first (local runner:
its workers share the launcher's disk) and the job reads that; predictions go
to a temporary file, copied to standard output once the job has finished and
its input check passed. A runner elsewhere can read neither the launcher's
standard input nor its temporary files, and a detached job (``--no-wait``)
outlives the streams: both are refused in one line.

With ``--output -`` the report and the dead letters go to the temporary
folder unless ``--report``/``--dead-letters`` say where; the folder is removed
afterwards, but for dead letters, which are kept there (the command's
summary names the file).

>>> is_stream("-"), is_stream("data.csv")
(True, False)
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator

from apache_beam.options.pipeline_options import PipelineOptions

from polybeam.pipelines.errors import OptionError
from polybeam.pipelines.launch import LOCAL_RUNNERS, runner_name, waits
from polybeam.pipelines.options import InputOptions, OutputOptions, RunOptions, job_settings

STREAM = "-"
# How the source of examples read from standard input is named in predictions and dead letters.
STDIN_NAME = "<stdin>"
_CHUNK = 1 << 20


def is_stream(path: str | None) -> bool:
    """Whether an ``--input``/``--output`` path means standard input or output."""
    return path == STREAM


@contextlib.contextmanager
def standard_streams(options: PipelineOptions, command: str) -> Iterator[dict]:
    """Within: ``options`` read from a temporary copy of standard input (``--input -``) and writing predictions
    to a temporary file (``--output -``); yields what was replaced (``input``, ``output``: the temporary paths,
    ``folder``). On leaving without an error, the predictions are copied to standard output."""
    job = job_settings(options)
    streams = [flag for flag, value in (("--input", job.input), ("--output", job.output)) if is_stream(value)]
    if not streams:
        yield {}
        return
    where = " and ".join(f"{flag} -" for flag in streams)
    if runner_name(options) not in LOCAL_RUNNERS:
        raise OptionError(
            f"{where} needs the local runner: {runner_name(options)}'s workers cannot read this command's standard "
            "streams; give files they can reach (gs://..., a shared folder)"
        )
    if not waits(options):
        raise OptionError(f"{where} cannot be used with --no-wait: the detached job would outlive the streams")
    folder = tempfile.mkdtemp(prefix=f"polybeam-{command}-")
    replaced = {"folder": folder}
    kept = False
    try:
        if is_stream(job.input):
            replaced["input"] = os.path.join(folder, "stdin")
            with open(replaced["input"], "wb") as copy:
                shutil.copyfileobj(sys.stdin.buffer, copy, _CHUNK)
            options.view_as(InputOptions).input = replaced["input"]
        if is_stream(job.output):
            replaced["output"] = os.path.join(folder, "predictions.tsv")
            options.view_as(OutputOptions).output = replaced["output"]
            run = options.view_as(RunOptions)
            run.report = run.report or os.path.join(folder, "report.json")
            reading = options.view_as(InputOptions)
            reading.dead_letters = reading.dead_letters or os.path.join(folder, "dead_letters.jsonl")
        yield replaced
        if "output" in replaced:
            sys.stdout.flush()
            with open(replaced["output"], "rb") as predictions:
                shutil.copyfileobj(predictions, sys.stdout.buffer, _CHUNK)
            sys.stdout.flush()
        dead = os.path.join(folder, "dead_letters.jsonl")
        kept = os.path.exists(dead) and os.path.getsize(dead) > 0
    finally:
        _clean(folder, keep_dead_letters=kept)


def streamed(report: dict, streams: dict) -> dict:
    """A job's report as the command tells it after :func:`standard_streams`: ``-`` where it read standard
    input or wrote standard output, and no dead-letter file where none was kept."""
    if not streams:
        return report
    report = dict(report)
    if "output" in streams:
        report.update(output=STREAM, prediction_files=[STREAM])
        if report.get("report", "").startswith(streams["folder"]):
            report["report"] = None  # (removed with the folder)
    dead = report.get("dead_letter_file")
    if dead and dead.startswith(streams["folder"]) and not os.path.exists(dead):
        report["dead_letter_file"] = None
    if "input" in streams:
        report["input_file"] = STREAM
    return report


def _clean(folder: str, *, keep_dead_letters: bool) -> None:
    """Remove the temporary folder, or all of it but the dead letters."""
    if not keep_dead_letters:
        shutil.rmtree(folder, ignore_errors=True)
        return
    for name in os.listdir(folder):
        if name != "dead_letters.jsonl":
            path = os.path.join(folder, name)
            shutil.rmtree(path, ignore_errors=True) if os.path.isdir(path) else os.remove(path)


__all__ = ["STDIN_NAME", "STREAM", "is_stream", "standard_streams", "streamed"]
