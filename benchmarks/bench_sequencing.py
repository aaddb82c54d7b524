"""Hu et al.'s comparison of anytime feature-group sequencers, reproduced with the polybeam commands.

Part 1, timeliness (the paper's Tables 1-2): for each grouped dataset and
split, ``polybeam sequence`` orders the groups with every method on the
training file (ridge 1e-6 on the standardised problem, as the paper's small
lambdas) and ``polybeam timeliness`` measures all of them on the test file:
held-out explained variance against cumulative cost, alpha-timeliness up to
CS-G-OMP's alpha-stopping cost (alpha by the paper's plateau rule) and the
Oracle re-orderings of the CS-G-FR and CS-G-OMP curves. Datasets (group files
and costs: ``polybeam/datasets/groups/`` and ``polybeam/datasets/data/README.md``):

- synthetic: ``GroupedRegression()`` (40 groups of 5 correlated features,
  10 informative, 8 redundant proxies, log-uniform costs 1-20), 20k/10k rows;
- spam (13 word/char/capital groups), satellite by band (4) and by pixel (9),
  dna by position (60), each a regression on the +-1 label (class 1 against
  the rest for satellite and dna), 80/20 random splits.

Part 2, training time of CS-G-OMP against CS-G-FR (the paper's Figure 2) as
the number of groups grows, on the Gram statistics of synthetic problems with
5 features per group, in process (the sequencing alone, nothing else).

Part 3, D = 2000 features in J = 400 groups: the sequencing alone in process,
and whole ``polybeam sequence`` runs (read, statistics, sequencing, write).

Run: ``python benchmarks/bench_sequencing.py [--splits 3] [--quick]``.
Writes ``results/sequencing.{json,md}`` and ``results/sequencing.<dataset>.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from harness import machine_info, markdown_table, measured_run, write_report  # noqa: E402

from polybeam import datasets  # noqa: E402
from polybeam.datasets.grouped import GroupedRegression  # noqa: E402
from polybeam.selection.sequencing import METHODS, sequence  # noqa: E402

RESULTS = os.path.join(HERE, "results")
RIDGE = 1e-6
REAL = (("spam", "spam"), ("satellite_band", "satellite"), ("satellite_pixel", "satellite"), ("dna", "dna"))


def cli(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "polybeam.pipelines.cli", *arguments]


def last_json(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


def splits_of(name: str, dataset: str, split: int, folder: str) -> tuple[str, str, str]:
    """(train, test, groups) files of one split."""
    if name == "synthetic":
        paths = GroupedRegression(seed=split).write(folder, 20_000, 10_000, stem=f"synthetic{split}")
        return paths["train"], paths["test"], paths["groups"]
    train, test = datasets.write_split(
        dataset, os.path.join(folder, f"{name}{split}"), seed=split, binary=dataset != "spam"
    )
    return train, test, datasets.group_spec_path(name)


def timeliness_study(names: list[str], splits: int, folder: str, plot: bool) -> dict:
    results = {}
    for name in names:
        dataset = dict(REAL).get(name, name)
        runs = []
        for split in range(splits):
            train, test, groups = splits_of(name, dataset, split, folder)
            files, seconds = [], {}
            for method in METHODS:
                output = os.path.join(folder, f"{name}{split}.{method}.jsonl")
                run = measured_run(
                    cli(
                        "sequence",
                        "--input",
                        train,
                        "--groups",
                        groups,
                        "--method",
                        method,
                        "--ridge",
                        str(RIDGE),
                        "--output",
                        output,
                    ),
                    timeout=1800,
                ).check()
                seconds[method] = run.seconds
                files.append(output)
            arguments = ["timeliness", "--input", test, "--prefixes", ",".join(files)]
            if plot and split == 0:
                arguments += ["--plot", os.path.join(RESULTS, f"sequencing.{name}.png")]
            report = last_json(measured_run(cli(*arguments), timeout=1800).check().stdout)
            one = {
                "alpha": report["alpha"],
                "stopping_cost": report["stopping_cost"],
                "sequence_seconds": seconds,
                "methods": {
                    m: {k: v for k, v in entry.items() if k != "curve"} | {"curve": entry["curve"]}
                    for m, entry in report["methods"].items()
                },
            }
            runs.append(one)
            print(
                f"{name} split {split}: alpha {report['alpha']}, "
                + ", ".join(f"{m} {e['timeliness']:.4f}" for m, e in report["methods"].items()),
                flush=True,
            )
        results[name] = {"splits": runs, "mean": _means(runs)}
    return results


def _means(runs: list[dict]) -> dict:
    out = {}
    for method in METHODS:
        out[method] = float(np.mean([run["methods"][method]["timeliness"] for run in runs]))
    out["oracle cs-g-fr"] = float(np.mean([run["methods"]["cs-g-fr"]["oracle_timeliness"] for run in runs]))
    out["oracle cs-g-omp"] = float(np.mean([run["methods"]["cs-g-omp"]["oracle_timeliness"] for run in runs]))
    out["alpha"] = [run["alpha"] for run in runs]
    out["final"] = float(np.mean([run["methods"]["cs-g-omp"]["final_explained_variance"] for run in runs]))
    return out


def gram_problem(groups: int, seed: int = 0, rows: int = 6000) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    problem = GroupedRegression(
        groups=groups, group_size=5, informative=max(2, groups // 4), redundant=max(1, groups // 5), seed=seed
    )
    x, y = problem.generate(rows)
    x = (x - x.mean(0)) / x.std(0)
    y = (y - y.mean()) / y.std()
    return x.T @ x / rows, x.T @ y / rows, problem.group_of_column, problem.costs


def timing_study(group_counts: list[int]) -> list[dict]:
    rows = []
    for groups in group_counts:
        gram, b, group_of_column, costs = gram_problem(groups)
        entry = {"groups": groups, "features": len(b)}
        for method in ("cs-g-omp", "cs-g-fr", "doubling", "sparse"):
            best = np.inf
            for _ in range(2 if groups >= 200 else 3):
                started = time.perf_counter()
                result = sequence(gram, b, group_of_column, costs, method=method, ridge=RIDGE)
                best = min(best, time.perf_counter() - started)
            entry[method] = best
            assert len(result.steps) + len(result.skipped) == groups
        entry["fr_over_omp"] = entry["cs-g-fr"] / entry["cs-g-omp"]
        rows.append(entry)
        print(f"J={groups}: " + ", ".join(f"{k} {v:.3f}" for k, v in entry.items() if isinstance(v, float)), flush=True)
    return rows


def full_size_runs(folder: str, rows: int) -> dict:
    problem = GroupedRegression(groups=400, group_size=5, informative=40, redundant=40, seed=7)
    paths = problem.write(folder, rows, 1000, stem="d2000")
    out = {
        "features": problem.features,
        "groups": 400,
        "rows": rows,
        "file_megabytes": os.path.getsize(paths["train"]) / 2**20,
    }
    for method in ("cs-g-omp", "cs-g-fr"):
        output = os.path.join(folder, f"d2000.{method}.jsonl")
        run = measured_run(
            cli(
                "sequence",
                "--input",
                paths["train"],
                "--groups",
                paths["groups"],
                "--method",
                method,
                "--ridge",
                str(RIDGE),
                "--output",
                output,
            ),
            timeout=1800,
        ).check()
        report = last_json(run.stdout)
        out[method] = {
            "pipeline_seconds": run.seconds,
            "peak_rss_mb": run.peak_rss_bytes / 2**20,
            "sequenced": report["sequenced"],
            "skipped": len(report["skipped"]),
            "explained_variance": report["explained_variance"],
        }
        print(f"D=2000 pipeline {method}: {run.seconds:.1f} s", flush=True)
    return out


def markdown(report: dict) -> str:
    lines = [
        "# Anytime feature-group sequencing (Hu et al.)",
        "",
        f"`python benchmarks/bench_sequencing.py --splits {report['splits']}`; ridge {RIDGE}; "
        "alpha-timeliness on held-out data, alpha by the paper's plateau rule, stopping cost from CS-G-OMP's "
        "training curve; means over splits.",
        "",
    ]
    columns = list(METHODS) + ["oracle cs-g-fr", "oracle cs-g-omp"]
    table = []
    for name, result in report["timeliness"].items():
        mean = result["mean"]
        table.append(
            [name, ",".join(f"{a:g}" for a in mean["alpha"])]
            + [f"{mean[c]:.4f}" for c in columns]
            + [f"{mean['final']:.4f}"]
        )
    lines.append(markdown_table(["dataset", "alpha"] + columns + ["final EV"], table))
    lines += ["", "## Training time, CS-G-OMP against CS-G-FR (sequencing alone, 5 features per group)", ""]
    lines.append(
        markdown_table(
            ["groups", "features", "cs-g-omp s", "cs-g-fr s", "doubling s", "sparse s", "FR / OMP"],
            [
                [
                    r["groups"],
                    r["features"],
                    f"{r['cs-g-omp']:.3f}",
                    f"{r['cs-g-fr']:.3f}",
                    f"{r['doubling']:.3f}",
                    f"{r['sparse']:.3f}",
                    f"{r['fr_over_omp']:.1f}x",
                ]
                for r in report["timing"]
            ],
        )
    )
    full = report.get("full_size")
    if full:
        lines += [
            "",
            f"## D = {full['features']}, J = {full['groups']}: whole `polybeam sequence` runs "
            f"({full['rows']} rows, {full['file_megabytes']:.0f} MB LIBSVM)",
            "",
        ]
        lines.append(
            markdown_table(
                ["method", "pipeline s", "peak RSS MB", "sequenced", "skipped", "train EV"],
                [
                    [
                        m,
                        f"{full[m]['pipeline_seconds']:.1f}",
                        f"{full[m]['peak_rss_mb']:.0f}",
                        full[m]["sequenced"],
                        full[m]["skipped"],
                        f"{full[m]['explained_variance']:.4f}",
                    ]
                    for m in ("cs-g-omp", "cs-g-fr")
                ],
            )
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--splits", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one split, spam and synthetic, small timing study")
    parser.add_argument("--full-rows", type=int, default=5000, help="rows of the D=2000 file")
    args = parser.parse_args()
    names = ["synthetic", "spam"] if args.quick else ["synthetic"] + [name for name, _ in REAL]
    splits = 1 if args.quick else args.splits
    os.makedirs(RESULTS, exist_ok=True)
    report = {"machine": machine_info(), "splits": splits, "ridge": RIDGE}
    with tempfile.TemporaryDirectory() as folder:
        report["timeliness"] = timeliness_study(names, splits, folder, plot=True)
        report["timing"] = timing_study([25, 50, 100] if args.quick else [25, 50, 100, 200, 400])
        if not args.quick:
            report["full_size"] = full_size_runs(folder, args.full_rows)
    write_report(RESULTS, "sequencing", report, markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
