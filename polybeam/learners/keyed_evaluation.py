"""Evaluation of many keys' models at once: an :class:`~polybeam.learners.evaluation.Evaluation` per key,
kept as arrays.

Evaluating a folder of per-key models one key and batch at a time costs an
``Evaluation`` object and a few numpy calls per key and batch, tens of
microseconds each, which a million keys of ten rows cannot afford.
:class:`KeyedEvaluation` keeps every key's sums (examples, importance weight,
loss, squared error, 0-1 error, the loss's own metrics) in arrays indexed by
key, adds a whole batch of rows of many keys in a few vectorised calls, and
keeps each row's score for the AUC. Its figures per key are what an
``Evaluation.for_model`` of the key's model, fed that key's rows, reports
(sums in another order: equal to rounding); ``overall`` is what merging every
key's Evaluation reports.

>>> import numpy as np
>>> evaluation = KeyedEvaluation("logistic")
>>> ids = evaluation.key_ids(["a", "b"])
>>> _ = evaluation.add(ids[[0, 0, 1, 1]], np.array([1.0, -1.0, 1.0, 1.0]), np.array([2.0, -1.0, 0.5, -0.5]),
...                    np.ones(4), np.zeros(4), np.zeros(4))
>>> results = evaluation.results()
>>> results["a"]["error"], results["a"]["auc"], results["b"]["auc"], evaluation.overall()["examples"]
(0.0, 1.0, None, 4)
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

import numpy as np

from polybeam.learners.evaluation import METRICS, Evaluation, pointwise_loss
from polybeam.learners.loss_specs import loss_spec
from polybeam.learners.model import finalize_predictions

_SUMS = ("weight", "loss_sum", "squared_error_sum", "error_sum")


class KeyedEvaluation:
    """Per-key evaluation sums for models of one loss (see the module docstring)."""

    def __init__(self, loss: str, parameter: float = 0.0):
        self.loss = loss
        self.parameter = parameter
        self.spec = loss_spec(loss)
        if self.spec.labels == "multiclass":
            raise ValueError("KeyedEvaluation evaluates models of one output")
        self.keys: list = []
        self._index: dict = {}
        self.examples = np.zeros(0, dtype=np.int64)
        self.sums = {name: np.zeros(0) for name in _SUMS + tuple(self.spec.metrics)}
        self.binary = np.zeros(0, dtype=bool)
        # Each row's key, score and positive and negative weight, for the AUC (a list of parts).
        self._scores: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def key_ids(self, keys: Iterable) -> np.ndarray:
        """The index of each of ``keys``, new keys added."""
        keys = keys if isinstance(keys, (list, tuple)) else list(keys)
        if not self._index:  # (a fresh evaluation of distinct keys: numbered at once)
            self._index = dict(zip(keys, itertools.count()))
            if len(self._index) != len(keys):
                self._index = {}
        ids = np.fromiter(map(self._index.get, keys, itertools.repeat(-1)), dtype=np.int64, count=len(keys))
        for position in np.flatnonzero(ids < 0):  # (new keys, one by one: each is new once)
            ids[position] = self._index.setdefault(keys[position], len(self._index))
        grown = len(self._index) - len(self.keys)
        if grown:
            self.keys.extend(list(self._index)[len(self.keys) :])
            self.examples = np.concatenate([self.examples, np.zeros(grown, dtype=np.int64)])
            self.sums = {name: np.concatenate([sums, np.zeros(grown)]) for name, sums in self.sums.items()}
            self.binary = np.concatenate([self.binary, np.ones(grown, dtype=bool)])
        return ids

    def add(self, ids, labels, margins, weights, label_min, label_max) -> KeyedEvaluation:
        """Add rows: key ``ids`` (from :meth:`key_ids`), labels, margins, importance weights, and the label
        range of each row's model (what squared loss clamps to, and a regression's 0-1 threshold)."""
        ids = np.asarray(ids, dtype=np.int64)
        labels = np.asarray(labels, dtype=np.float64)
        margins = np.asarray(margins, dtype=np.float64)
        weights = np.asarray(weights, dtype=np.float64)
        size = len(self.keys)
        predictions = finalize_predictions(self.loss, margins, np.asarray(label_min), np.asarray(label_max))
        losses = pointwise_loss(self.loss, labels, margins, predictions, self.parameter)
        if self.spec.probability:
            target = (labels > 0).astype(np.float64)
        elif self.spec.classes:
            target = np.where(labels > 0, 1.0, -1.0)
        else:
            target = labels
        self.examples += np.bincount(ids, minlength=size)
        added = {
            "weight": weights,
            "loss_sum": weights * losses,
            "squared_error_sum": weights * (predictions - target) ** 2,
        }
        for name in self.spec.metrics:
            added[name] = weights * METRICS[name](labels, predictions)
        self.binary &= np.bincount(ids, ~np.isin(labels, (-1.0, 0.0, 1.0)), minlength=size) == 0
        scores = margins if self.spec.classes else predictions
        threshold = 0.0 if self.spec.classes else 0.5 * (label_min + label_max)
        positive = labels > 0
        added["error_sum"] = weights * ((scores > threshold) != positive)
        for name, values in added.items():
            self.sums[name] += np.bincount(ids, values, minlength=size)
        self._scores.append((ids, scores, np.where(positive, weights, 0.0), np.where(positive, 0.0, weights)))
        return self

    def merge(self, others: Iterable[KeyedEvaluation]) -> KeyedEvaluation:
        for other in others:
            if other is self:
                continue
            ids = self.key_ids(other.keys)  # (distinct: an evaluation's keys are, so += adds each once)
            self.examples[ids] += other.examples
            for name, sums in other.sums.items():
                self.sums[name][ids] += sums
            self.binary[ids] &= other.binary
            self._scores.extend(
                (ids[rows], scores, positive, negative) for rows, scores, positive, negative in other._scores
            )
        return self

    def compact(self) -> KeyedEvaluation:
        """Join the score parts into one (before sending the accumulator elsewhere)."""
        if len(self._scores) > 1:
            self._scores = [tuple(np.concatenate(column) for column in zip(*self._scores))]
        return self

    def _score_rows(self):
        self.compact()
        if not self._scores:
            return np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0)
        return self._scores[0]

    def _aucs(self) -> np.ndarray:
        """Each key's AUC (ties count one half; NaN without both classes), exact."""
        ids, scores, positive, negative = self._score_rows()
        size = len(self.keys)
        aucs = np.full(size, np.nan)
        if not len(ids):
            return aucs
        order = np.lexsort((scores, ids))
        ids, scores, positive, negative = ids[order], scores[order], positive[order], negative[order]
        starts = np.flatnonzero(np.concatenate([[True], (ids[1:] != ids[:-1]) | (scores[1:] != scores[:-1])]))
        group_ids = ids[starts]
        group_positive = np.add.reduceat(positive, starts)
        group_negative = np.add.reduceat(negative, starts)
        below = np.cumsum(group_negative) - group_negative  # negatives of lower scores, across keys
        first_of_key = np.flatnonzero(np.concatenate([[True], group_ids[1:] != group_ids[:-1]]))
        key_start_below = np.repeat(below[first_of_key], np.diff(np.append(first_of_key, len(group_ids))))
        wins = np.bincount(group_ids, group_positive * (below - key_start_below + 0.5 * group_negative), size)
        total_positive = np.bincount(group_ids, group_positive, size)
        total_negative = np.bincount(group_ids, group_negative, size)
        both = (total_positive > 0) & (total_negative > 0)
        aucs[both] = wins[both] / (total_positive[both] * total_negative[both])
        return aucs

    def results(self) -> dict:
        """``{key: metrics}``, each as ``Evaluation.result()`` gives it."""
        aucs = self._aucs()
        weights = np.where(self.sums["weight"] > 0, self.sums["weight"], np.nan)
        mse = self.sums["squared_error_sum"] / weights
        loss = self.sums["loss_sum"] / weights
        error = np.where(self.binary, self.sums["error_sum"] / weights, mse)
        metrics = {name: self.sums[name] / weights for name in self.spec.metrics}
        aucs = np.where(self.binary, aucs, np.nan)
        columns = {
            "examples": self.examples.tolist(),
            "loss": loss.tolist(),
            "error": error.tolist(),
            "auc": [None if auc != auc else auc for auc in aucs.tolist()],
            "mse": mse.tolist(),
            **{name: values.tolist() for name, values in metrics.items()},
        }
        names = list(columns)
        return {key: dict(zip(names, row)) for key, row in zip(self.keys, zip(*columns.values()))}

    def overall(self) -> dict:
        """The metrics of every key's rows together, as merging every key's Evaluation gives them."""
        evaluation = Evaluation(self.loss, parameter=self.parameter)
        evaluation.examples = int(self.examples.sum())
        for name in _SUMS:
            setattr(evaluation, name, float(self.sums[name].sum()))
        evaluation.metric_sums = {name: float(self.sums[name].sum()) for name in self.spec.metrics}
        evaluation.binary = bool(self.binary.all())
        if evaluation.binary:
            ids, scores, positive, negative = self._score_rows()
            if len(scores):
                evaluation._add_scores(scores, positive, negative)
        return evaluation.result()
