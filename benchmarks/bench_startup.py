"""What a command pays around its job: whole ``polybeam`` commands on a 10-row input, against Beam's import.

Run ``python benchmarks/bench_startup.py [--runs N] [--out DIR]``. On a
10-row CSV it times, as fresh processes the way the installed ``polybeam``
script starts them, ``N`` times each (the median is reported):

* ``python -c "import apache_beam"``: the floor every command pays;
* ``python -c "import numpy"``, and ``import numba`` plus one cached
  kernel's first call: the difference is numba's own start (its import, and
  the typing and target registries it loads at the first compiled function,
  which import ``scipy.linalg``), which every command pays;
* ``polybeam train``, ``evaluate`` and ``predict`` (logistic loss), whole.

and prints each command's time beyond Beam's import against the target of
0.4 s. It also times, in one process, the phases of a ``train``: imports,
building the pipeline (option checks, reading a sample, the transforms),
running it (each bundle of the in-process runner) and what follows.
``benchmarks/results/startup.{json,md}``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from harness import compile_bytecode, machine_info, markdown_table, write_report  # noqa: E402

TARGET_SECONDS = 0.4
CLI = "import sys; from polybeam.pipelines.cli import main; sys.exit(main())"
NUMBA_FIRST_CALL = """
import numba, numpy as np
from polybeam.formats.numbers import parse_number
parse_number("1.5")
"""
# The phases of one train, timed in its own process (see phases()).
PHASES = """
import sys, time
started = time.perf_counter()
marks = []
def mark(name):
    marks.append((name, time.perf_counter() - started))
import apache_beam
mark("import apache_beam")
from apache_beam import pipeline
from apache_beam.runners.portability.fn_api_runner import fn_runner
run, execute = pipeline.Pipeline.run, fn_runner.FnApiRunner._execute_bundle
bundles = []
def timed_run(self, *args, **kwargs):
    mark("pipeline built")
    result = run(self, *args, **kwargs)
    mark("pipeline run")
    return result
def timed_bundle(self, context, manager, data):
    began = time.perf_counter()
    result = execute(self, context, manager, data)
    bundles.append(time.perf_counter() - began)
    return result
pipeline.Pipeline.run, fn_runner.FnApiRunner._execute_bundle = timed_run, timed_bundle
from polybeam.pipelines.cli import main
mark("import polybeam's command line")
sys.argv = ["polybeam", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
mark("done")
import json
print(json.dumps({"marks": marks, "bundles": bundles}), file=sys.stderr)
"""


def write_input(folder: str) -> str:
    """A 10-row CSV with a label and three numeric columns."""
    path = os.path.join(folder, "ten.csv")
    rows = ["y,a,b,c"] + [f"{i % 2},{i * 0.5},{(i * 7) % 5},{1 + i % 3}" for i in range(10)]
    with open(path, "w") as handle:
        handle.write("\n".join(rows) + "\n")
    return path


def seconds(command: list[str], runs: int, cwd: str) -> list[float]:
    """Wall seconds of ``runs`` runs of ``command`` (each must succeed)."""
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - began)
    return times


def phases(arguments: list[str], cwd: str) -> dict:
    """The marks and bundle times of one command run with :data:`PHASES`."""
    import json

    done = subprocess.run(
        [sys.executable, "-c", PHASES, *arguments], cwd=cwd, check=True, capture_output=True, text=True
    )
    return json.loads(done.stderr.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", default=os.path.join(HERE, "results"))
    args = parser.parse_args(argv)
    python = sys.executable
    compile_bytecode()  # (as installed: see harness.compile_bytecode)
    with tempfile.TemporaryDirectory() as folder:
        data = write_input(folder)
        model = os.path.join(folder, "model")
        train = ["train", "--input", data, "--format", "csv", "--label-column", "y", "--loss", "logistic"]
        commands = {
            "train": [*train, "--model", model],
            "evaluate": ["evaluate", "--input", data, "--model", model],
            "predict": ["predict", "--input", data, "--model", model, "--output", os.path.join(folder, "p.txt")],
        }
        subprocess.run([python, "-c", CLI, *commands["train"]], cwd=folder, check=True, capture_output=True)  # warm
        measured = {"import apache_beam": seconds([python, "-c", "import apache_beam"], args.runs, folder)}
        measured["import numpy"] = seconds([python, "-c", "import numpy"], args.runs, folder)
        measured["numba: import and first kernel"] = seconds([python, "-c", NUMBA_FIRST_CALL], args.runs, folder)
        for name, arguments in commands.items():
            measured[f"polybeam {name}"] = seconds([python, "-c", CLI, *arguments], args.runs, folder)
        split = phases([*train, "--model", os.path.join(folder, "phased")], folder)
    floor = statistics.median(measured["import apache_beam"])
    rows, report = [], {"machine": machine_info(), "runs": args.runs, "target_seconds": TARGET_SECONDS}
    for name, times in measured.items():
        median = statistics.median(times)
        beyond = median - floor if name.startswith("polybeam") else None
        report[name] = {"seconds": times, "median": median, "beyond_beam_import": beyond}
        rows.append(
            [
                name,
                f"{median:.2f}",
                f"{min(times):.2f}-{max(times):.2f}",
                "" if beyond is None else f"{beyond:+.2f}",
                "" if beyond is None else ("met" if beyond <= TARGET_SECONDS else "not met"),
            ]
        )
    marks, bundles = split["marks"], split["bundles"]
    steps, before = [], 0.0
    for name, at in marks:
        steps.append([name, f"{at - before:.2f}"])
        before = at
    report["train phases"] = {"marks": marks, "bundles": bundles}
    markdown = "\n".join(
        [
            "# Start-up: whole commands on a 10-row input",
            "",
            f"`python benchmarks/bench_startup.py --runs {args.runs}` (medians of {args.runs} runs; "
            f"target: at most {TARGET_SECONDS} s beyond `import apache_beam`).",
            "",
            markdown_table(["run", "median s", "range", "beyond Beam's import", "target"], rows),
            "",
            f"One `train`, phase by phase ({len(bundles)} bundles run in process, {sum(bundles):.2f} s in all):",
            "",
            markdown_table(["phase", "seconds"], steps),
            "",
        ]
    )
    write_report(args.out, "startup", report, markdown)
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
