"""What every polybeam job is made of: its read with dead letters and the input check, its facts and report.

:mod:`~polybeam.pipelines.jobs` (train, evaluate, predict),
:mod:`~polybeam.pipelines.anytime` (sequence, timeliness, anytime predict),
:mod:`~polybeam.pipelines.windowed` and :mod:`~polybeam.pipelines.demo` build
their pipelines from these parts: the input read as the options say, its dead
letters written, the read checked against what the job accepts before any
result is written (:class:`~polybeam.transforms.input_check.CheckInput`), and
the report the job's last step writes (its facts, counts, workers and
provenance).

>>> total_counts({"counts": [ReadCounts(3, 2, 1, 0), ReadCounts(1, 1, 0, 0)]}).to_dict()["examples"]
3
"""

from __future__ import annotations

import functools
import time

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from polybeam.formats.acceptance import InputPolicy
from polybeam.formats.input_settings import InputSettings
from polybeam.formats.records import ReadCounts
from polybeam.learners.config import LearnerConfig
from polybeam.pipelines.errors import OptionError
from polybeam.pipelines.launch import runner_name
from polybeam.pipelines.options import JobSettings, given_options, input_settings
from polybeam.pipelines.preload import preload_kernels
from polybeam.transforms.dead_letters import WriteDeadLetters
from polybeam.transforms.input_check import CheckInput
from polybeam.transforms.provenance import origin, provenance_record
from polybeam.transforms.read import ReadExamples
from polybeam.transforms.workers import NoteWorkers, peak_per_worker


def require(value, flag: str, command: str):
    if not value:
        raise OptionError(f"polybeam {command} needs {flag}")
    return value


def read_examples(
    pipeline,
    job: JobSettings,
    label: str,
    config,
    *,
    labels: str | None = None,
    key: str | None = None,
    settings: InputSettings | None = None,
    reader=None,
):
    """Read ``--input`` with ``reader`` (a format object), else as ``settings`` say (default: as the input options
    say, see ``input_settings``). The job checks its read itself (CheckInput in checked_read), after writing the
    dead letters and with its report."""
    if reader is not None:
        return pipeline | label >> ReadExamples(job.input, format=reader, check_input=False)
    settings = settings or input_settings(job, config, key=key)
    reading = settings.reader_options(labels or config.label_kind)
    # (the job decided how to read before launching: see polybeam.pipelines.input_choices)
    return pipeline | label >> ReadExamples(
        job.input, format=settings.format, check_input=False, infer=False, **reading
    )


def write_dead_letters(read, path: str, label: str = "WriteDeadLetters", extra=None):
    letters = read.dead_letters if extra is None else (read.dead_letters, extra) | f"{label}All" >> beam.Flatten()
    return letters | label >> WriteDeadLetters(path, file_name_suffix="", num_shards=1, shard_name_template="")


def checked_read(
    read,
    job: JobSettings,
    dead_files,
    facts: dict,
    *,
    settings: InputSettings | None = None,
    expected: str | None = None,
):
    """The read's counts, once its dead letters are written and the input check passed (see CheckInput);
    what writes the job's results waits for it, so a refused input writes none of them. ``expected``: what
    the model reads, for the likely cause of a refusal."""
    policy = input_policy(job, facts.get("dead_letter_file"), settings=settings, expected=expected)
    return read | "CheckInput" >> CheckInput(policy, report=facts["report"], facts=facts, after=[dead_files])


def input_policy(
    job: JobSettings,
    dead_letter_file: str | None = None,
    *,
    settings: InputSettings | None = None,
    expected: str | None = None,
) -> InputPolicy:
    """What the job accepts from its read (--allow-empty, --max-dead-letter-fraction); checked at once."""
    return InputPolicy(
        allow_empty=job.allow_empty,
        max_dead_letter_fraction=job.max_dead_letter_fraction,
        format=settings.format if settings else job.format or "libsvm",
        dead_letter_file=dead_letter_file,
        expected=expected,
    )


def preloader(
    job: JobSettings,
    config: LearnerConfig,
    *,
    labels: str | None = None,
    key: str | None = None,
    settings: InputSettings | None = None,
):
    """What loads this job's kernels before local workers are forked (see polybeam.pipelines.preload)."""
    settings = settings or input_settings(job, config, key=key)
    return functools.partial(
        preload_kernels, job.input, settings.format, settings.reader_options(labels or config.label_kind), config
    )


def count(pcollection, label: str):
    """How many elements ``pcollection`` has, as a one-element PCollection."""
    return pcollection | label >> beam.combiners.Count.Globally()


def job_facts(command: str, options: PipelineOptions, job: JobSettings, report: str) -> dict:
    """What every report says about the job itself (the launcher's view, recorded before launch): ``options`` say
    which runner runs it, ``job`` what it was asked."""
    facts = {
        "command": command,
        "runner": runner_name(options) or "FnApiRunner",
        "report": report,
        "launched": time.time(),
    }
    facts["origin"] = origin(
        None,
        [job.input] if job.input else [],
        command=command,
        options=given_options(job),
        runner=facts["runner"],
        started=facts["launched"],
    )
    return facts


def finish_report(report: dict, facts: dict, parts: dict | None = None) -> dict:
    finished = time.time()
    facts = dict(facts)
    known = facts.pop("origin", None)
    report = {**facts, **report, "finished": finished, "job_seconds": finished - facts["launched"]}
    if known is not None:  # versions of the worker writing the report, what was read, options, start, end
        report["provenance"] = provenance_record(known, _read_counts(report, parts), finished)
    if parts and "workers" in parts:
        workers = peak_per_worker(parts["workers"])
        report["workers"] = workers
        report["worker_peak_rss_bytes"] = max((w["peak_rss_bytes"] for w in workers), default=None)
    return report


def _read_counts(report: dict, parts: dict | None) -> ReadCounts | None:
    """What the job read: its parts' counts, else the report's figures when it has them all (as numbers)."""
    if parts and parts.get("counts"):
        return total_counts(parts)
    figures = [report.get(name) for name in ("records", "examples", "dead_letters", "skipped")]
    return ReadCounts(*figures) if all(isinstance(figure, int) for figure in figures) else None


def note_workers(examples, parts: dict, label: str = "NoteWorkers"):
    """``examples`` unchanged; the processes that handle them are noted in the report's ``workers``."""
    noted = examples | label >> NoteWorkers()
    parts["workers"] = noted.workers
    return noted.main


def total_counts(parts: dict, name: str = "counts") -> ReadCounts:
    return sum(parts.get(name, []), ReadCounts())


def model_summary(model) -> dict:
    meta = model.metadata
    holdout = meta.get("holdout")
    summary = {
        "examples_trained": meta.get("examples"),
        "progressive_loss": meta.get("progressive_loss"),
        "passes": meta.get("passes"),
        "nonzero_weights": model.nonzero,
        "model_kind": model.kind,
        "holdout": holdout,
        "apple_guard": meta.get("apple_guard"),
    }
    if model.shared_keys is not None:
        summary["keys"] = len(model.shared_keys.trained)
    if holdout and holdout["passes"]:
        summary["examples_held_out"] = holdout["passes"][-1]["examples"]
    if meta.get("lbfgs"):
        summary["lbfgs"] = meta["lbfgs"]
    return summary
