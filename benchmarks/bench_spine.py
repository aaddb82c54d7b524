"""The spine benchmark: polybeam's reading, learning and whole pipeline next to Vowpal Wabbit, in one run.

Run ``python benchmarks/bench_spine.py [--examples N] [--out DIR]``. It

1. writes ``N`` (default 1M) seeded synthetic examples (``PlantedPolynomial``,
   about 49 binary non-zeros each) as LIBSVM and VW text into ``--out``;
2. times VW (linear, squared loss, 18 bits, one pass, default
   adaptive/normalised/invariant updates) on the VW file, whole run;
3. times polybeam's parsers alone (4 MiB blocks of whole lines), then its
   learner kernel alone on the pre-parsed examples in 4096-row batches, with
   the same settings as VW (squared loss, normalised adaptive steps);
4. times ``polybeam train`` on the default runner on both files, as
   subprocesses, with their peak memory, after a small warm-up run that fills
   numba's cache (whose cold time is reported too);
5. (``--real``, on by default) compares held-out errors of polybeam and VW on
   bundled spam and on letter as a binary task (A-M vs N-Z), logistic loss,
   one pass, on identical 80/20 split files;

and writes everything to ``benchmarks/results/spine.json`` and ``spine.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import shutil
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from harness import (  # noqa: E402
    MeasuredRun,
    libsvm_to_vw,
    line_blocks,
    load_average,
    machine_info,
    measured_run,
    read_predictions,
    run_vw,
    write_report,
)
from spine_report import estimate_breakdown, render, targets_of  # noqa: E402

from polybeam.datasets import write_split  # noqa: E402
from polybeam.datasets.synthetic import PlantedPolynomial, write_dataset  # noqa: E402
from polybeam.formats.libsvm import LibsvmFormat  # noqa: E402
from polybeam.formats.vw import VWFormat  # noqa: E402
from polybeam.learners.batch import ExampleBatch  # noqa: E402
from polybeam.learners.config import LearnerConfig  # noqa: E402
from polybeam.learners.evaluation import Evaluation  # noqa: E402
from polybeam.learners.linear import LinearLearner  # noqa: E402

BITS = 18
MIB = 1 << 20
WARMUP_EXAMPLES = 20_000


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def polybeam_command(*arguments: str) -> list[str]:
    """The ``polybeam`` command of this interpreter's installation."""
    return [sys.executable, "-m", "polybeam.pipelines.cli", *arguments]


# -- 1. data ------------------------------------------------------------------------------


def write_synthetic(out: str, examples: int, seed: int) -> dict:
    task = PlantedPolynomial(seed=seed)
    started = time.perf_counter()
    paths = write_dataset(out, examples, task)
    seconds = time.perf_counter() - started
    sizes = {format: os.path.getsize(path) for format, path in paths.items()}
    log(
        f"wrote {examples} examples in {seconds:.1f} s: "
        + ", ".join(f"{f} {s / MIB:.0f} MiB" for f, s in sizes.items())
    )
    return {"task": dataclasses.asdict(task), "examples": examples, "seconds": seconds, "paths": paths, "bytes": sizes}


def head_lines(source: str, target: str, lines: int) -> str:
    with open(source, "rb") as reader, open(target, "wb") as writer:
        for _, line in zip(range(lines), reader):
            writer.write(line)
    return target


# -- 2. Vowpal Wabbit -----------------------------------------------------------------------


class VWYardstick:
    """VW's whole run (start-up, reading, parsing, learning) on the synthetic VW file.

    It is measured several times, some of them right before each pipeline run,
    and the best time counts, so that a busy moment of a shared machine does
    not skew the ratios.
    """

    def __init__(self, vw_path: str):
        self.vw_path = vw_path
        self.runs = []

    def measure(self, times: int = 1) -> VWYardstick:
        for _ in range(times):
            self.runs.append(run_vw("-d", self.vw_path, "-b", str(BITS), "--loss_function", "squared"))
        best = self.best
        log(
            f"VW: {self.runs[-1].run.seconds:.2f} s (best {best.run.seconds:.2f} s), average loss {best.average_loss:.6f}"
        )
        return self

    @property
    def best(self):
        return min(self.runs, key=lambda run: run.run.seconds)

    def to_dict(self) -> dict:
        vw = self.best
        return {
            "seconds": vw.run.seconds,
            "all_seconds": [run.run.seconds for run in self.runs],
            "cpu_seconds": vw.run.cpu_seconds,
            "average_loss": vw.average_loss,
            "examples": vw.examples,
            "peak_rss_bytes": vw.run.peak_rss_bytes,
            "command": " ".join(vw.run.command[1:]),
        }


def time_vw_one_core(vw_path: str, repeats: int) -> dict | None:
    """VW pinned to one core (``taskset -c 0``): its parse and learn threads then share it, as polybeam's job does."""
    if not shutil.which("taskset"):
        return None
    runs = [
        run_vw("-d", vw_path, "-b", str(BITS), "--loss_function", "squared", prefix=("taskset", "-c", "0"))
        for _ in range(repeats)
    ]
    best = min(runs, key=lambda run: run.run.seconds)
    log(f"VW on one core: {best.run.seconds:.2f} s")
    return {
        "seconds": best.run.seconds,
        "all_seconds": [run.run.seconds for run in runs],
        "cpu_seconds": best.run.cpu_seconds,
        "average_loss": best.average_loss,
        "peak_rss_bytes": best.run.peak_rss_bytes,
    }


# VW's default update, which the learner-kernel comparison runs (VW does not centre features).
VW_SETTINGS = LearnerConfig(loss="squared", step="adaptive", bits=BITS, center=False)


# -- 3. parsers and learner kernel ------------------------------------------------------------


def time_parser(path: str, parser, block_bytes: int, repeats: int) -> dict:
    """Read and parse ``path`` block by block, best of ``repeats``; the time includes reading the (cached) file.

    Parsed batches are dropped at once, as a pipeline does: keeping them all
    would add the cost of growing the heap to the parser's time.
    """
    parser.parse(b"1 |f 1\n" if isinstance(parser, VWFormat) else b"1 1:1\n")  # load the compiled kernel
    runs = []
    for _ in range(repeats):
        examples = dead = 0
        parse_seconds = 0.0
        started, cpu_started = time.perf_counter(), time.process_time()
        for offset, block in line_blocks(path, block_bytes):
            before = time.perf_counter()
            parsed = parser.parse(block, source=path, offset=offset, first_line=None)
            parse_seconds += time.perf_counter() - before
            examples += len(parsed.batch)
            dead += len(parsed.dead_letters)
        runs.append((time.perf_counter() - started, parse_seconds, time.process_time() - cpu_started))
    seconds, parse_seconds, cpu_seconds = min(runs)
    size = os.path.getsize(path)
    log(
        f"{parser.name} parser: {seconds:.2f} s ({size / MIB / seconds:.0f} MiB/s), {examples} examples, {dead} dead letters"
    )
    return {
        "seconds": seconds,
        "all_seconds": [run[0] for run in runs],
        "parse_only_seconds": parse_seconds,
        "cpu_seconds": cpu_seconds,
        "mib_per_second": size / MIB / seconds,
        "microseconds_per_example": seconds / max(examples, 1) * 1e6,
        "examples": examples,
        "dead_letters": dead,
        "block_bytes": block_bytes,
    }


def parse_batches(path: str, parser, block_bytes: int, rows: int) -> list[ExampleBatch]:
    """The whole file as batches of ``rows`` examples (untimed: the learner's input)."""
    batches = []
    for offset, block in line_blocks(path, block_bytes):
        batch = parser.parse(block, source=path, offset=offset, first_line=None).batch
        for start in range(0, len(batch), rows):
            batches.append(batch.take(np.arange(start, min(start + rows, len(batch)))))
    return batches


def time_learner(batches: list[ExampleBatch], repeats: int) -> dict:
    """Learn from every batch in order with VW's settings, best of ``repeats`` fresh learners."""
    config = VW_SETTINGS
    LinearLearner(config).learn(batches[0].take(np.arange(min(8, len(batches[0])))))  # JIT / cache load
    runs = []
    for _ in range(repeats):
        learner = LinearLearner(config)
        started, cpu_started = time.perf_counter(), time.process_time()
        for batch in batches:
            learner.learn(batch)
        runs.append((time.perf_counter() - started, time.process_time() - cpu_started))
    seconds, cpu_seconds = min(runs)
    log(f"learner kernel: {seconds:.2f} s, progressive loss {learner.progressive_loss:.6f}")
    return {
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "all_seconds": [run[0] for run in runs],
        "progressive_loss": learner.progressive_loss,
        "examples": learner.examples_seen,
        "batches": len(batches),
        "rows_per_batch": int(np.median([len(b) for b in batches])),
    }


# The learners whose cost the sparsity and step-rule targets compare: each pair differs in one
# setting only. Gravity is small so that the models stay comparable; truncation still runs on
# every example (truncate_every=1), which is its most expensive setting.
GRAVITY = 1e-6
OVERHEAD_REPEATS = 15
OVERHEAD_PAIRS = {
    "truncation, adaptive steps": (
        dict(step="adaptive"),
        dict(step="adaptive", gravity=GRAVITY),
    ),
    "truncation, constant steps": (
        dict(step="constant", learning_rate=0.01),
        dict(step="constant", learning_rate=0.01, gravity=GRAVITY),
    ),
    "truncation, GSA steps": (
        dict(step="gsa"),
        dict(step="gsa", gravity=GRAVITY),
    ),
    "GSA (paper: raw features) over constant steps": (
        dict(step="constant", learning_rate=0.01),
        dict(step="gsa", normalized=False),
    ),
    "GSA (default: normalised online) over constant steps": (
        dict(step="constant", learning_rate=0.01),
        dict(step="gsa"),
    ),
}


def time_overheads(batches: list[ExampleBatch], repeats: int, pairs: dict | None = None) -> dict:
    """Cost of truncated gradient and of GSA steps: interleaved rounds, median paired ratio per pair
    (``pairs``: name -> (base settings, changed settings); default OVERHEAD_PAIRS)."""
    pairs = OVERHEAD_PAIRS if pairs is None else pairs
    configs = {
        repr(sorted(settings.items())): LearnerConfig(loss="squared", bits=BITS, **settings)
        for pair in pairs.values()
        for settings in pair
    }
    warm = batches[0].take(np.arange(min(8, len(batches[0]))))
    for config in configs.values():
        LinearLearner(config).learn(warm)
    seconds: dict = {key: [] for key in configs}
    learners: dict = {}
    # Interleaved, in a fresh order every round, so that machine noise hits every configuration
    # alike. On this shared VM a 0.4 s run moves by 10-40% between rounds and the best run of a
    # configuration depends on luck, so the verdict is the median over rounds of the ratio of
    # the two runs of a pair within one round.
    order = list(configs)
    for round_number in range(max(repeats, OVERHEAD_REPEATS)):
        random.Random(round_number).shuffle(order)
        for key in order:
            config = configs[key]
            learner = LinearLearner(config)
            started = time.perf_counter()
            for batch in batches:
                learner.learn(batch)
            seconds[key].append(time.perf_counter() - started)
            learners[key] = learner
    results = {}
    for name, (base, changed) in pairs.items():
        base_key, changed_key = repr(sorted(base.items())), repr(sorted(changed.items()))
        ratios = np.array(seconds[changed_key]) / np.array(seconds[base_key])
        entry = {
            "base": base,
            "changed": changed,
            "base_seconds": min(seconds[base_key]),
            "changed_seconds": min(seconds[changed_key]),
            "overhead": float(np.median(ratios)) - 1.0,
            "overhead_of_best_runs": min(seconds[changed_key]) / min(seconds[base_key]) - 1.0,
            "overhead_quartiles": [float(q) - 1.0 for q in np.percentile(ratios, [25, 75])],
            "base_progressive_loss": learners[base_key].progressive_loss,
            "changed_progressive_loss": learners[changed_key].progressive_loss,
            "base_nonzero": learners[base_key].to_model().nonzero,
            "changed_nonzero": learners[changed_key].to_model().nonzero,
        }
        results[name] = entry
        log(
            f"{name}: {entry['base_seconds']:.2f} s -> {entry['changed_seconds']:.2f} s (best runs), "
            f"median paired overhead {entry['overhead']:+.0%} (quartiles {entry['overhead_quartiles'][0]:+.0%}, "
            f"{entry['overhead_quartiles'][1]:+.0%})"
        )
    return results


def time_pipeline_overheads(path: str, out: str, env: dict, repeats: int) -> dict:
    """The same comparisons through the whole ``polybeam train`` pipeline (LIBSVM file)."""
    runs = {
        "adaptive": ("--step", "adaptive"),
        "adaptive + truncation": ("--step", "adaptive", "--gravity", str(GRAVITY)),
        "constant": ("--step", "constant", "--learning-rate", "0.01"),
        "gsa": ("--step", "gsa"),
        "gsa, raw features": ("--step", "gsa", "--no-normalize"),
    }
    model = os.path.join(out, "models", "overhead.model")
    os.makedirs(os.path.dirname(model), exist_ok=True)  # (polybeam writes into folders that exist)
    best: dict = {}
    for _ in range(repeats):
        for name, extra in runs.items():
            run = describe_train(run_train(path, "libsvm", model, env, extra))
            if run["returncode"] != 0:
                return {"error": run.get("error")}
            if name not in best or run["seconds"] < best[name]["seconds"]:
                best[name] = run
    for name, run in best.items():
        log(f"pipeline {name}: {run['seconds']:.2f} s")
    return best


# -- 4. the whole pipeline ------------------------------------------------------------------------


def pipeline_env(numba_cache: str) -> dict:
    env = dict(os.environ)
    env["NUMBA_CACHE_DIR"] = numba_cache
    env.setdefault("PYTHONHASHSEED", "0")
    return env


def run_train(
    path: str, format: str, model: str, env: dict, extra: tuple[str, ...] = ("--step", "adaptive")
) -> MeasuredRun:
    """``polybeam train`` on squared loss; by default with VW's update (its default), as VW runs."""
    command = polybeam_command(
        "train", "--input", path, "--format", format, "--loss", "squared", "--bits", str(BITS), "--model", model, *extra
    )
    return measured_run(command, env=env, timeout=3600)


def describe_train(run: MeasuredRun) -> dict:
    result = {
        "seconds": run.seconds,
        "cpu_seconds": run.cpu_seconds,
        "peak_rss_bytes": run.peak_rss_bytes,
        "returncode": run.returncode,
        "command": " ".join(run.command[2:]),
    }
    if run.returncode == 0:
        report = run.last_json()
        result.update(
            progressive_loss=report.get("progressive_loss"),
            examples=report.get("examples"),
            dead_letters=report.get("dead_letters"),
            inner_wall_seconds=report.get("wall_seconds"),
        )
    else:
        result["error"] = "\n".join(run.stderr.strip().splitlines()[-12:])
    return result


# Times the first call of a numba kernel in a fresh process (numba's one-time set-up plus the cache load).
_FIRST_KERNEL_CALL = """
import time
from polybeam.formats.libsvm import LibsvmFormat
started = time.perf_counter()
LibsvmFormat().parse(b"1 1:1\\n")
print(time.perf_counter() - started)
"""


def time_pipeline(paths: dict, out: str, repeats: int, vw: VWYardstick) -> dict:
    """Warm-up runs (cold, then hot numba cache), a tiny run for fixed costs, then the timed runs."""
    cache = os.path.join(out, "numba-cache")
    shutil.rmtree(cache, ignore_errors=True)
    env = pipeline_env(cache)
    warmups = {
        format: head_lines(path, os.path.join(out, f"warmup.{format}"), WARMUP_EXAMPLES)
        for format, path in paths.items()
    }
    with open(warmups["libsvm"], "rb") as handle:
        warmup_examples = sum(1 for _ in handle)
    results: dict = {"numba_cache_dir": cache, "warmup_examples": warmup_examples}
    tiny = head_lines(paths["libsvm"], os.path.join(out, "tiny.libsvm"), 100)
    model_dir = os.path.join(out, "models")
    os.makedirs(model_dir, exist_ok=True)

    cold = describe_train(run_train(warmups["libsvm"], "libsvm", os.path.join(model_dir, "warmup.model"), env))
    results["cold_cache_warmup_libsvm"] = cold
    log(f"cold-cache warm-up train ({warmup_examples} LIBSVM examples): {cold['seconds']:.2f} s")
    if cold["returncode"] != 0:
        log("polybeam train failed; skipping the pipeline runs:\n" + cold["error"])
        results["error"] = cold["error"]
        return results
    results["cold_cache_warmup_vw"] = describe_train(
        run_train(warmups["vw"], "vw", os.path.join(model_dir, "warmup-vw.model"), env)
    )
    hot = describe_train(run_train(warmups["libsvm"], "libsvm", os.path.join(model_dir, "warmup.model"), env))
    results["hot_cache_warmup_libsvm"] = hot
    log(f"hot-cache warm-up train: {hot['seconds']:.2f} s")
    results["tiny_libsvm"] = describe_train(run_train(tiny, "libsvm", os.path.join(model_dir, "tiny.model"), env))
    log(f"100-example train (fixed costs): {results['tiny_libsvm']['seconds']:.2f} s")
    first_call = measured_run([sys.executable, "-c", _FIRST_KERNEL_CALL], env=env).check()
    results["first_kernel_call_seconds"] = float(first_call.stdout.strip().splitlines()[-1])

    for format in ("libsvm", "vw"):
        runs = []
        for _ in range(repeats):
            vw.measure()
            runs.append(
                describe_train(
                    run_train(paths[format], format, os.path.join(model_dir, f"synthetic-{format}.model"), env)
                )
            )
        failed = [run for run in runs if run["returncode"] != 0]
        run = failed[0] if failed else dict(min(runs, key=lambda r: r["seconds"]))
        run["all_seconds"] = [r["seconds"] for r in runs]
        results[format] = run
        if run["returncode"] == 0:
            log(
                f"polybeam train {format}: {run['seconds']:.2f} s, peak {run['peak_rss_bytes'] / MIB:.0f} MiB, "
                f"progressive loss {run['progressive_loss']:.6f}"
            )
        else:
            log(f"polybeam train {format} failed:\n{run['error']}")
    return results


APPLE_ALPHAS = (1.0, 0.5)


def time_apple(paths: dict, out: str, env: dict, repeats: int) -> dict:
    """Apple against VW --stage_poly at the same exponent: whole runs, alternated, best of ``repeats``.

    Both on squared loss, 18 bits, one pass, normalised adaptive steps at
    VW's default rate 0.5. VW: its stage-wise expansion after 1000, 2000, 4000,
    ... examples (its default schedule); polybeam: ``polybeam train --expand
    apple`` on the LIBSVM and the VW file, whose count is unknown to it, so it
    expands after 1000, 2000, ..., 16000 examples (5 expansions: the paper's 6 epochs).
    """
    model_dir = os.path.join(out, "models")
    os.makedirs(model_dir, exist_ok=True)
    results = {}
    for alpha in APPLE_ALPHAS:
        vw_runs, runs = [], {"libsvm": [], "vw": []}
        for _ in range(repeats):
            vw_runs.append(
                run_vw(
                    "-d",
                    paths["vw"],
                    "-b",
                    str(BITS),
                    "--loss_function",
                    "squared",
                    "--stage_poly",
                    "--sched_exponent",
                    f"{alpha:g}",
                )
            )
            for format in ("libsvm", "vw"):
                model = os.path.join(model_dir, f"apple-{alpha:g}-{format}.model")
                # VW's algorithm: no centring and no guard (the guard costs about a fifth more).
                extra = (
                    "--step",
                    "adaptive",
                    "--learning-rate",
                    "0.5",
                    "--expand",
                    "apple",
                    "--alpha",
                    f"{alpha:g}",
                    "--no-center",
                    "--no-apple-guard",
                )
                runs[format].append(describe_train(run_train(paths[format], format, model, env, extra)))
        best_vw = min(vw_runs, key=lambda run: run.run.seconds)
        entry = {
            "stage_poly": {
                "seconds": best_vw.run.seconds,
                "cpu_seconds": best_vw.run.cpu_seconds,
                "average_loss": best_vw.average_loss,
                "peak_rss_bytes": best_vw.run.peak_rss_bytes,
                "all_seconds": [run.run.seconds for run in vw_runs],
                "command": " ".join(best_vw.run.command[1:]),
            },
        }
        for format, format_runs in runs.items():
            failed = [run for run in format_runs if run["returncode"] != 0]
            run = failed[0] if failed else dict(min(format_runs, key=lambda r: r["seconds"]))
            run["all_seconds"] = [r["seconds"] for r in format_runs]
            entry[format] = run
        results[f"{alpha:g}"] = entry
        log(
            f"apple alpha {alpha:g}: VW --stage_poly {entry['stage_poly']['seconds']:.2f} s "
            f"(loss {entry['stage_poly']['average_loss']:.4f}); "
            + ", ".join(
                f"polybeam {f} {entry[f]['seconds']:.2f} s (loss {entry[f].get('progressive_loss')})" for f in runs
            )
        )
    return results


def profile_pipeline(paths: dict, out: str, results_dir: str, env: dict) -> str:
    """Run ``polybeam train`` under cProfile on the LIBSVM file and on 100 examples; top functions to a file."""
    import io
    import pstats

    text = io.StringIO()
    for label, path in (
        ("1M-example LIBSVM file", paths["libsvm"]),
        ("100 examples (fixed costs)", os.path.join(out, "tiny.libsvm")),
    ):
        profile = os.path.join(out, "train.prof")
        command = [
            sys.executable,
            "-m",
            "cProfile",
            "-o",
            profile,
            "-m",
            "polybeam.pipelines.cli",
            "train",
            "--input",
            path,
            "--format",
            "libsvm",
            "--loss",
            "squared",
            "--bits",
            str(BITS),
            "--model",
            os.path.join(out, "models", "profiled.model"),
        ]
        run = measured_run(command, env=env, timeout=3600).check()
        text.write(f"==== polybeam train on the {label} under cProfile: {run.seconds:.1f} s wall\n\n")
        stats = pstats.Stats(profile, stream=text)
        stats.sort_stats("tottime").print_stats(30)
        stats.sort_stats("cumulative").print_stats(r"polybeam|fn_runner|bundle_processor", 40)
    target = os.path.join(results_dir, "spine_profile.txt")
    with open(target, "w") as handle:
        handle.write(text.getvalue())
    log(f"profile written to {target}")
    return target


# -- 5. real data -----------------------------------------------------------------------------------


def polybeam_api_error(train: str, test: str) -> dict:
    """The same learner through the Python API (one worker, file order), for reference."""
    parser = LibsvmFormat(bits=BITS, labels="binary")
    with open(train, "rb") as handle:
        train_batch = parser.parse(handle.read(), source=train).batch
    with open(test, "rb") as handle:
        test_batch = parser.parse(handle.read(), source=test).batch
    learner = LinearLearner(LearnerConfig(loss="logistic", step="adaptive", bits=BITS)).learn(train_batch)
    metrics = Evaluation.of(learner.to_model(), [test_batch]).result()
    return {
        "error": metrics["error"],
        "progressive_loss": learner.progressive_loss,
        "test_examples": metrics["examples"],
    }


def polybeam_pipeline_error(train: str, test: str, model: str, env: dict) -> dict:
    trained = measured_run(
        polybeam_command(
            "train",
            "--input",
            train,
            "--format",
            "libsvm",
            "--loss",
            "logistic",
            "--step",
            "adaptive",
            "--model",
            model,
        ),
        env=env,
        timeout=1800,
    )
    if trained.returncode != 0:
        return {"error_message": "\n".join(trained.stderr.strip().splitlines()[-8:])}
    evaluated = measured_run(
        polybeam_command("evaluate", "--input", test, "--format", "libsvm", "--model", model), env=env, timeout=1800
    )
    if evaluated.returncode != 0:
        return {"error_message": "\n".join(evaluated.stderr.strip().splitlines()[-8:])}
    metrics = evaluated.last_json()
    return {
        "error": metrics["error"],
        "auc": metrics.get("auc"),
        "progressive_loss": trained.last_json().get("progressive_loss"),
        "test_examples": metrics["examples"],
        "train_seconds": trained.seconds,
    }


def vw_error(train: str, test: str, folder: str, stem: str) -> dict:
    train_vw = libsvm_to_vw(train, os.path.join(folder, f"{stem}.train.vw"))
    test_vw = libsvm_to_vw(test, os.path.join(folder, f"{stem}.test.vw"))
    model = os.path.join(folder, f"{stem}.vwmodel")
    predictions = os.path.join(folder, f"{stem}.vwpred")
    trained = run_vw("-d", train_vw, "-b", str(BITS), "--loss_function", "logistic", "-f", model)
    run_vw("-d", test_vw, "-t", "-i", model, "-p", predictions)
    with open(test_vw) as handle:
        labels = np.array([float(line.split()[0]) for line in handle if line.strip()])
    scores = np.array(read_predictions(predictions))
    error = float(np.mean((scores > 0) != (labels > 0)))
    return {"error": error, "progressive_loss": trained.average_loss, "test_examples": len(labels)}


def compare_real(out: str, env: dict, sweep_seeds: int) -> dict:
    """Held-out errors on spam and letter (binary): pipeline and VW on the demo's split (the last fifth of
    the pre-shuffled file is the test set), then a sweep of seeded random splits."""
    folder = os.path.join(out, "real")
    results = {}
    for name, binary in (("spam", False), ("letter", True)):
        train, test = write_split(name, folder, test_fraction=0.2, binary=binary)
        stem = os.path.basename(train).removesuffix(".train.libsvm")
        entry = {
            "task": f"{name}{' (A-M vs N-Z)' if name == 'letter' else ''}, logistic, one pass, adaptive steps",
            "train": train,
            "test": test,
            "polybeam_pipeline": polybeam_pipeline_error(train, test, os.path.join(folder, f"{stem}.model"), env),
            "polybeam_api": polybeam_api_error(train, test),
            "vw": vw_error(train, test, folder, stem),
        }
        pipeline_error = entry["polybeam_pipeline"].get("error")
        polybeam_error = pipeline_error if pipeline_error is not None else entry["polybeam_api"]["error"]
        entry["polybeam_error_source"] = "pipeline" if pipeline_error is not None else "python-api"
        entry["polybeam_error"] = polybeam_error
        entry["difference_vs_vw"] = polybeam_error - entry["vw"]["error"]
        log(
            f"{name}: polybeam error {polybeam_error:.4f} ({entry['polybeam_error_source']}), "
            f"VW {entry['vw']['error']:.4f}, difference {entry['difference_vs_vw']:+.4f}"
        )
        entry["sweep"] = split_sweep(name, binary, os.path.join(folder, "sweep"), sweep_seeds)
        results[name] = entry
    return results


def split_sweep(name: str, binary: bool, folder: str, seeds: int) -> dict:
    """Errors over ``seeds`` different 80/20 splits (Python API and VW): how much one split's figure moves."""
    polybeam, vw = [], []
    for seed in range(seeds):
        train, test = write_split(name, folder, test_fraction=0.2, seed=seed, binary=binary)
        stem = f"{os.path.basename(train).removesuffix('.train.libsvm')}.seed{seed}"
        polybeam.append(polybeam_api_error(train, test)["error"])
        vw.append(vw_error(train, test, folder, stem)["error"])
    summary = {
        "seeds": list(range(seeds)),
        "polybeam_errors": polybeam,
        "vw_errors": vw,
        "polybeam_mean": float(np.mean(polybeam)) if polybeam else None,
        "vw_mean": float(np.mean(vw)) if vw else None,
    }
    if polybeam:
        log(
            f"{name} over {seeds} splits: polybeam {summary['polybeam_mean']:.4f}, VW {summary['vw_mean']:.4f} (mean error)"
        )
    return summary


def rerender(results_dir: str) -> int:
    """Rewrite ``spine.md`` (and the derived parts of ``spine.json``) from the stored measurements."""
    path = os.path.join(results_dir, "spine.json")
    with open(path) as handle:
        report = json.load(handle)
    report["breakdown"] = estimate_breakdown(report)
    report["targets"] = [t.__dict__ for t in targets_of(report)]
    with open(path, "w") as handle:
        json.dump(report, handle, indent=2, sort_keys=True, default=float)
        handle.write("\n")
    text = render(report)
    with open(os.path.join(results_dir, "spine.md"), "w") as handle:
        handle.write(text)
    print(text)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--examples", type=int, default=1_000_000, help="synthetic examples (default: 1,000,000)")
    parser.add_argument(
        "--out", default=os.path.join(HERE, "out"), help="scratch folder for data and models (default: benchmarks/out)"
    )
    parser.add_argument(
        "--results",
        default=os.path.join(HERE, "results"),
        help="where spine.json and spine.md go (default: benchmarks/results)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic data (default: 0)")
    parser.add_argument("--block-mib", type=float, default=4.0, help="parser block size in MiB (default: 4)")
    parser.add_argument("--batch-rows", type=int, default=4096, help="rows per learner batch (default: 4096)")
    parser.add_argument(
        "--real",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also compare on bundled spam and letter (default: on)",
    )
    parser.add_argument(
        "--pipeline",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also time `polybeam train` (default: on)",
    )
    parser.add_argument(
        "--apple",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also time apple against VW --stage_poly at alpha 1 and 0.5 (default: on)",
    )
    parser.add_argument(
        "--split-seeds", type=int, default=10, help="real data: also average over this many 80/20 splits (default: 10)"
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="timed repetitions of each polybeam and VW measurement; the best counts (default: 3)",
    )
    parser.add_argument(
        "--render", action="store_true", help="only rewrite spine.md from an existing spine.json (no measuring)"
    )
    parser.add_argument(
        "--profile", action="store_true", help="also run `polybeam train` on the LIBSVM file under cProfile"
    )
    args = parser.parse_args(argv)
    if args.render:
        return rerender(args.results)

    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.results, exist_ok=True)
    report: dict = {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": machine_info(), "arguments": vars(args)}
    report["data"] = write_synthetic(args.out, args.examples, args.seed)
    paths = report["data"]["paths"]
    vw = VWYardstick(paths["vw"]).measure(args.repeats)
    report["vw"] = vw.to_dict()
    report["vw_one_core"] = time_vw_one_core(paths["vw"], args.repeats)

    block_bytes = int(args.block_mib * MIB)
    report["parsers"] = {
        "libsvm": time_parser(paths["libsvm"], LibsvmFormat(bits=BITS), block_bytes, args.repeats),
        "vw": time_parser(paths["vw"], VWFormat(bits=BITS), block_bytes, args.repeats),
    }
    # The learner reads the VW file's examples: the same hashed slots VW learns on.
    batches = parse_batches(paths["vw"], VWFormat(bits=BITS), block_bytes, args.batch_rows)
    report["learner"] = time_learner(batches, args.repeats)
    report["overheads"] = time_overheads(batches, args.repeats)
    del batches

    env = pipeline_env(os.path.join(args.out, "numba-cache"))
    if args.pipeline:
        report["pipeline"] = time_pipeline(paths, args.out, args.repeats, vw)
        report["vw"] = vw.to_dict()
        report["breakdown"] = estimate_breakdown(report)
        report["pipeline_overheads"] = time_pipeline_overheads(paths["libsvm"], args.out, env, args.repeats)
        if args.apple and "error" not in report["pipeline"]:
            report["apple"] = time_apple(paths, args.out, env, args.repeats)
        if args.profile and "error" not in report["pipeline"]:
            report["profile"] = profile_pipeline(paths, args.out, args.results, env)
    if args.real:
        report["real"] = compare_real(args.out, env, args.split_seeds)
    report["targets"] = [t.__dict__ for t in targets_of(report)]
    report["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    report["load_average_at_end"] = load_average()

    text = render(report)
    write_report(args.results, "spine", report, text, indent=2, sort_keys=True)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
