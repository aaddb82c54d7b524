"""The engine suite's data: bundled spam and satellite splits as shards, a shard of bad records, the per-key task.

Training reads several shards so that an engine splits the read among its
workers; one spam shard holds records the LIBSVM reader refuses, so every
engine must dead-letter exactly those (with their source and position).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from polybeam.datasets.timestamped import write_timestamped_csv
from tests.portable import data as portable_data

# Three records the reader refuses (a value that is no number, a label that is none, a pair without a
# value) between two good ones: 2 examples and 3 dead letters from this shard.
BAD_SHARD = b"1 3:0.5\n1 3:abc\nnot-a-label 1:2\n-1 5:1 7:\n-1 4:0.25\n"
BAD_RECORDS = 3
# Timestamped CSV (spam's features, times over three days, a store column): with records whose time is
# missing or unreadable among the training ones.
TIMESTAMPED_TRAIN, TIMESTAMPED_TEST, BAD_TIMES = 3000, 1500, 5


@dataclass(frozen=True)
class EngineData:
    spam: portable_data.Split
    spam_train: str  # glob: spam's training shards, the bad shard among them
    satellite: portable_data.Split
    per_key: portable_data.PerKeySplit
    timestamped_train: Path
    timestamped_test: Path


def write(folder: Path) -> EngineData:
    for name in ("spam", "satellite"):
        (folder / name).mkdir(parents=True, exist_ok=True)
    spam = portable_data.write_split("spam", folder / "spam")
    bad = folder / "spam" / f"spam.train-part-bad-of-{portable_data.TRAIN_SHARDS}.libsvm"
    bad.write_bytes(BAD_SHARD)
    satellite = portable_data.write_split("satellite", folder / "satellite")
    (folder / "timestamped").mkdir()
    timestamped_train, timestamped_test = folder / "timestamped" / "train.csv", folder / "timestamped" / "test.csv"
    write_timestamped_csv(str(timestamped_train), rows=TIMESTAMPED_TRAIN, bad=BAD_TIMES)
    write_timestamped_csv(str(timestamped_test), rows=TIMESTAMPED_TEST, seed=1)
    return EngineData(
        spam,
        spam.train_shards,
        satellite,
        portable_data.write_per_key(folder / "per-key"),
        timestamped_train,
        timestamped_test,
    )
