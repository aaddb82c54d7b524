"""Streaming training (``polybeam train --watch``) against one batch pass over the same examples, on Prism.

Run ``python benchmarks/bench_streaming.py [--rate 10000] [--seconds 60] [--out DIR]``. A producer writes
VW files of ``--file-rows`` rows (a planted logistic task: 20 numeric features and a categorical one) into
a watched folder at ``--rate`` examples a second for ``--seconds`` seconds, each written under another name
and renamed (its arrival). ``polybeam train --watch 0.5 --model-every 2 --stop-after-idle 5`` learns them
as they come. Measured:

* **freshness**: for each file, from its arrival to the first readable version that learned it (the
  versions' ``created`` times in the folder's index; files are learned in arrival order, so the first
  version whose examples cover a file's last row learned it), p50 and p99 over examples (target: p99 at
  most 10 s at 10,000 examples/s);
* **throughput**: the same files dropped at once, from the job's start to the version that holds them
  all, against ``polybeam train`` (one pass) over them on the same runner, start to end (target: at
  least half);
* **loss**: the stream's progressive loss (its versions', weighted by examples) and its last model's
  held-out log loss against one batch pass over the same examples in the same order (target: within 1%).

``benchmarks/results/streaming.{json,md}``. Needs Prism (``polybeam engines fetch prism``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from harness import machine_info, markdown_table, write_report  # noqa: E402

FRESHNESS_TARGET = 10.0
THROUGHPUT_TARGET = 0.5
LOSS_TARGET = 0.01
FEATURES = 20
TRUE_WEIGHTS = np.random.default_rng(1234).normal(size=FEATURES) / np.sqrt(FEATURES) * 3


def vw_block(seed: int, rows: int) -> str:
    """``rows`` examples of the planted task as VW lines."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, FEATURES))
    colour = rng.integers(0, 8, size=rows)
    margins = x @ TRUE_WEIGHTS + (colour - 3.5) * 0.3
    labels = np.where(margins + rng.logistic(size=rows) > 0, 1, -1)
    names = [f"x{j}" for j in range(FEATURES)]
    return "".join(
        f"{label} |n " + " ".join(f"{n}:{v:.4f}" for n, v in zip(names, row)) + f" |c colour{c}\n"
        for label, row, c in zip(labels, x, colour)
    )


def drop(folder: str, name: str, text: str) -> float:
    """Write ``text`` as ``folder/name`` (under another name first, then renamed); its arrival time."""
    temporary = os.path.join(folder, f".{name}.part")
    with open(temporary, "w") as handle:
        handle.write(text)
    os.rename(temporary, os.path.join(folder, name))
    return time.time()


def cli(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "polybeam.pipelines.cli", *arguments]


def last_json(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


def watch_command(incoming: str, models: str, idle: float) -> list[str]:
    return cli(
        "train", "--input", os.path.join(incoming, "*.vw"), "--format", "vw", "--loss", "logistic",
        "--watch", "0.5", "--model-every", "2", "--stop-after-idle", str(idle), "--model", models,
    )  # fmt: skip


def read_index(models: str) -> list[dict]:
    with open(os.path.join(models, "index.json")) as handle:
        return json.load(handle)["versions"]


def freshness(arrivals: list[tuple[float, int]], index: list[dict]) -> list[tuple[float, int]]:
    """``(seconds, rows)`` per file: from its arrival to the first version whose examples cover its last row."""
    result, covered = [], 0
    for arrived, rows in arrivals:
        covered += rows
        version = next(entry for entry in index if entry["examples"] >= covered)
        result.append((version["created"] - arrived, rows))
    return result


def percentile(weighted: list[tuple[float, int]], share: float) -> float:
    values = np.repeat([v for v, _ in weighted], [n for _, n in weighted])
    return float(np.percentile(values, share * 100))


def live(work: str, rate: float, seconds: float, file_rows: int) -> dict:
    """Files at ``rate`` examples/s for ``seconds`` while the job learns them: freshness and loss."""
    incoming, models = os.path.join(work, "live-in"), os.path.join(work, "live-models")
    os.makedirs(incoming)
    job = subprocess.Popen(
        watch_command(incoming, models, 8.0), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    time.sleep(8.0)  # (the job's start: Prism, the pipeline; files that wait for it would count start-up)
    arrivals, texts = [], []
    interval = file_rows / rate
    began = time.time()
    for i in range(int(round(seconds / interval))):
        texts.append(vw_block(i, file_rows))
        arrivals.append((drop(incoming, f"part-{i:05d}.vw", texts[-1]), file_rows))
        time.sleep(max(0.0, began + (i + 1) * interval - time.time()))
    produced = time.time() - began
    out, err = job.communicate(timeout=seconds + 600)
    if job.returncode != 0:
        raise RuntimeError(f"the streaming job failed: {err[-2000:]}")
    report = last_json(out)
    index = read_index(models)
    fresh = freshness(arrivals, index)
    with open(os.path.join(work, "all.vw"), "w") as handle:
        handle.write("".join(texts))
    return {
        "rate": rate,
        "produced_rate": sum(r for _, r in arrivals) / produced,
        "files": len(arrivals),
        "examples": report["examples_learned"],
        "versions": len(index),
        "freshness_p50": percentile(fresh, 0.5),
        "freshness_p99": percentile(fresh, 0.99),
        "freshness_max": max(v for v, _ in fresh),
        "progressive_loss": sum(e["progressive_loss"] * e["learned"] for e in index) / sum(e["learned"] for e in index),
        "models": models,
    }


def throughput(work: str, files: int, file_rows: int) -> dict:
    """The same files dropped at once: the stream's examples/s from its start to its last version, against
    one batch pass on the same runner."""
    incoming, models = os.path.join(work, "bulk-in"), os.path.join(work, "bulk-models")
    os.makedirs(incoming)
    for i in range(files):
        drop(incoming, f"part-{i:05d}.vw", vw_block(i, file_rows))
    examples = files * file_rows
    began = time.time()
    done = subprocess.run(watch_command(incoming, models, 3.0), capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the streaming job failed: {done.stderr[-2000:]}")
    last = read_index(models)[-1]
    stream_seconds = last["created"] - began
    from polybeam.engines import prism

    began = time.time()
    batch = subprocess.run(
        cli("train", "--input", os.path.join(incoming, "*.vw"), "--format", "vw", "--loss", "logistic", "--model",
            os.path.join(work, "bulk-batch.model"), *prism.polybeam_options()),
        capture_output=True, text=True,
    )  # fmt: skip
    if batch.returncode != 0:
        raise RuntimeError(f"the batch job failed: {batch.stderr[-2000:]}")
    batch_seconds = time.time() - began
    return {
        "examples": examples,
        "learned": last["examples"],
        "stream_seconds": stream_seconds,
        "stream_rate": examples / stream_seconds,
        "batch_seconds": batch_seconds,
        "batch_rate": examples / batch_seconds,
        "ratio": batch_seconds / stream_seconds,
    }


def held_out(work: str, live_result: dict) -> dict:
    """The stream's last model against one batch pass over the same examples in the same order, on a test file."""
    test = os.path.join(work, "test.vw")
    with open(test, "w") as handle:
        handle.write(vw_block(10**6, 20_000))
    batch_model = os.path.join(work, "live-batch.model")
    trained = subprocess.run(
        cli("train", "--input", os.path.join(work, "all.vw"), "--format", "vw", "--loss", "logistic", "--model",
            batch_model),
        capture_output=True, text=True,
    )  # fmt: skip
    if trained.returncode != 0:
        raise RuntimeError(trained.stderr[-2000:])

    def log_loss(model: str) -> float:
        done = subprocess.run(
            cli("evaluate", "--model", model, "--input", test, "--format", "vw"), capture_output=True, text=True
        )
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-2000:])
        return last_json(done.stdout)["loss"]  # (logistic loss: the log loss)

    stream, batch = log_loss(live_result["models"]), log_loss(batch_model)
    return {
        "stream_log_loss": stream,
        "batch_log_loss": batch,
        "relative": stream / batch - 1,
        "batch_progressive_loss": last_json(trained.stdout)["progressive_loss"],
    }


def render(report: dict) -> str:
    live_result, bulk, loss = report["live"], report["throughput"], report["held_out"]
    rows = [
        [
            f"freshness p99 at {live_result['rate']:,.0f} examples/s",
            f"{live_result['freshness_p99']:.2f} s (p50 {live_result['freshness_p50']:.2f} s)",
            f"<= {FRESHNESS_TARGET:g} s",
            "met" if live_result["freshness_p99"] <= FRESHNESS_TARGET else "NOT met",
        ],
        [
            "throughput, stream / batch pass",
            f"{bulk['ratio']:.2f} ({bulk['stream_rate']:,.0f} / {bulk['batch_rate']:,.0f} examples/s)",
            f">= {THROUGHPUT_TARGET:g}",
            "met" if bulk["ratio"] >= THROUGHPUT_TARGET else "NOT met",
        ],
        [
            "held-out log loss, stream's last version / batch pass",
            f"{loss['stream_log_loss']:.5f} / {loss['batch_log_loss']:.5f} ({loss['relative']:+.2%})",
            f"within {LOSS_TARGET:.0%}",
            "met" if abs(loss["relative"]) <= LOSS_TARGET else "NOT met",
        ],
    ]
    return "\n".join(
        [
            "# Streaming training against one batch pass (Prism)",
            "",
            f"`python benchmarks/bench_streaming.py --rate {live_result['rate']:g} --seconds {report['seconds']:g}` "
            f"({report['machine']['cpus']} cores, Beam {report['machine']['apache_beam']}). Files of {report['file_rows']:,} rows of a planted logistic task "
            f"(VW text, {FEATURES} numbers and a category) written at {live_result['produced_rate']:,.0f} "
            f"examples/s for {report['seconds']:g} s into a folder that `polybeam train --watch 0.5 --model-every 2` "
            f"watches: {live_result['files']} files, {live_result['examples']:,} examples, {live_result['versions']} "
            "versions.",
            "",
            markdown_table(["measure", "measured", "target", ""], rows),
            "",
            f"The stream's progressive loss (its versions', weighted by examples): "
            f"{live_result['progressive_loss']:.5f}; the batch pass's over the same examples in the same order: "
            f"{loss['batch_progressive_loss']:.5f}. Throughput: {bulk['examples']:,} examples in "
            f"{bulk['examples'] // report['file_rows']} files dropped at once; the stream from its start to the "
            f"version holding them all {bulk['stream_seconds']:.1f} s, `polybeam train` on Prism start to end "
            f"{bulk['batch_seconds']:.1f} s. Freshness counts from a file's arrival (its rename) to the creation "
            "of the first version that learned its last row; the watch polls every 0.5 s and a file is read once "
            "its size held across two polls.",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=10_000.0, help="examples a second the producer writes")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long it writes")
    parser.add_argument("--file-rows", type=int, default=5_000, help="rows a file")
    parser.add_argument("--bulk-files", type=int, default=100, help="files dropped at once for the throughput")
    parser.add_argument("--out", default=os.path.join(HERE, "results"), help="where streaming.{json,md} go")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        live_result = live(work, args.rate, args.seconds, args.file_rows)
        loss = held_out(work, live_result)
        bulk = throughput(work, args.bulk_files, args.file_rows)
    live_result.pop("models")
    report = {
        "machine": machine_info(),
        "seconds": args.seconds,
        "file_rows": args.file_rows,
        "live": live_result,
        "throughput": bulk,
        "held_out": loss,
    }
    markdown = render(report)
    write_report(args.out, "streaming", report, markdown)
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
