"""How fast each format of named columns parses the same table, against its peers in the same run.

The table: a 0/1 label, 8 numbers and 2 text columns (3 and 50 values), ``--rows`` rows, held in memory as
CSV, JSON Lines, Parquet and Avro. polybeam parses each as its reader hands it over (text in 4 MiB blocks of
whole lines, Parquet and Avro by record batches of 32,768 rows); the peers read the same bytes into a table
(pandas' ``read_json(lines=True)``, Arrow's JSON reader, fastavro's records). Best of ``--repeats`` runs, one
core::

    python benchmarks/bench_record_formats.py [--rows 200000] [--repeats 3]

Prints one JSON line per reader: seconds and million rows per second, and for polybeam's JSON Lines and Avro
the ratio to their peers (above 1: polybeam is faster).
"""

from __future__ import annotations

import argparse
import io
import json
import time

import fastavro
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.json as pj
import pyarrow.parquet as pq

from polybeam.formats.formats import make_format

BLOCK_BYTES = 4 << 20
BATCH_ROWS = 32768


def table(rows: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    numbers = {f"x{i}": np.round(rng.normal(size=rows), 6) for i in range(8)}
    return pd.DataFrame(
        {
            "label": rng.integers(0, 2, rows),
            **numbers,
            "c0": rng.choice(["red", "blue", "green"], rows),
            "c1": rng.choice([f"k{i}" for i in range(50)], rows),
        }
    )


def encodings(frame: pd.DataFrame) -> dict[str, bytes]:
    records = [
        {k: (v.item() if isinstance(v, np.generic) else v) for k, v in r.items()} for r in frame.to_dict("records")
    ]
    parquet = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), parquet)
    fields = [{"name": "label", "type": "long"}, *({"name": f"x{i}", "type": "double"} for i in range(8))]
    schema = {"type": "record", "name": "Row", "fields": [*fields, {"name": "c0", "type": "string"},
                                                          {"name": "c1", "type": "string"}]}  # fmt: skip
    avro = io.BytesIO()
    fastavro.writer(avro, schema, records)
    return {
        "csv": frame.to_csv(index=False).encode(),
        "jsonl": "".join(json.dumps(record) + "\n" for record in records).encode(),
        "parquet": parquet.getvalue(),
        "avro": avro.getvalue(),
    }


def blocks(data: bytes) -> list[bytes]:
    """Whole lines, about BLOCK_BYTES at a time, as the text reader hands them over."""
    out, start = [], 0
    while start < len(data):
        end = data.find(b"\n", start + BLOCK_BYTES)
        end = len(data) if end < 0 else end + 1
        out.append(data[start:end])
        start = end
    return out


def readers(data: dict[str, bytes]) -> dict:
    csv = make_format("csv", labels="binary", categorical_columns=("c0", "c1"))
    header = data["csv"].split(b"\n", 1)[0]
    csv_blocks, jsonl_blocks = blocks(data["csv"]), blocks(data["jsonl"])
    jsonl, parquet, avro = (make_format(name, labels="binary") for name in ("jsonl", "parquet", "avro"))

    def parse_csv():
        for i, block in enumerate(csv_blocks):
            csv.parse(block, header=header if i else None, offset=0 if i == 0 else 1, first_line=1 if i == 0 else None)

    return {
        "polybeam csv": parse_csv,
        "polybeam jsonl": lambda: [jsonl.parse(block) for block in jsonl_blocks],
        "polybeam parquet": lambda: [
            parquet.parse_table(b) for b in parquet.record_batches(io.BytesIO(data["parquet"]), BATCH_ROWS)
        ],
        "polybeam avro": lambda: [
            avro.parse_table(b) for b in avro.record_batches(io.BytesIO(data["avro"]), BATCH_ROWS)
        ],
        "pandas read_json(lines=True)": lambda: pd.read_json(io.BytesIO(data["jsonl"]), lines=True),
        "arrow json": lambda: [pj.read_json(pa.py_buffer(block)) for block in jsonl_blocks],
        "fastavro records": lambda: sum(1 for _ in fastavro.reader(io.BytesIO(data["avro"]))),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    data = encodings(table(args.rows))
    seconds = {}
    for name, read in readers(data).items():
        read()  # (compiles the kernels, warms the caches)
        best = min(_timed(read) for _ in range(args.repeats))
        seconds[name] = best
        print(json.dumps({"reader": name, "seconds": round(best, 4), "m_rows_per_s": round(args.rows / best / 1e6, 3)}))
    ratios = {
        "jsonl vs pandas": seconds["pandas read_json(lines=True)"] / seconds["polybeam jsonl"],
        "jsonl vs arrow json alone": seconds["arrow json"] / seconds["polybeam jsonl"],
        "avro vs fastavro records alone": seconds["fastavro records"] / seconds["polybeam avro"],
    }
    print(json.dumps({"ratios": {name: round(value, 3) for name, value in ratios.items()}}))


def _timed(read) -> float:
    started = time.perf_counter()
    read()
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
