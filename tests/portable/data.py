"""Bundled data written where portable jobs' workers can read it: whole splits and sharded copies.

Sharded copies matter for the two-worker service: a whole small file is one
read split, so one worker would learn everything and the other nothing; four
shards give each worker a share, and the learners are really averaged.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from polybeam import datasets

TRAIN_SHARDS = 4
TEST_SHARDS = 2


@dataclass(frozen=True)
class Split:
    """A train/test split of a bundled dataset, whole and as shard globs."""

    train: Path
    test: Path
    train_shards: str
    test_shards: str


def shard(path: Path, count: int) -> str:
    """Write ``path``'s lines as ``count`` consecutive shards next to it; their glob."""
    lines = path.read_bytes().splitlines(keepends=True)
    stem = path.with_suffix("")
    for index in range(count):
        part = lines[index * len(lines) // count : (index + 1) * len(lines) // count]
        Path(f"{stem}-part-{index}-of-{count}.libsvm").write_bytes(b"".join(part))
    return f"{stem}-part-*-of-{count}.libsvm"


def write_split(name: str, folder: Path) -> Split:
    """The default 80/20 split of bundled ``name`` (see ``polybeam.datasets.write_split``), plus shards."""
    train, test = (Path(path) for path in datasets.write_split(name, str(folder)))
    return Split(train, test, shard(train, TRAIN_SHARDS), shard(test, TEST_SHARDS))
