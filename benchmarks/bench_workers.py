"""Many workers against one learner with the defaults: the held-out loss of N workers' averages, finished.

What ``polybeam train --learners N`` runs (``Train.Globally(in_memory=True,
learners=N)``), in plain Python: every one of 5 passes learned as N workers
learn it (N contiguous shares of the training examples, a learner each, fresh
in pass 1 and a copy of the last average after, averaged by the learners' merge:
:mod:`polybeam.learners.mixing`), the holdout judging each pass; then, as the
defaults do when each pass is averaged from more than two learners, the L-BFGS
finishing stage (:func:`polybeam.learners.lbfgs.finishing_plan`: its passes, its
L2 chosen on the holdout, the average kept when it does no better there).
Against one learner with the same defaults (N = 1: no finishing), on held-out
examples nobody trained on, in the same run. The seconds the finishing stage
adds are printed, with the online passes' for scale.

The protocol, fixed before anything was tuned: logistic loss, every other
setting polybeam's default, 5 passes, N = 1, 64, 256, two planted tasks of
``polybeam.datasets.synthetic.PlantedPolynomial`` (300,000 training examples,
the next 100,000 held out, batches of 4096 rows):

* ``dense``: 2,000 features at 18 bits: every worker's share holds nearly
  every feature (the share of (worker, feature) pairs where the worker saw the
  feature is printed);
* ``sparse``: 500,000 features at 20 bits, each in about 30 training
  examples: most workers never see most features.

Targets: 64 workers within 1% of one learner's held-out log loss on both tasks,
256 within 2%.

Run: ``python benchmarks/bench_workers.py [--tasks dense,sparse] [--workers 1,64,256] [--passes 5]
[--examples 300000] [--test-examples 100000] [--quick] [--results DIR]``. Writes
``results/workers.{json,md}``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from harness import load_average, machine_info, markdown_table, write_report  # noqa: E402

from polybeam.datasets.synthetic import PlantedPolynomial  # noqa: E402
from polybeam.learners import lbfgs, mixing  # noqa: E402
from polybeam.learners.config import LearnerConfig  # noqa: E402
from polybeam.learners.evaluation import Evaluation  # noqa: E402
from polybeam.learners.fitting import train_passes  # noqa: E402
from polybeam.learners.polynomial import make_learner  # noqa: E402

BATCH_ROWS = 4096
TASKS = {
    "dense": {"features": 2_000, "bits": 18},
    "sparse": {"features": 500_000, "bits": 20},
}
TARGETS = {64: 1.01, 256: 1.02}


def make_task(name: str, examples: int, test_examples: int, seed: int = 0):
    """``(training batches, held-out batch, bits)`` of task ``name``."""
    task = TASKS[name]
    rows = PlantedPolynomial(features=task["features"], seed=seed).generate(examples + test_examples)
    train = rows.slice(0, examples).to_batch(task["bits"])
    test = rows.slice(examples, examples + test_examples).to_batch(task["bits"])
    batches = [train.rows_between(start, min(start + BATCH_ROWS, examples)) for start in range(0, examples, BATCH_ROWS)]
    return batches, test, task["bits"]


def seen_share(batches, workers: int) -> float:
    """The share of (worker, feature) pairs where the worker's share of the examples holds the feature,
    over the features the training examples hold."""
    seen, features = 0, set()
    for share in mixing.shares(batches, workers):
        held = np.unique(np.concatenate([batch.indices for batch in share])) if share else np.array([])
        seen += len(held)
        features.update(held.tolist())
    return seen / (workers * max(len(features), 1))


def held_out_loss(model, test) -> float:
    return float(Evaluation.of(model, [test]).result()["loss"])


def run_workers(batches, test, bits: int, workers: int, passes: int) -> dict:
    """The defaults with ``workers`` learners a pass: the average, then the finishing stage when they call
    for it."""
    config = LearnerConfig(loss="logistic", bits=bits, passes=passes)
    started = time.perf_counter()
    learner = train_passes(make_learner(config), batches, passes, learners=workers)
    average = learner.to_model()
    online_seconds = time.perf_counter() - started
    finishing, why = lbfgs.finishing_plan(config, workers)
    why = why if why is not None else lbfgs.averaged_why(average)
    finishing = finishing if why is not None else 0
    row = {
        "workers": workers,
        "lbfgs_passes": finishing,
        "why": why or "each pass learned by one or two learners: the average is kept",
        "average_loss": held_out_loss(average, test),
        "online_seconds": online_seconds,
        "pass_kept": learner.selection_.best_pass,
    }
    final = average
    if finishing:
        started = time.perf_counter()
        final = lbfgs.finish(
            average, batches, finishing, config.lbfgs_l2, period=config.holdout_period, seed=config.seed, why=why
        )
        row["finishing_seconds"] = time.perf_counter() - started
        summary = final.metadata["lbfgs"]
        row.update(kept=summary["kept"], l2=summary["l2"])
    row["loss"] = held_out_loss(final, test)
    return row


def run(args) -> dict:
    started = time.time()
    report = {
        "machine": machine_info(),
        "load_average_start": load_average(),
        "protocol": {
            "examples": args.examples,
            "test_examples": args.test_examples,
            "passes": args.passes,
            "workers": args.workers,
            "tasks": {name: TASKS[name] for name in args.tasks},
            "targets": {str(k): v for k, v in TARGETS.items()},
        },
        "tasks": {},
    }
    for name in args.tasks:
        batches, test, bits = make_task(name, args.examples, args.test_examples)
        rows = []
        for workers in args.workers:
            row = run_workers(batches, test, bits, workers, args.passes)
            row["seen_share"] = seen_share(batches, workers) if workers > 1 else 1.0
            rows.append(row)
            print(f"{name} N={workers}: {row}", file=sys.stderr, flush=True)
        one = next((row["loss"] for row in rows if row["workers"] == 1), None)
        for row in rows:
            row["ratio"] = row["loss"] / one if one else None
            row["average_ratio"] = row["average_loss"] / one if one else None
        report["tasks"][name] = rows
    report["load_average_end"] = load_average()
    report["seconds"] = time.time() - started
    return report


def verdicts(report: dict) -> list[list]:
    out = []
    for name, rows in report["tasks"].items():
        for row in rows:
            goal = TARGETS.get(row["workers"])
            if goal is None or row["ratio"] is None:
                continue
            verdict = "met" if row["ratio"] <= goal else "not met"
            out.append([f"{name}, {row['workers']} workers x {report['protocol']['passes']} passes",
                        f"{row['ratio']:.4f}", f"<= {goal}", verdict])  # fmt: skip
    return out


def render(report: dict) -> str:
    protocol = report["protocol"]
    lines = [
        "# Many workers against one learner, with the defaults",
        "",
        f"Measured by `benchmarks/bench_workers.py` on {report['machine'].get('cpus', '?')} CPUs (load average "
        f"{report['load_average_start']} at the start, {report['load_average_end']} at the end; a shared machine, "
        f"so seconds are indicative). {protocol['examples']:,} training examples, {protocol['test_examples']:,} "
        f"held out, logistic loss, every other setting the default, {protocol['passes']} passes, each learned as "
        "N workers would (`polybeam train --learners N`); averages of more than two learners then get the L-BFGS "
        f"finishing stage the defaults run. Full run: {report['seconds'] / 60:.1f} minutes.",
        "",
        "## Targets",
        "",
        markdown_table(["target", "held-out log loss / one learner's", "goal", "verdict"], verdicts(report)),
        "",
    ]
    for name, rows in report["tasks"].items():
        task = protocol["tasks"][name]
        lines += [
            f"## {name}: {task['features']:,} features, {task['bits']} bits",
            "",
            "loss: held-out log loss of the model the defaults return; average: of the workers' average before "
            "the finishing stage; seen: share of (worker, feature) pairs where the worker's share holds the "
            "feature; seconds: the online passes, and what the finishing stage adds.",
            "",
            markdown_table(
                [
                    "N",
                    "seen",
                    "average",
                    "average / one",
                    "finishing",
                    "kept (L2)",
                    "loss",
                    "loss / one",
                    "online s",
                    "finishing adds s",
                ],  # fmt: skip
                [
                    [
                        row["workers"],
                        f"{row['seen_share']:.2f}",
                        f"{row['average_loss']:.4f}",
                        f"{row['average_ratio']:.4f}",
                        f"{row['lbfgs_passes']} passes" if row["lbfgs_passes"] else row["why"],
                        f"{row['kept']} ({row['l2']})" if row.get("kept") else "",
                        f"{row['loss']:.4f}",
                        f"{row['ratio']:.4f}",
                        f"{row['online_seconds']:.1f}",
                        f"{row['finishing_seconds']:.1f}" if row.get("finishing_seconds") is not None else "",
                    ]
                    for row in rows
                ],
            ),
            "",
        ]
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="dense,sparse")
    parser.add_argument("--workers", default=None, help="default 1,64,256 (--quick: 1,8)")
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--examples", type=int, default=300_000)
    parser.add_argument("--test-examples", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="a check in seconds: 20k examples, N = 1 and 8")
    parser.add_argument("--results", default=os.path.join(HERE, "results"))
    parser.add_argument("--stem", default="workers")
    args = parser.parse_args(argv)
    if args.quick:
        args.examples, args.test_examples, args.stem = 20_000, 5_000, "workers_quick"
    if args.workers is None:
        args.workers = "1,8" if args.quick else "1,64,256"
    args.tasks = [name for name in args.tasks.split(",") if name]
    args.workers = [int(n) for n in str(args.workers).split(",") if n]
    report = run(args)
    text = render(report)
    write_report(args.results, args.stem, report, text)
    print(text)
    return report


if __name__ == "__main__":
    main()
