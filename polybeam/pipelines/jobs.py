"""The runnable pipelines behind ``polybeam train``, ``evaluate`` and ``predict``.

Each function takes PipelineOptions (so the same job runs from the command line,
from Python and from a template), runs the pipeline and returns a report dict.
"""

from __future__ import annotations

import json
import os
import tempfile
import time

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from polybeam.pipelines.counts import read_counts
from polybeam.pipelines.options import (
    InputOptions,
    ModelOptions,
    OutputOptions,
    format_options,
    learner_config,
    with_default_runner,
)
from polybeam.transforms.dead_letters import WriteDeadLetters
from polybeam.transforms.evaluate import Evaluate
from polybeam.transforms.model_io import ReadModel, WriteModel, read_model
from polybeam.transforms.predict import Predict, WritePredictions
from polybeam.transforms.read import ReadExamples
from polybeam.transforms.train import Train


class OptionError(ValueError):
    """A missing or invalid option, with what to fix."""


def _require(value, flag: str, command: str):
    if not value:
        raise OptionError(f"polybeam {command} needs {flag}")
    return value


def _read(pipeline, options: PipelineOptions, label: str, config, *, labels: str | None = None):
    read = options.view_as(InputOptions)
    return pipeline | label >> ReadExamples(read.input, format=read.format, **format_options(options, config, labels=labels))


def _write_dead_letters(read, path: str, label: str = "WriteDeadLetters"):
    return read.dead_letters | label >> WriteDeadLetters(path, file_name_suffix="", num_shards=1, shard_name_template="")


def run_train(options: PipelineOptions) -> dict:
    """Read examples, train, write the model and its dead letters; report what happened."""
    started = time.perf_counter()
    _require(options.view_as(InputOptions).input, "--input", "train")
    model_path = _require(options.view_as(ModelOptions).model, "--model", "train")
    config = learner_config(options)
    dead_path = options.view_as(InputOptions).dead_letters or f"{model_path}.dead_letters.jsonl"
    with_default_runner(options)

    pipeline = beam.Pipeline(options=options)
    read = _read(pipeline, options, "Read", config)
    facts = {"input_format": options.view_as(InputOptions).format}
    read.examples | "Train" >> Train(config, metadata=facts) | "WriteModel" >> WriteModel(model_path)
    _write_dead_letters(read, dead_path)
    result = pipeline.run()
    result.wait_until_finish()

    model = read_model(model_path)
    counts = read_counts(result, "Read")
    return {
        "command": "train",
        "model": model_path,
        "dead_letter_file": dead_path,
        **counts.to_dict(),
        "progressive_loss": model.metadata.get("progressive_loss"),
        "passes": model.metadata.get("passes"),
        "nonzero_weights": model.nonzero,
        "wall_seconds": time.perf_counter() - started,
    }


def run_evaluate(options: PipelineOptions) -> dict:
    """Held-out metrics of a model file on examples."""
    started = time.perf_counter()
    _require(options.view_as(InputOptions).input, "--input", "evaluate")
    model_path = _require(options.view_as(ModelOptions).model, "--model", "evaluate")
    model = read_model(model_path)  # fail fast on a bad model file, before any pipeline work
    dead_path = options.view_as(InputOptions).dead_letters or f"{model_path}.evaluate.dead_letters.jsonl"
    with_default_runner(options)

    with tempfile.TemporaryDirectory() as scratch:
        metrics_path = os.path.join(scratch, "metrics.json")
        pipeline = beam.Pipeline(options=options)
        read = _read(pipeline, options, "Read", model.config)
        (
            read.examples
            | "Evaluate" >> Evaluate(model)
            | "ToJson" >> beam.Map(json.dumps)
            | "WriteMetrics" >> beam.io.WriteToText(metrics_path, num_shards=1, shard_name_template="")
        )
        _write_dead_letters(read, dead_path)
        result = pipeline.run()
        result.wait_until_finish()
        with open(metrics_path) as handle:
            metrics = json.loads(handle.read())
    counts = read_counts(result, "Read")
    return {
        **metrics,
        "dead_letters": counts.dead_letters,
        "records": counts.records,
        "skipped": counts.skipped,
        "reconciles": counts.reconciles,
        "dead_letter_file": dead_path,
        "wall_seconds": time.perf_counter() - started,
    }


def run_predict(options: PipelineOptions) -> dict:
    """Predictions of a model file for every example, as tab-separated text files."""
    started = time.perf_counter()
    _require(options.view_as(InputOptions).input, "--input", "predict")
    model_path = _require(options.view_as(ModelOptions).model, "--model", "predict")
    output = _require(options.view_as(OutputOptions).output, "--output", "predict")
    model = read_model(model_path)
    dead_path = options.view_as(InputOptions).dead_letters or f"{output}.dead_letters.jsonl"
    with_default_runner(options)

    pipeline = beam.Pipeline(options=options)
    read = _read(pipeline, options, "Read", model.config, labels="any")
    models = pipeline | "Model" >> ReadModel(model_path)
    (
        read.examples
        | "Predict" >> Predict(models)
        | "WritePredictions" >> WritePredictions(output, num_shards=options.view_as(OutputOptions).num_shards)
    )
    _write_dead_letters(read, dead_path)
    result = pipeline.run()
    result.wait_until_finish()
    counts = read_counts(result, "Read")
    files = sorted(m.path for m in FileSystems.match([output + "*"])[0].metadata_list if not m.path.endswith(".jsonl"))
    return {
        "command": "predict",
        "prediction_files": files,
        "dead_letter_file": dead_path,
        **counts.to_dict(),
        "wall_seconds": time.perf_counter() - started,
    }

