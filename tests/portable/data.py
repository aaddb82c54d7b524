"""Data written where portable jobs' workers can read it: whole splits and sharded copies.

Bundled datasets (spam, satellite) as train/test splits, and a small synthetic
per-key task (``polybeam.datasets.per_key``) for ``train --key``: VW text with
the key as tag, CSV with a ``key`` column, and a VW test file with one example
of a key that has no model (a dead letter, or the fallback model's).

Sharded copies matter for the two-worker service: a whole small file is one
read split, so one worker would learn everything and the other nothing; four
shards give each worker a share, and the learners are really averaged.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from polybeam import datasets
from polybeam.datasets import per_key

TRAIN_SHARDS = 4
TEST_SHARDS = 2
# Tiny on purpose (2400 train and 400 test examples): the suite checks that per-key jobs run the
# same on both runners, not that they learn well (tests/pipelines/test_production_cli.py does).
PER_KEY_TASK = per_key.PerKeyTask(keys=40, features=10, seed=5)
PER_KEY_TRAIN = 60
PER_KEY_TEST = 10
UNKNOWN_KEY = "no-such-key"


@dataclass(frozen=True)
class Split:
    """A train/test split of a bundled dataset, whole and as shard globs."""

    train: Path
    test: Path
    train_shards: str
    test_shards: str


@dataclass(frozen=True)
class PerKeySplit:
    """The per-key task's files: train (VW and CSV, VW also as shard globs) and a VW test file whose
    last example has the key ``UNKNOWN_KEY``, which no model is trained for."""

    train_vw: Path
    train_csv: Path
    test_vw: Path
    train_vw_shards: str
    keys: int
    train_per_key: int
    test_records: int  # the keys' test examples, plus the unknown key's


def shard(path: Path, count: int) -> str:
    """Write ``path``'s lines as ``count`` consecutive shards next to it (same suffix); their glob."""
    lines = path.read_bytes().splitlines(keepends=True)
    stem, suffix = path.with_suffix(""), path.suffix
    for index in range(count):
        part = lines[index * len(lines) // count : (index + 1) * len(lines) // count]
        Path(f"{stem}-part-{index}-of-{count}{suffix}").write_bytes(b"".join(part))
    return f"{stem}-part-*-of-{count}{suffix}"


def write_split(name: str, folder: Path) -> Split:
    """The default 80/20 split of bundled ``name`` (see ``polybeam.datasets.write_split``), plus shards."""
    train, test = (Path(path) for path in datasets.write_split(name, str(folder)))
    return Split(train, test, shard(train, TRAIN_SHARDS), shard(test, TEST_SHARDS))


@dataclass(frozen=True)
class CsvWithIds:
    """A split as CSV: ``id`` (``row<N>``), ``label``, the features ``f1`` ... and ``note``, a column of noise
    that must not be a feature."""

    train: Path
    test: Path
    features: int


def as_csv_with_ids(split: Split, features: int) -> CsvWithIds:
    """``split``'s LIBSVM files as CSV files with an ID and a noise column (see ``CsvWithIds``)."""
    header = ",".join(["id", "label", *(f"f{j}" for j in range(1, features + 1)), "note"])
    paths = []
    for path in (split.train, split.test):
        lines = [header]
        for number, line in enumerate(path.read_text().splitlines()):
            label, *pairs = line.split()
            row = ["0"] * features
            for pair in pairs:
                index, value = pair.split(":")
                row[int(index) - 1] = value
            lines.append(",".join([f"row{number}", label, *row, f"n{number * 7919 % 1009}"]))
        target = path.with_suffix(".ids.csv")
        target.write_text("\n".join(lines) + "\n")
        paths.append(target)
    return CsvWithIds(*paths, features)


@dataclass(frozen=True)
class TimedCsv:
    """Spam as CSV with event times over three days and a ``store`` column (see
    ``polybeam.datasets.timestamped``), for models per window; the training file has two unreadable times."""

    train: Path
    test: Path


def write_timed(folder: Path) -> TimedCsv:
    from polybeam.datasets.timestamped import write_timestamped_csv

    folder.mkdir(parents=True, exist_ok=True)
    train, test = folder / "timed-train.csv", folder / "timed-test.csv"
    write_timestamped_csv(str(train), rows=600, bad=2)
    write_timestamped_csv(str(test), rows=300, seed=1)
    return TimedCsv(train, test)


def with_unknown_key(test: Path) -> Path:
    """A copy of VW ``test`` plus one example of ``UNKNOWN_KEY`` (as its tag and its ``k`` feature), last."""
    path = test.with_name(f"{test.stem}-with-unknown-key{test.suffix}")
    path.write_bytes(test.read_bytes() + f"1 '{UNKNOWN_KEY} |k {UNKNOWN_KEY} |f f1:0.5 f2:-0.25\n".encode())
    return path


def write_per_key(folder: Path) -> PerKeySplit:
    """The per-key task's train and test files in ``folder`` (see ``PerKeySplit``)."""
    paths = per_key.write_per_key(str(folder), PER_KEY_TASK, train_per_key=PER_KEY_TRAIN, test_per_key=PER_KEY_TEST)
    train_vw = Path(paths["train_vw"])
    test_vw = with_unknown_key(Path(paths["test_vw"]))
    return PerKeySplit(
        train_vw,
        Path(paths["train_csv"]),
        test_vw,
        shard(train_vw, TRAIN_SHARDS),
        PER_KEY_TASK.keys,
        PER_KEY_TRAIN,
        PER_KEY_TASK.keys * PER_KEY_TEST + 1,
    )
