"""Examples in the order they come: what sorted labels cost an online learner, how train's warning tells
them, and how much a shuffle buffer gives back.

Three measurements (see docs/order.md):

* **the warning's statistic** (:class:`polybeam.learners.label_order.LabelOrder`) on the bundled data in
  file order, and on every task of the benchmark suite (``benchmarks/suite``, its cache built by
  ``suite_data.py``): in the source's order, in the training files the suite trains on (seeds 0-2, as
  ``splits.make_split`` shuffles them), and sorted by label, in batches of 256, 1,000 and 4,096
  examples (the readers' batches). A false alarm is a training file it calls sorted; a miss, a sorted one
  it does not;
* **the shuffle buffer**: ``polybeam train`` on letter recognition (16,000 training examples, 26
  classes) sorted by label, and on the same sorted examples 20 times over (320,000), through
  ``--shuffle-buffer`` of several sizes: held-out error, and what the statistic says of the examples as
  the first pass learned them;
* **the scikit-learn estimators** on scikit-learn's digits and breast cancer sorted by label: in the
  given order (``shuffle=False``), shuffled (``random_state`` 0-7), and SGDClassifier.

Writes ``results/label_order.{json,md}``.

Run: ``python benchmarks/bench_label_order.py [--cache benchmarks/suite/cache] [--results DIR]``
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import io
import json
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from harness import machine_info, markdown_table, write_report  # noqa: E402

from polybeam import datasets  # noqa: E402
from polybeam.learners.label_order import LabelOrder  # noqa: E402

BATCHES = (256, 1000, 4096)
SEEDS = (0, 1, 2)
TEST_SHARE = 0.2  # (splits.py's)
BUFFERS = (0, 2000, 4000, 6000, 8000, 16000)
# The same sorted examples 20 times over (320,000): the buffers a larger input needs.
REPEATS = 20
REPEATED_BUFFERS = (0, 2000, 4000, 8000, 30000)


def order_of(labels: np.ndarray, batch: int) -> LabelOrder:
    order = LabelOrder()
    for start in range(0, len(labels), batch):
        order.add(labels[start : start + batch])
    return order


def libsvm_labels(path: str) -> np.ndarray:
    with open(path, "rb") as handle:
        return np.array([float(line.split(None, 1)[0]) for line in handle if line.strip()])


def statistic_rows(cache: str | None) -> list[dict]:
    """One row per (data, order, batch size)."""
    inputs = [
        ("bundled", name, "file order", datasets.load(name).labels) for name in ("spam", "dna", "letter", "satellite")
    ]
    tasks = sorted(glob.glob(os.path.join(cache, "*", "data.libsvm"))) if cache else []
    for path in tasks:
        name = os.path.basename(os.path.dirname(path))
        if "+random" in name:  # (the same labels as the task's)
            continue
        labels = libsvm_labels(path)
        inputs.append(("suite", name, "source order", labels))
        n_train = len(labels) - int(round(TEST_SHARE * len(labels)))
        for seed in SEEDS:
            rows = np.random.default_rng(seed).permutation(len(labels))[:n_train]
            inputs.append(("suite", name, f"training file, seed {seed}", labels[rows]))
        inputs.append(("suite", name, "sorted", np.sort(labels, kind="stable")))
    rows = []
    for source, name, order_name, labels in inputs:
        for batch in BATCHES:
            order = order_of(labels, batch)
            rows.append(
                {
                    "source": source,
                    "data": name,
                    "order": order_name,
                    "batch": batch,
                    **order.to_dict(),
                    "runs": order.runs,
                    "drifting": order.drifting,
                    "monotone": order.monotone,
                }
            )
    return rows


def statistic_summary(rows: list[dict]) -> dict:
    """Per kind of order: how many inputs, which the statistic calls sorted, and the figures nearest its
    thresholds (for random orders: the lowest change ratio where at least 50 changes are expected, and the
    highest drift)."""
    from polybeam.learners.label_order import MIN_EXPECTED_CHANGES

    def kind(row):
        return "random" if row["order"].startswith("training file") or row["source"] == "bundled" else row["order"]

    summary = {}
    for name in ("random", "source order", "sorted"):
        chosen = [row for row in rows if kind(row) == name]
        if not chosen:
            continue
        judged = [row for row in chosen if row["expected_changes"] >= MIN_EXPECTED_CHANGES]
        summary[name] = {
            "inputs": len(chosen),
            "called sorted": sum(row["sorted"] for row in chosen),
            "data called sorted": sorted({row["data"] for row in chosen if row["sorted"]}),
            "data not called sorted": sorted({row["data"] for row in chosen if not row["sorted"]}),
            "lowest change ratio": min((row["change_ratio"] for row in judged), default=None),
            "highest drift": max((row["drift"] for row in chosen if row["drift"] is not None), default=None),
        }
    return summary


def cli(*argv) -> dict:
    from polybeam.pipelines.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main([str(arg) for arg in argv])
    if code != 0:
        raise RuntimeError(f"polybeam {' '.join(map(str, argv))} exited {code}")
    return json.loads(out.getvalue().strip().splitlines()[-1])


def buffer_rows(folder: str) -> list[dict]:
    """``polybeam train`` on letter sorted by label through shuffle buffers of several sizes."""
    lines = datasets.lines("letter")
    train, test = lines[:16000], lines[16000:]
    labels = np.array([float(line.split(None, 1)[0]) for line in train])
    paths = {"sorted": os.path.join(folder, "sorted.libsvm"), "file order": os.path.join(folder, "train.libsvm")}
    with open(paths["sorted"], "wb") as handle:
        handle.writelines(train[i] for i in np.argsort(labels, kind="stable"))
    with open(paths["file order"], "wb") as handle:
        handle.writelines(train)
    paths["sorted, 20 times over"] = os.path.join(folder, "repeated.libsvm")
    with open(paths["sorted, 20 times over"], "wb") as handle:
        for _ in range(REPEATS):
            handle.writelines(train[i] for i in np.argsort(labels, kind="stable"))
    test_path = os.path.join(folder, "test.libsvm")
    with open(test_path, "wb") as handle:
        handle.writelines(test)
    runs = [("file order", 0)] + [("sorted", size) for size in BUFFERS]
    runs += [("sorted, 20 times over", size) for size in REPEATED_BUFFERS]
    rows = []
    for order, size in runs:
        model = os.path.join(folder, f"{order.replace(' ', '_')}-{size}.model")
        started = time.perf_counter()
        report = cli("train", "--input", paths[order], "--model", model, "--loss", "softmax", "--classes", "26",
                     "--shuffle-buffer", size, "--quiet")  # fmt: skip
        seconds = time.perf_counter() - started
        evaluation = cli("evaluate", "--input", test_path, "--model", model)
        rows.append(
            {
                "order": order,
                "shuffle_buffer": size,
                "error": evaluation["error"],
                "change_ratio": report["label_order"]["change_ratio"],
                "drift": report["label_order"]["drift"],
                "warned": bool(report["warnings"]),
                "reconciles": report["reconciles"],
                "seconds": round(seconds, 2),
            }
        )
    return rows


def estimator_rows() -> list[dict]:
    from sklearn import datasets as sklearn_datasets
    from sklearn.linear_model import SGDClassifier
    from sklearn.model_selection import train_test_split

    from polybeam.sklearn import PolybeamClassifier

    rows = []
    for loader in ("load_digits", "load_breast_cancer"):
        X, y = getattr(sklearn_datasets, loader)(return_X_y=True)
        X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
        order = np.argsort(y_train, kind="stable")
        X_sorted, y_sorted = X_train[order], y_train[order]
        with contextlib.suppress(Warning), np.errstate(all="ignore"):
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                given = PolybeamClassifier(shuffle=False).fit(X_sorted, y_sorted).score(X_test, y_test)
        shuffled = [
            PolybeamClassifier(random_state=seed).fit(X_sorted, y_sorted).score(X_test, y_test) for seed in range(8)
        ]
        sgd = [SGDClassifier(random_state=seed).fit(X_sorted, y_sorted).score(X_test, y_test) for seed in range(8)]
        rows.append(
            {
                "data": loader.removeprefix("load_"),
                "in the sorted order": round(given, 3),
                "shuffled (random_state 0-7)": f"{min(shuffled):.3f}-{max(shuffled):.3f}",
                "SGDClassifier (random_state 0-7)": f"{min(sgd):.3f}-{max(sgd):.3f}",
            }
        )
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", default=os.path.join(HERE, "suite", "cache"), help="the suite's data cache")
    parser.add_argument("--results", default=os.path.join(HERE, "results"))
    args = parser.parse_args(argv)
    cache = args.cache if os.path.isdir(args.cache) else None
    if cache is None:
        print(f"no suite cache at {args.cache}: the bundled data only (build it with suite/suite_data.py)")
    statistics = statistic_rows(cache)
    summary = statistic_summary(statistics)
    with tempfile.TemporaryDirectory() as folder:
        buffers = buffer_rows(folder)
    estimators = estimator_rows()
    report = {
        "machine": machine_info(),
        "suite_cache": cache,
        "statistic": statistics,
        "statistic_summary": summary,
        "shuffle_buffer": buffers,
        "estimators": estimators,
    }
    lines = ["# Label order: the warning's statistic, the shuffle buffer, the estimators", ""]
    lines += ["## The statistic (no false alarm on random orders, no miss on sorted ones)", ""]
    lines.append(
        markdown_table(
            [
                "orders",
                "inputs",
                "called sorted",
                "data called sorted",
                "data not called sorted",
                "lowest change ratio",
                "highest drift",
            ],
            [
                [
                    name,
                    entry["inputs"],
                    entry["called sorted"],
                    ", ".join(entry["data called sorted"]) or "none",
                    ", ".join(entry["data not called sorted"]) if name != "random" else "",
                    entry["lowest change ratio"],
                    entry["highest drift"],
                ]
                for name, entry in summary.items()
            ],
        )  # fmt: skip
    )
    lines += [
        "",
        "(random: the bundled data in file order and the suite's training files; batches of "
        + ", ".join(map(str, BATCHES))
        + " examples; lowest change ratio where 50 or more changes are expected. The warning fires below a "
        "change ratio of 0.5 or above a drift of 1/3.)",
    ]
    lines += ["", "## Letter sorted by label through `--shuffle-buffer` (held-out error, one pass)", ""]
    lines.append(
        markdown_table(
            ["order", "--shuffle-buffer", "error", "change ratio", "drift", "warned", "reconciles", "seconds"],
            [
                [
                    row[name]
                    for name in (
                        "order",
                        "shuffle_buffer",
                        "error",
                        "change_ratio",
                        "drift",
                        "warned",
                        "reconciles",
                        "seconds",
                    )
                ]
                for row in buffers
            ],
        )  # fmt: skip
    )
    lines += ["", "## scikit-learn estimators on data sorted by label (held-out accuracy)", ""]
    lines.append(markdown_table(list(estimators[0]), [list(row.values()) for row in estimators]))
    write_report(args.results, "label_order", report, "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
