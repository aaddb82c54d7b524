"""What a written prediction is: the example's label, its probabilities or its raw scores.

``polybeam predict --predictions KIND`` (``Predict(model, predictions=KIND)``
from Python) writes one of:

* ``label``: the class -- by name when the model has class names (softmax, or
  a binary model's two: the positive one where the margin is above 0, as
  ``evaluate`` counts errors and scikit-learn's ``predict`` decides; without
  names -1 and 1) -- or, for a regression, the value: clamped to the training
  labels' range (squared and quantile loss), the mean exp(margin) (Poisson), as
  :meth:`~polybeam.learners.model.Model.predict` gives it;
* ``probability``: P(positive) for logistic loss, the probability of every
  class for softmax (one column per class); the other losses have none;
* ``score``: the raw margin ``w . x + b`` (one per class for softmax).

Left out (None), predict writes the loss's default (``LossSpec.prediction``): the
probability for logistic loss, the score for hinge loss and the label otherwise.

>>> import numpy as np
>>> from polybeam.learners.config import LearnerConfig
>>> softmax = LearnerConfig(loss="softmax", class_names=("cat", "dog", "emu"))
>>> prediction_columns(softmax, "probability"), prediction_columns(softmax, "label")
(('probability:cat', 'probability:dog', 'probability:emu'), ('prediction',))
>>> values_of(softmax, np.array([[0.0, 2.0, 1.0]]), "label", binary=BINARY_LABELS).tolist()
['dog']
>>> binary = binary_labels(LearnerConfig(loss="logistic", class_names=("no", "yes")))
>>> values_of(LearnerConfig(loss="logistic"), np.array([-1.5, 0.0, 2.0]), "label", binary=binary).tolist()
['no', 'no', 'yes']
>>> check_kind("probability", "squared")
Traceback (most recent call last):
...
ValueError: probabilities need a model of logistic or softmax loss; this model's loss is squared: write its label or score (--predictions label or score)
"""

from __future__ import annotations

import numpy as np

from polybeam.learners.choices import PREDICTION_KINDS
from polybeam.learners.loss_specs import LOSS_SPECS, loss_spec, losses_where
from polybeam.learners.model import finalize_predictions

# What predict writes when not told (what it always wrote): per loss.
DEFAULT_KINDS = {name: spec.prediction for name, spec in LOSS_SPECS.items()}
# Losses whose predictions are probabilities.
PROBABILISTIC = losses_where(probability=True)
# The negative and positive labels a binary model writes when it names no classes: the loss's own targets
# (labels 0 and 1, or -1 and 1, are read as they are and recorded without names; see docs/input-contract.md).
BINARY_LABELS = ("-1", "1")


def default_kind(loss: str) -> str:
    """The kind of prediction written when none is asked for (see :data:`DEFAULT_KINDS`)."""
    return DEFAULT_KINDS.get(loss, "label")


def check_kind(kind: str | None, loss: str) -> str:
    """The kind to write for a model of ``loss`` (``kind``, or the loss's default when None); a kind the
    model cannot give raises ``ValueError`` saying what to write instead."""
    if kind is None:
        return default_kind(loss)
    if kind not in PREDICTION_KINDS:
        raise ValueError(f"predictions must be one of {', '.join(PREDICTION_KINDS)}, got {kind!r}")
    if kind == "probability" and loss not in PROBABILISTIC:
        raise ValueError(
            f"probabilities need a model of {' or '.join(PROBABILISTIC)} loss; this model's loss is {loss}: "
            "write its label or score (--predictions label or score)"
        )
    return kind


def class_names(config) -> tuple[str, ...]:
    """A softmax model's classes by name (``"1"`` ... ``"K"`` when unnamed)."""
    return tuple(config.class_names) or tuple(str(k) for k in range(1, config.classes + 1))


def binary_labels(config) -> tuple[str, str]:
    """The ``(negative, positive)`` labels a binary model (logistic, hinge) writes: its two class names (the
    training labels' own, such as ``no``/``yes`` or ``1``/``2``), else ``-1`` and ``1``."""
    names = tuple(config.class_names)
    return (names[0], names[1]) if len(names) == 2 and loss_spec(config.loss).labels == "binary" else BINARY_LABELS


def prediction_columns(config, kind: str | None) -> tuple[str, ...]:
    """The header of the prediction column(s): ``prediction``, or for a softmax model's probabilities or
    scores one column per class, ``probability:NAME`` or ``score:NAME``."""
    kind = check_kind(kind, config.loss)
    if config.outputs > 1 and kind in ("probability", "score"):
        return tuple(f"{kind}:{name}" for name in class_names(config))
    return ("prediction",)


def values_of(config, margins: np.ndarray, kind: str | None, *, binary: tuple[str, str], label_range=(0.0, 0.0)):
    """What is written for examples whose raw scores are ``margins`` (n, or n x K for softmax): numbers
    (n, or n x K) or, for labels of classes, their names (an object array). ``binary``: the negative and
    positive labels (see :func:`binary_labels`); ``label_range``: the training labels' range (squared loss)."""
    kind = check_kind(kind, config.loss)
    if kind == "score":
        return margins
    if kind == "probability":
        return finalize_predictions(config.loss, margins, *label_range)
    labels = loss_spec(config.loss).labels
    if labels == "multiclass":
        names = np.array(class_names(config), dtype=object)
        return names[np.argmax(margins, axis=1)]
    if labels == "binary":
        return np.where(margins > 0, binary[1], binary[0]).astype(object)
    return finalize_predictions(config.loss, margins, *label_range)


def model_values(model, batch, kind: str | None, *, keys=None):
    """:func:`values_of` for ``model``'s scores of ``batch`` (``keys``: see ``Model.margins``)."""
    meta = model.metadata
    return values_of(
        model.config,
        model.margins(batch, keys),
        kind,
        binary=binary_labels(model.config),
        label_range=(float(meta.get("label_min", 0.0)), float(meta.get("label_max", 0.0))),
    )


__all__ = [
    "DEFAULT_KINDS",
    "binary_labels",
    "check_kind",
    "class_names",
    "default_kind",
    "model_values",
    "prediction_columns",
    "values_of",
]
