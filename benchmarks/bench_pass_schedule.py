"""The restart pass schedule against one constant rate, on the evaluation suite's tasks.

Protocol (fixed before the schedule's default was set): for each suite data
set and each seed's 80/20 split, the defaults (``polybeam train`` with the
loss the task needs) run ``--passes 5`` and ``--passes 20`` twice, as
``Train`` runs a small input in memory:

* ``constant``: ``--pass-schedule constant``, one rate; training stops after
  ``early_terminate`` passes without a lower holdout loss (VW's behaviour);
* ``restart`` (the default): those passes end a run, and learning starts again
  from the beginning at half the rate, until a run does no better than the one
  before.

Part 1, **where the holdout judges by default** (the first pass holds out at
least ``holdout_min_examples`` = 1000 examples: 10,000 training rows and more):
every such task. Part 2, **small data with the holdout forced on**
(``--holdout-min-examples 0``; by default they hold out too few to judge by):
the classification tasks under ``--max-small-rows`` training rows, 20 passes,
to show what the schedule does where the holdout is a few dozen examples;
beside them the default 20 passes (chosen by 10-fold cross-validation and
learned again on every row), ``release`` (the default before: every pass after
the first learns every row, the last pass kept), one pass, and the restart
schedule's choice on the forced holdout (the best pass's rate and its place in
its run) learned again from the start on every row.

Measured on the test part: mean log loss (relative MSE for regression) and
0-1 error over the seeds, seconds, the passes run and the restarts. A task
counts as better or worse when the mean differs by more than ``--margin``.

``python benchmarks/bench_pass_schedule.py --cache CACHE`` writes
``benchmarks/results/pass_schedule.{json,md}``.

Part 2 also gives, per task, the default's loss minus ``release``'s seed by
seed, with its standard error: a test part of 20-70 rows moves a mean over
three seeds by more than the margin. ``benchmarks/results/pass_schedule_seeds.*``
re-measures the tasks where the default was higher on twenty further seeds
(regression tasks too)::

    python benchmarks/bench_pass_schedule.py --cache CACHE --no-judged --small-regression \
        --only Ozone,Sonar,HouseVotes84,promotergene,sk_wine,Glass --seeds 3,4,...,22 --name pass_schedule_seeds
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "suite"), os.path.dirname(HERE)]

import numpy as np  # noqa: E402
from harness import machine_info, markdown_table, write_report  # noqa: E402

SCHEDULES = ("constant", "restart")
# Part 2's other rows: the default (cross-validated), the holdout released, one pass, and the restart
# schedule's choice on the forced holdout refitted.
SMALL_VARIANTS = ("default", "release", "1 pass", "restart, refit")
JUDGED_PASSES = (5, 20)
SMALL_PASSES = 20


def measure(task, model, test) -> tuple[float, float | None]:
    """``(log loss or relative MSE, 0-1 error or None)`` of ``model`` on ``test``."""
    from runners import log_loss, task_error

    if task.kind == "regression":
        return task_error(task, test.labels, model.predict(test)), None
    margins = model.margins(test)
    predicted = margins if task.kind == "binary" else np.argmax(margins, axis=1) + 1.0  # (classes 1..K)
    return log_loss(task, test.labels, margins), task_error(task, test.labels, predicted)


def refitted(config, judged, train):
    """A fresh learner at the rate of ``judged``'s best pass, run on every row of ``train`` (no holdout) for
    as many passes as that pass's run had taken."""
    from runners import train_like_train

    history = judged.metadata["holdout"]["passes"]
    best = history[judged.metadata["holdout"]["best_pass"] - 1]
    place = sum(1 for entry in history[: best["pass"]] if entry["rate"] == best["rate"])
    again = dataclasses.replace(config, passes=place, learning_rate=best["rate"], holdout_period=0)
    return train_like_train(again, train)


def run_task(meta: dict, seeds, splits: str, passes_list, *, small: bool = False, **settings) -> list[dict]:
    """One row per (passes, schedule): the means over ``seeds`` (``small``: the small-data variants too)."""
    from runners import Task, polybeam_config, polybeam_flags, read_batch, train_like_train
    from splits import make_split

    task = Task.of(meta)
    runs: dict = {}
    for seed in seeds:
        split = make_split(
            os.path.join(meta["folder"], "data.libsvm"), os.path.join(splits, task.name, str(seed)), seed
        )
        config = polybeam_config(polybeam_flags(task))
        train, test = read_batch(split.train, config), read_batch(split.test, config)
        for passes in passes_list:
            for schedule in (*SCHEDULES, *(SMALL_VARIANTS if small else ())):
                started = time.perf_counter()
                if schedule in SCHEDULES:
                    model = train_like_train(
                        dataclasses.replace(config, passes=passes, pass_schedule=schedule, **settings), train
                    )
                elif schedule == "default":  # too few held out: passes chosen by cross-validation, learned again
                    model = train_like_train(dataclasses.replace(config, passes=passes), train)
                elif schedule == "release":  # too few held out: every pass learns every example (the old default)
                    model = train_like_train(dataclasses.replace(config, passes=passes, small_holdout="release"), train)
                elif schedule == "1 pass":
                    model = train_like_train(config, train)
                else:  # the restart schedule's rate and passes, learned again from the start on every row
                    judged = train_like_train(dataclasses.replace(config, passes=passes, **settings), train)
                    model = refitted(config, judged, train)
                seconds = time.perf_counter() - started
                loss, error = measure(task, model, test)
                holdout = model.metadata.get("holdout") or {}
                judged = holdout.get("passes") or []
                runs.setdefault((passes, schedule), []).append(
                    {
                        "loss": loss,
                        "error": error,
                        "seconds": seconds,
                        "passes run": len(judged) if judged and not holdout.get("released") else model.config.passes,
                        "restarts": holdout.get("restarts", 0),
                        "rate kept": model.config.learning_rate,
                    }
                )
    rows = []
    for (passes, schedule), seeds_runs in runs.items():
        errors = [run["error"] for run in seeds_runs if run["error"] is not None]
        rows.append(
            {
                "task": task.name,
                "kind": task.kind,
                "rows": meta["rows"],
                "passes": passes,
                "schedule": schedule,
                "loss": float(np.mean([run["loss"] for run in seeds_runs])),
                "losses": [run["loss"] for run in seeds_runs],
                "error": float(np.mean(errors)) if errors else None,
                "seconds": float(np.mean([run["seconds"] for run in seeds_runs])),
                "passes run": [run["passes run"] for run in seeds_runs],
                "restarts": [run["restarts"] for run in seeds_runs],
                "rate kept": [run["rate kept"] for run in seeds_runs],
            }
        )
    return rows


def tally(rows: list[dict], passes: int, margin: float, new: str = "restart", old: str = "constant") -> dict:
    """How many tasks ``new`` beats ``old`` on, and loses on, by more than ``margin`` at ``passes``."""
    by_task: dict = {}
    for row in rows:
        if row["passes"] == passes:
            by_task.setdefault(row["task"], {})[row["schedule"]] = row["loss"]
    differences = {task: pair[new] - pair[old] for task, pair in by_task.items()}
    return {
        "new": new,
        "old": old,
        "passes": passes,
        "better": sorted(task for task, d in differences.items() if d < -margin),
        "worse": sorted(task for task, d in differences.items() if d > margin),
        "tasks": len(differences),
    }


def paired(rows: list[dict], new: str, old: str) -> list[dict]:
    """Per task, ``new``'s loss minus ``old``'s seed by seed: their mean, its standard error over the seeds
    and the seeds where ``new`` was lower. A test part of a few dozen rows moves the mean of three seeds by
    more than the tally's margin; many seeds say whether a difference is the task's or the splits'."""
    by_task: dict = {}
    for row in rows:
        by_task.setdefault(row["task"], {})[row["schedule"]] = row["losses"]
    out = []
    for task, losses in by_task.items():
        if new in losses and old in losses:
            differences = np.subtract(losses[new], losses[old])
            error = float(np.std(differences, ddof=1) / np.sqrt(len(differences))) if len(differences) > 1 else None
            out.append(
                {
                    "task": task,
                    "mean": float(differences.mean()),
                    "standard error": error,
                    "lower": int((differences < 0).sum()),
                    "seeds": len(differences),
                }
            )
    return out


def paired_table(pairs: list[dict]) -> str:
    return markdown_table(
        ["task", "mean difference", "standard error", "seeds lower"],
        [
            [
                p["task"],
                f"{p['mean']:+.4f}",
                "" if p["standard error"] is None else f"{p['standard error']:.4f}",
                f"{p['lower']} of {p['seeds']}",
            ]
            for p in pairs
        ],
    )


def table(rows: list[dict]) -> str:
    def listed(values):
        return ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in values)

    return markdown_table(
        [
            "task",
            "kind",
            "rows",
            "passes",
            "schedule",
            "loss",
            "error",
            "seconds",
            "passes run",
            "restarts",
            "rate kept",
        ],
        [
            [
                r["task"],
                r["kind"],
                r["rows"],
                r["passes"],
                r["schedule"],
                f"{r['loss']:.4f}",
                "" if r["error"] is None else f"{r['error']:.4f}",
                f"{r['seconds']:.2f}",
                listed(r["passes run"]),
                listed(r["restarts"]),
                listed(r["rate kept"]),
            ]
            for r in rows
        ],
    )


def tally_line(count: dict, margin: float, lead: str = "") -> str:
    """One line of a :func:`tally`: where ``new`` was lower and higher than ``old``."""
    return (
        f"- {lead}{count['new']} against {count['old']}: lower by more than {margin} on {len(count['better'])} of "
        f"{count['tasks']} tasks ({', '.join(count['better']) or 'none'}), higher on {len(count['worse'])} "
        f"({', '.join(count['worse']) or 'none'})."
    )


def render(report: dict) -> str:
    lines = [
        "# Passes at one rate, or restarted at half the rate",
        "",
        f"`python benchmarks/bench_pass_schedule.py` (see its docstring; seeds {report['seeds']}). Test log loss "
        "(relative MSE for regression) and 0-1 error, means over the seeds; per seed: the passes run, the "
        "restarts, and the learning rate of the pass kept.",
        "",
    ]
    if report["judged"]:
        lines += ["## Where the holdout judges by default (10,000 training rows and more)", ""]
        lines += [
            tally_line(count, report["margin"], f"{count['passes']} passes: ") for count in report["judged tally"]
        ]
        lines += ["", table(report["judged"]), ""]
    if report["small"]:
        lines += [
            f"## Small data with the holdout forced on (--holdout-min-examples 0, {SMALL_PASSES} passes)",
            "",
            "By default these tasks hold out too few examples to judge passes by, and the passes are chosen by "
            "10-fold cross-validation, then learned again on every row: that is the `default` row "
            "(`small_holdout` `cross-validate`). `release`: every pass after the first learns every example and "
            "the last pass is kept (the default before). `restart, refit`: a fresh learner at the rate "
            "of the restart schedule's best pass on the forced holdout, run on every row for as many passes as "
            "that pass's run took.",
            "",
        ]
        lines += [tally_line(count, report["margin"]) for count in report["small tally"]]
        lines += [
            "",
            "`default` minus `release`, seed by seed (mean, its standard error over the seeds, and the seeds "
            "where the default was lower):",
            "",
            paired_table(report["small paired"]),
            "",
            table(report["small"]),
            "",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import suite_data

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", default=os.path.join(HERE, "suite", "cache"), help="the suite's data sets")
    parser.add_argument("--out", default=os.path.join(HERE, "results"), help="where pass_schedule.* go")
    parser.add_argument("--splits", default=os.path.join(HERE, "out", "pass_schedule"), help="the splits")
    parser.add_argument("--only", default=None, help="comma-separated data sets (default: all)")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--judged-rows", type=int, default=12_500, help="part 1: data sets with this many rows")
    parser.add_argument("--max-small-rows", type=int, default=12_500, help="part 2: data sets under this")
    parser.add_argument("--no-small", action="store_true", help="skip part 2")
    parser.add_argument("--no-judged", action="store_true", help="skip part 1")
    parser.add_argument("--small-regression", action="store_true", help="part 2 takes regression tasks too")
    parser.add_argument("--name", default="pass_schedule", help="the report's name in --out")
    parser.add_argument("--margin", type=float, default=0.002)
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    metas = suite_data.assemble(args.cache, names=args.only.split(",") if args.only else None)
    judged, small = [], []
    for meta in metas:
        meta = {**meta, "folder": meta.get("folder") or os.path.join(args.cache, meta["name"])}
        if meta["rows"] >= args.judged_rows:
            if args.no_judged:
                continue
            judged += run_task(meta, seeds, args.splits, JUDGED_PASSES)
        elif (
            not args.no_small
            and (args.small_regression or meta["task"] != "regression")
            and meta["rows"] < args.max_small_rows
        ):
            small += run_task(meta, seeds, args.splits, (SMALL_PASSES,), small=True, holdout_min_examples=0)
        else:
            continue
        print(f"{meta['name']}: done", file=sys.stderr, flush=True)
    report = {"machine": machine_info(), "seeds": seeds, "margin": args.margin, "judged": judged, "small": small}
    report["judged tally"] = [tally(judged, passes, args.margin) for passes in JUDGED_PASSES]
    pairs = [
        ("restart", "constant"),
        ("default", "release"),
        ("default", "1 pass"),
        ("release", "1 pass"),
        ("default", "restart, refit"),
    ]
    report["small tally"] = [tally(small, SMALL_PASSES, args.margin, new, old) for new, old in pairs] if small else []
    report["small paired"] = paired(small, "default", "release")
    write_report(args.out, args.name, report, render(report))
    print(render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
