"""The suite's sparsity protocol: binary tasks with 1000 random binary features, each method's strength swept.

For every ``NAME+random1000`` task and seed, each method learns on the
validation split's ``fit`` part at every strength of its grid (and without
sparsity), and is measured on ``valid``. The strength it reports is the
sparsest (most random features exactly 0) whose validation accuracy is at
least 99% of its own unregularised validation accuracy; that strength then
learns on ``train`` and is measured on ``test``: accuracy, its loss against
the unregularised model's test accuracy, and the share of the 1000 random
features whose weight is exactly 0. Every point of every sweep is kept, for
the accuracy-against-non-zeros curves.

Methods: polybeam's defaults with ``--gravity g`` (its default ``--sparsity``
for a gravity), VW ``--l1`` (logistic loss, its default rate), and
scikit-learn ``SGDClassifier(loss="log_loss", penalty="l1", alpha)`` on
standardised features.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time

import numpy as np
import runners
from harness import libsvm_to_vw, read_predictions, read_vw_model
from runners import Task

GRIDS = {  # each method's strengths: log grids wide enough to reach an empty model
    "polybeam": tuple(float(v) for v in np.logspace(-5, 0, 11)),
    "vw": tuple(float(v) for v in np.logspace(-8, -2, 13)),
    "sklearn": tuple(float(v) for v in np.logspace(-6, 0, 13)),
}
TOLERANCE = 0.01  # at most 1% (relative) accuracy lost against the same method without sparsity
RANDOM_FEATURES = 1000


def _accuracy(task: Task, labels, predictions) -> float:
    return 1.0 - runners.task_error(task, labels, predictions)


# -- one fit and measurement per method: (accuracy, weights of features 1..features) ----------


def polybeam_point(task: Task, train: str, test: str, strength: float | None) -> tuple[float, np.ndarray]:
    flags = runners.polybeam_flags(task) + ([] if strength is None else ["--gravity", repr(strength)])
    config = runners.polybeam_config(flags)
    model = runners.train_like_train(config, runners.read_batch(train, config))
    test_batch = runners.read_batch(test, config)
    weights = np.zeros(task.features + 1)
    slots, values = np.asarray(model.slots), np.asarray(model.weights)
    # LIBSVM indices below 2**bits are their own slots (polybeam hashes only larger ones).
    inside = (slots >= 1) & (slots <= task.features)
    weights[slots[inside]] = values[inside]
    return _accuracy(task, test_batch.labels, model.margins(test_batch)), weights[1:]


def vw_point(task: Task, train: str, test: str, strength: float | None) -> tuple[float, np.ndarray]:
    with tempfile.TemporaryDirectory() as scratch:
        # The default namespace, so that feature "i" hashes to slot i (as VW hashes numbers).
        train_vw = libsvm_to_vw(train, f"{scratch}/train.vw", namespace="")
        test_vw = libsvm_to_vw(test, f"{scratch}/test.vw", namespace="")
        model, readable, predictions = f"{scratch}/m", f"{scratch}/m.txt", f"{scratch}/p.txt"
        arguments = [
            "-d",
            train_vw,
            "-b",
            "18",
            "--loss_function",
            "logistic",
            "-f",
            model,
            "--readable_model",
            readable,
            "--quiet",
        ]
        if strength is not None:
            arguments += ["--l1", repr(strength)]
        subprocess.run([sys.executable, "-m", "vowpalwabbit", *arguments], check=True, capture_output=True)
        subprocess.run(
            [sys.executable, "-m", "vowpalwabbit", "-t", "-i", model, "-d", test_vw, "-p", predictions, "--quiet"],
            check=True,
            capture_output=True,
        )
        predicted = np.array(read_predictions(predictions))
        slots, l1_state = read_vw_model(readable)
    weights = np.zeros(task.features + 1)
    for slot, value in slots.items():
        if 1 <= slot <= task.features:
            weights[slot] = value
    # VW keeps its L1 as one accumulated amount and applies it when predicting: the weight in force.
    weights = np.sign(weights) * np.maximum(np.abs(weights) - l1_state, 0.0)
    return _accuracy(task, runners.read_labels(test), predicted), weights[1:]


def sklearn_point(task: Task, train: str, test: str, strength: float | None) -> tuple[float, np.ndarray]:
    from sklearn.linear_model import SGDClassifier
    from sklearn.preprocessing import StandardScaler

    train_x, train_y = runners.load_svmlight(train, task.features)
    test_x, test_y = runners.load_svmlight(test, task.features)
    scaler = StandardScaler(with_mean=False).fit(train_x)  # sparse: scaled, not centred
    model = SGDClassifier(
        loss="log_loss",
        penalty=None if strength is None else "l1",
        alpha=1e-4 if strength is None else strength,
        random_state=0,
    )
    model.fit(scaler.transform(train_x), train_y)
    return _accuracy(task, test_y, model.decision_function(scaler.transform(test_x))), model.coef_.ravel()


METHODS = {"polybeam": polybeam_point, "vw": vw_point, "sklearn": sklearn_point}


def random_zero_share(weights: np.ndarray) -> float:
    """The share of the last 1000 features (the random ones) whose weight is exactly 0."""
    return float(np.mean(weights[-RANDOM_FEATURES:] == 0.0))


def sweep(method: str, task: Task, split) -> dict:
    """One method on one split: the validation sweep, the chosen strength, its test figures."""
    point = METHODS[method]
    started = time.perf_counter()
    base_accuracy, base_weights = point(task, split.fit, split.valid, None)
    curve = []
    for strength in GRIDS[method]:
        accuracy, weights = point(task, split.fit, split.valid, strength)
        curve.append(
            {
                "strength": strength,
                "accuracy": accuracy,
                "nonzero": int(np.count_nonzero(weights)),
                "random_zero": random_zero_share(weights),
            }
        )
    good = [p for p in curve if p["accuracy"] >= (1 - TOLERANCE) * base_accuracy]
    chosen = max(good, key=lambda p: (p["random_zero"], -p["nonzero"]))["strength"] if good else None
    test_base, _ = point(task, split.train, split.test, None)
    test_accuracy, test_weights = point(task, split.train, split.test, chosen)
    return {
        "validation": {"unregularised": base_accuracy, "nonzero": int(np.count_nonzero(base_weights)), "curve": curve},
        "chosen": chosen,
        "test": {
            "unregularised": test_base,
            "accuracy": test_accuracy,
            "loss": (test_base - test_accuracy) / test_base if test_base else 0.0,
            "nonzero": int(np.count_nonzero(test_weights)),
            "random_zero": random_zero_share(test_weights),
        },
        "seconds": time.perf_counter() - started,
    }


def summarise(runs: list[dict]) -> dict:
    """Mean test figures over seeds, and whether the target holds: >= 90% random zero at <= 1% loss."""
    random_zero = float(np.mean([r["test"]["random_zero"] for r in runs]))
    loss = float(np.mean([r["test"]["loss"] for r in runs]))
    return {
        "random_zero": random_zero,
        "accuracy_loss": loss,
        "accuracy": float(np.mean([r["test"]["accuracy"] for r in runs])),
        "nonzero": float(np.mean([r["test"]["nonzero"] for r in runs])),
        "meets_target": random_zero >= 0.9 and loss <= TOLERANCE,
    }


def plot_curves(results: dict, path: str) -> None:
    """Validation accuracy against non-zero weights, per task (seed 0), one curve per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = sorted(results)
    columns = 4
    rows = (len(names) + columns - 1) // columns
    figure, axes = plt.subplots(rows, columns, figsize=(4 * columns, 3 * rows), squeeze=False)
    for axis, name in zip(axes.ravel(), names):
        for method, runs in results[name]["runs"].items():
            curve = runs[0]["validation"]["curve"]
            axis.plot([p["nonzero"] for p in curve], [p["accuracy"] for p in curve], marker=".", label=method)
        axis.set(title=name, xlabel="non-zero weights", ylabel="validation accuracy", xscale="symlog")
        axis.legend(fontsize=7)
    for axis in axes.ravel()[len(names) :]:
        axis.set_visible(False)
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)
