"""Synthetic examples where every key (a store, a user, a region) has its own true weights.

Each of ``keys`` keys draws its own weight vector over ``features`` shared
features, plus a part common to all keys (``shared`` of the scale); a label
is the sign of the key's score plus logistic noise. A global model can learn
only the common part, so per-key models should beat it clearly: that is what
``polybeam train --key`` is for. The examples are written as VW text (the key
as the tag and as the feature of namespace ``k``) and as CSV (a ``key`` column).

>>> task = PerKeyTask(keys=3, features=4, seed=1)
>>> rows = task.generate(examples_per_key=2, seed=0)
>>> len(rows.labels), sorted(set(rows.keys.tolist()))
(6, ['key0', 'key1', 'key2'])
>>> print(rows.to_vw().decode().splitlines()[0])
-1 'key2 |k key2 |f f1:0.9054 f2:0.4464 f3:-0.5370 f4:0.5811
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PerKeyRows:
    """Generated examples: labels (+1/-1), key names and dense feature values."""

    labels: np.ndarray
    keys: np.ndarray
    values: np.ndarray

    def to_vw(self) -> bytes:
        """VW text: ``label 'key |k key |f f1:v1 ...``."""
        lines = []
        for label, key, row in zip(self.labels.tolist(), self.keys.tolist(), self.values.tolist()):
            features = " ".join(f"f{j + 1}:{value:.4f}" for j, value in enumerate(row))
            lines.append(f"{int(label)} '{key} |k {key} |f {features}")
        return ("\n".join(lines) + "\n").encode()

    def to_csv(self) -> bytes:
        """CSV with a header: ``label,key,f1,...``."""
        header = ",".join(["label", "key"] + [f"f{j + 1}" for j in range(self.values.shape[1])])
        labels = self._label_texts()
        lines = [header]
        for label, key, row in zip(labels, self.keys.tolist(), self.values.tolist()):
            lines.append(",".join([label, key] + [f"{value:.4f}" for value in row]))
        return ("\n".join(lines) + "\n").encode()

    def _label_texts(self) -> list[str]:
        """The labels as the CSV writes them (whole numbers: classes)."""
        return [str(int(label)) for label in self.labels.tolist()]


@dataclass(frozen=True)
class PerKeyTask:
    """A binary task whose true weights differ by key (see the module docstring)."""

    keys: int = 1000
    features: int = 10
    shared: float = 0.3
    scale: float = 3.0
    seed: int = 0

    @property
    def weights(self) -> np.ndarray:
        """The true weights, one row per key (common part plus the key's own)."""
        rng = np.random.default_rng(self.seed)
        common = rng.normal(size=self.features)
        own = rng.normal(size=(self.keys, self.features))
        return self.scale * (self.shared * common + (1.0 - self.shared) * own) / np.sqrt(self.features)

    def generate(self, examples_per_key: int, seed: int) -> PerKeyRows:
        """``examples_per_key`` examples of every key, shuffled; ``seed`` picks the sample."""
        rng = np.random.default_rng([self.seed, seed])
        key_of = np.repeat(np.arange(self.keys), examples_per_key)
        rng.shuffle(key_of)
        values = rng.normal(size=(len(key_of), self.features))
        scores = np.einsum("ij,ij->i", values, self.weights[key_of])
        noise = rng.logistic(size=len(key_of))
        labels = np.where(scores + noise > 0, 1.0, -1.0)
        return PerKeyRows(labels, np.array([f"key{k}" for k in key_of]), values)


def write_per_key(folder: str, task: PerKeyTask, *, train_per_key: int, test_per_key: int) -> dict[str, str]:
    """Train and test files of ``task`` in VW and CSV; returns their paths by name."""
    os.makedirs(folder, exist_ok=True)
    paths = {}
    for part, count, seed in (("train", train_per_key, 1), ("test", test_per_key, 2)):
        rows = task.generate(count, seed)
        for kind, data in (("vw", rows.to_vw()), ("csv", rows.to_csv())):
            path = os.path.join(folder, f"{part}.{kind}")
            with open(path, "wb") as handle:
                handle.write(data)
            paths[f"{part}_{kind}"] = path
    return paths
