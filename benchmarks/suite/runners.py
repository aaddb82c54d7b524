"""The suite's learners: polybeam as its command line configures it, Vowpal Wabbit and scikit-learn.

Each runner learns on one LIBSVM file and measures on another, and returns
``{"error": ..., "seconds": ...}`` (plus what it chose): held-out 0-1 error
for binary and multiclass tasks, MSE over the test labels' variance
("relative MSE") for regression (:func:`task_error`).

polybeam runs in this process with the configuration ``polybeam train``
builds from the same flags (``learner_config`` over Beam's option parser),
and learns as ``Train`` does with one learner: one bundle, every pass over the
file in order, apple's epochs spaced over all passes when there are several.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import numpy as np

VW_RATES = (0.1, 0.5, 1.0, 2.0)
# RidgeCV's penalties (issue 22's added regression peer): a log grid wide enough that the chosen one is inside.
RIDGE_ALPHAS = tuple(10.0**k for k in range(-3, 5))


@dataclass(frozen=True)
class Task:
    """What a data set asks of a learner (from its ``meta.json``)."""

    name: str
    kind: str  # binary, multiclass, regression
    classes: int | None
    features: int

    @classmethod
    def of(cls, meta: dict) -> Task:
        return cls(meta["name"], meta["task"], meta.get("classes"), int(meta["features"]))


def task_error(task: Task, labels: np.ndarray, predictions: np.ndarray) -> float:
    """0-1 error of predicted labels (binary: the sign of a score), or relative MSE of values.

    >>> task_error(Task("t", "binary", None, 1), np.array([1., -1, 1]), np.array([0.3, 0.2, -2]))
    0.6666666666666666
    >>> task_error(Task("t", "regression", None, 1), np.array([0., 2]), np.array([1., 1]))
    1.0
    """
    labels = np.asarray(labels, dtype=float)
    predictions = np.asarray(predictions, dtype=float)
    if task.kind == "binary":
        return float(np.mean(np.where(predictions > 0, 1.0, -1.0) != labels))
    if task.kind == "multiclass":
        return float(np.mean(np.rint(predictions) != labels))
    variance = float(np.var(labels))
    return float(np.mean((predictions - labels) ** 2) / (variance if variance > 0 else 1.0))


def read_labels(path: str) -> np.ndarray:
    with open(path, "rb") as handle:
        return np.array([float(line.split(None, 1)[0]) for line in handle if line.strip()])


# -- polybeam -----------------------------------------------------------------------------------


def polybeam_flags(task: Task, *extra: str) -> list[str]:
    """The flags a user gives ``polybeam train`` for ``task`` with no tuning: the loss it needs."""
    if task.kind == "binary":
        flags = ["--loss", "logistic"]
    elif task.kind == "multiclass":
        flags = ["--loss", "softmax", "--classes", str(task.classes)]
    else:
        flags = ["--loss", "squared"]
    return flags + list(extra)


def polybeam_config(flags: list[str]):
    """The LearnerConfig ``polybeam train FLAGS`` builds (the same parser, defaults and checks)."""
    from apache_beam.options.pipeline_options import PipelineOptions

    from polybeam.pipelines.options import learner_config

    return learner_config(PipelineOptions(flags))


def read_batch(path: str, config):
    """``path`` parsed as ``polybeam train`` reads it for ``config`` (a row it refuses fails the run)."""
    from polybeam.formats.libsvm import LibsvmFormat

    reader = LibsvmFormat(bits=config.bits, seed=config.seed, labels=config.label_kind, classes=config.classes or 0)
    with open(path, "rb") as handle:
        parsed = reader.parse(handle.read(), source=path)
    if parsed.dead_letters:
        first = parsed.dead_letters[0]
        raise ValueError(f"{path}: {len(parsed.dead_letters)} rows polybeam refuses, e.g. {first.reason}")
    return parsed.batch


def train_like_train(config, batch):
    """One learner over ``batch`` for ``config.passes`` passes, as ``Train`` runs a single bundle: one pass
    learns every example (apple expanding on its doubling schedule, as a stream); several hold out one
    example in ten, judge every pass on them and keep the best (``fit``: apple spreads its epochs over the
    examples it learns, as Train does when it counts them)."""
    from polybeam.learners.polynomial import make_learner

    learner = make_learner(config)
    if config.passes == 1 and not config.lbfgs_passes:  # (with the finishing stage one pass holds out too)
        return learner.learn(batch).to_model()
    return learner.fit([batch]).to_model()


def log_loss(task: Task, labels: np.ndarray, margins: np.ndarray) -> float | None:
    """Mean held-out log loss of a binary (labels +-1, margins) or multiclass (labels 1..K, n x K scores)
    model; None for regression (its measure is the relative MSE).

    >>> round(log_loss(Task("t", "binary", None, 1), np.array([1., -1]), np.array([0., 0.])), 4)
    0.6931
    """
    labels = np.asarray(labels, dtype=float)
    if task.kind == "binary":
        return float(np.mean(np.logaddexp(0.0, -np.where(labels > 0, 1.0, -1.0) * margins)))
    if task.kind == "multiclass":
        scores = margins - margins.max(axis=1, keepdims=True)
        norm = np.log(np.exp(scores).sum(axis=1))
        return float(np.mean(norm - scores[np.arange(len(labels)), labels.astype(int) - 1]))
    return None


def run_polybeam(task: Task, flags: list[str], train: str, test: str) -> dict:
    """``polybeam train FLAGS`` on ``train``, measured on ``test`` (the finishing stage too, when the
    flags ask for it: as ``Train`` runs it after the online passes)."""
    config = polybeam_config(flags)
    started = time.perf_counter()
    batch = read_batch(train, config)
    model = train_like_train(config, batch)
    if config.lbfgs_passes:
        from polybeam.learners import lbfgs

        period = lbfgs.stage_holdout_period(config)
        model = lbfgs.finish(model, [batch], config.lbfgs_passes, config.lbfgs_l2, period=period, seed=config.seed)
    seconds = time.perf_counter() - started
    test_batch = read_batch(test, config)
    # What `polybeam predict` answers: a class (softmax), a clamped value (squared), a score's sign.
    if task.kind == "multiclass":
        predictions = model.predict_classes(test_batch)
    elif task.kind == "regression":
        predictions = model.predict(test_batch)
    else:
        predictions = model.margins(test_batch)
    margins = model.margins(test_batch) if task.kind != "regression" else None
    return {
        "error": task_error(task, test_batch.labels, predictions),
        "log_loss": log_loss(task, test_batch.labels, margins),
        "seconds": seconds,
        "nonzero": int(model.nonzero),
    }


# -- Vowpal Wabbit ------------------------------------------------------------------------------


def vw_flags(task: Task, *extra: str) -> list[str]:
    """VW's options for ``task``: logistic loss (binary), one-against-all (multiclass), squared loss."""
    if task.kind == "binary":
        flags = ["--loss_function", "logistic"]
    elif task.kind == "multiclass":
        flags = ["--oaa", str(task.classes)]
    else:
        flags = []
    return ["-b", "18", "--quiet", *flags, *extra]


def _vw(*arguments: str) -> None:
    completed = subprocess.run([sys.executable, "-m", "vowpalwabbit", *arguments], capture_output=True, text=True)
    if completed.returncode:
        raise RuntimeError(f"vw {' '.join(arguments)} failed: {completed.stderr[-2000:]}")


def vw_once(task: Task, flags: list[str], train_vw: str, test_vw: str, test_labels: np.ndarray) -> dict:
    """VW learns ``train_vw`` with ``flags`` and predicts ``test_vw``."""
    with tempfile.TemporaryDirectory() as scratch:
        model, predictions = os.path.join(scratch, "m.vw"), os.path.join(scratch, "p.txt")
        started = time.perf_counter()
        _vw("-d", train_vw, "-f", model, *flags)
        seconds = time.perf_counter() - started
        _vw("-t", "-i", model, "-d", test_vw, "-p", predictions, "--quiet")
        with open(predictions) as handle:
            predicted = np.array([float(line.split()[0]) for line in handle if line.strip()])
    return {"error": task_error(task, test_labels, predicted), "seconds": seconds}


def run_vw(task: Task, split, extra: tuple[str, ...] = ()) -> dict:
    """VW at the rate (of :data:`VW_RATES`) that does best on the validation fifth, then on train/test."""
    valid_labels = read_labels(split.valid)
    scores = {
        rate: vw_once(task, vw_flags(task, *extra, "-l", str(rate)), split.vw("fit"), split.vw("valid"), valid_labels)[
            "error"
        ]
        for rate in VW_RATES
    }
    rate = min(VW_RATES, key=lambda r: (scores[r], r))  # ties: the smaller rate
    result = vw_once(
        task, vw_flags(task, *extra, "-l", str(rate)), split.vw("train"), split.vw("test"), read_labels(split.test)
    )
    return {**result, "rate": rate, "validation": scores}


# -- scikit-learn -------------------------------------------------------------------------------


def load_svmlight(path: str, features: int):
    """``(matrix, labels)`` of a LIBSVM file: column i - 1 holds feature index i; a missing value
    (``i:nan``) is absent, as scikit-learn's estimators take no NaN (PROTOCOL.md)."""
    from sklearn.datasets import load_svmlight_file

    matrix, labels = load_svmlight_file(path, n_features=features, zero_based=False)
    matrix.data[np.isnan(matrix.data)] = 0.0
    matrix.eliminate_zeros()
    return matrix, labels


def run_sklearn(task: Task, split, which: str) -> dict:
    """scikit-learn's ``which`` on standardised features (sparse data: scaled, not centred): "sgd",
    "batch" (the protocol's ``Ridge()`` / ``LogisticRegression``), or "ridgecv" (regression only, an
    added peer of issue 22: ``RidgeCV`` choosing its penalty by leave-one-out over a log grid)."""
    from sklearn.linear_model import LogisticRegression, Ridge, RidgeCV, SGDClassifier, SGDRegressor
    from sklearn.preprocessing import StandardScaler

    train_x, train_y = load_svmlight(split.train, task.features)
    test_x, test_y = load_svmlight(split.test, task.features)
    dense = train_x.nnz > 0.1 * train_x.shape[0] * train_x.shape[1]
    if dense:
        train_x, test_x = train_x.toarray(), test_x.toarray()
    scaler = StandardScaler(with_mean=dense).fit(train_x)
    train_x, test_x = scaler.transform(train_x), scaler.transform(test_x)
    if task.kind == "regression":
        if which == "ridgecv":
            model = RidgeCV(alphas=RIDGE_ALPHAS)
        else:
            model = SGDRegressor(random_state=split.seed) if which == "sgd" else Ridge()
    elif which == "sgd":
        model = SGDClassifier(loss="log_loss", random_state=split.seed)
    else:
        model = LogisticRegression(max_iter=1000)
    started = time.perf_counter()
    model.fit(train_x, train_y)
    seconds = time.perf_counter() - started
    predicted = model.predict(test_x)
    if task.kind == "binary":
        predicted = np.where(predicted > 0, 1.0, -1.0)
    return {"error": task_error(task, test_y, predicted), "seconds": seconds}
