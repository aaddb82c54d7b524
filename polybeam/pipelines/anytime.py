"""The runnable pipelines behind ``polybeam sequence`` and ``polybeam timeliness``.

``sequence`` reads examples once into Gram statistics, orders the groups of a
specification by the chosen method and writes the anytime prefixes as JSON
lines (plus the skipped groups with their reasons). ``timeliness`` measures
prefix files on held-out examples in one pass: every prefix's explained
variance against its cumulative cost, the alpha-timeliness of each method up
to the reference's alpha-stopping cost, the Oracle re-ordering of each curve,
and optionally a plot of the curves.
"""

from __future__ import annotations

import functools
import os
import time

import apache_beam as beam
import numpy as np
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.transforms.util import WaitOn

from polybeam.formats.records import ReadCounts
from polybeam.learners.config import LearnerConfig
from polybeam.pipelines.errors import OptionError
from polybeam.pipelines.job_parts import (
    checked_read,
    finish_report,
    input_policy,
    job_facts,
    note_workers,
    read_examples,
    total_counts,
    write_dead_letters,
)
from polybeam.pipelines.launch import launch
from polybeam.pipelines.option_specs import columns
from polybeam.pipelines.options import JobSettings, input_settings, job_settings, with_default_runner
from polybeam.selection.anytime import AnytimeModel
from polybeam.selection.groups import GroupSpec
from polybeam.selection.statistics import check_memory
from polybeam.selection.timeliness import oracle_curve, plateau_alpha, stopping_cost, timeliness
from polybeam.transforms.predict import WritePredictions, id_column_name
from polybeam.transforms.report import WriteReport
from polybeam.transforms.sequence import (
    PREFIX_COLUMNS,
    ApplyAnytime,
    EvaluateAnytime,
    SequenceGroups,
    WritePrefixes,
    read_anytime_model,
)


def _in_rank_order(records: list[dict]) -> list[dict]:
    return sorted(records, key=lambda record: (record.get("rank", 0), str(record.get("group", ""))))


def _sequence_report(parts: dict, *, facts: dict) -> dict:
    prefixes = _in_rank_order(parts["prefixes"])
    skipped = sorted(parts["skipped"], key=lambda record: record["group"])
    report = {
        **sum(parts["counts"], ReadCounts()).to_dict(),
        "groups": len(prefixes) + len(skipped),
        "sequenced": len(prefixes),
        "order": [prefix["group"] for prefix in prefixes],
        "skipped": [{"group": s["group"], "reason": s["reason"]} for s in skipped],
        "total_cost": prefixes[-1]["cumulative_cost"] if prefixes else 0.0,
        "explained_variance": prefixes[-1]["explained_variance"] if prefixes else 0.0,
    }
    return finish_report(report, facts)


def run_sequence(options: PipelineOptions) -> dict:
    """Sequence the groups of ``--groups`` over ``--input``; write the prefixes to ``--output``."""
    started = time.perf_counter()
    job = job_settings(options, "sequence")
    groups_path, output = job.groups, job.output
    config = LearnerConfig(loss="squared", bits=job.bits, seed=job.seed)
    if not (job.ridge >= 0 and np.isfinite(job.ridge)):
        raise OptionError(f"--ridge must be a finite number >= 0, got {job.ridge}")
    if job.lasso_points < 2:
        raise OptionError(f"--lasso-points must be at least 2, got {job.lasso_points}")
    memory_limit = int(job.memory_limit_mb * 2**20)
    spec = GroupSpec.load(groups_path, bits=config.bits, seed=config.seed)  # fail fast on a bad specification
    if job.default_group is None:
        check_memory(len(spec.slots), memory_limit)
    skipped_path = job.skipped_output or f"{output}.skipped.jsonl"
    dead_path = job.dead_letters or f"{output}.dead_letters.jsonl"
    report_path = job.report or f"{output}.report.json"
    extra = {"lasso_points": job.lasso_points}
    if job.minimum_cost is not None:
        extra["minimum_cost"] = job.minimum_cost
    input_policy(job)
    with_default_runner(options)

    facts = {
        **job_facts("sequence", options, job, report_path),
        "method": job.method,
        "ridge": job.ridge,
        "output": output,
        "skipped_output": skipped_path,
        "dead_letter_file": dead_path,
    }
    pipeline = beam.Pipeline(options=options)
    read = read_examples(pipeline, job, "Read", config)
    checked = checked_read(read, job, write_dead_letters(read, dead_path), facts)
    sequenced = read.examples | "Sequence" >> SequenceGroups(
        spec,
        method=job.method,
        ridge=job.ridge,
        whiten=False if job.no_whiten else None,
        standardize=not job.no_standardize,
        default_group=job.default_group,
        default_cost=job.default_group_cost,
        memory_limit=memory_limit,
        seed=config.seed,
        **extra,
    )
    prefixes = sequenced.prefixes | "PrefixesAfterCheck" >> WaitOn(checked)
    skipped = sequenced.skipped | "SkippedAfterCheck" >> WaitOn(checked)
    parts = {
        "counts": checked,
        "prefixes": prefixes,
        "skipped": skipped,
        "written": prefixes | "WritePrefixes" >> WritePrefixes(output),
        "written_skipped": skipped | "WriteSkipped" >> WritePrefixes(skipped_path),
    }
    pipeline | "Report" >> WriteReport(report_path, functools.partial(_sequence_report, facts=facts), **parts)
    return launch(
        pipeline,
        options,
        facts,
        started=started,
        outputs={"prefixes": output, "skipped": skipped_path, "dead_letters": dead_path},
    )


def load_models(paths) -> dict[str, AnytimeModel]:
    """Prefix files by label: the method's name, or the file's name when two files share a method."""
    models = {path: read_anytime_model(path) for path in paths}
    methods = [model.method or os.path.basename(path) for path, model in models.items()]
    unique = len(set(methods)) == len(methods)
    return {
        (method if unique else os.path.basename(path)): model for method, (path, model) in zip(methods, models.items())
    }


def parse_alpha(text: str | float | None) -> float | None:
    """None for the plateau rule ("auto"), else a number in (0, 1]."""
    if text is None or str(text).strip().lower() == "auto":
        return None
    try:
        alpha = float(text)
    except ValueError:
        raise OptionError(f"--alpha must be a number in (0, 1] or auto, got {text!r}") from None
    if not 0 < alpha <= 1:
        raise OptionError(f"--alpha must be in (0, 1], got {alpha}")
    return alpha


def _timeliness_report(parts: dict, *, models: dict, facts: dict) -> dict:
    """The held-out curves of every method, measured by the job, as the report (and the plot)."""
    measured = {name: values for name, values in parts["curves"]}
    if not measured:
        raise ValueError("no held-out examples were read: nothing to measure")
    stop, alpha = facts["stopping_cost"], facts["alpha"]
    methods = {}
    for label, model in models.items():
        costs = model.curve()[0]
        held_out = np.array(measured[label])
        oracle = oracle_curve(costs, held_out)
        methods[label] = {
            "timeliness": timeliness(costs, held_out, stop=stop),
            "oracle_timeliness": timeliness(*oracle, stop=stop),
            "training_timeliness": timeliness(*model.curve(), stop=stop),
            "final_explained_variance": float(held_out[-1]),
            "total_cost": float(costs[-1]),
            "curve": [[float(c), float(v)] for c, v in zip(costs, held_out)],
            "order": [prefix["group"] for prefix in model.prefixes],
        }
    report = {
        **sum(parts["counts"], ReadCounts()).to_dict(),
        "methods": methods,
        "timeliness": {label: entry["timeliness"] for label, entry in methods.items()},
    }
    if facts.get("plot"):
        from polybeam.pipelines.plots import plot_curves

        plot_curves(facts["plot"], {label: entry["curve"] for label, entry in methods.items()}, stop=stop, alpha=alpha)
    return finish_report(report, facts)


def run_timeliness(options: PipelineOptions) -> dict:
    """Held-out curves and alpha-timeliness of the ``--prefixes`` files on ``--input``."""
    started = time.perf_counter()
    job = job_settings(options, "timeliness")
    paths = job.prefixes
    alpha = parse_alpha(job.alpha)
    models = load_models(paths)
    empty = [label for label, model in models.items() if not model.prefixes]
    if empty:
        raise OptionError(f"prefix files without any prefix: {', '.join(empty)}")
    hashing = {(model.bits, int(model.prefixes[0].get("seed", 0))) for model in models.values()}
    if len(hashing) > 1:
        raise OptionError(f"the prefix files were sequenced with different --bits/--seed: {sorted(hashing)}")
    ((bits, seed),) = hashing
    reference = _reference(models, paths, job.reference)
    train_costs, train_values = models[reference].curve()
    if alpha is None:
        alpha = plateau_alpha(train_costs, train_values)
    stop = stopping_cost(train_costs, train_values, alpha=alpha)
    if job.plot:
        from polybeam.pipelines.plots import check_plotting

        check_plotting()
    dead_path = job.dead_letters or f"{paths[0]}.timeliness.dead_letters.jsonl"
    report_path = job.report or f"{paths[0]}.timeliness.json"
    input_policy(job)
    with_default_runner(options)

    facts = {
        **job_facts("timeliness", options, job, report_path),
        "alpha": alpha,
        "stopping_cost": stop,
        "reference": reference,
        "plot": job.plot,
        "dead_letter_file": dead_path,
    }
    config = LearnerConfig(loss="squared", bits=bits, seed=seed)
    pipeline = beam.Pipeline(options=options)
    read = read_examples(pipeline, job, "Read", config)
    curves = (
        read.examples
        | "Evaluate" >> EvaluateAnytime(models)
        | "Values" >> beam.MapTuple(lambda name, curve: (name, curve.explained_variance().tolist()))
    )
    build = functools.partial(_timeliness_report, models=models, facts=facts)
    checked = checked_read(read, job, write_dead_letters(read, dead_path), facts)
    pipeline | "Report" >> WriteReport(report_path, build, counts=checked, curves=curves)
    outputs = {"dead_letters": dead_path, **({"plot": job.plot} if job.plot else {})}
    return launch(pipeline, options, facts, started=started, outputs=outputs)


def _prefix_choice(job: JobSettings, model: AnytimeModel, path: str) -> dict:
    """``{"budget": B}`` or ``{"groups": (...)}`` from --budget / --groups, checked against the prefixes."""
    budget = job.budget
    groups = job.groups
    if (budget is None) == (groups is None):
        raise OptionError("polybeam predict --prefixes needs one of --budget B or --groups a,b,c")
    if budget is not None:
        if not (np.isfinite(budget) and budget >= 0):
            raise OptionError(f"--budget must be a finite cost >= 0, got {budget}")
        return {"budget": budget}
    names = columns(groups)
    known = {prefix["group"] for prefix in model.prefixes}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise OptionError(
            f"--groups: {', '.join(unknown)} not in the prefixes of {path} (they have: {', '.join(sorted(known))})"
        )
    return {"groups": names}


def _anytime_predict_report(parts: dict, *, facts: dict) -> dict:
    return finish_report({**total_counts(parts).to_dict(), "prediction_files": sorted(parts["files"])}, facts, parts)


def run_anytime_predict(options: PipelineOptions, job: JobSettings | None = None) -> dict:
    """``polybeam predict --prefixes FILE (--budget B | --groups a,b,c)``: predictions of the longest prefix that
    fits, each line ending with the prefix's size (groups) and cumulative cost. ``job``: the options already read
    (see :func:`~polybeam.pipelines.options.job_settings`; predict's --groups are the names of the groups available,
    not a path)."""
    started = time.perf_counter()
    job = job or job_settings(options, "predict")
    output = job.output
    paths = job.prefixes
    if len(paths) != 1:
        raise OptionError(f"polybeam predict takes one --prefixes file, got {len(paths)}")
    for flag, value in (("--model", job.model), ("--key", job.key)):
        if value:
            raise OptionError(f"{flag} and --prefixes exclude each other: predict with a model or with prefixes")
    if job.predictions == "probability":  # (its label and its score are both the value a prefix predicts)
        raise OptionError("--predictions probability: an anytime prefix predicts values, not probabilities")
    path = paths[0]
    model = read_anytime_model(path)  # fail fast on a bad prefix file
    if not model.prefixes:
        raise OptionError(f"{path} holds no prefix")
    choice = _prefix_choice(job, model, path)
    length = model.prefix_length(**choice)
    dead_path = job.dead_letters or f"{output}.dead_letters.jsonl"
    report_path = job.report or f"{output}.report.json"
    input_policy(job)
    with_default_runner(options)

    facts = {
        **job_facts("predict", options, job, report_path),
        "prefixes": path,
        **choice,
        "output": output,
        "prefix": length,
        "prefix_cost": model.prefix_cost(length),
        "prefix_groups": [p["group"] for p in model.prefixes[:length]],
        "dead_letter_file": dead_path,
    }
    config = LearnerConfig(loss="squared", bits=model.bits, seed=int(model.prefixes[0].get("seed", 0)))
    pipeline = beam.Pipeline(options=options)
    read = read_examples(pipeline, job, "Read", config, labels="any")
    checked = checked_read(read, job, write_dead_letters(read, dead_path), facts)
    parts = {"counts": checked}
    writer = WritePredictions(
        output,
        num_shards=job.num_shards,
        extra_columns=PREFIX_COLUMNS,
        id_name=id_column_name(input_settings(job, config)),
        after=(checked,),
    )
    parts["files"] = (
        note_workers(read.examples, parts) | "Predict" >> ApplyAnytime(model, **choice) | "WritePredictions" >> writer
    )
    pipeline | "Report" >> WriteReport(report_path, functools.partial(_anytime_predict_report, facts=facts), **parts)
    predictions = output if job.num_shards is None else f"{output}-*"
    try:
        return launch(
            pipeline, options, facts, started=started, outputs={"predictions": predictions, "dead_letters": dead_path}
        )
    except Exception:
        writer.discard()  # (a refused job publishes nothing: what it wrote waits under a temporary name)
        raise


def _reference(models: dict[str, AnytimeModel], paths, chosen: str | None) -> str:
    if chosen is not None:
        for label, path in zip(models, paths):
            if chosen in (label, path):
                return label
        raise OptionError(f"--reference {chosen} is not one of the --prefixes files")
    for label, model in models.items():
        if model.method == "cs-g-omp":
            return label
    return next(iter(models))


def describe(report: dict) -> str:
    """A few human lines before the JSON report."""
    if report["command"] == "sequence":
        lines = [
            f"read: {report['records']} records, {report['examples']} examples, {report['dead_letters']} dead letters",
            f"{report['method']}: {report['sequenced']} of {report['groups']} groups sequenced, total cost "
            f"{report['total_cost']:.6g}, training explained variance {report['explained_variance']:.4f}",
        ]
        lines += [f"skipped {s['group']}: {s['reason']}" for s in report["skipped"]]
        lines.append(f"prefixes written to {report['output']}")
        return "\n".join(lines)
    lines = [f"alpha {report['alpha']:g}: stopping cost {report['stopping_cost']:.6g} (from {report['reference']})"]
    for label, entry in report["methods"].items():
        lines.append(
            f"{label:>12}: timeliness {entry['timeliness']:.4f}, oracle {entry['oracle_timeliness']:.4f}, "
            f"final held-out explained variance {entry['final_explained_variance']:.4f}"
        )
    if "plot" in report:
        lines.append(f"plot written to {report['plot']}")
    return "\n".join(lines)
