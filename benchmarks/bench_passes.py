"""Passes on small data: what each pass costs and how close the passes come to the batch optimum.

For scikit-learn's bundled classification sets (unscaled numeric columns,
no download), split 80/20 by a seeded shuffle, in one run:

* ``Train`` with 1, 5 and 20 passes, as streaming Beam passes (a stage per
  pass) and in one worker's memory (``in_memory=True``): seconds of the whole
  pipeline on the local runner, held-out error and log loss (the two learn
  the same model: the table says so);
* scikit-learn's ``LogisticRegression`` (its default C=1, on the same hashed
  features as polybeam reads them, and on standardised columns): the batch
  optimum the passes are measured against, and its seconds.

``python benchmarks/bench_passes.py`` writes ``benchmarks/results/passes.{json,md}``.
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import numpy as np  # noqa: E402
from harness import machine_info, markdown_table, write_report  # noqa: E402

PASSES = (1, 5, 20)
DATASETS = ("wine", "breast_cancer", "digits", "iris")


def load(name: str, seed: int):
    """``(train, test)`` ExampleBatches of a bundled scikit-learn set (features x1..xd, labels 1..K or +-1)."""
    from sklearn import datasets as sk

    from polybeam.learners.batch import ExampleBatch

    frame = getattr(sk, f"load_{name}")()
    x, y = frame.data, frame.target
    classes = int(y.max()) + 1
    labels = np.where(y == 1, 1.0, -1.0) if classes == 2 else y + 1.0
    order = np.random.default_rng(seed).permutation(len(y))
    cut = int(round(0.8 * len(y)))

    def batch(rows):
        return ExampleBatch.from_rows(
            [(labels[i], {j + 1: float(v) for j, v in enumerate(x[i]) if v != 0.0}) for i in rows], bits=14
        )

    return batch(order[:cut]), batch(order[cut:]), classes


def train(batch, settings: dict, in_memory: bool):
    """The model ``Train`` learns on the batch on the local runner, and the pipeline's seconds."""
    import apache_beam as beam

    from polybeam.transforms.train import Train

    folder = tempfile.mkdtemp()

    def save(model, folder=folder):
        with open(os.path.join(folder, uuid.uuid4().hex), "wb") as handle:
            pickle.dump(model, handle)

    started = time.perf_counter()
    with beam.Pipeline(runner="FnApiRunner") as p:
        _ = p | beam.Create([batch]) | Train(in_memory=in_memory, **settings) | beam.Map(save)
    seconds = time.perf_counter() - started
    (name,) = os.listdir(folder)
    return pickle.loads(Path(folder, name).read_bytes()), seconds


def scores(model, test, classes: int) -> tuple[float, float]:
    """Held-out error and mean log loss."""
    margins = model.margins(test)
    labels = test.labels
    if classes == 2:
        error = float(np.mean(np.where(margins > 0, 1.0, -1.0) != labels))
        return error, float(np.mean(np.logaddexp(0.0, -labels * margins)))
    shifted = margins - margins.max(axis=1, keepdims=True)
    log_norm = np.log(np.exp(shifted).sum(axis=1))
    true = labels.astype(int) - 1
    error = float(np.mean(np.argmax(margins, axis=1) != true))
    return error, float(np.mean(log_norm - shifted[np.arange(len(true)), true]))


def batch_optimum(train_batch, test, classes: int, standardise: bool) -> dict:
    import scipy.sparse as sparse
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    x_train, x_test = train_batch.to_csr(), test.to_csr()
    width = max(x_train.shape[1], x_test.shape[1])
    x_train, x_test = (sparse.csr_matrix(x, shape=(x.shape[0], width)) for x in (x_train, x_test))
    used = np.union1d(x_train.indices, x_test.indices)  # (the hashed slots the data touches, not 2**bits)
    x_train, x_test = x_train[:, used].toarray(), x_test[:, used].toarray()
    if standardise:
        scaler = StandardScaler().fit(x_train)
        x_train, x_test = scaler.transform(x_train), scaler.transform(x_test)
    started = time.perf_counter()
    fitted = LogisticRegression(max_iter=5000).fit(x_train, train_batch.labels)
    seconds = time.perf_counter() - started
    probabilities = np.clip(fitted.predict_proba(x_test), 1e-15, 1.0)
    index = np.searchsorted(fitted.classes_, test.labels)
    return {
        "error": float(np.mean(fitted.predict(x_test) != test.labels)),
        "log_loss": float(np.mean(-np.log(probabilities[np.arange(len(index)), index]))),
        "seconds": seconds,
    }


def run(names, seed: int) -> dict:
    results = {}
    for name in names:
        train_batch, test, classes = load(name, seed)
        settings = {"loss": "logistic" if classes == 2 else "softmax", "bits": 14}
        if classes > 2:
            settings["classes"] = classes
        rows = {}
        for passes in PASSES:
            for in_memory in (False, True):
                model, seconds = train(train_batch, {**settings, "passes": passes}, in_memory)
                error, log_loss = scores(model, test, classes)
                rows[f"{passes} {'in memory' if in_memory else 'streaming'}"] = {
                    "error": error,
                    "log_loss": log_loss,
                    "seconds": seconds,
                    "weights": model.weights,
                }
            same = np.array_equal(
                rows[f"{passes} in memory"].pop("weights"), rows[f"{passes} streaming"].pop("weights")
            )
            rows[f"{passes} in memory"]["same_model"] = same
        rows["LogisticRegression (hashed)"] = batch_optimum(train_batch, test, classes, False)
        rows["LogisticRegression (standardised)"] = batch_optimum(train_batch, test, classes, True)
        results[name] = {"rows": len(train_batch), "classes": classes, "runs": rows}
        print(f"{name}: " + ", ".join(f"{k} {v['log_loss']:.4f}" for k, v in rows.items()), flush=True)
    return results


def render(results: dict, seed: int) -> str:
    lines = [
        "# Passes on small data",
        "",
        f"`python benchmarks/bench_passes.py` (seed {seed}): held-out error / log loss / seconds of the whole "
        "local pipeline; in memory and streaming learn the same model where the last column says so.",
        "",
    ]
    for name, result in results.items():
        lines += [f"## {name} ({result['rows']} training rows, {result['classes']} classes)", ""]
        table = [
            [
                run,
                f"{row['error']:.4f}",
                f"{row['log_loss']:.4f}",
                f"{row['seconds']:.2f}",
                {True: "same model", False: "DIFFERENT"}.get(row.get("same_model"), ""),
            ]
            for run, row in result["runs"].items()
        ]
        lines += [markdown_table(["run", "error", "log loss", "seconds", ""], table), ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", default=str(HERE / "results"))
    parser.add_argument("--only", default=",".join(DATASETS), help="comma-separated sets (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    results = run(args.only.split(","), args.seed)
    report = {"machine": machine_info(), "seed": args.seed, "results": results}
    write_report(args.results, "passes", report, render(results, args.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
