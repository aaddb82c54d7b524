"""A bundled dataset as CSV with synthetic event times, for models per window (``polybeam train --window``).

Rows get times spread evenly over ``days`` days from ``start`` (UTC), in a
shuffled order (so every file block holds several days), a third of them
written in ISO-8601 and the rest as seconds since the epoch, and a ``store``
key column cycling over ``keys`` stores. ``bad`` rows get an unreadable time
(dead letters).

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "spam.csv")
>>> facts = write_timestamped_csv(path, rows=300, bad=2)
>>> facts["rows"], facts["bad"], open(path).readline().split(",")[:4]
(300, 2, ['y', 'ts', 'store', 'f1'])
"""

from __future__ import annotations

import datetime

import numpy as np

from polybeam.datasets import lines


def _cells(line: bytes, features: int) -> tuple[str, list[str]]:
    label, *pairs = line.split()
    dense = ["0"] * features  # absent in LIBSVM means 0 (an empty cell would be a missing value)
    for pair in pairs:
        index, _, value = pair.partition(b":")
        dense[int(index) - 1] = value.decode()
    return label.decode(), dense


def write_timestamped_csv(
    path: str,
    *,
    name: str = "spam",
    rows: int | None = None,
    days: int = 3,
    start: str = "2026-11-01",
    keys: int = 3,
    bad: int = 0,
    seed: int = 0,
) -> dict:
    """Write ``name``'s first ``rows`` rows to ``path`` as CSV (columns ``y``, ``ts``, ``store``, ``f1``...);
    returns ``{"rows", "bad", "start", "seconds"}`` (``seconds``: each row's time, NaN for the bad ones)."""
    source = lines(name)[:rows]
    count = len(source)
    features = max(int(pair.split(b":")[0]) for line in source for pair in line.split()[1:])
    rng = np.random.default_rng(seed)
    origin = datetime.datetime.fromisoformat(start).replace(tzinfo=datetime.UTC).timestamp()
    seconds = origin + rng.permutation(count) * (days * 86400 / count)
    seconds = np.floor(seconds)
    broken = rng.choice(count, size=bad, replace=False) if bad else np.zeros(0, dtype=int)
    header = ["y", "ts", "store"] + [f"f{i + 1}" for i in range(features)]
    out = [",".join(header)]
    for row, line in enumerate(source):
        label, dense = _cells(line, features)
        if row % 3 == 0:
            stamp = datetime.datetime.fromtimestamp(seconds[row], datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        else:
            stamp = str(int(seconds[row]))
        out.append(",".join([label, stamp, f"s{row % keys}"] + dense))
    for row in broken:
        out[row + 1] = out[row + 1].replace(out[row + 1].split(",")[1], "not-a-time", 1)
    seconds[broken] = np.nan
    with open(path, "w") as handle:
        handle.write("\n".join(out) + "\n")
    return {"rows": count, "bad": int(bad), "start": origin, "seconds": seconds}
