"""What every input format shares: the hashed feature space and the kind of label.

>>> HashedFormat(bits=31)
Traceback (most recent call last):
...
ValueError: bits must be between 1 and 30, got 31
>>> HashedFormat(labels="multiclass", label_names=["cat", "dog"])
HashedFormat(bits=18, seed=0, labels='multiclass', classes=2, label_names=('cat', 'dog'))
>>> HashedFormat(labels="multiclass", classes=3, label_names=("cat", "dog"))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: classes is 3 but 2 label_names are given; the i-th name is class i + 1, so classes must be 2 ...
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from polybeam.formats.classes import (
    ClassNames,
    check_classes,
    check_label_names,
    check_multiclass_settings,
    class_names,
)
from polybeam.formats.labels import LABEL_KINDS
from polybeam.learners.hashing import DEFAULT_BITS, check_bits


def check_labels(labels: str) -> str:
    """Validate a ``labels`` setting (the task's kind of label)."""
    if labels not in LABEL_KINDS:
        raise ValueError(f"labels must be one of {LABEL_KINDS}, got {labels!r}")
    return labels


def check_seed(seed: int) -> int:
    """Validate a hash ``seed`` (an unsigned 32-bit integer)."""
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or not 0 <= seed < 2**32:
        raise ValueError(f"seed must be an integer in [0, 2**32), got {seed!r}")
    return int(seed)


@dataclass(frozen=True)
class HashedFormat:
    """Settings of every format: ``2**bits`` hashed slots, the hash ``seed``, the labels accepted.

    Parameters
    ----------
    bits, seed : int
        Hashed feature space of ``2**bits`` slots, and the hash seed.
    labels : {"real", "binary", "multiclass", "any"}
        Which labels are acceptable; others become dead letters (see
        :func:`~polybeam.formats.labels.label_problems`).
    classes : int
        The number of classes K of a multiclass task: with ``labels="multiclass"``
        a label outside 1 ... K is a dead letter. 0 (the default): no bound, or
        ``len(label_names)`` when names are given.
    label_names : tuple of str
        Class names: the i-th name (0-based) is class i + 1, and a label that is
        one of them becomes its class (see :mod:`~polybeam.formats.classes`).
        CSV, VW and Parquet read names; LIBSVM labels are numbers only.

    ``classes`` and ``label_names`` need ``labels`` "multiclass" (or "any" for
    prediction input, whose labels are not checked).
    """

    bits: int = DEFAULT_BITS
    seed: int = 0
    labels: str = "real"
    classes: int = 0
    label_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_bits(self.bits)
        check_seed(self.seed)
        check_labels(self.labels)
        names = check_label_names(self.label_names)
        object.__setattr__(self, "label_names", names)
        # (a binary task's two names are its negative and positive class, not a count of classes)
        counted = 0 if self.labels == "binary" else len(names)
        object.__setattr__(self, "classes", check_classes(self.classes, counted))
        check_multiclass_settings(self.labels, self.classes, names)

    @property
    def class_names(self) -> ClassNames:
        """The lookup table of ``label_names`` (built once per tuple of names)."""
        return class_names(self.label_names)
