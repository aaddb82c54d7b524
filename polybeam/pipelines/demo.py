"""``polybeam demo``: train and evaluate on bundled real data with the local runner.

One pipeline reads an 80/20 split of UCI Spambase (bundled with polybeam),
trains a logistic model in one pass with adaptive steps, evaluates it on the
held-out fifth and writes the model, the dead letters and a report under the
output folder.
"""

from __future__ import annotations

import json
import os
import time

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from polybeam import datasets
from polybeam.learners.config import LearnerConfig
from polybeam.pipelines.counts import read_counts
from polybeam.pipelines.options import DemoOptions, with_default_runner
from polybeam.transforms.dead_letters import WriteDeadLetters
from polybeam.transforms.evaluate import Evaluate
from polybeam.transforms.model_io import WriteModel, read_model
from polybeam.transforms.read import ReadExamples
from polybeam.transforms.train import Train

DATASET = "spam"
CONFIG = LearnerConfig(loss="logistic", step="adaptive", passes=1)


def run_demo(options: PipelineOptions) -> dict:
    """Run the demo pipeline and return its report (also written to ``report.json``)."""
    started = time.perf_counter()
    out = options.view_as(DemoOptions).output_dir
    train_path, test_path = datasets.write_split(DATASET, os.path.join(out, "data"), test_fraction=0.2)
    model_path = os.path.join(out, f"{DATASET}.model")
    metrics_path = os.path.join(out, "heldout_metrics.json")
    dead_path = os.path.join(out, "dead_letters.jsonl")
    with_default_runner(options)

    pipeline = beam.Pipeline(options=options)
    read = dict(bits=CONFIG.bits, seed=CONFIG.seed, labels=CONFIG.label_kind)
    train = pipeline | "ReadTrain" >> ReadExamples(train_path, format="libsvm", **read)
    test = pipeline | "ReadTest" >> ReadExamples(test_path, format="libsvm", **read)
    models = train.examples | "Train" >> Train(CONFIG, metadata={"input_format": "libsvm", "dataset": DATASET})
    models | "WriteModel" >> WriteModel(model_path)
    (
        test.examples
        | "Evaluate" >> Evaluate(models)
        | "ToJson" >> beam.Map(json.dumps)
        | "WriteMetrics" >> beam.io.WriteToText(metrics_path, num_shards=1, shard_name_template="")
    )
    (
        (train.dead_letters, test.dead_letters)
        | "AllDeadLetters" >> beam.Flatten()
        | "WriteDeadLetters" >> WriteDeadLetters(dead_path, file_name_suffix="", num_shards=1, shard_name_template="")
    )
    result = pipeline.run()
    result.wait_until_finish()

    model = read_model(model_path)
    with open(metrics_path) as handle:
        heldout = json.load(handle)
    train_counts, test_counts = read_counts(result, "ReadTrain"), read_counts(result, "ReadTest")
    report = {
        "dataset": DATASET,
        "runner": options.view_as(StandardOptions).runner,
        "learner": CONFIG.to_dict(),
        "train": train_counts.to_dict(),
        "test": test_counts.to_dict(),
        "records_read": train_counts.records + test_counts.records,
        "dead_letters": train_counts.dead_letters + test_counts.dead_letters,
        "progressive_loss": model.metadata["progressive_loss"],
        "heldout": heldout,
        "nonzero_weights": model.nonzero,
        "model": model_path,
        "dead_letter_file": dead_path,
        "wall_seconds": time.perf_counter() - started,
    }
    with open(os.path.join(out, "report.json"), "w") as handle:
        json.dump(report, handle, indent=2)
    with open(os.path.join(out, "report.txt"), "w") as handle:
        handle.write(describe(report, model.config.bits) + "\n")
    return report


def describe(report: dict, bits: int) -> str:
    """The demo report as text."""
    heldout = report["heldout"]
    return "\n".join(
        [
            "polybeam demo: logistic regression on UCI Spambase (bundled), 80/20 split, "
            "one pass, adaptive steps",
            f"runner:                 {report['runner']}",
            f"train:                  {_counts(report['train'])}",
            f"test:                   {_counts(report['test'])}",
            f"records read:           {report['records_read']}  (dead letters: {report['dead_letters']})",
            f"progressive val. loss:  {report['progressive_loss']:.4f}  (log loss, each example before it was learned)",
            f"held-out ({heldout['examples']} examples): log loss {heldout['loss']:.4f}, "
            f"error {heldout['error']:.4f}, AUC {heldout['auc']:.4f}",
            f"non-zero weights:       {report['nonzero_weights']} of {1 << bits} slots",
            f"model:                  {report['model']}",
            f"report:                 {os.path.join(os.path.dirname(report['model']), 'report.json')}",
            f"wall time:              {report['wall_seconds']:.1f} s",
        ]
    )


def _counts(counts: dict) -> str:
    check = "ok" if counts["reconciles"] else "MISMATCH"
    return (
        f"{counts['records']} records = {counts['examples']} examples + {counts['dead_letters']} dead letters "
        f"+ {counts['skipped']} skipped ({check})"
    )
