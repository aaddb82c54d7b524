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

import json
import os
import tempfile
import time

import apache_beam as beam
import numpy as np
from apache_beam.options.pipeline_options import PipelineOptions

from polybeam.learners.config import LearnerConfig
from polybeam.pipelines.counts import read_counts
from polybeam.pipelines.jobs import OptionError, _read, _require, _write_dead_letters
from polybeam.pipelines.options import (
    InputOptions,
    LearnerOptions,
    OutputOptions,
    SequenceOptions,
    TimelinessOptions,
    with_default_runner,
)
from polybeam.selection.anytime import AnytimeModel
from polybeam.selection.groups import GroupSpec
from polybeam.selection.statistics import check_memory
from polybeam.selection.timeliness import oracle_curve, plateau_alpha, stopping_cost, timeliness
from polybeam.transforms.sequence import EvaluateAnytime, SequenceGroups, WritePrefixes


def run_sequence(options: PipelineOptions) -> dict:
    """Sequence the groups of ``--groups`` over ``--input``; write the prefixes to ``--output``."""
    started = time.perf_counter()
    _require(options.view_as(InputOptions).input, "--input", "sequence")
    settings = options.view_as(SequenceOptions)
    groups_path = _require(settings.groups, "--groups", "sequence")
    output = _require(options.view_as(OutputOptions).output, "--output", "sequence")
    learner = options.view_as(LearnerOptions)
    config = LearnerConfig(loss="squared", bits=learner.bits, seed=learner.seed)
    if not (settings.ridge >= 0 and np.isfinite(settings.ridge)):
        raise OptionError(f"--ridge must be a finite number >= 0, got {settings.ridge}")
    if settings.lasso_points < 2:
        raise OptionError(f"--lasso-points must be at least 2, got {settings.lasso_points}")
    memory_limit = int(settings.memory_limit_mb * 2**20)
    spec = GroupSpec.load(groups_path, bits=config.bits, seed=config.seed)  # fail fast on a bad specification
    if settings.default_group is None:
        check_memory(len(spec.slots), memory_limit)
    skipped_path = settings.skipped_output or f"{output}.skipped.jsonl"
    dead_path = options.view_as(InputOptions).dead_letters or f"{output}.dead_letters.jsonl"
    extra = {"lasso_points": settings.lasso_points}
    if settings.minimum_cost is not None:
        extra["minimum_cost"] = settings.minimum_cost
    with_default_runner(options)

    pipeline = beam.Pipeline(options=options)
    read = _read(pipeline, options, "Read", config)
    sequenced = read.examples | "Sequence" >> SequenceGroups(
        spec, method=settings.method, ridge=settings.ridge, whiten=False if settings.no_whiten else None,
        standardize=not settings.no_standardize, default_group=settings.default_group,
        default_cost=settings.default_group_cost, memory_limit=memory_limit, seed=config.seed, **extra)  # fmt: skip
    sequenced.prefixes | "WritePrefixes" >> WritePrefixes(output)
    sequenced.skipped | "WriteSkipped" >> WritePrefixes(skipped_path)
    _write_dead_letters(read, dead_path)
    result = pipeline.run()
    result.wait_until_finish()

    model = AnytimeModel.load(output) if os.path.exists(output) else AnytimeModel([])
    skipped = _json_lines(skipped_path)
    prefixes = model.prefixes
    return {
        "command": "sequence",
        "method": settings.method,
        "ridge": settings.ridge,
        "output": output,
        "skipped_output": skipped_path,
        "dead_letter_file": dead_path,
        **read_counts(result, "Read").to_dict(),
        "groups": len(prefixes) + len(skipped),
        "sequenced": len(prefixes),
        "order": [prefix["group"] for prefix in prefixes],
        "skipped": [{"group": s["group"], "reason": s["reason"]} for s in skipped],
        "total_cost": prefixes[-1]["cumulative_cost"] if prefixes else 0.0,
        "explained_variance": prefixes[-1]["explained_variance"] if prefixes else 0.0,
        "wall_seconds": time.perf_counter() - started,
    }


def _json_lines(path: str) -> list[dict]:
    """Skipped-group records (written one per line, in no particular order; sorted by group name)."""
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    return sorted(records, key=lambda record: record["group"])


def load_models(paths) -> dict[str, AnytimeModel]:
    """Prefix files by label: the method's name, or the file's name when two files share a method."""
    models = {path: AnytimeModel.load(path) for path in paths}
    methods = [model.method or os.path.basename(path) for path, model in models.items()]
    unique = len(set(methods)) == len(methods)
    return {(method if unique else os.path.basename(path)): model
            for method, (path, model) in zip(methods, models.items())}  # fmt: skip


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


def run_timeliness(options: PipelineOptions) -> dict:
    """Held-out curves and alpha-timeliness of the ``--prefixes`` files on ``--input``."""
    started = time.perf_counter()
    _require(options.view_as(InputOptions).input, "--input", "timeliness")
    settings = options.view_as(TimelinessOptions)
    paths = _require(settings.prefixes, "--prefixes", "timeliness")
    alpha = parse_alpha(options.view_as(LearnerOptions).alpha)
    models = load_models(paths)
    empty = [label for label, model in models.items() if not model.prefixes]
    if empty:
        raise OptionError(f"prefix files without any prefix: {', '.join(empty)}")
    hashing = {(model.bits, int(model.prefixes[0].get("seed", 0))) for model in models.values()}
    if len(hashing) > 1:
        raise OptionError(f"the prefix files were sequenced with different --bits/--seed: {sorted(hashing)}")
    (bits, seed), = hashing
    reference = _reference(models, paths, settings.reference)
    train_costs, train_values = models[reference].curve()
    if alpha is None:
        alpha = plateau_alpha(train_costs, train_values)
    stop = stopping_cost(train_costs, train_values, alpha=alpha)
    dead_path = options.view_as(InputOptions).dead_letters or f"{paths[0]}.timeliness.dead_letters.jsonl"
    with_default_runner(options)

    config = LearnerConfig(loss="squared", bits=bits, seed=seed)
    with tempfile.TemporaryDirectory() as scratch:
        curves_path = os.path.join(scratch, "curves.json")
        pipeline = beam.Pipeline(options=options)
        read = _read(pipeline, options, "Read", config)
        (read.examples
         | "Evaluate" >> EvaluateAnytime(models)
         | "Values" >> beam.MapTuple(lambda name, curve: (name, curve.explained_variance().tolist(), curve.examples))
         | "Gather" >> beam.combiners.ToList()
         | "ToJson" >> beam.Map(json.dumps)
         | "Write" >> beam.io.WriteToText(curves_path, num_shards=1, shard_name_template=""))  # fmt: skip
        _write_dead_letters(read, dead_path)
        result = pipeline.run()
        result.wait_until_finish()
        with open(curves_path) as handle:
            measured = {name: (values, examples) for name, values, examples in json.loads(handle.read() or "[]")}
    if not measured:
        raise OptionError("no held-out examples were read: nothing to measure")
    methods = {}
    for label, model in models.items():
        values, _ = measured[label]
        costs = model.curve()[0]
        held_out = np.array(values)
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
        "command": "timeliness",
        "alpha": alpha,
        "stopping_cost": stop,
        "reference": reference,
        "methods": methods,
        "timeliness": {label: entry["timeliness"] for label, entry in methods.items()},
        "dead_letter_file": dead_path,
        **read_counts(result, "Read").to_dict(),
    }
    if settings.plot:
        from polybeam.pipelines.plots import plot_curves

        plot_curves(settings.plot, {label: entry["curve"] for label, entry in methods.items()}, stop=stop, alpha=alpha)
        report["plot"] = settings.plot
    report["wall_seconds"] = time.perf_counter() - started
    return report


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
        lines = [f"read: {report['records']} records, {report['examples']} examples, {report['dead_letters']} dead letters",
                 f"{report['method']}: {report['sequenced']} of {report['groups']} groups sequenced, total cost "
                 f"{report['total_cost']:.6g}, training explained variance {report['explained_variance']:.4f}"]  # fmt: skip
        lines += [f"skipped {s['group']}: {s['reason']}" for s in report["skipped"]]
        lines.append(f"prefixes written to {report['output']}")
        return "\n".join(lines)
    lines = [f"alpha {report['alpha']:g}: stopping cost {report['stopping_cost']:.6g} (from {report['reference']})"]
    for label, entry in report["methods"].items():
        lines.append(f"{label:>12}: timeliness {entry['timeliness']:.4f}, oracle {entry['oracle_timeliness']:.4f}, "
                     f"final held-out explained variance {entry['final_explained_variance']:.4f}")  # fmt: skip
    if "plot" in report:
        lines.append(f"plot written to {report['plot']}")
    return "\n".join(lines)
