"""How fast CsvFormat parses a large CSV file: 1,000,000 lines (a label, 8 numbers of which 5% are missing, 2
categorical columns), in 4 MiB blocks as the reader hands them over, best and median of several runs.

Two files with the same values: missing numbers as empty cells ("empty") and spelled NA, NaN or ? ("spelled",
missing values for a reader with --na-values' defaults; dead letters for one without). To compare two
versions of polybeam, run the script under each (``PYTHONPATH=/path/to/other/tree``), alternating::

    python benchmarks/bench_csv_parse.py [--rows 1000000] [--repeats 7] [--out benchmarks/out/csv_parse]

It prints one JSON line per file: rows, examples, dead letters, seconds (best, median) and million lines per
second (from the best run).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np

from polybeam.formats import CsvFormat

BLOCK_BYTES = 4 << 20


def write_files(folder: str, rows: int) -> dict[str, str]:
    """The two files (written once per size), by name."""
    os.makedirs(folder, exist_ok=True)
    paths = {name: os.path.join(folder, f"{name}_{rows}.csv") for name in ("empty", "spelled")}
    if all(os.path.exists(path) for path in paths.values()):
        return paths
    rng = np.random.default_rng(0)
    numbers = rng.normal(size=(rows, 8)).round(5).astype(str)
    missing = rng.random((rows, 8)) < 0.05
    labels = (rng.random(rows) < 0.5).astype(int).astype(str)
    colours = np.array(["red", "green", "blue", "dark blue", "yellow"])[rng.integers(0, 5, rows)]
    codes = np.char.add("k", rng.integers(0, 1000, rows).astype(str))
    header = "y," + ",".join(f"x{i}" for i in range(8)) + ",c1,c2\n"
    for name, path in paths.items():
        cells = numbers.copy()
        cells[missing] = "" if name == "empty" else np.array(["NA", "NaN", "?"])[rng.integers(0, 3, missing.sum())]
        table = np.column_stack([labels, cells, colours, codes])
        with open(path, "w") as file:
            file.write(header)
            file.write("\n".join(",".join(row) for row in table.tolist()) + "\n")
    return paths


def blocks(data: bytes) -> list[tuple[int, bytes]]:
    """The file cut at line ends into blocks of about BLOCK_BYTES, with their offsets."""
    pieces, pos = [], 0
    while pos < len(data):
        end = data.rfind(b"\n", pos, pos + BLOCK_BYTES) + 1
        end = len(data) if end <= pos else end
        pieces.append((pos, data[pos:end]))
        pos = end
    return pieces


def measure(path: str, repeats: int) -> dict:
    data = open(path, "rb").read()
    header = data.partition(b"\n")[0]
    fmt = CsvFormat(label_column="y", categorical_columns=("c1", "c2"), labels="binary")
    pieces = blocks(data)
    fmt.parse(pieces[0][1][:10000].rpartition(b"\n")[0] + b"\n")  # compile (or load) the kernels first
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        examples = dead = 0
        for offset, piece in pieces:
            parsed = fmt.parse(piece, offset=offset, header=header, first_line=None)
            examples += len(parsed.batch)
            dead += len(parsed.dead_letters)
        seconds.append(time.perf_counter() - start)
    rows = data.count(b"\n") - 1
    return {
        "file": os.path.basename(path),
        "rows": rows,
        "examples": examples,
        "dead_letters": dead,
        "best_seconds": round(min(seconds), 3),
        "median_seconds": round(statistics.median(seconds), 3),
        "million_lines_per_second": round(rows / min(seconds) / 1e6, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "out", "csv_parse"))
    args = parser.parse_args()
    for path in write_files(args.out, args.rows).values():
        print(json.dumps(measure(path, args.repeats)), flush=True)


if __name__ == "__main__":
    main()
