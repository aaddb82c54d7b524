"""``polybeam train --window`` and ``polybeam evaluate`` of its folder: models per event-time window.

Train puts the examples into windows by their ``--timestamp`` column
(:class:`~polybeam.transforms.windows.WindowExamples`) and trains every window
(per key with ``--key``) on its own; the models go into a folder with an index
(:mod:`polybeam.transforms.windowed_files`). Evaluate reads its input as the
models' was read (with the timestamp column), windows it the same way and
scores each window's examples with that window's model: metrics per window
(per key and window with a key) and over every window's scores together.
"""

from __future__ import annotations

import functools
import time

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.transforms import window as beam_window

from polybeam.formats.formats import COLUMN_FORMATS_FLAG, COLUMN_FORMATS_TEXT, format_spec
from polybeam.learners.config import LearnerConfig
from polybeam.learners.windows import WindowSpec, parse_window
from polybeam.pipelines import job_parts
from polybeam.pipelines.errors import OptionError
from polybeam.pipelines.launch import launch
from polybeam.pipelines.model_input import first_file, parse_sample, recorded_input, scoring_input
from polybeam.pipelines.options import JobSettings, job_settings, with_default_runner
from polybeam.transforms.evaluate import OVERALL, Evaluate
from polybeam.transforms.keyed_files import join, read_index
from polybeam.transforms.keys import ParsedKeys, split_by_key
from polybeam.transforms.report import WriteReport
from polybeam.transforms.routing import WriteKeyedModels
from polybeam.transforms.windowed_files import WINDOWED_MODELS, WindowedFolder, WriteWindowedModels
from polybeam.transforms.windows import KeyByWindow, WindowExamples


def window_of(job: JobSettings, key: str | None) -> WindowSpec | None:
    """The windows of ``--window`` (None without it), failing fast on options that do not go with them."""
    if job.window is None:
        if job.timestamp is not None:
            raise OptionError(
                f"--timestamp {job.timestamp} is for models per window: add --window "
                "fixed:SIZE or sliding:SIZE,PERIOD (e.g. --window fixed:1d), or leave --timestamp out"
            )
        return None
    if job.timestamp is None:
        raise OptionError(
            f"--window {job.window} needs --timestamp column:NAME, the {COLUMN_FORMATS_TEXT} column of each example's "
            "event time"
        )
    fmt = job.format or "libsvm"
    if not format_spec(fmt).columns:  # (what a windowed job needs of its input: a column of event times)
        raise OptionError(
            f"--window needs {COLUMN_FORMATS_TEXT} input with a timestamp column ({COLUMN_FORMATS_FLAG}), not {fmt}"
        )
    if key is not None and job.key_model == "shared":
        raise OptionError("--window trains separate models per key and window; leave out --key-model shared")
    if job.resume or job.initial_model:
        raise OptionError(
            f"--window does not yet start from {'--resume' if job.resume else '--initial-model'}: "
            "each window trains afresh; leave it out"
        )
    try:
        return parse_window(job.window)
    except ValueError as error:
        raise OptionError(str(error)) from None


def check_sample_times(pattern: str, settings, labels: str, timestamp: str) -> None:
    """Refuse, before launching, a timestamp column whose numbers are in another unit than the one it is read in
    (epoch milliseconds read as seconds): when most of the first file's first records have a time outside the
    years 1 to 9999 that another unit would put in a plausible year, the first one's reason says which unit
    to pass. Times that are only sometimes wrong are left to the job: they are dead letters."""
    path = first_file(pattern)
    if path is None:
        return
    try:
        parsed = parse_sample(path, settings, labels)
    except Exception:  # the job's read says what is wrong with the file
        return
    records = len(parsed.batch) + len(parsed.dead_letters)
    wrong_unit = [letter.reason for letter in parsed.dead_letters if "pass --timestamp-unit" in letter.reason]
    if records and 2 * len(wrong_unit) > records:
        raise OptionError(
            f"--timestamp {timestamp}: {wrong_unit[0]} ({len(wrong_unit)} of the first {records} records)"
        )


def windowed_models(
    job: JobSettings,
    spec: WindowSpec,
    models,
    *,
    model_path: str,
    keyed: bool,
    key: str | None,
    config: LearnerConfig,
    settings,
) -> dict:
    """Writes the models of every window (and the folder's index); the report's parts."""
    facts = {
        "window_spec": spec.text(),
        "timestamp": job.timestamp,
        "key": key,
        "config": config.to_dict(),
        "input": settings.to_dict(),
    }
    if keyed:
        written = models | "WriteModels" >> WriteKeyedModels(
            model_path, key=key, config=config.to_dict(), input=settings.to_dict()
        )
        return {"index": written | "WriteWindows" >> WriteWindowedModels(model_path, keyed=True, **facts)}
    return {"index": models | "WriteWindows" >> WriteWindowedModels(model_path, **facts)}


def windowed_train_report(parts: dict, *, facts: dict) -> dict:
    """The report of a windowed train job: the read's counts, and per window what its model(s) learned."""
    report = job_parts.total_counts(parts).to_dict()
    windows = read_index(facts["model"])["entries"] if parts["index"] else {}
    report.update(
        windows=windows,
        index=parts["index"][0] if parts["index"] else None,
        examples_trained=sum(entry.get("examples") or 0 for entry in windows.values()),
    )
    return job_parts.finish_report(report, facts, parts)


# -- evaluate -----------------------------------------------------------------------------------------------


def is_windowed_folder(path: str) -> bool:
    try:
        return read_index(path).get("kind") == WINDOWED_MODELS
    except FileNotFoundError:
        return False


def _keyed_by_window(batches, key: str | None):
    """``((window, key) or window, batch)`` of every windowed batch, then in the global window (keys carry
    the windows)."""
    if key is not None:
        keyed = split_by_key(batches, ParsedKeys(key)) | "KeyByWindow" >> beam.ParDo(KeyByWindow())
        keyed = keyed | "WindowAndKey" >> beam.MapTuple(lambda name, pair: ((name, pair[0]), pair[1]))
    else:
        keyed = batches | "KeyByWindow" >> beam.ParDo(KeyByWindow())
    return keyed | "Everywhere" >> beam.WindowInto(beam_window.GlobalWindows())


def _windowed_evaluate_report(parts: dict, *, facts: dict) -> dict:
    counts = job_parts.total_counts(parts).to_dict()
    overall = next((metrics for key, metrics in parts["metrics"] if key is OVERALL), None)
    windows: dict = {}
    for key, metrics in sorted((pair for pair in parts["metrics"] if pair[0] is not OVERALL), key=lambda p: str(p[0])):
        if isinstance(key, tuple):
            windows.setdefault(key[0], {})[key[1]] = metrics
        else:
            windows[key] = metrics
    unscored: dict = {}
    for name, examples in parts["unscored"]:
        unscored[name] = unscored.get(name, 0) + examples
    report = {
        **(overall or {"examples": 0, "loss": None, "error": None, "auc": None, "mse": None}),
        "windows": windows,
        "examples_without_model": unscored,
    }
    report.update({name: counts[name] for name in counts if name != "examples"})
    report["examples_read"] = counts["examples"]
    return job_parts.finish_report(report, facts, parts)


def _has_model(element, folder: WindowedFolder) -> bool:
    return folder.has(element[0])


def run_windowed_evaluate(options: PipelineOptions, job: JobSettings | None = None) -> dict:
    """Each window's model scored on the input's examples of the same window (see the module docstring); ``job``:
    the options already read (see :func:`~polybeam.pipelines.options.job_settings`)."""
    started = time.perf_counter()
    job = job or job_settings(options, "evaluate")
    model_path = job.model
    folder = WindowedFolder(model_path)
    index = folder.index
    config = LearnerConfig.from_dict(index["config"])
    key = index.get("key")
    given = job.key
    if given is not None and given != key:
        raise OptionError(f"--key {given} differs from the key the models were trained with ({key})")
    recorded = recorded_input(index.get("input"), model_path)
    settings, _, reader = scoring_input(job, config, key, recorded, labels=config.label_kind, command="evaluate")
    dead_path = job.dead_letters or join(model_path, "evaluate.dead_letters.jsonl")
    report_path = job.report or join(model_path, "evaluation.json")
    job_parts.input_policy(job, settings=settings)
    with_default_runner(options)

    facts = {
        **job_parts.job_facts("evaluate", options, job, report_path),
        "model": model_path,
        "key": key,
        "window_spec": index["window_spec"],
        "dead_letter_file": dead_path,
        "input": settings.to_dict(),
    }
    pipeline = beam.Pipeline(options=options)
    read = job_parts.read_examples(pipeline, job, "Read", config, key=key, settings=settings, reader=reader)
    dead_files = job_parts.write_dead_letters(read, dead_path)
    parts = {"counts": job_parts.checked_read(read, job, dead_files, facts, settings=settings)}
    windowed = job_parts.note_workers(read.examples, parts) | "Windows" >> WindowExamples(
        parse_window(index["window_spec"])
    )
    keyed = _keyed_by_window(windowed, key)
    scored = keyed | "HasModel" >> beam.Partition(lambda element, _, f: int(_has_model(element, f)), 2, folder)
    parts["metrics"] = scored[1] | "Evaluate" >> Evaluate(folder, routed=True, overall=True)
    parts["unscored"] = scored[0] | "Unscored" >> beam.MapTuple(
        lambda window_key, batch: (window_key[0] if isinstance(window_key, tuple) else window_key, len(batch))
    )
    pipeline | "Report" >> WriteReport(report_path, functools.partial(_windowed_evaluate_report, facts=facts), **parts)
    return launch(
        pipeline,
        options,
        facts,
        started=started,
        outputs={"dead_letters": dead_path},
        preload=job_parts.preloader(job, config, key=key, settings=settings),
    )
