"""Which step rule apple (and squared loss on +-1 labels) should take by default, on the suite's binary tasks.

The apple paper learns binary tasks with squared loss on +-1 labels, one pass.
This compares, on every binary task of the evaluation suite (``benchmarks/suite/``,
its seeded 80/20 splits; the ``+random1000`` variants and ``flights``, 327,000
rows, left out) and on seeds 0, 1 and 2, the test 0-1 error of the score's sign of:

* squared loss, linear: the default step rule (adaptive at rate 0.5), ``--step gsa``
  and rate 1;
* squared loss, ``--expand apple --alpha 1``: the default step rule, ``--step gsa``,
  rates 1 and 2, and the default with ``--passes 3``;
* logistic loss, ``--expand apple --alpha 1`` (the suite's own apple row), for reference.

The protocol, fixed before any default was changed: a setting wins (loses) a task
when its mean error over the seeds is lower (higher) than the default's by more than
the suite's margin, 0.005; the default is a defect where another one-pass setting
wins more tasks than it loses and has the lower mean error over all tasks.

``python benchmarks/bench_apple_step.py [--tasks a,b] [--seeds 0,1,2]`` writes
``benchmarks/results/apple_step.{json,md}``.
"""

from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "suite"), os.path.dirname(HERE)]

import numpy as np  # noqa: E402
from harness import machine_info, markdown_table, write_report  # noqa: E402

MARGIN = 0.005
APPLE = ("--expand", "apple", "--alpha", "1")
SETTINGS = {
    "squared, linear": ("--loss", "squared"),
    "squared, linear, gsa": ("--loss", "squared", "--step", "gsa"),
    "squared, linear, rate 1": ("--loss", "squared", "--learning-rate", "1"),
    "squared, apple": ("--loss", "squared", *APPLE),
    "squared, apple, gsa": ("--loss", "squared", *APPLE, "--step", "gsa"),
    "squared, apple, rate 1": ("--loss", "squared", *APPLE, "--learning-rate", "1"),
    "squared, apple, rate 2": ("--loss", "squared", *APPLE, "--learning-rate", "2"),
    "squared, apple, 3 passes": ("--loss", "squared", *APPLE, "--passes", "3"),
    "logistic, apple": ("--loss", "logistic", *APPLE),
}
DEFAULTS = {"squared, linear": "squared, linear", "squared, apple": "squared, apple"}
LEFT_OUT = ("flights",)


def binary_tasks(cache: str, names: list[str] | None = None) -> list[dict]:
    """The suite's binary tasks (``names``, or all but the left out and the ``+random1000`` variants), written
    into ``cache`` when not there yet."""
    import suite_data

    metas = suite_data.assemble(cache, names=names, variants=False)
    chosen = [meta for meta in metas if meta["task"] == "binary" and "+" not in meta["name"]]
    if names is None:
        chosen = [meta for meta in chosen if meta["name"] not in LEFT_OUT]
    return [{**meta, "folder": meta.get("folder") or os.path.join(cache, meta["name"])} for meta in chosen]


def run(meta: dict, seed: int, splits: str) -> dict:
    from runners import Task, run_polybeam
    from splits import make_split

    task = Task.of(meta)
    split = make_split(os.path.join(meta["folder"], "data.libsvm"), os.path.join(splits, task.name, str(seed)), seed)
    return {name: run_polybeam(task, list(flags), split.train, split.test) for name, flags in SETTINGS.items()}


def compare(results: dict) -> list[dict]:
    """Per setting: mean error over tasks, and wins / losses against the default of its family."""
    rows = []
    for name in SETTINGS:
        family = "squared, apple" if "apple" in name and name.startswith("squared") else "squared, linear"
        if name.startswith("logistic"):
            family = "squared, apple"
        errors, baseline = [], []
        for task in results.values():
            errors.append(np.mean([seed[name]["error"] for seed in task.values()]))
            baseline.append(np.mean([seed[family]["error"] for seed in task.values()]))
        differences = np.array(errors) - np.array(baseline)
        rows.append(
            {
                "setting": name,
                "against": family,
                "mean error": float(np.mean(errors)),
                "wins": int(np.sum(differences < -MARGIN)),
                "losses": int(np.sum(differences > MARGIN)),
            }
        )
    return rows


def render(report: dict) -> str:
    results = report["results"]
    lines = [
        "# Apple's and squared loss's step rule on the suite's binary tasks",
        "",
        "`python benchmarks/bench_apple_step.py` (see its docstring): test 0-1 error of the score's sign, mean of "
        f"seeds {', '.join(map(str, report['seeds']))}; one pass unless named.",
        "",
        markdown_table(
            ["task", *SETTINGS],
            [
                [task, *[f"{np.mean([s[name]['error'] for s in seeds.values()]):.4f}" for name in SETTINGS]]
                for task, seeds in results.items()
            ],
        ),
        "",
        f"Against the default of the same family (wins / losses: mean error lower / higher by more than {MARGIN}):",
        "",
        markdown_table(
            ["setting", "against", "mean error over tasks", "wins", "losses"],
            [[r["setting"], r["against"], f"{r['mean error']:.4f}", r["wins"], r["losses"]] for r in report["summary"]],
        ),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", default=os.path.join(HERE, "suite", "cache"), help="the suite's data sets")
    parser.add_argument("--out", default=os.path.join(HERE, "results"), help="where apple_step.{json,md} go")
    parser.add_argument("--splits", default=os.path.join(HERE, "out", "apple_step"), help="the splits' folder")
    parser.add_argument("--tasks", default="", help="comma-separated suite data sets (default: every binary one)")
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated split seeds")
    args = parser.parse_args(argv)
    metas = binary_tasks(args.cache, args.tasks.split(",") if args.tasks else None)
    seeds = [int(s) for s in args.seeds.split(",")]
    results = {}
    for meta in metas:
        results[meta["name"]] = {str(seed): run(meta, seed, args.splits) for seed in seeds}
        print(f"{meta['name']}: done", file=sys.stderr, flush=True)
    report = {"machine": machine_info(), "seeds": seeds, "results": results}
    report["summary"] = compare(results)
    write_report(args.out, "apple_step", report, render(report))
    print(render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
