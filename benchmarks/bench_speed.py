"""Speed where users feel it: polybeam against Vowpal Wabbit on text, numbers and tiny inputs, in one run.

Run ``python benchmarks/bench_speed.py [--rows N] [--large] [--repeats R] [--out DIR]``. It writes

* ``N`` (default 1M) short texts (:class:`polybeam.datasets.zipf_texts.ZipfTexts`: a Zipf vocabulary of
  50,000 words, 5-20 words a row in 2-3 namespaces) in VW format;
* ``N`` rows of the spine benchmark's numeric task (:class:`~polybeam.datasets.synthetic.PlantedPolynomial`,
  about 49 non-zeros) as LIBSVM, and as VW text for VW;
* with ``--large``, ten times as many of each;

and times, as whole commands in fresh processes, runs alternated and the best of ``R`` counted:

1. text, logistic loss, 18 bits: ``vw -d`` against ``polybeam train``; and with one quadratic interaction
   between two namespaces (``-q ab`` against ``--expand quadratic --interactions ab``);
2. numbers, squared loss, adaptive steps (VW's default update): the same two commands;
3. two cores: ``polybeam train`` with two local workers against one worker held to one core (``taskset``);
4. start-up: ``train``, ``evaluate`` and ``predict`` on a 10-row CSV against ``import apache_beam``.

For each polybeam run it reports the whole command, the job (from the launch to the report, without the
interpreter's start and imports: the report's ``job_seconds``), examples per second of the job, progressive
loss and peak memory; VW's whole run stands beside it. The targets are printed with their verdicts.
polybeam's modules are compiled to bytecode first, as an installed package's are.
``benchmarks/results/speed.{json,md}``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_startup import CLI, write_input  # noqa: E402
from harness import (  # noqa: E402
    compile_bytecode,
    load_average,
    machine_info,
    markdown_table,
    measured_run,
    run_vw,
    write_report,
)

from polybeam.datasets.synthetic import PlantedPolynomial, write_dataset  # noqa: E402
from polybeam.datasets.zipf_texts import ZipfTexts  # noqa: E402
from polybeam.formats.libsvm import LibsvmFormat  # noqa: E402
from polybeam.formats.vw import VWFormat  # noqa: E402
from polybeam.learners.config import LearnerConfig  # noqa: E402
from polybeam.learners.linear import LinearLearner  # noqa: E402

BITS = 18
TWO_WORKERS = ("--direct_num_workers", "2", "--direct_running_mode", "multi_processing")
# work: (input kind, VW options, polybeam options)
WORK = {
    "text": ("text", ("--loss_function", "logistic"), ("--format", "vw", "--loss", "logistic")),
    "text, -q ab": (
        "text",
        ("--loss_function", "logistic", "-q", "ab"),
        ("--format", "vw", "--loss", "logistic", "--expand", "quadratic", "--interactions", "ab"),
    ),
    "LIBSVM numbers": ("numbers", ("--loss_function", "squared"), ("--format", "libsvm", "--loss", "squared")),
}
STARTUP_TARGET = 0.4  # seconds a 10-row command may take beyond import apache_beam


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def polybeam(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "polybeam.pipelines.cli", *arguments]


def write_inputs(folder: str, rows: int) -> dict:
    """The text file, the LIBSVM file and its VW twin, of ``rows`` rows each."""
    began = time.perf_counter()
    text = ZipfTexts().write(os.path.join(folder, f"texts-{rows}.vw"), rows)
    numbers = write_dataset(folder, rows, PlantedPolynomial(seed=0), stem=f"numbers-{rows}")
    log(f"wrote {rows:,} rows of each input in {time.perf_counter() - began:.1f} s")
    return {"text": {"vw": text, "polybeam": text}, "numbers": {"vw": numbers["vw"], "polybeam": numbers["libsvm"]}}


def time_vw(path: str, options) -> dict:
    vw = run_vw("-d", path, "-b", str(BITS), *options)
    return {
        "seconds": vw.run.seconds,
        "examples": vw.examples,
        "progressive_loss": vw.average_loss,
        "peak_rss_bytes": vw.run.peak_rss_bytes,
    }


def time_polybeam(path: str, model: str, options, prefix=()) -> dict:
    run = measured_run([*prefix, *polybeam("train", "--input", path, "--model", model, "--bits", str(BITS), *options)])
    report = run.check().last_json()
    return {
        "seconds": run.seconds,
        "job_seconds": report["job_seconds"],
        "examples": report["examples"],
        "progressive_loss": report["progressive_loss"],
        "peak_rss_bytes": run.peak_rss_bytes,
        "cpu_seconds": run.cpu_seconds,
    }


def best(runs: list[dict], key: str = "seconds") -> dict:
    chosen = dict(min(runs, key=lambda run: run[key]))
    chosen["all_seconds"] = [run["seconds"] for run in runs]
    return chosen


def time_work(inputs: dict, folder: str, repeats: int, suffix: str = "") -> dict:
    """Each work of :data:`WORK` on VW and polybeam, alternated, best of ``repeats``."""
    results = {}
    for name, (kind, vw_options, options) in WORK.items():
        vw_runs, ours = [], []
        for _ in range(repeats):
            vw_runs.append(time_vw(inputs[kind]["vw"], vw_options))
            ours.append(time_polybeam(inputs[kind]["polybeam"], os.path.join(folder, "m.model"), options))
        results[name + suffix] = {"vw": best(vw_runs), "polybeam": best(ours, "job_seconds")}
        log(
            f"{name}{suffix}: VW {results[name + suffix]['vw']['seconds']:.2f} s, polybeam "
            f"{results[name + suffix]['polybeam']['seconds']:.2f} s (job "
            f"{results[name + suffix]['polybeam']['job_seconds']:.2f} s)"
        )
    return results


# The linear works timed part by part in this process: (input kind, format, loss).
PARTS = {"text": ("text", VWFormat, "logistic"), "LIBSVM numbers": ("numbers", LibsvmFormat, "squared")}
BLOCK_LINES = 4096  # the readers' blocks (a batch each)


def time_parts(inputs: dict) -> dict:
    """The parser alone and the learner alone (defaults) on the polybeam input of each :data:`PARTS` work, in
    this process, blocks of :data:`BLOCK_LINES` lines: what a job's stage would cost without Beam, threads
    or start-up."""
    results = {}
    for name, (kind, format_class, loss) in PARTS.items():
        with open(inputs[kind]["polybeam"], "rb") as handle:
            lines = handle.read().split(b"\n")
        blocks = [
            b"\n".join(lines[start : start + BLOCK_LINES]) + b"\n" for start in range(0, len(lines) - 1, BLOCK_LINES)
        ]
        parser = format_class(bits=BITS)
        parser.parse(blocks[0])  # (the compiled kernels loaded)
        began = time.perf_counter()
        batches = [parser.parse(block).batch for block in blocks]
        parse_seconds = time.perf_counter() - began
        LinearLearner(LearnerConfig(loss=loss, bits=BITS)).learn(batches[0])
        learner = LinearLearner(LearnerConfig(loss=loss, bits=BITS))
        began = time.perf_counter()
        for batch in batches:
            learner.learn(batch)
        learn_seconds = time.perf_counter() - began
        examples = sum(len(batch) for batch in batches)
        results[name] = {"examples": examples, "parse_seconds": parse_seconds, "learn_seconds": learn_seconds}
        log(f"{name} alone: parse {parse_seconds:.2f} s, learn {learn_seconds:.2f} s ({examples:,} examples)")
    return results


def time_cores(inputs: dict, folder: str, repeats: int) -> dict:
    """Two local workers on two cores against one worker held to one core, on the numbers."""
    path, options = inputs["numbers"]["polybeam"], WORK["LIBSVM numbers"][2]
    model = os.path.join(folder, "cores.model")
    one, two = [], []
    for _ in range(repeats):
        if shutil.which("taskset"):
            one.append(time_polybeam(path, model, options, prefix=("taskset", "-c", "0")))
        two.append(time_polybeam(path, model, (*options, *TWO_WORKERS)))
    result = {"two workers": best(two, "job_seconds")}
    if one:
        result["one worker, one core"] = best(one, "job_seconds")
    return result


def time_startup(folder: str, repeats: int) -> dict:
    """Whole commands on 10 rows and ``import apache_beam``, medians of ``repeats``."""
    data = write_input(folder)
    model = os.path.join(folder, "ten.model")
    commands = {
        "import apache_beam": ["-c", "import apache_beam"],
        "train": ["-c", CLI, "train", "--input", data, "--format", "csv", "--label-column", "y", "--loss", "logistic"]
        + ["--model", model],
        "evaluate": ["-c", CLI, "evaluate", "--input", data, "--model", model],
        "predict": ["-c", CLI, "predict", "--input", data, "--model", model, "--output", os.path.join(folder, "p")],
    }
    subprocess.run([sys.executable, *commands["train"]], cwd=folder, check=True, capture_output=True)  # (warm)
    seconds = {name: [] for name in commands}
    for _ in range(repeats):
        for name, arguments in commands.items():
            began = time.perf_counter()
            subprocess.run([sys.executable, *arguments], cwd=folder, check=True, capture_output=True)
            seconds[name].append(time.perf_counter() - began)
    return {name: {"median": statistics.median(times), "all_seconds": times} for name, times in seconds.items()}


def rate(run: dict, key: str) -> float:
    return run["examples"] / run[key]


def verdict(value: float, goal: float, lower_is_better: bool) -> str:
    return "met" if (value <= goal if lower_is_better else value >= goal) else "not met"


def summarise(report: dict) -> tuple[list, list]:
    """The side-by-side rows and the targets' rows."""
    rows, targets = [], []
    for name, pair in report["work"].items():
        vw, ours = pair["vw"], pair["polybeam"]
        rows.append(
            [
                name,
                f"{vw['examples']:,}",
                f"{vw['seconds']:.2f}",
                f"{rate(vw, 'seconds') / 1e6:.2f}",
                f"{ours['seconds']:.2f}",
                f"{ours['job_seconds']:.2f}",
                f"{rate(ours, 'job_seconds') / 1e6:.2f}",
                f"{ours['seconds'] / vw['seconds']:.2f}",
                f"{vw['progressive_loss']:.4f}",
                f"{ours['progressive_loss']:.4f}",
                f"{ours['peak_rss_bytes'] / 2**20:.0f}",
            ]
        )
        large = name.endswith("(10x)")
        if name.startswith("text"):
            speed = rate(ours, "job_seconds") / rate(vw, "seconds")
            targets.append([f"{name}: job examples/s / VW whole-run examples/s", f"{speed:.2f}", ">= 1.5"])
            targets[-1].append(verdict(speed, 1.5, False))
            if not name.startswith("text, -q"):
                goal = 1.25 if large else 3.0
                ratio = ours["seconds"] / vw["seconds"]
                targets.append(
                    [f"{name}: whole command / VW", f"{ratio:.2f}", f"<= {goal}", verdict(ratio, goal, True)]
                )
        else:
            goal = 1.25 if large else 2.0
            ratio = ours["seconds"] / vw["seconds"]
            targets.append([f"{name}: whole command / VW", f"{ratio:.2f}", f"<= {goal}", verdict(ratio, goal, True)])
            if large:
                speed = rate(ours, "seconds") / 1e6
                targets.append(
                    [f"{name}: whole command, M examples/s", f"{speed:.2f}", ">= 1.5", verdict(speed, 1.5, False)]
                )
    cores = report["cores"]
    if "one worker, one core" in cores:
        one, two = cores["one worker, one core"], cores["two workers"]
        gain = one["job_seconds"] / two["job_seconds"]
        targets.append(
            ["two workers / one worker on one core (job)", f"{gain:.2f}", ">= 1.8", verdict(gain, 1.8, False)]
        )
        gap = abs(two["progressive_loss"] / one["progressive_loss"] - 1)
        targets.append(["two workers' progressive loss, change", f"{gap:.2%}", "<= 1%", verdict(gap, 0.01, True)])
    floor = report["startup"]["import apache_beam"]["median"]
    for command in ("train", "evaluate", "predict"):
        beyond = report["startup"][command]["median"] - floor
        targets.append(
            [f"{command} on 10 rows, beyond import apache_beam", f"{beyond:+.2f} s", f"<= {STARTUP_TARGET}"]
            + [verdict(beyond, STARTUP_TARGET, True)]
        )
    return rows, targets


def render(report: dict, arguments: str) -> str:
    rows, targets = summarise(report)
    cores = report["cores"]
    core_rows = [
        [name, f"{run['seconds']:.2f}", f"{run['job_seconds']:.2f}", f"{rate(run, 'job_seconds') / 1e6:.2f}"]
        + [f"{run['progressive_loss']:.6f}"]
        for name, run in cores.items()
    ]
    startup = [[name, f"{run['median']:.2f}"] for name, run in report["startup"].items()]
    parts = [
        [
            name,
            f"{part['examples'] / part['parse_seconds'] / 1e6:.2f}",
            f"{part['examples'] / part['learn_seconds'] / 1e6:.2f}",
            f"{rate(report['work'][name]['polybeam'], 'job_seconds') / 1e6:.2f}",
            f"{rate(report['work'][name]['vw'], 'seconds') / 1e6:.2f}",
        ]
        for name, part in report.get("parts", {}).items()
    ]
    return "\n".join(
        [
            "# Speed: polybeam against Vowpal Wabbit",
            "",
            f"`python benchmarks/bench_speed.py {arguments}`; best of {report['repeats']} alternated runs, "
            f"{report['machine'].get('cpus', '?')} cores, load {report['load_start']} at the start and "
            f"{report['load_end']} at the end. Job: the command's report `job_seconds` (from the launch to "
            "the report, without the interpreter's start and imports). 18 bits, one pass, defaults.",
            "",
            markdown_table(
                [
                    "work",
                    "examples",
                    "VW s",
                    "VW M ex/s",
                    "polybeam s",
                    "job s",
                    "job M ex/s",
                    "x VW",
                    "VW loss",
                    "polybeam loss",
                    "polybeam MiB",
                ],
                rows,
            ),
            "",
            f"The parts alone (in one process, {BLOCK_LINES:,}-line blocks, M examples/s), against the job and VW:",
            "",
            markdown_table(["work", "parse", "learn", "polybeam job", "VW whole run"], parts),
            "",
            "Two cores (LIBSVM numbers):",
            "",
            markdown_table(["run", "whole s", "job s", "job M ex/s", "progressive loss"], core_rows),
            "",
            "Start-up (10-row CSV, medians):",
            "",
            markdown_table(["command", "seconds"], startup),
            "",
            "## Targets",
            "",
            markdown_table(["target", "measured", "goal", "verdict"], targets),
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--large", action="store_true", help="also ten times --rows of each input")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=os.path.join(HERE, "results"))
    args = parser.parse_args(argv)
    compile_bytecode()  # (as installed: see harness.compile_bytecode)
    report = {"machine": machine_info(), "rows": args.rows, "repeats": args.repeats, "load_start": load_average()}
    with tempfile.TemporaryDirectory(prefix="polybeam-speed-") as folder:
        inputs = write_inputs(folder, args.rows)
        # A small run of each first: numba's cache is warm for every timed run.
        warm = ZipfTexts().write(os.path.join(folder, "warm.vw"), 1000)
        for _, _, options in WORK.values():
            options = [option if option != "libsvm" else "vw" for option in options]
            time_polybeam(warm, os.path.join(folder, "warm.model"), options)
        report["work"] = time_work(inputs, folder, args.repeats)
        report["parts"] = time_parts(inputs)
        report["cores"] = time_cores(inputs, folder, args.repeats)
        report["startup"] = time_startup(folder, max(args.repeats, 3))
        if args.large:
            large = write_inputs(folder, 10 * args.rows)
            report["work"].update(time_work(large, folder, 1, suffix=" (10x)"))
    report["load_end"] = load_average()
    arguments = " ".join(argv if argv is not None else sys.argv[1:])
    markdown = render(report, arguments)
    write_report(args.out, "speed", report, markdown)
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
