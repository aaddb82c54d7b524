"""Per-key learners at scale: time and memory against the number of keys, next to one global model.

The issue's task, as a new user would meet it: a CSV file of rows with 20
numeric features, a logistic label and a ``key`` column, keys interleaved at
random (a user's data is not sorted by key). Each configuration trains with
``polybeam train --loss logistic`` and polybeam's defaults twice, in the same
run, on the same rows: one global model (``--ignore-columns key``), and one
model per key (``--key column:key``). Both are whole commands in a fresh
process; the figures are the wall time and the peak memory of the process
(the in-process runner: the launcher is the worker), best of ``--repeats``.

Targets: 10,000 keys x 10 rows at most 3x the global model's time and at most
1 GiB; 100,000 keys x 10 rows at most 2x the global model's time; 1,000,000
keys x 10 rows (10M rows) at most 3x the global model's time and at most 4 GiB.
``polybeam evaluate --key`` of the same rows with the per-key models is timed
too: scoring keys should cost no more than training them.

Usage::

    python benchmarks/bench_keys.py                       # 2,000 x 50, 10,000 x 10, 100,000 x 10
    python benchmarks/bench_keys.py --full                # and 1,000,000 x 10 (10M rows, ~2 GB of CSV)
    python benchmarks/bench_keys.py --sizes 10000x10 --repeats 1 --out /tmp/k --results /tmp/k
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from harness import load_average, machine_info, markdown_table, measured_run, write_report  # noqa: E402

FEATURES = 20
DEFAULT_SIZES = ("2000x50", "10000x10", "100000x10")
FULL_SIZES = DEFAULT_SIZES + ("1000000x10",)
TARGETS = {"10000x10": (3.0, 1 << 30), "100000x10": (2.0, None), "1000000x10": (3.0, 4 << 30)}


def _target_text(ratio: float, peak: int | None) -> str:
    return f"<= {ratio:g}x" + ("" if peak is None else f", <= {peak / 2**30:g} GiB")


def write_rows(path: str, keys: int, rows_per_key: int, seed: int = 0, chunk: int = 1_000_000) -> int:
    """Write ``keys * rows_per_key`` rows (key, label, x0..x19) in a random order of keys; returns the rows.

    Each key's label is logistic in a shared weight vector plus the key's own
    offset, so per-key models have something of their own to learn."""
    rng = np.random.default_rng(seed)
    rows = keys * rows_per_key
    order = rng.permutation(np.repeat(np.arange(keys, dtype=np.int64), rows_per_key))
    shared = rng.normal(size=FEATURES)
    columns = ["key", "label"] + [f"x{i}" for i in range(FEATURES)]
    schema = pa.schema([("key", pa.string()), ("label", pa.int8())] + [(name, pa.float64()) for name in columns[2:]])
    with pacsv.CSVWriter(path, schema) as writer:
        for start in range(0, rows, chunk):
            key = order[start : start + chunk]
            n = len(key)
            x = np.round(rng.normal(size=(n, FEATURES)), 3)
            offsets = np.random.default_rng(key * 7919 + seed).normal(size=(n, FEATURES)) * 0.5  # each key's own
            margin = np.einsum("ij,ij->i", x, shared + offsets)
            label = (rng.random(n) < 1 / (1 + np.exp(-margin))).astype(np.int8)
            arrays = [pa.array(np.char.add("k", key.astype(str))), pa.array(label)] + [
                pa.array(x[:, i]) for i in range(FEATURES)
            ]
            writer.write_table(pa.Table.from_arrays(arrays, schema=schema))
    return rows


def run(command: list[str]) -> dict:
    measured = measured_run(command)
    measured.check()
    report = measured.last_json()
    return {
        "seconds": measured.seconds,
        "peak_rss_bytes": measured.peak_rss_bytes,
        "job_seconds": report.get("job_seconds"),
        "progressive_loss": report.get("progressive_loss"),
        "examples": report.get("examples_trained"),
        # (train reports how many keys; evaluate every key's metrics, of which the count is kept)
        "keys": len(report["keys"]) if isinstance(report.get("keys"), dict) else report.get("keys"),
    }


def measure(size: str, folder: str, repeats: int) -> dict:
    keys, per_key = (int(part) for part in size.split("x"))
    data = os.path.join(folder, f"keys-{size}.csv")
    started = time.perf_counter()
    if not os.path.exists(data):
        write_rows(data, keys, per_key)
    made = time.perf_counter() - started
    common = [
        "polybeam",
        "train",
        "--input",
        data,
        "--format",
        "csv",
        "--label-column",
        "label",
        "--loss",
        "logistic",
        "--quiet",
    ]
    runs: dict[str, list[dict]] = {"global": [], "per_key": [], "evaluate": [], "shared": []}
    shared_model = os.path.join(folder, f"keys-{size}-shared.model")
    models = os.path.join(folder, f"keys-{size}")
    scoring = ["polybeam", "evaluate", "--input", data, "--format", "csv", "--label-column", "label", "--quiet"]
    for _ in range(repeats):  # interleaved, so that a busy moment of the machine hits all
        runs["global"].append(
            run(common + ["--ignore-columns", "key", "--model", os.path.join(folder, "global.model")])
        )
        runs["per_key"].append(run(common + ["--key", "column:key", "--model", models]))
        # Scoring the same rows with their keys' models (the report, with every key's metrics, beside the folder).
        runs["evaluate"].append(run(scoring + ["--key", "column:key", "--model", models]))
        # One shared model of every key (shared weights plus an offset per key).
        runs["shared"].append(run(common + ["--key", "column:key", "--key-model", "shared", "--model", shared_model]))
    best = {kind: min(found, key=lambda r: r["seconds"]) for kind, found in runs.items()}
    result = {
        "size": size,
        "keys": keys,
        "rows_per_key": per_key,
        "rows": keys * per_key,
        "data_seconds": made,
        "global": best["global"],
        "per_key": best["per_key"],
        "evaluate": best["evaluate"],
        "shared": best["shared"],
        "shared_ratio": best["shared"]["seconds"] / best["global"]["seconds"],
        "shared_model": _shared_model_facts(shared_model),
        "time_ratio": best["per_key"]["seconds"] / best["global"]["seconds"],
        "evaluate_ratio": best["evaluate"]["seconds"] / best["per_key"]["seconds"],
        "memory_ratio": best["per_key"]["peak_rss_bytes"] / best["global"]["peak_rss_bytes"],
        "runs": runs,
    }
    target = TARGETS.get(size)
    if target:
        result["target"] = {
            "time_ratio": target[0],
            "peak_bytes": target[1],
            "met": result["time_ratio"] <= target[0]
            and (target[1] is None or best["per_key"]["peak_rss_bytes"] <= target[1]),
            "shared_met": result["shared_ratio"] <= target[0]
            and (target[1] is None or best["shared"]["peak_rss_bytes"] <= target[1]),
        }
    print(
        f"{size}: global {best['global']['seconds']:.1f} s {best['global']['peak_rss_bytes'] / 2**20:.0f} MiB; "
        f"per key {best['per_key']['seconds']:.1f} s {best['per_key']['peak_rss_bytes'] / 2**20:.0f} MiB; "
        f"time ratio {result['time_ratio']:.2f}; evaluate {best['evaluate']['seconds']:.1f} s "
        f"({result['evaluate_ratio']:.2f}x training; target <= 1x); shared {best['shared']['seconds']:.1f} s "
        f"{best['shared']['peak_rss_bytes'] / 2**20:.0f} MiB ({result['shared_ratio']:.2f}x global; its model "
        f"{result['shared_model']['bytes'] / 2**20:.1f} MiB, read in {result['shared_model']['read_seconds']:.2f} s)"
        + (
            f" (target {_target_text(target[0], target[1])}: {'met' if result['target']['met'] else 'NOT met'})"
            if target
            else ""
        )
        + (f" (shared: {'met' if result['target']['shared_met'] else 'NOT met'})" if target else ""),
        flush=True,
    )
    return result


def _shared_model_facts(path: str) -> dict:
    """The shared model file's size and the seconds this process takes to read it (best of 3)."""
    from polybeam.transforms.model_io import read_model

    seconds = []
    for _ in range(3):
        started = time.perf_counter()
        model = read_model(path)
        seconds.append(time.perf_counter() - started)
    return {"bytes": os.path.getsize(path), "read_seconds": min(seconds), "keys": len(model.shared_keys.trained)}


def markdown(report: dict) -> str:
    rows = []
    for r in report["results"]:
        target = r.get("target")
        rows.append(
            [
                f"{r['keys']:,} x {r['rows_per_key']}",
                f"{r['rows']:,}",
                f"{r['global']['seconds']:.1f}",
                f"{r['global']['peak_rss_bytes'] / 2**20:.0f}",
                f"{r['per_key']['seconds']:.1f}",
                f"{r['per_key']['peak_rss_bytes'] / 2**20:.0f}",
                f"{r['time_ratio']:.2f}",
                f"{r['evaluate']['seconds']:.1f}" if "evaluate" in r else "-",
                f"{r['evaluate_ratio']:.2f}" if "evaluate_ratio" in r else "-",
                f"{r['global']['progressive_loss']:.4f}",
                f"{r['per_key']['progressive_loss']:.4f}",
                "-"
                if not target
                else f"{_target_text(target['time_ratio'], target['peak_bytes'])}: "
                + ("met" if target["met"] else "**not met**"),
                f"{r['shared']['seconds']:.1f}, {r['shared']['peak_rss_bytes'] / 2**20:.0f}" if "shared" in r else "-",
                f"{r['shared_ratio']:.2f}"
                + ("" if not target else " (met)" if target["shared_met"] else " (**not met**)")
                if "shared" in r
                else "-",
                f"{r['shared_model']['bytes'] / 2**20:.1f} MiB, {r['shared_model']['read_seconds']:.2f} s"
                if "shared" in r
                else "-",
            ]
        )
    table = markdown_table(
        [
            "keys x rows",
            "rows",
            "global s",
            "global MiB",
            "per key s",
            "per key MiB",
            "time ratio",
            "per-key evaluate s",
            "evaluate / per-key train",
            "global loss",
            "per-key loss",
            "target",
            "shared s, MiB",
            "shared / global",
            "shared model file, read",
        ],
        rows,
    )
    return (
        f"# Per-key learners against one global model\n\nMeasured {report['measured']} by "
        f"`benchmarks/bench_keys.py` on {report['machine'].get('cpus')} CPUs (load average {report['load_start']} at "
        f"the start, {report['load_end']} at the end). Whole `polybeam train` commands (logistic, defaults) on the "
        "same CSV rows (20 numeric features, keys in random order), best of "
        f"{report['repeats']}; seconds and peak memory of the process. `polybeam evaluate --key` scores the same "
        f"rows with the per-key models (target: no slower than training them); `--key-model shared` trains one "
        f"shared model of the same keys (shared weights and an offset per key; target as per key).\n\n{table}\n"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="*", default=None, help="KEYSxROWS, e.g. 10000x10")
    parser.add_argument("--full", action="store_true", help="add 1,000,000 keys x 10 rows")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", default=os.path.join(HERE, "out", "keys"))
    parser.add_argument("--results", default=os.path.join(HERE, "results"))
    args = parser.parse_args(argv)
    sizes = args.sizes or (FULL_SIZES if args.full else DEFAULT_SIZES)
    os.makedirs(args.out, exist_ok=True)
    report = {
        "measured": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": machine_info(),
        "repeats": args.repeats,
        "load_start": load_average(),
        "results": [],
    }
    for size in sizes:
        report["results"].append(measure(size, args.out, args.repeats))
    report["load_end"] = load_average()
    write_report(args.results, "keys", report, markdown(report))
    print(json.dumps({r["size"]: round(r["time_ratio"], 2) for r in report["results"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
