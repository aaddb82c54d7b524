"""polybeam on real engines: start-up, throughput against the in-process runner, and the suite's tolerance.

    python benchmarks/bench_engines.py --engines flink-embedded,flink-cluster,prism [--examples 184040]
    python benchmarks/bench_engines.py --tolerance
    python benchmarks/bench_engines.py --suite flink-embedded,flink-cluster,spark-embedded,spark-cluster,prism

``--engines``: each engine is started as the engine suite and ``polybeam
engines start`` start it (``polybeam.engines.running``: job server, cluster,
the external worker pool with a private /tmp where the machine allows it);
then ``polybeam train`` (logistic, defaults) on
``--examples`` examples of spam (the bundled file repeated, in 8 shards) runs
on it and in process, best of ``--repeats``. Throughput is examples per
second of the whole command, and of the job alone (``job_seconds``: from
submission to the end, without the launcher's start).

``--tolerance``: what re-bundling alone does to a trained model, measured in
process. Each training command of the engine suite (:data:`TRAINS`, the
suite's ``tests/engines/runs.py`` commands, which a test holds equal) runs
with 1, 2 and 4 workers on its training split whole or in 2, 4 and 8 shards;
each model is evaluated on the held-out split; the largest change of each
metric from the one-worker, whole-file model is what an engine's bundling may
do, and ``tests/engines/tolerance.py`` allows twice it.

``--suite``: the engine suite (``tests/engines``, run by pytest in a
subprocess) on each engine in turn, with its outcome, the engine's start-up
and the time of its runs.

Nothing here imports from ``tests/``: starting an engine is the package's.

Each writes ``benchmarks/results/engines.json`` and its section of
``engines.md`` (the other sections are kept).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from harness import load_average, machine_info, markdown_table, measured_run  # noqa: E402

RESULTS = HERE / "results"
COMMAND = [sys.executable, "-m", "polybeam.pipelines.cli"]
SHARDS = 8
WORKER_SETTINGS = ((1, 1), (2, 2), (2, 4), (4, 4), (4, 8))  # (workers, shards); (1, 1) is the reference
# The engine suite's training commands (tests/engines/runs.py TRAINS: tests/benchmarks/test_bench_engines.py
# holds the two equal), by name: (bundled dataset, options). tests/engines/tolerance.py keys its
# measurements by these names.
TRAINS = {
    "linear": ("spam", ("--loss", "logistic")),
    "apple": ("spam", ("--loss", "logistic", "--expand", "apple")),
    "softmax": ("satellite", ("--loss", "softmax", "--classes", "6")),
    "three-passes": ("spam", ("--loss", "logistic", "--passes", "3", "--holdout-min-examples", "0")),
}


def write_shards(lines: list[bytes], stem: Path, count: int) -> str:
    """``lines`` in ``count`` consecutive files ``STEM-INDEX.libsvm``; their glob."""
    for index in range(count):
        part = lines[index * len(lines) // count : (index + 1) * len(lines) // count]
        Path(f"{stem}-{index}.libsvm").write_bytes(b"".join(part))
    return f"{stem}-*.libsvm"


def write_spam_shards(folder: Path, examples: int) -> str:
    """``examples`` lines of spam (the bundled file repeated) in SHARDS files; their glob."""
    from polybeam import datasets

    lines = datasets.lines("spam")
    return write_shards([lines[index % len(lines)] for index in range(examples)], folder / "spam", SHARDS)


def train(options: list[str], train_glob: str, model: Path, env: dict | None = None) -> dict:
    run = measured_run(
        [*COMMAND, "train", "--input", train_glob, "--loss", "logistic", "--model", str(model), *options], env=env
    )
    if run.returncode != 0:
        raise RuntimeError(f"train failed ({' '.join(options)}):\n{run.stderr[-3000:]}")
    report = json.loads(run.stdout.strip().splitlines()[-1])
    return {
        "seconds": run.seconds,
        "job_seconds": report["job_seconds"],
        "examples": report["examples"],
        "progressive_loss": report["progressive_loss"],
    }


def best(runs: list[dict]) -> dict:
    return min(runs, key=lambda run: run["seconds"])


def measure_engines(names: list[str], examples: int, repeats: int) -> dict:
    from polybeam.engines import processes, running
    from polybeam.engines.pools import start_worker_pool

    root = Path(tempfile.mkdtemp(prefix="polybeam-bench-engines-", dir="/var/tmp"))
    launcher_env = {**os.environ, "TMPDIR": tempfile.mkdtemp(prefix="polybeam-bench-launcher-")}
    try:
        (root / "data").mkdir()
        train_glob = write_spam_shards(root / "data", examples)
        results = {
            "in-process": {
                "startup_seconds": 0.0,
                "versions": "FnApiRunner",
                "train": best(
                    [train([], train_glob, root / f"in-process-{i}.model", launcher_env) for i in range(repeats)]
                ),
            }
        }
        pool, _ = start_worker_pool(root, private_tmp=True)
        try:
            for name in names:
                engine = running.start(name, root / "engines", pool.address)
                try:
                    runs = [
                        train(engine.options, train_glob, root / f"{name}-{i}.model", launcher_env)
                        for i in range(repeats)
                    ]
                    results[name] = {
                        "startup_seconds": engine.startup_seconds,
                        "versions": engine.versions,
                        "train": best(runs),
                    }
                finally:
                    engine.stop()
                print(name, results[name], flush=True)
        finally:
            processes.stop(pool)
        return results
    finally:
        shutil.rmtree(root, ignore_errors=True)


def engines_markdown(results: dict, examples: int, repeats: int) -> str:
    reference = results["in-process"]["train"]
    rows = []
    for name, result in results.items():
        run = result["train"]
        rows.append(
            [
                name,
                result["versions"],
                f"{result['startup_seconds']:.1f}",
                f"{run['seconds']:.1f}",
                f"{run['job_seconds']:.1f}",
                f"{examples / run['seconds']:,.0f}",
                f"{examples / run['job_seconds']:,.0f}",
                f"{run['seconds'] / reference['seconds']:.1f}x",
                f"{run['progressive_loss']:.6f}",
            ]
        )
    table = markdown_table(
        [
            "engine",
            "versions",
            "start-up s",
            "train s",
            "job s",
            "examples/s (command)",
            "examples/s (job)",
            "time vs in-process",
            "progressive loss",
        ],
        rows,
    )
    return (
        f"## Throughput: `polybeam train` on {examples:,} examples (spam repeated, {SHARDS} shards), "
        f"best of {repeats}\n\n{table}\n"
    )


def measure_suite(names: list[str]) -> dict:
    """Run the engine suite on each engine (one pytest per engine); its outcome, start-up and times."""
    import re
    import subprocess

    results = {}
    for name in names:
        started = time.monotonic()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "-rs",
                "tests/engines/test_engine_suite.py",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**os.environ, "POLYBEAM_ENGINES": name},
        )
        seconds = time.monotonic() - started
        outcome = re.findall(r"^=*\s*(.*(?:passed|failed|skipped|error).*?)\s*=*$", done.stdout, re.MULTILINE)
        timing = re.search(r"started in ([\d.]+) s; its runs took (\d+) s", done.stdout)
        results[name] = {
            "outcome": outcome[-1] if outcome else done.stdout[-300:],
            "pytest_seconds": seconds,
            "startup_seconds": float(timing.group(1)) if timing else None,
            "runs_seconds": float(timing.group(2)) if timing else None,
        }
        print(name, results[name], flush=True)
    return results


def suite_markdown(results: dict) -> str:
    rows = [
        [
            name,
            result["outcome"],
            "-" if result["startup_seconds"] is None else f"{result['startup_seconds']:.1f}",
            "-" if result["runs_seconds"] is None else f"{result['runs_seconds']:.0f}",
            f"{result['pytest_seconds']:.0f}",
        ]
        for name, result in results.items()
    ]
    table = markdown_table(
        ["engine", "outcome", "start-up s", "its runs s", "whole pytest s (with the reference)"], rows
    )
    return (
        "## The engine suite on each engine\n\n`POLYBEAM_ENGINES=NAME python -m pytest tests/engines/"
        f"test_engine_suite.py`, one engine at a time.\n\n{table}\n"
    )


def measure_tolerance() -> dict:
    from polybeam import datasets

    root = Path(tempfile.mkdtemp(prefix="polybeam-bench-tolerance-", dir="/var/tmp"))
    try:
        splits = {}
        for name in ("spam", "satellite"):
            (root / name).mkdir()
            splits[name] = [Path(path) for path in datasets.write_split(name, str(root / name))]
        results = {}
        for variant, (dataset, options) in TRAINS.items():
            train_file, test_file = splits[dataset]
            lines = train_file.read_bytes().splitlines(keepends=True)
            metrics = {}
            for workers, shards in WORKER_SETTINGS:
                train_input = (
                    str(train_file) if shards == 1 else write_shards(lines, root / dataset / f"train-{shards}", shards)
                )
                model = root / f"{variant}-{workers}w-{shards}s.model"
                threads = (
                    []
                    if workers == 1
                    else ["--direct_num_workers", str(workers), "--direct_running_mode", "multi_threading"]
                )
                trained = measured_run(
                    [*COMMAND, "train", "--input", train_input, "--model", str(model), *options, *threads]
                )
                evaluated = measured_run([*COMMAND, "evaluate", "--input", str(test_file), "--model", str(model)])
                if trained.returncode or evaluated.returncode:
                    raise RuntimeError((trained.stderr + evaluated.stderr)[-3000:])
                report = json.loads(evaluated.stdout.strip().splitlines()[-1])
                metrics[f"{workers}w/{shards}s"] = {key: report.get(key) for key in ("loss", "error", "auc")}
            reference = metrics["1w/1s"]
            largest = {
                key: max(abs(values[key] - reference[key]) for values in metrics.values())
                for key in reference
                if reference[key] is not None
            }
            results[variant] = {"metrics": metrics, "largest_change": largest}
            print(variant, largest, flush=True)
        return results
    finally:
        shutil.rmtree(root, ignore_errors=True)


def tolerance_markdown(results: dict) -> str:
    rows = []
    for variant, result in results.items():
        for setting, values in result["metrics"].items():
            rows.append(
                [variant, setting]
                + [("-" if values[key] is None else f"{values[key]:.5f}") for key in ("loss", "error", "auc")]
            )
    largest = {
        key: max(result["largest_change"].get(key, 0.0) for result in results.values())
        for key in ("loss", "error", "auc")
    }
    table = markdown_table(["command", "workers/shards", "held-out loss", "error", "auc"], rows)
    summary = ", ".join(f"{key} {value:.4f}" for key, value in largest.items())
    return (
        f"## Tolerance: what re-bundling alone does (in process)\n\n{table}\n\n"
        f"Largest change from the one-worker, whole-file model: {summary}. "
        f"`tests/engines/tolerance.py` allows twice that, rounded up.\n"
    )


def update_markdown(section: str, heading: str) -> None:
    path = RESULTS / "engines.md"
    text = path.read_text() if path.exists() else "# polybeam on real engines\n\n"
    parts = text.split("\n## ")
    kept = [parts[0]] + ["## " + part for part in parts[1:] if not part.startswith(heading)]
    path.write_text("\n".join(part.rstrip() + "\n" for part in kept) + "\n" + section)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    from polybeam.engines.running import SETUPS

    parser.add_argument("--engines", default="", help=f"comma-separated engines: {', '.join(SETUPS)}")
    parser.add_argument("--examples", type=int, default=184_040, help="training examples (spam repeated)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--tolerance", action="store_true", help="measure re-bundling's effect in process")
    parser.add_argument("--suite", default="", help="comma-separated engines to run the engine suite on")
    args = parser.parse_args(argv)
    RESULTS.mkdir(exist_ok=True)
    stored = RESULTS / "engines.json"
    results = json.loads(stored.read_text()) if stored.exists() else {}
    results["machine"] = {**machine_info(), "load_average": load_average(), "date": time.strftime("%Y-%m-%d")}
    if args.engines:
        names = [name for name in args.engines.split(",") if name]
        results["throughput"] = {
            "examples": args.examples,
            "repeats": args.repeats,
            "engines": measure_engines(names, args.examples, args.repeats),
        }
        update_markdown(engines_markdown(results["throughput"]["engines"], args.examples, args.repeats), "Throughput")
    if args.suite:
        suite = {**results.get("suite", {}), **measure_suite([name for name in args.suite.split(",") if name])}
        results["suite"] = suite
        update_markdown(suite_markdown(suite), "The engine suite")
    if args.tolerance:
        results["tolerance"] = measure_tolerance()
        update_markdown(tolerance_markdown(results["tolerance"]), "Tolerance")
    stored.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
