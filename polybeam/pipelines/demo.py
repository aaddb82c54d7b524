"""``polybeam demo``: train and evaluate on bundled real data with the local runner.

One pipeline reads an 80/20 split of UCI Spambase (bundled with polybeam),
trains a logistic model in one pass with adaptive steps, evaluates it on the
held-out fifth and writes the model, the dead letters and a report under the
output folder (the job writes its report itself, so the folder must be one the
workers can reach: a shared or cloud path when they run elsewhere).
"""

from __future__ import annotations

import functools
import os
import time

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from polybeam import datasets
from polybeam.formats.records import ReadCounts
from polybeam.learners.config import LearnerConfig
from polybeam.pipelines.job_parts import finish_report, job_facts, model_summary
from polybeam.pipelines.launch import launch, runner_name
from polybeam.pipelines.options import given_options, job_settings, with_default_runner
from polybeam.transforms.dead_letters import WriteDeadLetters
from polybeam.transforms.evaluate import Evaluate
from polybeam.transforms.files import write_atomically
from polybeam.transforms.model_io import WriteModel
from polybeam.transforms.provenance import RecordOrigin
from polybeam.transforms.read import ReadExamples
from polybeam.transforms.report import WriteReport
from polybeam.transforms.train import Train

DATASET = "spam"
CONFIG = LearnerConfig(loss="logistic", step="adaptive", passes=1)


def _demo_report(parts: dict, *, facts: dict, text_path: str) -> dict:
    """The demo's report (written by the job), plus the same as text in ``text_path``."""
    train_counts = sum(parts["train_counts"], ReadCounts())
    test_counts = sum(parts["test_counts"], ReadCounts())
    summary = parts["summary"][0]
    report = finish_report(
        {
            "dataset": DATASET,
            "learner": CONFIG.to_dict(),
            "train": train_counts.to_dict(),
            "test": test_counts.to_dict(),
            "records_read": train_counts.records + test_counts.records,
            "dead_letters": train_counts.dead_letters + test_counts.dead_letters,
            "progressive_loss": summary["progressive_loss"],
            "heldout": parts["heldout"][0],
            "nonzero_weights": summary["nonzero_weights"],
        },
        facts,
    )
    write_atomically(text_path, (describe(report, CONFIG.bits) + "\n").encode("utf-8"))
    return report


def run_demo(options: PipelineOptions) -> dict:
    """Run the demo pipeline; its report is also written to ``report.json`` and ``report.txt``."""
    started = time.perf_counter()
    job = job_settings(options, "demo")
    out = os.path.abspath(job.output_dir)  # the workers write the report there
    train_path, test_path = datasets.write_split(DATASET, os.path.join(out, "data"), test_fraction=0.2)
    model_path = os.path.join(out, f"{DATASET}.model")
    dead_path = os.path.join(out, "dead_letters.jsonl")
    report_path = os.path.join(out, "report.json")
    with_default_runner(options)

    pipeline = beam.Pipeline(options=options)
    read = dict(bits=CONFIG.bits, seed=CONFIG.seed, labels=CONFIG.label_kind)
    reading = ReadExamples(train_path, format="libsvm", **read)
    train = pipeline | "ReadTrain" >> reading
    test = pipeline | "ReadTest" >> ReadExamples(test_path, format="libsvm", **read)
    models = (
        train.examples
        | "Train" >> Train(CONFIG, metadata={"input_format": "libsvm", "dataset": DATASET})
        | "RecordOrigin"
        >> RecordOrigin(
            reading,
            counts=train.counts,
            command="demo",
            runner=runner_name(options),
            options=given_options(job),
            started=time.time(),
        )
    )
    letters = (train.dead_letters, test.dead_letters) | "AllDeadLetters" >> beam.Flatten()
    parts = {
        "train_counts": train.counts,
        "test_counts": test.counts,
        "written": models | "WriteModel" >> WriteModel(model_path),
        "summary": models | "Summary" >> beam.Map(model_summary),
        "heldout": test.examples | "Evaluate" >> Evaluate(models),
        "dead_files": letters
        | "WriteDeadLetters" >> WriteDeadLetters(dead_path, file_name_suffix="", num_shards=1, shard_name_template=""),
    }
    facts = {**job_facts("demo", options, job, report_path), "model": model_path, "dead_letter_file": dead_path}
    facts["origin"]["inputs"] = [train_path, test_path]
    build = functools.partial(_demo_report, facts=facts, text_path=os.path.join(out, "report.txt"))
    pipeline | "Report" >> WriteReport(report_path, build, **parts)
    return launch(
        pipeline,
        options,
        facts,
        started=started,
        outputs={"model": model_path, "report_text": os.path.join(out, "report.txt")},
    )


def describe(report: dict, bits: int) -> str:
    """The demo report as text."""
    heldout = report["heldout"]
    return "\n".join(
        [
            "polybeam demo: logistic regression on UCI Spambase (bundled), 80/20 split, one pass, adaptive steps",
            f"runner:                 {report['runner']}",
            f"train:                  {_counts(report['train'])}",
            f"test:                   {_counts(report['test'])}",
            f"records read:           {report['records_read']}  (dead letters: {report['dead_letters']})",
            f"progressive val. loss:  {report['progressive_loss']:.4f}  (log loss, each example before it was learned)",
            f"held-out ({heldout['examples']} examples): log loss {heldout['loss']:.4f}, "
            f"error {heldout['error']:.4f}, AUC {heldout['auc']:.4f}",
            f"non-zero weights:       {report['nonzero_weights']} of {1 << bits} slots",
            f"model:                  {report['model']}",
            f"report:                 {report['report']}",
            f"wall time:              {report.get('wall_seconds', report['job_seconds']):.1f} s",
        ]
    )


def _counts(counts: dict) -> str:
    check = "ok" if counts["reconciles"] else "MISMATCH"
    return (
        f"{counts['records']} records = {counts['examples']} examples + {counts['dead_letters']} dead letters "
        f"+ {counts['skipped']} skipped ({check})"
    )
