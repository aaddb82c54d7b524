"""What every input format shares: the hashed feature space and the kind of label.

>>> HashedFormat(bits=31)
Traceback (most recent call last):
...
ValueError: bits must be between 1 and 30, got 31
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from polybeam.learners.hashing import DEFAULT_BITS, check_bits
from polybeam.learners.parsing.records import LABEL_KINDS


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
    """Settings of every format: ``2**bits`` hashed slots, the hash ``seed``, the ``labels`` accepted."""

    bits: int = DEFAULT_BITS
    seed: int = 0
    labels: str = "real"

    def __post_init__(self) -> None:
        check_bits(self.bits)
        check_seed(self.seed)
        check_labels(self.labels)
