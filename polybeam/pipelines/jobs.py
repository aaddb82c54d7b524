"""The runnable pipelines behind ``polybeam train``, ``evaluate`` and ``predict``.

Each function takes PipelineOptions (so the same job runs from the command line,
from Python and from a template), reads polybeam's options once into frozen
:class:`~polybeam.pipelines.options.JobSettings`, checks them (failing fast with
what to fix), builds the pipeline from the parts every job shares
(:mod:`polybeam.pipelines.job_parts`) and launches it (see :mod:`polybeam.pipelines.launch`).
The pipeline's last step, run by a worker, writes the job's JSON report next
to its output; the function returns that report when it waits for the job,
or where the job's results will appear when it does not.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time

import apache_beam as beam
from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions
from apache_beam.transforms import window as beam_window
from apache_beam.transforms.util import WaitOn

from polybeam.formats.formats import COLUMN_FORMATS_FLAG, COLUMN_FORMATS_TEXT, format_spec
from polybeam.formats.input_settings import InputSettings
from polybeam.formats.records import ReadCounts
from polybeam.learners.config import LearnerConfig
from polybeam.learners.key_spec import KeySpec
from polybeam.learners.label_order import LabelOrder
from polybeam.learners.model import Model, ModelFileError
from polybeam.learners.multitask import SharedKeys, shared_config
from polybeam.learners.predictions import check_kind, prediction_columns
from polybeam.learners.state_file import is_learner_state
from polybeam.learners.warm_start import APPLE_SETTINGS, FIXED_SETTINGS, check_compatible, source_config
from polybeam.pipelines import memory_choice, windowed
from polybeam.pipelines.errors import OptionError
from polybeam.pipelines.input_choices import InputChoices, settle_input
from polybeam.pipelines.job_parts import (
    checked_read,
    count,
    finish_report,
    input_policy,
    job_facts,
    model_summary,
    note_workers,
    preloader,
    read_examples,
    require,
    total_counts,
    write_dead_letters,
)
from polybeam.pipelines.launch import LOCAL_RUNNERS, launch, runner_name
from polybeam.pipelines.model_input import check_sample, recorded_input, scoring_input, with_columns
from polybeam.pipelines.options import (
    JobSettings,
    given_config_fields,
    input_settings,
    job_settings,
    learner_config,
    spelled_options,
    with_default_runner,
)
from polybeam.pipelines.streams import STDIN_NAME, standard_streams, streamed
from polybeam.transforms.checkpoints import ReadLearners, last_complete_pass
from polybeam.transforms.dead_letters import FillLineNumbers
from polybeam.transforms.evaluate import OVERALL, Evaluate
from polybeam.transforms.files import exists, read_bytes
from polybeam.transforms.key_scoring import EvaluateKeys, PredictKeys
from polybeam.transforms.keyed_files import KeyedFolder, join, read_index
from polybeam.transforms.keys import ParsedKeys, split_by_key
from polybeam.transforms.model_io import ReadModel, WriteModel, read_model
from polybeam.transforms.predict import Predict, WritePredictions, id_column_name, renamed_source
from polybeam.transforms.provenance import RecordOrigin
from polybeam.transforms.report import WriteReport
from polybeam.transforms.routing import KEYED_MODELS, ModelLibrary, RouteByKey, WriteKeyedModels
from polybeam.transforms.shared_keys import SharedModel
from polybeam.transforms.train import Train
from polybeam.transforms.windows import WindowExamples

# (OptionError is raised here and was importable from here before it had its own module.)
__all__ = ["OptionError", "run_train", "run_evaluate", "run_predict", "first_pass_learners"]


def _key_spec_for(job: JobSettings, command: str) -> str | None:
    key = job.key
    fmt = job.format or "libsvm"
    if key is None:
        return None
    kind = KeySpec.parse(key).kind
    if kind in ("tag", "namespace") and fmt != "vw":
        raise OptionError(f"--key {key} needs VW text input (--format vw), not {fmt}")
    if kind == "column" and not format_spec(fmt).columns:
        raise OptionError(f"--key {key} needs {COLUMN_FORMATS_TEXT} input ({COLUMN_FORMATS_FLAG}), not {fmt}")
    return key


# -- train -------------------------------------------------------------------------------------------------


def _train_report(parts: dict, *, facts: dict) -> dict:
    counts = total_counts(parts)
    report = counts.to_dict()
    if facts.get("key") and facts.get("key_model") != "shared":
        index = parts["index"][0] if parts["index"] else None
        # The index sums up every key (see polybeam.transforms.routing.WriteKeyedModels).
        written = read_index(facts["model"]) if index else {}
        if written.get("holdout"):
            report["holdout"] = written["holdout"]
        report.update(
            keys=written.get("keys", 0),
            progressive_loss=written.get("progressive_loss"),
            nonzero_weights=written.get("nonzero_weights", 0),
            examples_trained=written.get("examples", 0),
            index=index,
        )
    else:
        summary = dict(parts["summary"][0])
        history = summary.get("passes") or []
        if facts.get("initial_model") and not facts.get("resumed_from_pass") and history:
            # A warm start's own first pass (the history before it came with the initial state).
            own = history[max(0, len(history) - facts["passes_run"])]
            summary["progressive_loss"] = own.get("loss")
        report.update(summary)
    return finish_report(report, facts, parts)


def _with_label_order(parts: dict, *, build, facts: dict) -> dict:
    """``build``'s report of a train job, with what the order of the first pass's labels looks like
    (``label_order``) and, when they come sorted, a warning naming the remedy (``warnings``)."""
    report = build(parts, facts=facts)
    warnings = report.setdefault("warnings", [])
    if not parts.get("label_order"):
        return report
    order = LabelOrder().merge(parts["label_order"])
    report["label_order"] = order.to_dict()
    buffer = facts.get("shuffle_buffer") or 0
    whole = f"--shuffle-buffer {order.examples} holds the whole input"
    if buffer:
        remedy = (
            f"--shuffle-buffer {buffer} is too small to mix them; shuffle the input, or give a larger buffer ({whole})"
        )
    else:
        remedy = f"shuffle the input, or train with --shuffle-buffer N ({whole})"
    warning = order.warning(remedy)
    if warning:
        warnings.append(warning)
    return report


def first_pass_learners(options: PipelineOptions) -> int | None:
    """How many learners the first pass will have (see ``Train``'s ``learners``): the local runner's
    workers, or ``--direct_num_workers`` when given as a hint to another runner; else None, since a
    remote runner splits the input as it likes."""
    direct = options.view_as(DirectOptions)
    workers = direct.direct_num_workers if direct.direct_num_workers != 0 else (os.cpu_count() or 1)
    if workers and workers > 1:
        return workers
    return 1 if runner_name(options) in LOCAL_RUNNERS else None


def _in_memory(job: JobSettings, config: LearnerConfig, *, key, window, runner) -> tuple[bool, str]:
    """Whether the job's passes run in one worker's memory, and why (see polybeam.pipelines.memory_choice)."""
    given = {
        "--key": key is not None,
        "--window": window is not None,
        "--checkpoint-dir": job.checkpoint_dir is not None,
        "--resume": job.resume,
        "--merge-fanout": job.merge_fanout is not None,
    }
    needs = [name for name, present in given.items() if present]
    if job.learners < 1:
        raise OptionError(f"--learners must be at least 1, got {job.learners}")
    if job.learners > 1:
        learners = f"--learners {job.learners} learns every pass in one worker's memory as {job.learners} workers would"
        if job.in_memory == "off":
            raise OptionError(f"{learners}; leave out --in-memory off (or --learners)")
        if needs:
            raise OptionError(f"{learners}; leave out {', '.join(needs)} (or --learners)")
        return True, f"--learners {job.learners}: every pass learned as {job.learners} workers would"
    size = None if job.in_memory != "auto" or job.input == STDIN_NAME else memory_choice.input_bytes(job.input)
    return memory_choice.in_memory_reason(
        job.in_memory, config, input_bytes=size, streaming_needs=needs, local=runner in LOCAL_RUNNERS
    )


def _initial_source(job: JobSettings, config: LearnerConfig, model_path: str, keyed: bool):
    """``(path, first_pass, checkpoint_dir, resumed_from)``: where training starts and where it saves."""
    checkpoint_dir = job.checkpoint_dir
    if checkpoint_dir is None and (config.passes > 1 or job.resume):
        checkpoint_dir = f"{model_path}.checkpoints"
    if job.resume:
        done, path = last_complete_pass(checkpoint_dir, keyed)
        if done:
            _check_source(path, config, keyed, f"checkpoint {path}", exact=True)
            if done > config.passes:
                raise OptionError(f"--resume: {checkpoint_dir} holds pass {done}, more than --passes {config.passes}")
            return path, done + 1, checkpoint_dir, done
    if job.initial_model:
        _check_source(job.initial_model, config, keyed, f"--initial-model {job.initial_model}")
        return job.initial_model, 1, checkpoint_dir, None
    return None, 1, checkpoint_dir, None


@dataclasses.dataclass(frozen=True)
class WarmSource:
    """What an ``--initial-model`` says of itself: its learner settings and how its input was read (None:
    it does not say: a learner-state file, or a model from before polybeam recorded it)."""

    config: LearnerConfig
    input: InputSettings | None


def _warm_source(path: str) -> WarmSource:
    """The settings of an ``--initial-model`` (a model or learner-state file, or a folder of per-key
    models), read before launching; one line on what is wrong when they cannot be read."""
    what = f"--initial-model {path}"
    if exists(join(path, "index.json")):
        index = read_index(path)
        if "config" not in index:
            raise OptionError(
                f"{what}: its index.json holds no learner settings; start from a polybeam folder of models"
            )
        return WarmSource(LearnerConfig.from_dict(index["config"]), recorded_input(index.get("input"), path))
    data = _source_bytes(path, what)
    config = _source_config(data, what)
    try:
        record = None if is_learner_state(data) else Model.from_bytes(data).input
    except (ValueError, ModelFileError) as error:
        raise OptionError(f"{what}: {error}") from None
    return WarmSource(config, recorded_input(record, path))


def _source_bytes(path: str, what: str) -> bytes:
    """A warm start's file, or one line saying why it cannot be read."""
    try:
        return read_bytes(path)
    except Exception as error:  # Beam wraps file-system errors in its own types
        raise OptionError(f"{what}: cannot read it ({error})") from None


def _source_config(data: bytes, what: str) -> LearnerConfig:
    """The learner settings a model or learner-state file records, or one line saying why there are none."""
    try:
        return source_config(data)
    except ValueError as error:  # not a model file (ModelFileError), or one this version cannot read
        raise OptionError(f"{what}: {error}") from None


def _with_source_settings(job: JobSettings, source: LearnerConfig, spelled: frozenset[str]) -> LearnerConfig:
    """The options' learner settings, with the settings that fix what a warm start's weights mean (its loss,
    hashing, classes, expansion, ...) taken from ``source`` where the options leave them out (``spelled``: the
    options spelled out, even at their defaults), as evaluate and predict take them from the model; a
    setting given that contradicts the source is refused by the compatibility check."""
    given = given_config_fields(job, spelled)
    taken = {name: getattr(source, name) for name in FIXED_SETTINGS + APPLE_SETTINGS if name not in given}
    try:
        return learner_config(job, defaults=taken, given=given)
    except ValueError as error:
        raise OptionError(f"--initial-model {job.initial_model}: {error}") from None


def _check_source(path: str, config: LearnerConfig, keyed: bool, what: str, exact: bool = False) -> None:
    """Fail fast, before launching, on a warm-start source that cannot be read or does not fit."""
    if keyed:
        try:
            folder = KeyedFolder(path)
        except FileNotFoundError as error:
            raise OptionError(f"{what}: per-key training starts from a folder with an index.json ({error})") from None
        if folder.sharded:  # shards of models: the folder's config
            source = LearnerConfig.from_dict(folder.index["config"])
        elif not folder.keys:
            return
        else:
            path = join(path, next(iter(folder.index["entries"].values()))["file"])
    if not (keyed and folder.sharded):
        source = _source_config(_source_bytes(path, what), what)
    check_compatible(source, config, what)
    if exact and source.replace(passes=config.passes) != config:
        different = sorted(k for k, v in config.to_dict().items() if source.to_dict().get(k) != v and k != "passes")
        raise OptionError(
            f"--resume: {what} was written with other settings ({', '.join(different)}); "
            "resume with the same settings, or start afresh without --resume"
        )


def _shared_keys(job: JobSettings, key: str | None, config: LearnerConfig) -> SharedKeys | None:
    """The crossing of ``--key-model shared`` (None for separate per-key models or no key)."""
    if job.key_model != "shared":
        return None
    if key is None:
        raise OptionError("--key-model shared needs --key (the key whose offsets the shared model learns)")
    if config.expand != "none":
        raise OptionError(f"--key-model shared learns a linear model; it takes no --expand {config.expand}")
    return SharedKeys(key, seed=config.seed)


def _shared_config(job: JobSettings, config: LearnerConfig) -> LearnerConfig:
    """The learner settings of the run: a shared per-key model's with its offset prior."""
    try:
        return shared_config(config, job.key_model == "shared")
    except ValueError as error:
        raise OptionError(str(error).replace("offset_prior", "--offset-prior")) from None


def run_train(options: PipelineOptions) -> dict:
    """Read examples, train (one model, or one per --key), write the model(s), checkpoints and report
    (``--input -``: read from standard input, see :mod:`polybeam.pipelines.streams`)."""
    started = time.perf_counter()
    job_settings(options, "train")  # (paths made absolute, required options there)
    with standard_streams(options, "train") as streams:
        return streamed(_run_train(options, started), streams)


def _run_train(options: PipelineOptions, started: float) -> dict:
    job = job_settings(options, "train")
    model_path = job.model
    config = learner_config(job)
    # A warm start reads its input as its model did, with its model's settings unless the options say otherwise.
    warm = _warm_source(job.initial_model) if job.initial_model and not job.resume else None
    if warm is not None:
        config = _with_source_settings(job, warm.config, spelled_options(options))
    fanout = job.merge_fanout
    if fanout is not None and fanout < 2:
        raise OptionError(f"--merge-fanout must be at least 2, got {fanout}")
    key = _key_spec_for(job, "train")
    window = windowed.window_of(job, key)
    shared = _shared_keys(job, key, config)
    config = _shared_config(job, config)
    keyed = key is not None and shared is None
    if keyed and config.lbfgs_passes:
        raise OptionError("--lbfgs-passes trains one model; with --key and separate models per key, leave it out")
    if job.lbfgs_after_averaging < 0:
        raise OptionError(
            f"--lbfgs-after-averaging must be 0 (never) or a number of passes, got {job.lbfgs_after_averaging}"
        )
    if job.shuffle_buffer < 0:
        raise OptionError(
            f"--shuffle-buffer must be 0 (no shuffling) or a number of examples, got {job.shuffle_buffer}"
        )
    if keyed and job.shuffle_buffer:
        raise OptionError(
            "--shuffle-buffer mixes the examples of one model; with --key and separate models per key, leave it "
            "out (or train one shared model: --key-model shared)"
        )
    shuffle_seed = config.seed if job.shuffle_seed is None else job.shuffle_seed
    recorded = warm.input if warm is not None else None
    try:
        settings = input_settings(job, config, key=key, model=recorded, model_path=job.initial_model)
    except ValueError as error:
        raise OptionError(f"--initial-model: {error}") from None
    if job.watch is not None:
        return _run_watch(options, job, config, settings, started, key=key, window=window)
    if warm is None:
        # How the labels are read (1/2, yes/no, classes from 0) and whether LIBSVM counts from 0, from a sample.
        choices = settle_input(job.input, config, settings, zero_based_given=job.zero_based)
    else:  # a warm start reads as its model did: nothing is left to decide
        choices = InputChoices(config, settings)
    config, settings = choices.config, choices.settings
    # A header or schema without the columns the options name fails now, not on a worker; the header's
    # names go into the model, so that readers of single CSV lines (RunInference) know the columns.
    check_sample(job.input, settings, labels=config.label_kind, model=recorded, model_path=job.initial_model)
    if window is not None:
        windowed.check_sample_times(job.input, settings, config.label_kind, job.timestamp)
    settings = with_columns(job.input, settings)
    in_memory, in_memory_why = _in_memory(job, config, key=key, window=window, runner=runner_name(options))
    initial_path, first_pass, checkpoint_dir, resumed_from = _initial_source(job, config, model_path, keyed)
    if in_memory:  # (every pass in one worker: no checkpoint between passes)
        checkpoint_dir = None
    folder = keyed or window is not None  # a folder of models (per key, per window)
    inside = (lambda name: join(model_path, name)) if folder else (lambda name: f"{model_path}.{name}")
    dead_path = job.dead_letters or inside("dead_letters.jsonl")
    report_path = job.report or (join(model_path, "report.json") if folder else f"{model_path}.report.json")
    input_policy(job, settings=settings)
    with_default_runner(options)

    report_facts = {
        **job_facts("train", options, job, report_path),
        "model": model_path,
        "dead_letter_file": dead_path,
        "key": key,
        "key_model": job.key_model if key else None,
        "checkpoint_dir": checkpoint_dir,
        "first_pass": first_pass,
        "resumed_from_pass": resumed_from,
        "initial_model": job.initial_model,
        "passes_run": config.passes - first_pass + 1,
        "input": settings.to_dict(),
        "input_notes": list(choices.notes),
        "window_spec": window.text() if window else None,
        "shuffle_buffer": job.shuffle_buffer,
        "in_memory": in_memory,
        "in_memory_reason": in_memory_why,
        "learners_per_pass": job.learners if in_memory else None,
    }
    pipeline = beam.Pipeline(options=options)
    read = read_examples(pipeline, job, "Read", config, key=key, settings=settings)
    checked = checked_read(read, job, write_dead_letters(read, dead_path), report_facts, settings=settings)
    initial = None
    if initial_path is not None:
        initial = pipeline | "Initial" >> ReadLearners(initial_path, config, keyed=keyed)
    parts = {"counts": checked}
    # allow_empty: the job's own input check refuses an empty read (with its report) unless --allow-empty.
    examples = note_workers(read.examples, parts)
    if window is not None:
        examples = examples | "Windows" >> WindowExamples(window)
    trainer = Train(
        config,
        key=ParsedKeys(key) if keyed else None,
        metadata={"input_format": settings.format},
        initial=initial,
        first_pass=first_pass,
        checkpoint_dir=checkpoint_dir,
        learners=job.learners if in_memory else first_pass_learners(options),
        lbfgs_after_averaging=job.lbfgs_after_averaging,
        fanout=job.merge_fanout,
        checkpoints_after=[checked],
        progress=not (job.quiet or keyed),
        allow_empty=True,
        progress_every=job.progress_every,
        keyed_output="shards",
        shared_keys=shared,
        shuffle_buffer=job.shuffle_buffer,
        shuffle_seed=shuffle_seed,
        **({"in_memory": True} if in_memory else {}),
    )
    models = examples | "Train" >> trainer
    if trainer.label_order is not None:  # (its windows' counts add up in the report)
        parts["label_order"] = trainer.label_order | "LabelOrderEverywhere" >> beam.WindowInto(
            beam_window.GlobalWindows()
        )
    models = models | "AfterInputCheck" >> WaitOn(checked)
    # How the input was read and where the models came from, with the read's counts (known on the workers).
    known = report_facts["origin"]
    models = models | "RecordOrigin" >> RecordOrigin(
        settings,
        counts=checked,
        inputs=known["inputs"],
        command="train",
        options=known["options"],
        runner=known["runner"],
        started=known["started"],
        keyed=keyed,
    )
    build = _train_report
    if window is not None:
        parts.update(
            windowed.windowed_models(
                job, window, models, model_path=model_path, keyed=keyed, key=key, config=config, settings=settings
            )
        )
        build = windowed.windowed_train_report
    elif keyed:
        parts["index"] = models | "WriteModels" >> WriteKeyedModels(
            model_path, key=key, config=config.to_dict(), input=settings.to_dict()
        )
    else:
        written = models | "WriteModel" >> WriteModel(model_path)
        parts["summary"] = models | "Summary" >> beam.Map(model_summary)
        parts["written"] = written
    report = functools.partial(_with_label_order, build=build, facts=report_facts)
    pipeline | "Report" >> WriteReport(report_path, report, **parts)
    return launch(
        pipeline,
        options,
        report_facts,
        started=started,
        outputs={"model": model_path, "dead_letters": dead_path, "checkpoints": checkpoint_dir},
        preload=preloader(job, config, key=key, settings=settings),
    )


def _run_watch(options, job: JobSettings, config: LearnerConfig, settings, started: float, *, key, window) -> dict:
    """``train --watch``: the streaming job (polybeam.pipelines.stream_job), its input settled from the files
    there at the start (as a batch job's), or read as the options say when none is there yet."""
    from polybeam.pipelines import stream_job

    refused = [
        name
        for name, given in (
            ("--key", key is not None),
            ("--window", window is not None),
            ("--initial-model", job.initial_model),
            ("--checkpoint-dir", job.checkpoint_dir),
            ("--resume", job.resume),
            ("--shuffle-buffer", job.shuffle_buffer),
        )
        if given
    ]
    if refused:
        raise OptionError(
            f"--watch trains one model from files as they appear; leave out {', '.join(refused)} (a job started "
            "again continues from the --model folder's latest version)"
        )
    notes: tuple[str, ...] = ()
    if stream_job.input_matches(job.input):
        choices = settle_input(job.input, config, settings, zero_based_given=job.zero_based)
        config, settings, notes = choices.config, choices.settings, tuple(choices.notes)
        check_sample(job.input, settings, labels=config.label_kind)
        settings = with_columns(job.input, settings)
    report_path = job.report or join(job.model, stream_job.REPORT)
    facts = {
        **job_facts("train", options, job, report_path),
        "model": job.model,
        "watch": job.watch,
        "input": settings.to_dict(),
        "input_notes": list(notes),
    }
    return stream_job.run_stream_train(options, job, config, settings, facts, started)


# -- evaluate and predict: one model, or a folder of per-key models --------------------------------------


def _is_keyed_folder(path: str) -> bool:
    return exists(join(path, "index.json"))


def _model_source(job: JobSettings, command: str):
    """``(model or library, config, key spec, how the model's input was read or None)`` of --model, failing
    fast on a bad file or folder."""
    model_path = require(job.model, "--model", command)
    fallback = job.fallback_model
    key = job.key
    if not _is_keyed_folder(model_path):
        model = read_model(model_path)  # fail fast on a bad model file, before any pipeline work
        shared = model.shared_keys
        if shared is not None:  # one shared per-key model: scored per key, every key by the same file
            if fallback:
                raise OptionError(
                    f"--fallback-model applies to a folder of per-key models; {model_path} is a shared "
                    "per-key model, which scores a key it never trained with its shared weights"
                )
            if key is not None and key != shared.key:
                raise OptionError(f"--key {key} differs from the key the model was trained with ({shared.key})")
            return SharedModel(model_path), model.config, shared.key, recorded_input(model.input, model_path)
        if fallback or key:
            raise OptionError(
                f"--{'fallback-model' if fallback else 'key'} applies to a folder of per-key models; "
                f"{model_path} is a model file"
            )
        return model, model.config, None, recorded_input(model.input, model_path)
    index = read_index(model_path)
    if index.get("kind") == "polybeam-windowed-models":
        raise OptionError(
            f"{model_path} is a folder of models per window; {command} takes one window's model "
            f"file or per-key folder (--model {join(model_path, 'window-START-END.model')} or {join(model_path, 'window-START-END')}, listed in its index.json)"
        )
    if index.get("kind") != KEYED_MODELS:
        raise OptionError(f"{model_path} is not a folder of per-key models (its index.json is a {index.get('kind')})")
    trained_key = index.get("key")
    if key is not None and key != trained_key:
        raise OptionError(f"--key {key} differs from the key the models were trained with ({trained_key})")
    config = LearnerConfig.from_dict(index["config"])
    if fallback:
        fallback_config = read_model(fallback).config
        check_compatible(fallback_config, config, f"--fallback-model {fallback}")
    return ModelLibrary(model_path, fallback), config, trained_key, recorded_input(index.get("input"), model_path)


def _routed(read, source, key: str | None):
    """``(scored input, unrouted dead letters or None)``."""
    if key is None:
        return read.examples, None
    if isinstance(source, SharedModel):  # every key has the shared model: nothing goes unrouted
        return split_by_key(read.examples, ParsedKeys(key)), None
    routed = read.examples | "Route" >> RouteByKey(source, ParsedKeys(key))
    # Where each unrouted example sits in its file, and its text, for the dead letters.
    return routed.routed, routed.unrouted | "FillUnrouted" >> beam.ParDo(FillLineNumbers())


def _scores_by_shards(source, config: LearnerConfig) -> bool:
    """Whether a job scores with ``source`` by shards of models (see polybeam.transforms.key_scoring): a folder
    of per-key models in shard files, of one output (softmax models are scored key by key)."""
    return isinstance(source, ModelLibrary) and source.keyed.sharded and config.outputs == 1


def _reconciled(counts: ReadCounts, unrouted: int) -> dict:
    """The read counts, with examples that had no model moved to the dead letters."""
    moved = ReadCounts(counts.records, counts.examples - unrouted, counts.dead_letters + unrouted, counts.skipped)
    return {**moved.to_dict(), "examples_without_model": unrouted} if unrouted else moved.to_dict()


def _evaluate_report(parts: dict, *, facts: dict) -> dict:
    unrouted = sum(parts.get("unrouted", [0]))
    counts = _reconciled(total_counts(parts), unrouted)
    if facts.get("key"):
        per_key = {key: metrics for key, metrics in parts["metrics"] if key is not OVERALL}
        overall = next(
            (metrics for key, metrics in parts["metrics"] if key is OVERALL),
            {"examples": 0, "loss": None, "error": None, "auc": None, "mse": None},
        )
        report = {**overall, "keys": per_key}
    else:
        report = dict(parts["metrics"][0])
    report.update({name: counts[name] for name in counts if name != "examples"})
    return finish_report(report, facts, parts)


def run_evaluate(options: PipelineOptions) -> dict:
    """Held-out metrics of a model file (or per key, of a folder of per-key models) on examples
    (``--input -``: read from standard input, see :mod:`polybeam.pipelines.streams`)."""
    started = time.perf_counter()
    job_settings(options, "evaluate")  # (paths made absolute, required options there)
    with standard_streams(options, "evaluate") as streams:
        return streamed(_run_evaluate(options, started), streams)


def with_version(job: JobSettings) -> JobSettings:
    """``job`` scoring with one version's model file when ``--model`` is a folder of streaming training (the
    latest, or ``--version N``); ``--version`` with a model file is refused."""
    from polybeam.transforms import version_folder

    if job.model and version_folder.is_version_folder(job.model):
        try:
            number = job.version if job.version is not None else version_folder.latest_number(job.model)
            path = version_folder.version_model_path(job.model, number)
        except ModelFileError as error:
            raise OptionError(f"--model: {error}") from None
        return dataclasses.replace(job, model=path)
    if job.version is not None:
        raise OptionError(f"--version picks a version of a folder that train --watch writes; {job.model} is not one")
    return job


def _run_evaluate(options: PipelineOptions, started: float) -> dict:
    job = with_version(job_settings(options, "evaluate"))
    if windowed.is_windowed_folder(job.model):
        return windowed.run_windowed_evaluate(options, job)
    source, config, key, recorded = _model_source(job, "evaluate")
    settings, expected, reader = scoring_input(job, config, key, recorded, labels=config.label_kind, command="evaluate")
    model_path = job.model
    beside = (
        (lambda name: join(model_path, name)) if _is_keyed_folder(model_path) else (lambda name: f"{model_path}.{name}")
    )
    dead_path = job.dead_letters or beside("evaluate.dead_letters.jsonl")
    report_path = job.report or beside("evaluation.json")
    input_policy(job, settings=settings)
    with_default_runner(options)

    facts = {
        **job_facts("evaluate", options, job, report_path),
        "model": model_path,
        "key": key,
        "dead_letter_file": dead_path,
        "input": settings.to_dict(),
    }
    pipeline = beam.Pipeline(options=options)
    read = read_examples(pipeline, job, "Read", config, key=key, settings=settings, reader=reader)
    if _scores_by_shards(source, config):
        # Whole batches against each shard's models at once (see polybeam.transforms.key_scoring).
        parts = {}
        examples = note_workers(read.examples, parts)
        metrics, unrouted = examples | "EvaluateKeys" >> EvaluateKeys(source, ParsedKeys(key))
        unrouted = unrouted | "FillUnrouted" >> beam.ParDo(FillLineNumbers())
        dead_files = write_dead_letters(read, dead_path, extra=unrouted)
        parts["counts"] = checked_read(read, job, dead_files, facts, settings=settings, expected=expected)
    else:
        scored, unrouted = _routed(read, source, key)
        # A single model is read by a worker (not shipped in the job's graph); a library loads its own.
        model = source if key is not None else pipeline | "Model" >> ReadModel(model_path)
        dead_files = write_dead_letters(read, dead_path, extra=unrouted)
        parts = {"counts": checked_read(read, job, dead_files, facts, settings=settings, expected=expected)}
        metrics = note_workers(scored, parts) | "Evaluate" >> Evaluate(
            model, routed=key is not None, overall=key is not None
        )
    parts["metrics"] = metrics
    if unrouted is not None:
        parts["unrouted"] = count(unrouted, "CountUnrouted")
    pipeline | "Report" >> WriteReport(report_path, functools.partial(_evaluate_report, facts=facts), **parts)
    return launch(
        pipeline,
        options,
        facts,
        started=started,
        outputs={"dead_letters": dead_path},
        preload=preloader(job, config, key=key, settings=settings),
    )


def _predict_report(parts: dict, *, facts: dict) -> dict:
    unrouted = sum(parts.get("unrouted", [0]))
    return finish_report(
        {**_reconciled(total_counts(parts), unrouted), "prediction_files": sorted(parts["files"])}, facts, parts
    )


def run_predict(options: PipelineOptions) -> dict:
    """Predictions of a model file (or of per-key models) for every example, as tab-separated text (one file
    unless ``--num-shards``; ``--input -``/``--output -``: standard input and output, see
    :mod:`polybeam.pipelines.streams`); with ``--prefixes``, of an anytime model's prefix (see
    :func:`polybeam.pipelines.anytime.run_anytime_predict`)."""
    started = time.perf_counter()
    job_settings(options, "predict")  # (paths made absolute, required options there)
    with standard_streams(options, "predict") as streams:
        job = job_settings(options, "predict")
        if job.prefixes:  # (the anytime models' modules, scipy's among them, load only for them)
            from polybeam.pipelines.anytime import run_anytime_predict

            report = run_anytime_predict(options, job)
        else:
            report = _run_predict(options, with_version(job), started, streams)
    return streamed(report, streams)


def _run_predict(options: PipelineOptions, job: JobSettings, started: float, streams: dict) -> dict:
    output = job.output
    source, config, key, recorded = _model_source(job, "predict")
    kind = job.predictions
    try:
        columns = prediction_columns(config, kind)
    except ValueError as error:
        raise OptionError(f"--predictions {kind}: {error}") from None
    settings, expected, reader = scoring_input(job, config, key, recorded, labels="any", command="predict")
    model_path = job.model
    dead_path = job.dead_letters or f"{output}.dead_letters.jsonl"
    report_path = job.report or f"{output}.report.json"
    input_policy(job, settings=settings)
    with_default_runner(options)

    facts = {
        **job_facts("predict", options, job, report_path),
        "model": model_path,
        "key": key,
        "output": output,
        "predictions": check_kind(kind, config.loss),
        "prediction_columns": list(columns),
        "dead_letter_file": dead_path,
        "input": settings.to_dict(),
    }
    pipeline = beam.Pipeline(options=options)
    read = read_examples(pipeline, job, "Read", config, labels="any", key=key, settings=settings, reader=reader)
    if _scores_by_shards(source, config):
        # Whole batches against each shard's models at once (see polybeam.transforms.key_scoring).
        parts = {}
        examples = note_workers(read.examples, parts)
        scored, unrouted = examples | "PredictKeys" >> PredictKeys(source, ParsedKeys(key), predictions=kind)
        unrouted = unrouted | "FillUnrouted" >> beam.ParDo(FillLineNumbers())
        dead_files = write_dead_letters(read, dead_path, extra=unrouted)
        checked = parts["counts"] = checked_read(read, job, dead_files, facts, settings=settings, expected=expected)
    else:
        scored_input, unrouted = _routed(read, source, key)
        # A single model is read by a worker (not shipped in the job's graph); a library loads its own.
        model = source if key is not None else pipeline | "Model" >> ReadModel(model_path)
        dead_files = write_dead_letters(read, dead_path, extra=unrouted)
        checked = checked_read(read, job, dead_files, facts, settings=settings, expected=expected)
        parts = {"counts": checked}
        scored = note_workers(scored_input, parts) | "Predict" >> Predict(
            model, routed=key is not None, predictions=kind
        )
    if "input" in streams:  # examples from standard input: their source is that, not the launcher's copy
        scored = scored | "NameStdin" >> beam.Map(renamed_source, streams["input"], STDIN_NAME)
    writer = WritePredictions(
        output,
        num_shards=job.num_shards,
        with_key=key is not None,
        id_name=id_column_name(settings),
        prediction_columns=columns,
        after=(checked,),
    )
    parts["files"] = scored | "WritePredictions" >> writer
    if unrouted is not None:
        parts["unrouted"] = count(unrouted, "CountUnrouted")
    pipeline | "Report" >> WriteReport(report_path, functools.partial(_predict_report, facts=facts), **parts)
    predictions = output if job.num_shards is None else f"{output}-*"
    try:
        return launch(
            pipeline,
            options,
            facts,
            started=started,
            outputs={"predictions": predictions, "dead_letters": dead_path},
            preload=preloader(job, config, labels="any", key=key, settings=settings),
        )
    except Exception:
        writer.discard()  # (a refused job publishes nothing: what it wrote waits under a temporary name)
        raise
