"""How a task reads its labels: the label part of an input contract.

Every reader parses a label into a number: a numeric label is its value and a
class name (``label_names``) is its class number 1 ... K. :func:`read_labels`
then turns those numbers into the learner's targets and sorts out the labels
the task cannot take, in one place for every format:

* ``real`` (squared loss): any finite number;
* ``binary`` (logistic and hinge loss): -1, 0 or +1 (0 is the negative class);
  with two class names, the first is the negative class (-1) and the second
  the positive one (+1);
* ``multiclass`` (softmax loss): the class numbers 1 ... K;
* ``any`` (prediction input): every label, a missing one included.

**Numeric class names.** When every name reads as a number (``("1", "2")``,
``("0", "1", ..., "9")``), a label is matched to the names by its value, so
``2.0`` is the class named ``2``; otherwise a numeric label is a class number
(the i-th name being class i + 1), so files may mix names and numbers.

A label that is a number (or a name) but not one of the task's classes is
**refused**, not damaged: a class that disappears from the training data is a
wrong model, so such a record never hides under the share of dead letters a
job tolerates (see :class:`~polybeam.formats.acceptance.InputPolicy`).

>>> read = read_labels(np.array([1.0, 2.0, 2.0, 1.0]), "binary", names=("1", "2"))
>>> read.targets.tolist(), bool(read.refused.any())
([-1.0, 1.0, 1.0, -1.0], False)
>>> read = read_labels(np.array([1.0, 2.0, 0.0]), "binary")
>>> read.targets[read.good].tolist(), [read.reason(i) for i in np.flatnonzero(read.refused)]
([1.0, 0.0], ['label 2 is not a class of this task: a binary task takes -1, 0 or +1 (name its two classes to use other labels)'])
>>> read = read_labels(np.array([0.0, 9.0, 3.0]), "multiclass", classes=10, names=tuple(map(str, range(10))))
>>> read.targets.tolist()
[1.0, 10.0, 4.0]
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# "any" takes every label (prediction input); the others are the learners' label kinds
# (polybeam.learners.loss_specs.LABEL_KINDS): real numbers, counts (numbers >= 0), two classes, K classes.
LABEL_KINDS = ("any", "real", "count", "binary", "multiclass")
# How many class names a refusal lists.
LISTED_CLASSES = 10


def label_problems(labels: np.ndarray, kind: str, classes: int = 0) -> tuple[np.ndarray, str]:
    """Which labels a task of ``kind`` cannot take, and the reason to report (the readers use
    :func:`polybeam.formats.labels.read_labels`, which also tells damaged from refused labels).

    ``any`` takes everything, a missing label (NaN) included, for prediction;
    ``real`` takes any finite number, ``count`` any finite number >= 0; ``binary`` takes -1, 0 and +1 (0 counts as
    the negative class); ``multiclass`` takes positive whole class ids 1, 2, ...,
    up to ``classes`` when it is not 0.

    >>> bad, reason = label_problems(np.array([1.0, 0.0, 2.0, -1.0]), "binary")
    >>> bad.tolist(), reason
    ([False, False, True, False], 'binary label must be -1, 0 or +1')
    >>> bad, reason = label_problems(np.array([1.0, 5.0, 6.0, 2.5]), "multiclass", classes=5)
    >>> bad.tolist(), reason
    ([False, False, True, True], 'class label must be a whole number from 1 to 5')
    """
    if isinstance(classes, bool) or not isinstance(classes, (int, np.integer)) or classes < 0:
        raise ValueError(f"classes must be a whole number >= 0, got {classes!r}")
    if kind == "any":
        return np.zeros(len(labels), dtype=bool), ""
    if kind == "real":
        return ~np.isfinite(labels), "label must be a finite number"
    if kind == "count":
        return ~(np.isfinite(labels) & (labels >= 0)), "count label must be a finite number >= 0"
    if kind == "binary":
        return ~np.isin(labels, (-1.0, 0.0, 1.0)), "binary label must be -1, 0 or +1"
    if kind == "multiclass":
        whole = np.isfinite(labels) & (labels == np.round(labels)) & (labels >= 1)
        if classes:
            return ~(whole & (labels <= classes)), f"class label must be a whole number from 1 to {classes}"
        return ~whole, "class label must be a whole number >= 1"
    raise ValueError(f"label kind must be one of {LABEL_KINDS}, got {kind!r}")


def label_text(value: float) -> str:
    """A label as a person writes it: ``2`` for 2.0, ``0.5``, ``-1``.

    >>> label_text(2.0), label_text(-1.0), label_text(0.25), label_text(1e300)
    ('2', '-1', '0.25', '1e+300')
    """
    if not math.isfinite(value) or value != round(value) or abs(value) >= 1e16:
        return repr(float(value))
    return str(int(value))


def numeric_names(names: tuple[str, ...]) -> np.ndarray | None:
    """The names' values when every one reads as a number (labels are then matched by value), else None."""
    if not names:
        return None
    from polybeam.formats.numbers import parse_number  # (numbers' kernels sit on text, which reads labels here)

    values = []
    for name in names:
        try:
            values.append(parse_number(name.strip()))
        except ValueError:
            return None
    return np.asarray(values, dtype=np.float64)


def describe_classes(kind: str, classes: int = 0, names: tuple[str, ...] = ()) -> str:
    """What labels a task takes, for messages.

    >>> describe_classes("binary"), describe_classes("multiclass", 3)
    ('a binary task takes -1, 0 or +1 (name its two classes to use other labels)', 'the classes are 1 to 3')
    >>> describe_classes("binary", names=("no", "yes"))
    'the classes are no, yes'
    """
    if names:
        listed = ", ".join(names[:LISTED_CLASSES]) + (
            f", ... ({len(names)} in all)" if len(names) > LISTED_CLASSES else ""
        )
        return f"the classes are {listed}"
    if kind == "binary":
        return "a binary task takes -1, 0 or +1 (name its two classes to use other labels)"
    if kind == "multiclass":
        return f"the classes are 1 to {classes}" if classes else "class labels are whole numbers >= 1"
    if kind == "count":
        return "labels are counts or rates: finite numbers >= 0"
    return "labels are finite numbers"


@dataclass(frozen=True)
class LabelsRead:
    """What :func:`read_labels` made of a batch's labels.

    ``targets`` are the learner's labels (NaN where missing or not usable);
    ``damaged`` marks labels that cannot be read as the task's (not a finite
    number, for a regression); ``refused`` marks labels that are values the
    task cannot take (a class it does not have); ``reason(i)`` says why
    example ``i`` is either, and ``refused_label(i)`` what it held.
    """

    targets: np.ndarray
    damaged: np.ndarray
    refused: np.ndarray
    reason: Callable[[int], str]
    refused_label: Callable[[int], str]

    @property
    def good(self) -> np.ndarray:
        return ~(self.damaged | self.refused)


def read_labels(
    labels: np.ndarray, kind: str, classes: int = 0, names: tuple[str, ...] = (), *, missing_ok: bool = False
) -> LabelsRead:
    """The targets of ``labels`` (numbers as the readers parse them) for a task of ``kind`` (see the module).

    ``missing_ok``: a missing label (NaN) is neither damaged nor refused (its target stays NaN); by default
    it is damaged unless ``kind`` is ``"any"``. Readers that reject "missing label" themselves pass True.
    """
    if kind not in LABEL_KINDS:
        raise ValueError(f"label kind must be one of {LABEL_KINDS}, got {kind!r}")
    if isinstance(classes, bool) or not isinstance(classes, (int, np.integer)) or classes < 0:
        raise ValueError(f"classes must be a whole number >= 0, got {classes!r}")
    labels = np.asarray(labels, dtype=np.float64)
    n = len(labels)
    missing = np.isnan(labels)
    nothing = np.zeros(n, dtype=bool)
    by_value = numeric_names(names)
    ids = labels
    unknown = nothing
    if by_value is not None:  # numeric names: a label is the class whose name has its value
        order = np.argsort(by_value, kind="stable")
        sorted_values = by_value[order]
        position = np.minimum(np.searchsorted(sorted_values, labels), len(sorted_values) - 1)
        found = sorted_values[position] == labels
        ids = np.where(found, order[position] + 1.0, np.nan)
        unknown = ~found & ~missing
    if kind == "any":
        # (class numbers: prediction input's labels are only passed along)
        return LabelsRead(np.where(unknown, np.nan, ids), nothing, nothing, _no_reason, _no_reason)
    finite = np.isfinite(labels)
    if kind in ("real", "count"):
        damaged = ~finite if not missing_ok else (~finite & ~missing)
        refused = finite & (labels < 0) if kind == "count" else nothing

        def number_reason(example: int) -> str:
            if refused[example]:
                return f"label {label_text(labels[example])} is not a count: {describe_classes(kind)}"
            return "label must be a finite number"

        return LabelsRead(
            np.where(refused, np.nan, labels),
            damaged,
            refused,
            number_reason,
            lambda i: f"label {label_text(labels[i])}",
        )
    count = len(names) or classes
    if names:
        in_task = ~np.isnan(ids) & (ids == np.round(ids)) & (ids >= 1) & (ids <= count)
    elif kind == "binary":
        in_task = np.isin(labels, (-1.0, 0.0, 1.0))
    else:
        in_task = np.isfinite(ids) & (ids == np.round(ids)) & (ids >= 1) & ((ids <= classes) if classes else True)
    damaged = (missing & (not missing_ok)) | (~finite & ~missing)
    refused = ~in_task & finite
    targets = np.where(in_task, ids, np.nan)
    if kind == "binary" and names:
        targets = _binary_targets(targets)
    described = describe_classes(kind, classes, names)

    def reason(example: int) -> str:
        value = labels[example]
        if math.isnan(value):
            return "missing label"
        if not math.isfinite(value):
            return "label must be a finite number"
        return f"label {label_text(value)} is not a class of this task: {described}"

    return LabelsRead(targets, damaged, refused, reason, lambda example: f"label {label_text(labels[example])}")


def _binary_targets(ids: np.ndarray) -> np.ndarray:
    """Class 1 is the negative class (-1), class 2 the positive one (+1)."""
    return np.where(ids == 1.0, -1.0, np.where(ids == 2.0, 1.0, np.nan))


def _no_reason(example: int) -> str:
    return ""


def apply_labels(parsed, kind: str, classes: int, names: tuple[str, ...], raw_of):
    """A parsed block whose batch holds the targets of its labels; damaged and refused labels become dead
    letters (refused ones marked so). ``raw_of`` is :func:`~polybeam.formats.records.reject_examples`'."""
    from polybeam.formats.records import ParsedBlock, reject_examples

    read = read_labels(parsed.batch.labels, kind, classes, names)
    parsed = ParsedBlock(
        batch=parsed.batch.with_labels(read.targets),
        dead_letters=parsed.dead_letters,
        records=parsed.records,
        skipped=parsed.skipped,
    )
    refused = read.refused
    return reject_examples(
        parsed,
        read.damaged | refused,
        read.reason,
        raw_of,
        refused=lambda example: read.refused_label(example) if refused[example] else None,
    )


# -- the labels a training input holds -------------------------------------------------------------------------

# Sampled label texts beyond this many distinct values are not looked at further (a regression's labels).
DISTINCT_LIMIT = 1000


class LabelEncodingError(ValueError):
    """The labels a training input holds cannot be read as its task's without being told how (the message
    says what was seen and what to pass)."""


@dataclass(frozen=True)
class ClassesFound:
    """What :func:`infer_classes` decided: ``names`` to read the labels with (empty: the labels are the task's
    own: -1/0/+1, or class numbers 1..K), and ``note``, one line for people saying what was seen and decided
    (empty when nothing had to be decided)."""

    names: tuple[str, ...] = ()
    note: str = ""


def _seen(values) -> str:
    values = list(values)
    shown = ", ".join(repr(value) if isinstance(value, str) else label_text(value) for value in values[:LISTED_CLASSES])
    return shown + (f", ... ({len(values)} in all)" if len(values) > LISTED_CLASSES else "")


def infer_classes(kind: str, classes: int, names: tuple[str, ...], texts) -> ClassesFound:
    """How to read the labels ``texts`` (a sample of a training input's labels, as written) for a task of
    ``kind`` with ``classes`` classes and the class ``names`` given (if any); raises
    :class:`LabelEncodingError` when they cannot be read without being told how.

    * binary, no names: -1/+1 and 0/1 are read as they are; any other two numbers (``1``/``2``) or two
      words (``no``/``yes``) become the class names, in increasing order, so the larger number or the later
      word (as scikit-learn orders its ``classes_``) is the positive class;
    * multiclass with ``classes`` K and no names: the class numbers 1..K as they are; 0..K-1 (a ``0`` seen)
      become the names ``0`` ... ``K-1``; K words become the names, in increasing order;
    * with names, or a regression: nothing to decide (the read refuses what does not fit).

    >>> infer_classes("binary", 0, (), ["2", "1", "2"])
    ClassesFound(names=('1', '2'), note='labels: 1 is the negative class, 2 the positive one')
    >>> infer_classes("binary", 0, (), ["0", "1"]), infer_classes("binary", 0, (), ["yes", "no"]).names
    (ClassesFound(names=(), note=''), ('no', 'yes'))
    >>> infer_classes("multiclass", 3, (), ["0", "2", "1"]).names
    ('0', '1', '2')
    >>> infer_classes("binary", 0, (), ["1", "2", "3"])
    Traceback (most recent call last):
    ...
    polybeam.formats.labels.LabelEncodingError: the labels hold 3 values (1, 2, 3), but a binary loss takes two classes: for 3 classes use the softmax loss with 3 classes; to learn two of them, name them (negative, then positive)
    """
    if kind not in ("binary", "multiclass") or names:
        return ClassesFound()
    distinct: dict[str, int] = {}
    for text in texts:
        text = text.strip()
        distinct[text] = distinct.get(text, 0) + 1
        if len(distinct) > DISTINCT_LIMIT:
            break
    distinct.pop("", None)
    if not distinct:
        return ClassesFound()
    numbers = {}
    words = []
    from polybeam.formats.numbers import parse_number  # (see numeric_names)

    for text in distinct:
        try:
            value = parse_number(text)
        except ValueError:
            words.append(text)
            continue
        if math.isfinite(value):  # (not a finite number: a damaged record, never a class)
            numbers[value] = text
    worded = sum(distinct[word] for word in words)
    if numbers and worded < sum(distinct.values()) - worded:
        words = []  # words among more numbers are damaged labels: the read makes them dead letters
    if numbers and words:
        raise LabelEncodingError(
            f"the labels mix numbers ({_seen(sorted(numbers))}) and words ({_seen(sorted(words))}): name the "
            "classes, in order, so that each label is one of the names"
        )
    if kind == "binary":
        return _binary_classes(sorted(numbers) if numbers else sorted(words))
    return _multiclass_classes(classes, sorted(numbers) if numbers else sorted(words))


def _binary_classes(values: list) -> ClassesFound:
    if all(isinstance(value, float) for value in values) and set(values) <= {-1.0, 0.0, 1.0}:
        return ClassesFound()  # the task's own labels (only one of them seen: the read refuses the others)
    if len(values) > 2:
        return _too_many(values)
    if len(values) < 2:
        raise LabelEncodingError(
            f"the labels seen are all {_seen(values)}, and a binary loss needs two classes: name them "
            "(negative, then positive) so that each label is one of the names"
        )
    names = tuple(label_text(value) if isinstance(value, float) else value for value in values)
    return ClassesFound(names, f"labels: {names[0]} is the negative class, {names[1]} the positive one")


def _too_many(values: list) -> ClassesFound:
    raise LabelEncodingError(
        f"the labels hold {len(values)} values ({_seen(values)}), but a binary loss takes two classes: for "
        f"{len(values)} classes use the softmax loss with {len(values)} classes; to learn two of them, name them "
        "(negative, then positive)"
    )


def _multiclass_classes(classes: int, values: list) -> ClassesFound:
    if not classes:
        return ClassesFound()  # no bound: the read refuses what is not a class number
    if all(isinstance(value, float) for value in values):
        whole = all(value == round(value) for value in values)
        if whole and values[0] >= 1 and values[-1] <= classes:
            return ClassesFound()
        if whole and values[0] == 0 and values[-1] <= classes - 1:
            names = tuple(str(number) for number in range(classes))
            return ClassesFound(names, f"labels: class numbers from 0, read as the classes 0 to {classes - 1}")
        raise LabelEncodingError(
            f"the labels hold {_seen(values)}, which are not the class numbers 1 to {classes} (nor 0 to "
            f"{classes - 1}): give the number of classes the labels hold, or name the classes"
        )
    if len(values) == classes:
        return ClassesFound(tuple(values), f"labels: the classes are {', '.join(values)}, in that order")
    raise LabelEncodingError(
        f"the labels are names ({_seen(values)}) and {classes} classes are asked for: name the classes, in order"
    )
