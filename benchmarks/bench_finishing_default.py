"""The finishing stage's default against one plain pass, on the evaluation suite's tasks.

For every suite data set under ``--max-rows`` training rows and each seed's
80/20 split: the defaults' one pass (``polybeam train`` with the loss the task
needs), and ``--lbfgs-passes 5`` as ``Train`` runs it (its online pass holds
out one example in ten, which the stage judges its L2 grid's points on against
the online model). Mean test log loss (relative MSE for regression) per task,
and how many tasks each wins by more than ``--margin``.

``python benchmarks/bench_finishing_default.py --cache CACHE`` writes
``benchmarks/results/finishing_default.{json,md}``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "suite"), os.path.dirname(HERE)]

import numpy as np  # noqa: E402
from harness import machine_info, markdown_table, write_report  # noqa: E402

STAGE_PASSES = 5


def measure(task, model, test) -> float:
    from runners import log_loss, task_error

    if task.kind == "regression":
        return task_error(task, test.labels, model.predict(test))
    return log_loss(task, test.labels, model.margins(test))


def run_task(meta: dict, seeds, splits: str) -> dict:
    from runners import Task, polybeam_config, polybeam_flags, read_batch, train_like_train
    from splits import make_split

    from polybeam.learners import lbfgs

    task = Task.of(meta)
    plain, finished, kept = [], [], []
    for seed in seeds:
        split = make_split(
            os.path.join(meta["folder"], "data.libsvm"), os.path.join(splits, task.name, str(seed)), seed
        )
        config = polybeam_config(polybeam_flags(task))
        train, test = read_batch(split.train, config), read_batch(split.test, config)
        plain.append(measure(task, train_like_train(config, train), test))
        staged = dataclasses.replace(config, lbfgs_passes=STAGE_PASSES)
        online = train_like_train(staged, train)
        model = lbfgs.finish(online, [train], STAGE_PASSES, None, period=staged.holdout_period, seed=staged.seed)
        finished.append(measure(task, model, test))
        kept.append(model.metadata["lbfgs"]["kept"])
    return {
        "task": task.name,
        "kind": task.kind,
        "rows": meta["rows"],
        "one pass": float(np.mean(plain)),
        f"--lbfgs-passes {STAGE_PASSES}": float(np.mean(finished)),
        "kept": kept,
    }


def render(report: dict) -> str:
    stage = f"--lbfgs-passes {STAGE_PASSES}"
    rows = [
        [r["task"], r["rows"], f"{r['one pass']:.4f}", f"{r[stage]:.4f}", ", ".join(r["kept"])]
        for r in report["results"]
    ]
    return "\n".join(
        [
            "# The finishing stage's default against one pass",
            "",
            f"`python benchmarks/bench_finishing_default.py` (seeds {report['seeds']}): mean test log loss "
            "(relative MSE for regression). "
            f"{stage} lower by more than {report['margin']} on {report['better']} tasks, higher on "
            f"{report['worse']}, of {len(report['results'])}.",
            "",
            markdown_table(["task", "rows", "one pass", stage, "kept (per seed)"], rows),
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    import suite_data

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", default=os.path.join(HERE, "suite", "cache"), help="the suite's data sets")
    parser.add_argument("--out", default=os.path.join(HERE, "results"), help="where finishing_default.* go")
    parser.add_argument("--splits", default=os.path.join(HERE, "out", "finishing_default"), help="the splits")
    parser.add_argument("--only", default=None, help="comma-separated data sets (default: all)")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--max-rows", type=int, default=12_000)
    parser.add_argument("--margin", type=float, default=0.002)
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    metas = suite_data.assemble(args.cache, names=args.only.split(",") if args.only else None)
    results = []
    for meta in metas:
        if meta["rows"] > args.max_rows:
            continue
        meta = {**meta, "folder": meta.get("folder") or os.path.join(args.cache, meta["name"])}
        results.append(run_task(meta, seeds, args.splits))
        print(f"{meta['name']}: done", file=sys.stderr, flush=True)
    stage = f"--lbfgs-passes {STAGE_PASSES}"
    better = sum(r[stage] < r["one pass"] - args.margin for r in results)
    worse = sum(r[stage] > r["one pass"] + args.margin for r in results)
    report = {"machine": machine_info(), "seeds": seeds, "margin": args.margin, "better": better, "worse": worse}
    report["results"] = results
    write_report(args.out, "finishing_default", report, render(report))
    print(render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
