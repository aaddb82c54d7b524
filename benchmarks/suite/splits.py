"""The protocol's splits: seeded 80/20 train/test, and the training part's last fifth for validation.

Every learner reads the same files, in the same (shuffled) order:

* ``train``: the first 80% of the shuffled rows; the final model learns on it;
* ``test``: the other 20%; only the final model is measured on it;
* ``fit`` and ``valid``: the first 80% and last 20% of ``train``; settings
  (VW's learning rate, a sparsity strength) are chosen by learning on ``fit``
  and measuring on ``valid``, never on ``test``.

>>> import tempfile
>>> folder = tempfile.mkdtemp()
>>> data = os.path.join(folder, "data.libsvm")
>>> _ = open(data, "w").write("".join(f"{i % 2 * 2 - 1} 1:{i}\\n" for i in range(100)))
>>> split = make_split(data, os.path.join(folder, "s0"), seed=0)
>>> [sum(1 for _ in open(path)) for path in (split.train, split.test, split.fit, split.valid)]
[80, 20, 64, 16]
>>> open(split.train).read() == open(split.fit).read() + open(split.valid).read()
True
>>> make_split(data, os.path.join(folder, "again"), seed=0).rows == split.rows
True
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
from harness import libsvm_to_vw  # benchmarks/harness.py: the runner puts benchmarks/ on the path

TEST_SHARE = 0.2
VALIDATION_SHARE = 0.2
PARTS = ("train", "test", "fit", "valid")


@dataclass(frozen=True)
class Split:
    """The four LIBSVM files of one seed's split, and how many rows each holds."""

    folder: str
    seed: int
    rows: dict

    def path(self, part: str) -> str:
        """The LIBSVM file of ``part`` (one of PARTS)."""
        return os.path.join(self.folder, f"{part}.libsvm")

    train = property(lambda self: self.path("train"))
    test = property(lambda self: self.path("test"))
    fit = property(lambda self: self.path("fit"))
    valid = property(lambda self: self.path("valid"))

    def vw(self, part: str) -> str:
        """The same rows as VW text (written on first use): ``label |f index:value ...``."""
        target = os.path.join(self.folder, f"{part}.vw")
        if not os.path.exists(target):
            os.replace(libsvm_to_vw(self.path(part), target + ".tmp"), target)
        return target


def make_split(data: str, folder: str, seed: int) -> Split:
    """Shuffle ``data``'s rows with ``seed`` and write the split under ``folder`` (reused when there)."""
    counts = os.path.join(folder, "rows.txt")
    if os.path.exists(counts):
        with open(counts) as handle:
            return Split(folder, seed, {part: int(n) for part, n in zip(PARTS, handle.read().split())})
    with open(data, "rb") as handle:
        lines = handle.read().splitlines(keepends=True)
    order = np.random.default_rng(seed).permutation(len(lines))
    n_train = len(lines) - int(round(TEST_SHARE * len(lines)))
    n_fit = n_train - int(round(VALIDATION_SHARE * n_train))
    parts = {"train": order[:n_train], "test": order[n_train:], "fit": order[:n_fit], "valid": order[n_fit:n_train]}
    os.makedirs(folder, exist_ok=True)
    for part, rows in parts.items():
        temporary = os.path.join(folder, f"{part}.libsvm.tmp")
        with open(temporary, "wb") as handle:
            handle.writelines(lines[i] for i in rows)
        os.replace(temporary, os.path.join(folder, f"{part}.libsvm"))
    rows = {part: len(parts[part]) for part in PARTS}
    with open(counts, "w") as handle:  # written last: its presence means the split is whole
        handle.write(" ".join(str(rows[part]) for part in PARTS))
    return Split(folder, seed, rows)
