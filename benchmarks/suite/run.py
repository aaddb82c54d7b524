"""The evaluation suite: polybeam's defaults against VW and scikit-learn on data nobody tuned for.

Run ``python benchmarks/suite/run.py [--quick] [--only a,b] [--seeds 0,1,2]``.
The protocol is fixed in ``PROTOCOL.md`` (next to this file): the data sets
(assembled into ``--cache`` by ``suite_data.py``), the seeded 80/20 splits
with a validation fifth for every choice, the learners and their settings,
and how errors are compared. Results go to
``benchmarks/results/suite.{json,md}`` and ``suite.png`` (``--quick``: the
scikit-learn bundled sets on one seed, into ``--out``, for a smoke test).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BENCHMARKS = os.path.dirname(HERE)
sys.path[:0] = [HERE, BENCHMARKS]

import runners  # noqa: E402
import sparsity  # noqa: E402
import suite_data  # noqa: E402
from harness import machine_info, markdown_table, vw_version, write_report  # noqa: E402
from runners import Task  # noqa: E402
from splits import make_split  # noqa: E402

SEEDS = (0, 1, 2)
MARGIN = 0.005  # a win or a loss: a mean error lower or higher by more than this
SMALL_ROWS = 10_000
FLOOR = 1e-3  # errors of 0 are drawn here on the plot's log axes  # "small data": fewer training rows than this get the 20-pass run
APPLE = ("--expand", "apple", "--alpha", "1")
STAGE_POLY = ("--stage_poly", "--sched_exponent", "1")


def _learners() -> dict:
    """name -> (does it apply to (task, training rows), run(task, split) -> result)."""
    polynomial_tasks = ("binary", "regression")
    return {
        "polybeam": (
            lambda task, rows: True,
            lambda task, split: runners.run_polybeam(task, runners.polybeam_flags(task), split.train, split.test),
        ),
        "polybeam apple": (
            lambda task, rows: task.kind in polynomial_tasks,
            lambda task, split: runners.run_polybeam(
                task, runners.polybeam_flags(task, *APPLE), split.train, split.test
            ),
        ),
        "polybeam 20 passes": (
            lambda task, rows: rows < SMALL_ROWS,
            lambda task, split: runners.run_polybeam(
                task, runners.polybeam_flags(task, "--passes", "20"), split.train, split.test
            ),
        ),
        # Added for issue 31 (learners, not a change of protocol): centring's and the finishing stage's
        # defaults against their alternatives (log loss: ``summary[...]["log_loss"]``).
        "polybeam no-center": (
            lambda task, rows: True,
            lambda task, split: runners.run_polybeam(
                task, runners.polybeam_flags(task, "--no-center"), split.train, split.test
            ),
        ),
        "polybeam 20 passes no-center": (
            lambda task, rows: rows < SMALL_ROWS,
            lambda task, split: runners.run_polybeam(
                task, runners.polybeam_flags(task, "--passes", "20", "--no-center"), split.train, split.test
            ),
        ),
        "polybeam lbfgs": (
            lambda task, rows: True,
            lambda task, split: runners.run_polybeam(
                task, runners.polybeam_flags(task, "--lbfgs-passes", "5"), split.train, split.test
            ),
        ),
        "vw": (lambda task, rows: True, lambda task, split: runners.run_vw(task, split)),
        "vw stage_poly": (
            lambda task, rows: task.kind in polynomial_tasks,
            lambda task, split: runners.run_vw(task, split, STAGE_POLY),
        ),
        "sklearn sgd": (lambda task, rows: True, lambda task, split: runners.run_sklearn(task, split, "sgd")),
        "sklearn batch": (lambda task, rows: True, lambda task, split: runners.run_sklearn(task, split, "batch")),
        # Added for issue 22's regression targets (a peer, not a change of protocol).
        "sklearn ridgecv": (
            lambda task, rows: task.kind == "regression",
            lambda task, split: runners.run_sklearn(task, split, "ridgecv"),
        ),
    }


LEARNERS = _learners()


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run_task(meta: dict, seeds, splits_folder: str, learners: list[str]) -> dict:
    """Every learner that applies, on every seed's split of one data set."""
    task = Task.of(meta)
    runs: dict = {}
    for seed in seeds:
        split = make_split(
            os.path.join(meta["folder"], "data.libsvm"), os.path.join(splits_folder, task.name, str(seed)), seed
        )
        for name in learners:
            applies, run = LEARNERS[name]
            if applies(task, split.rows["train"]):
                runs.setdefault(name, []).append({"seed": seed, **run(task, split)})
        log(f"{task.name} seed {seed}: " + ", ".join(f"{n} {r[-1]['error']:.4f}" for n, r in runs.items()))
    summary = {
        name: {
            "error": float(np.mean([r["error"] for r in results])),
            "seconds": float(np.mean([r["seconds"] for r in results])),
            **(
                {"log_loss": float(np.mean([r["log_loss"] for r in results]))}
                if all(r.get("log_loss") is not None for r in results)
                else {}
            ),
        }
        for name, results in runs.items()
    }
    return {
        "task": task.kind,
        "rows": meta["rows"],
        "features": task.features,
        "classes": task.classes,
        "kind": meta.get("kind"),
        "source": meta.get("source"),
        "summary": summary,
        "runs": runs,
    }


def run_sparsity_task(meta: dict, seeds, splits_folder: str) -> dict:
    """The sparsity protocol (``sparsity.py``) on one ``NAME+random1000`` task, every method and seed."""
    task = Task.of(meta)
    runs: dict = {method: [] for method in sparsity.METHODS}
    for seed in seeds:
        split = make_split(
            os.path.join(meta["folder"], "data.libsvm"), os.path.join(splits_folder, task.name, str(seed)), seed
        )
        for method in sparsity.METHODS:
            runs[method].append({"seed": seed, **sparsity.sweep(method, task, split)})
        log(
            f"{task.name} seed {seed}: "
            + ", ".join(
                f"{m} {r[-1]['test']['random_zero']:.0%} zero, {r[-1]['test']['loss']:+.1%} acc."
                for m, r in runs.items()
            )
        )
    return {
        "rows": meta["rows"],
        "features": task.features,
        "base": meta.get("base"),
        "summary": {method: sparsity.summarise(r) for method, r in runs.items()},
        "runs": runs,
    }


def render_sparsity(report: dict) -> str:
    results = report["results"]
    methods = list(sparsity.METHODS)
    met = {m: [n for n, r in results.items() if r["summary"][m]["meets_target"]] for m in methods}
    rows = [
        [
            name,
            r["rows"],
            *(f"{r['summary'][m]['random_zero']:.1%} / {r['summary'][m]['accuracy_loss']:+.2%}" for m in methods),
        ]
        for name, r in results.items()
    ]
    lines = [
        "# The suite's sparsity protocol: binary tasks plus 1000 random binary features",
        "",
        f"Measured {report['started']} by `benchmarks/suite/run.py --sparsity` (protocol: "
        "`benchmarks/suite/PROTOCOL.md`, `benchmarks/suite/sparsity.py`); seeds "
        f"{', '.join(map(str, report['seeds']))}. Each method's strength is chosen on the validation fifth: the "
        "sparsest point of its grid within 1% (relative) of its own unregularised validation accuracy; the table "
        "gives, on the test part and averaged over seeds, the share of the 1000 random features exactly 0 and the "
        "accuracy lost against the same method without sparsity (negative: gained). Grids: "
        + "; ".join(f"{m} {min(g):g} to {max(g):g} ({len(g)} points)" for m, g in sparsity.GRIDS.items())
        + ".",
        "",
        "## Target: >= 90% of the random features exactly 0 at <= 1% accuracy loss, on >= 80% of the tasks",
        "",
        *(
            f"- {m}: {len(met[m])} of {len(results)} tasks"
            + (" (met)" if len(met[m]) >= 0.8 * len(results) else " (NOT met)")
            for m in methods
        ),
        "",
        "## Random features zeroed / accuracy lost, per task",
        "",
        markdown_table(["task", "rows", *methods], rows),
        "",
        "Accuracy against non-zero weights along each sweep (validation, seed 0): `suite_sparsity.png`.",
        "",
    ]
    return "\n".join(lines)


def compare(results: dict, ours: str, theirs: str, kinds) -> dict:
    """Wins, ties and losses of ``ours`` against ``theirs`` on the tasks of ``kinds`` (mean errors, MARGIN)."""
    counts = {"win": [], "tie": [], "loss": []}
    for name, result in results.items():
        summary = result["summary"]
        if result["task"] in kinds and ours in summary and theirs in summary:
            difference = summary[ours]["error"] - summary[theirs]["error"]
            outcome = "win" if difference < -MARGIN else "loss" if difference > MARGIN else "tie"
            counts[outcome].append(name)
    return counts


def targets(results: dict) -> dict:
    """Issue 11's targets, as PROTOCOL.md states them."""
    classification = ("binary", "multiclass")
    defaults = compare(results, "polybeam", "vw", classification)
    compared = sum(len(v) for v in defaults.values())
    within = len(defaults["win"]) + len(defaults["tie"])
    converge = {
        name: r["summary"]["polybeam 20 passes"]["error"] - r["summary"]["sklearn batch"]["error"]
        for name, r in results.items()
        if r["task"] in classification and "polybeam 20 passes" in r["summary"] and "sklearn batch" in r["summary"]
    }
    apple_vw = compare(results, "polybeam apple", "vw stage_poly", ("binary", "regression"))
    apple_compared = sum(len(v) for v in apple_vw.values())
    apple_not_worse = {
        name: r["summary"]["polybeam apple"]["error"] - r["summary"]["polybeam"]["error"]
        for name, r in results.items()
        if "polybeam apple" in r["summary"]
    }
    regression = [(name, r["summary"]) for name, r in results.items() if r["task"] == "regression"]
    below_mean = {name: s["polybeam"]["error"] for name, s in regression if "polybeam" in s}
    near_vw = {
        name: s["polybeam"]["error"] - s["vw"]["error"] for name, s in regression if "polybeam" in s and "vw" in s
    }
    near_ridge = {
        name: s["polybeam 20 passes"]["error"] - s["sklearn ridgecv"]["error"]
        for name, s in regression
        if "polybeam 20 passes" in s and "sklearn ridgecv" in s
    }
    return {
        # Issue 22's regression targets (added; issue 11's above are unchanged).
        "regression_below_mean": {
            "errors": below_mean,
            "met": bool(below_mean) and all(e < 1.0 for e in below_mean.values()),
        },
        "regression_near_vw": {
            "gaps": near_vw,
            "within": sum(g <= 0.01 for g in near_vw.values()),
            "met": bool(near_vw) and sum(g <= 0.01 for g in near_vw.values()) >= 0.8 * len(near_vw),
        },
        "regression_passes_near_ridge": {
            "gaps": near_ridge,
            "within": sum(g <= 0.02 for g in near_ridge.values()),
            "met": bool(near_ridge) and sum(g <= 0.02 for g in near_ridge.values()) >= 0.8 * len(near_ridge),
        },
        "defaults_vs_vw": {
            **defaults,
            "within": within,
            "compared": compared,
            "met": compared > 0 and within >= 0.9 * compared and len(defaults["win"]) >= compared / 3,
        },
        "passes_vs_batch": {"gaps": converge, "met": bool(converge) and all(gap <= 0.02 for gap in converge.values())},
        "apple_vs_stage_poly": {
            **apple_vw,
            "compared": apple_compared,
            "met": apple_compared > 0 and (len(apple_vw["win"]) + len(apple_vw["tie"])) >= 0.6 * apple_compared,
        },
        "apple_vs_linear": {
            "gaps": apple_not_worse,
            "met": bool(apple_not_worse) and all(gap <= MARGIN for gap in apple_not_worse.values()),
        },
    }


def render(report: dict) -> str:
    results, goals = report["results"], report["targets"]
    columns = [name for name in LEARNERS if any(name in r["summary"] for r in results.values())]

    def cell(result, name):
        entry = result["summary"].get(name)
        return "" if entry is None else f"{entry['error']:.4f}"

    rows = [[name, r["task"], r["rows"], r["features"], *(cell(r, c) for c in columns)] for name, r in results.items()]
    times = [
        [name, *("" if c not in r["summary"] else f"{r['summary'][c]['seconds']:.2f}" for c in columns)]
        for name, r in results.items()
    ]

    def names(items):
        return ", ".join(items) if items else "none"

    d, p, a, al = (goals[k] for k in ("defaults_vs_vw", "passes_vs_batch", "apple_vs_stage_poly", "apple_vs_linear"))
    mark = {True: "met", False: "NOT met"}
    lines = [
        "# The evaluation suite: polybeam's defaults on data nobody tuned for",
        "",
        f"Measured {report['started']} by `benchmarks/suite/run.py` (protocol: `benchmarks/suite/PROTOCOL.md`); "
        f"seeds {', '.join(map(str, report['seeds']))}; VW {report['vw_version']}; {report['machine'].get('cpus', '?')} CPUs. "
        "Held-out 0-1 error (binary, multiclass) or MSE over the test labels' variance (regression), mean over seeds; "
        f"a win or loss is a difference of more than {MARGIN}.",
        "",
        "## Targets",
        "",
        f"- Defaults (one pass) against VW at its validation-chosen rate, binary and multiclass: within {MARGIN} on "
        f"{d['within']} of {d['compared']} tasks ({mark[d['within'] >= 0.9 * d['compared']]}: 90%), better on "
        f"{len(d['win'])} ({mark[len(d['win']) >= d['compared'] / 3]}: a third); both: {mark[d['met']]}. "
        f"Better: {names(d['win'])}. Worse: {names(d['loss'])}.",
        f"- 20 passes against scikit-learn's LogisticRegression, tasks under {SMALL_ROWS:,} training rows: "
        f"{sum(g <= 0.02 for g in p['gaps'].values())} of {len(p['gaps'])} within 0.02 ({mark[p['met']]}); "
        "gaps: " + ", ".join(f"{n} {g:+.3f}" for n, g in p["gaps"].items()) + ".",
        f"- Apple (alpha 1) against VW --stage_poly, binary and regression: at or below on "
        f"{len(a['win']) + len(a['tie'])} of {a['compared']} ({mark[a['met']]}: 60%). Worse: {names(a['loss'])}.",
        f"- Apple never worse than polybeam's linear model by more than {MARGIN}: {mark[al['met']]}; worse on "
        + names([f"{n} ({g:+.3f})" for n, g in al["gaps"].items() if g > MARGIN])
        + ".",
        *regression_targets(goals),
        "",
        "## Held-out error per task",
        "",
        markdown_table(["task", "kind", "rows", "features", *columns], rows),
        "",
        "## Seconds per run (learning only for polybeam and scikit-learn; VW's whole command)",
        "",
        markdown_table(["task", *columns], times),
        "",
    ]
    return "\n".join(lines)


def regression_targets(goals: dict) -> list[str]:
    """Issue 22's regression targets as lines of the report (none for a report from before they existed)."""
    if "regression_below_mean" not in goals:
        return []
    mark = {True: "met", False: "NOT met"}
    below, vw, ridge = (
        goals[k] for k in ("regression_below_mean", "regression_near_vw", "regression_passes_near_ridge")
    )
    return [
        "- Regression (issue 22), one pass never worse than predicting the mean (relative MSE < 1): "
        f"{mark[below['met']]}; " + ", ".join(f"{n} {e:.3f}" for n, e in below["errors"].items()) + ".",
        f"- Regression, one pass within 0.01 of VW at its validation-chosen rate: {vw['within']} of {len(vw['gaps'])} "
        f"({mark[vw['met']]}: 80%); gaps: " + ", ".join(f"{n} {g:+.3f}" for n, g in vw["gaps"].items()) + ".",
        f"- Regression, 20 passes within 0.02 of scikit-learn's RidgeCV (standardised columns; an added peer), tasks "
        f"under {SMALL_ROWS:,} training rows: {ridge['within']} of {len(ridge['gaps'])} ({mark[ridge['met']]}: 80%); "
        "gaps: " + ", ".join(f"{n} {g:+.3f}" for n, g in ridge["gaps"].items()) + ".",
    ]


def plot(report: dict, path: str) -> None:
    """polybeam's defaults against VW, one point per task, the diagonal drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(11, 5))
    for axis, (ours, theirs, title) in zip(
        axes,
        [("polybeam", "vw", "linear, one pass"), ("polybeam apple", "vw stage_poly", "apple / stage_poly, alpha 1")],
    ):
        points = [
            (r["summary"][theirs]["error"], r["summary"][ours]["error"], name, r["task"])
            for name, r in report["results"].items()
            if ours in r["summary"] and theirs in r["summary"]
        ]
        for kind, marker in (("binary", "o"), ("multiclass", "s"), ("regression", "^")):
            chosen = [p for p in points if p[3] == kind]
            if chosen:
                axis.scatter(
                    [max(p[0], FLOOR) for p in chosen], [max(p[1], FLOOR) for p in chosen], marker=marker, label=kind
                )
        # Log axes: errors from under 1% to relative MSEs above 1 share one picture.
        values = [max(v, FLOOR) for p in points for v in p[:2]] or [FLOOR, 1.0]
        low, high = min(values) / 1.3, max(values) * 1.3
        axis.plot([low, high], [low, high], color="grey", linewidth=0.8)
        axis.set(
            xscale="log",
            yscale="log",
            xlim=(low, high),
            ylim=(low, high),
            xlabel=f"{theirs} error",
            ylabel=f"{ours} error",
            title=title,
        )
        axis.legend()
    figure.suptitle("Held-out error per task, mean of 3 seeds (below the diagonal: polybeam better)")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", default=os.path.join(HERE, "cache"), help="where the data sets are assembled")
    parser.add_argument("--out", default=os.path.join(BENCHMARKS, "out", "suite"), help="splits and scratch files")
    parser.add_argument(
        "--results",
        default=None,
        help="where suite.{json,md,png} go (default: benchmarks/results, or --out with --quick)",
    )
    parser.add_argument("--only", default=None, help="comma-separated data set names")
    parser.add_argument("--seeds", default=None, help="comma-separated seeds (default 0,1,2; --quick: 0)")
    parser.add_argument("--learners", default=",".join(LEARNERS), help="comma-separated learners")
    parser.add_argument("--quick", action="store_true", help="scikit-learn's bundled data sets, one seed")
    parser.add_argument("--sparsity", action="store_true", help="the sparsity protocol instead (suite_sparsity.*)")
    parser.add_argument("--render", action="store_true", help="rewrite the markdown and plots from the JSON")
    args = parser.parse_args(argv)
    stem = "suite_sparsity" if args.sparsity else "suite"
    if args.render:
        folder = args.results or os.path.join(BENCHMARKS, "results")
        with open(os.path.join(folder, f"{stem}.json")) as handle:
            report = json.load(handle)
        return publish(report, folder, stem)
    seeds = tuple(int(s) for s in args.seeds.split(",")) if args.seeds else ((0,) if args.quick else SEEDS)
    learners = [name.strip() for name in args.learners.split(",")]
    unknown = [name for name in learners if name not in LEARNERS]
    if unknown:
        parser.error(f"unknown learners {unknown}; choose from {', '.join(LEARNERS)}")
    results_folder = args.results or (args.out if args.quick else os.path.join(BENCHMARKS, "results"))
    only = args.only.split(",") if args.only else None
    metas = suite_data.assemble(args.cache, names=only, quick=args.quick, variants=args.sparsity)
    if args.sparsity:
        metas = [meta for meta in metas if meta.get("random_features")]
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    clock = time.perf_counter()
    results = {}
    for meta in metas:
        meta = {**meta, "folder": meta.get("folder") or os.path.join(args.cache, meta["name"])}
        if args.sparsity:
            results[meta["name"]] = run_sparsity_task(meta, seeds, os.path.join(args.out, "splits"))
        else:
            results[meta["name"]] = run_task(meta, seeds, os.path.join(args.out, "splits"), learners)
    report = {
        "started": started,
        "seeds": list(seeds),
        "machine": machine_info(),
        "vw_version": vw_version(),
        "protocol": "benchmarks/suite/PROTOCOL.md",
        "results": results,
    }
    if not args.sparsity:
        report["targets"] = targets(results)
    report["elapsed_seconds"] = time.perf_counter() - clock
    return publish(report, results_folder, stem)


def publish(report: dict, folder: str, stem: str = "suite") -> int:
    """Write STEM.{json,md,png} into ``folder`` and print the markdown."""
    sparse = stem == "suite_sparsity"
    markdown = render_sparsity(report) if sparse else render(report)
    write_report(folder, stem, report, markdown)
    try:
        (sparsity.plot_curves if sparse else plot)(
            report["results"] if sparse else report, os.path.join(folder, f"{stem}.png")
        )
    except ImportError:
        log("matplotlib is not installed: no plot (pip install '.[plot]')")
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
