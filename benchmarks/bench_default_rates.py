"""Which default learning rate should the adaptive step use, per loss?

For each loss and each eta in a grid, one pass of the default (normalised
adaptive, safe-update) learner on:

* the four bundled data sets as binary tasks, mean held-out 0-1 error over
  ``--splits`` seeded 80/20 splits;
* the spine benchmark's planted-polynomial synthetic data (``--examples``,
  default 1M), progressive loss;
* softmax loss: the three bundled multiclass data sets (letter, satellite,
  dna) with their own classes, mean held-out 0-1 error over the same splits.
  The rule, fixed before measuring: the rate with the lowest error averaged
  over the three data sets.

It prints a table and writes ``benchmarks/results/default_rates.{json,md}``;
``polybeam.learners.config.DEFAULT_LEARNING_RATES`` records the choice.

Run: ``python benchmarks/bench_default_rates.py [--splits 10] [--examples 1000000]``
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile

import numpy as np

from polybeam import datasets
from polybeam.datasets.synthetic import PlantedPolynomial
from polybeam.formats.libsvm import LibsvmFormat
from polybeam.learners.config import DEFAULT_LEARNING_RATES, LearnerConfig
from polybeam.learners.evaluation import Evaluation
from polybeam.learners.linear import LinearLearner

RATES = (0.25, 0.5, 1.0, 2.0)
LOSSES = ("logistic", "hinge", "squared")
REAL = ("spam", "letter", "satellite", "dna")
MULTICLASS = {"letter": 26, "satellite": 6, "dna": 3}
HERE = os.path.dirname(os.path.abspath(__file__))


def read_splits(folder: str, splits: int, classes: dict[str, int] | None = None) -> dict:
    """``name -> [(train, test) batches per seed]``: the binary tasks of REAL, or with ``classes``
    (name -> number of classes) those data sets with their own classes."""
    found = {}
    for name in classes or REAL:
        parser = LibsvmFormat(labels="multiclass", classes=classes[name]) if classes else LibsvmFormat()
        found[name] = []
        for seed in range(splits):
            folder_of_seed = os.path.join(folder, f"{name}{seed}{'' if classes else '.binary'}")
            train, test = datasets.write_split(name, folder_of_seed, seed=seed, binary=not classes)
            with open(train, "rb") as a, open(test, "rb") as b:
                found[name].append((parser.parse(a.read()).batch, parser.parse(b.read()).batch))
    return found


def mean_error(config: LearnerConfig, pairs: list) -> float:
    """Held-out 0-1 error of one pass of ``config`` on each (train, test) pair, averaged."""
    return float(
        np.mean(
            [
                Evaluation.of(LinearLearner(config).fit(train).to_model(), [test]).result()["error"]
                for train, test in pairs
            ]
        )
    )


def softmax_rows(splits: dict) -> list[dict]:
    rows = []
    for rate in RATES:
        row = {"loss": "softmax", "learning_rate": rate}
        for name, pairs in splits.items():
            row[name] = mean_error(LearnerConfig(loss="softmax", classes=MULTICLASS[name], learning_rate=rate), pairs)
        row["mean"] = float(np.mean([row[name] for name in splits]))
        rows.append(row)
        print(json.dumps(row))
    return rows


def synthetic_batches(examples: int, batch_size: int = 4096):
    # The same examples, in the same order, as the spine benchmark's file.
    return [
        block.slice(start, min(start + batch_size, len(block))).to_batch()
        for block in PlantedPolynomial(seed=0).blocks(examples)
        for start in range(0, len(block), batch_size)
    ]


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=10)
    parser.add_argument("--examples", type=int, default=1_000_000)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as scratch:
        real = read_splits(scratch, args.splits)
        multiclass = read_splits(scratch, args.splits, MULTICLASS)
    synthetic = synthetic_batches(args.examples) if args.examples else []
    rows = []
    for loss in LOSSES:
        for rate in RATES:
            config = LearnerConfig(loss=loss, learning_rate=rate)
            row = {"loss": loss, "learning_rate": rate}
            for name, pairs in real.items():
                row[name] = mean_error(config, pairs)
            if synthetic:
                learner = LinearLearner(config)
                for batch in synthetic:
                    learner.learn(batch)
                row["synthetic_progressive_loss"] = learner.progressive_loss
            rows.append(row)
            print(json.dumps(row))

    multiclass_rows = softmax_rows(multiclass)
    columns = list(REAL) + (["synthetic_progressive_loss"] if synthetic else [])
    lines = [
        "# Default learning rate of the adaptive step, per loss",
        "",
        f"Mean held-out 0-1 error over {args.splits} seeded 80/20 splits (binary tasks) and, for the "
        f"{args.examples} planted-polynomial examples, progressive loss; one pass, normalised adaptive steps, "
        "safe updates. Chosen defaults: " + ", ".join(f"{k} {v}" for k, v in DEFAULT_LEARNING_RATES.items()) + ".",
        "",
        "| loss | eta | " + " | ".join(columns) + " |",
        "|---|---|" + "---|" * len(columns),
    ]
    for row in rows:
        mark = " (default)" if DEFAULT_LEARNING_RATES[row["loss"]] == row["learning_rate"] else ""
        lines.append(
            f"| {row['loss']} | {row['learning_rate']}{mark} | " + " | ".join(f"{row[c]:.4f}" for c in columns) + " |"
        )
    best = min(multiclass_rows, key=lambda row: row["mean"])["learning_rate"]
    lines += [
        "",
        "Softmax loss on the bundled multiclass data sets with their own classes (same splits; the rule: "
        f"the lowest mean error over the three). Best: {best:g}.",
        "",
        "| loss | eta | " + " | ".join(MULTICLASS) + " | mean |",
        "|---|---|" + "---|" * (len(MULTICLASS) + 1),
    ]
    for row in multiclass_rows:
        mark = " (default)" if DEFAULT_LEARNING_RATES["softmax"] == row["learning_rate"] else ""
        values = [row[name] for name in MULTICLASS] + [row["mean"]]
        lines.append(f"| softmax | {row['learning_rate']}{mark} | " + " | ".join(f"{v:.4f}" for v in values) + " |")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "default_rates.json"), "w") as handle:
        json.dump(rows + multiclass_rows, handle, indent=2)
    with open(os.path.join(HERE, "results", "default_rates.md"), "w") as handle:
        handle.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return {"rows": rows}


if __name__ == "__main__":
    main()
