"""Apple's relative-error study (Agarwal et al., section 3.2, eq. 2) with VW --stage_poly in the same run.

For every binary and regression task at hand:

* ``spam`` (binary), ``letter-binary`` (A-M vs N-Z), ``satellite-binary``
  (class 1 vs the rest), ``dna-binary`` (class 1 vs the rest): the bundled
  datasets;
* ``synthetic`` (binary) and ``synthetic-regression``: the spine benchmark's
  ``PlantedPolynomial(seed=0)`` examples (about 49 binary features of 100,000
  per example); the regression target is the planted score plus its noise;

this script draws seeded random 80/20 splits (``--seeds`` splits of each
bundled dataset, averaged; one split of the synthetic tasks, whose 10,000 test
examples already pin the error down to about 0.5%),
trains one pass with squared loss and polybeam's normalised adaptive steps at
each learning rate of ``--rates``, keeps the rate with the smallest progressive
validation loss (the paper's protocol), and measures the test error (0-1 error
of the sign for binary tasks, mean squared error for regression) of:

* ``lin``, ``quad`` (every pair of base features), ``cubic`` (every pair and
  triple; 24 bits, as the paper found important), all computed on the fly;
* ``apple`` at alpha in {0.125, 0.25, 0.5, 0.75, 1} (6 epochs equally spaced
  over the known number of examples) and ``ssm`` (the SSM rule) at alpha = 1;
  for reference ``apple-stream`` at alpha 0.5 and 1: apple as a stream of
  unknown length runs it, expanding after 1000, 2000, 4000, ... examples, the
  schedule VW's ``--stage_poly`` follows;
* VW ``--stage_poly --sched_exponent alpha`` at the same alphas (and VW linear
  for reference), its learning rate picked the same way from its own progressive
  loss, on the same split files.

Relative error (eq. 2): ``(err - min(l, q, c)) / (max(l, q, c) - min(l, q, c))``
with l, q, c polybeam's lin, quad and cubic errors; VW's stage_poly is put on
the same scale. Relative time: training time over lin's (polybeam: the
learner's time on pre-parsed batches; VW: its whole training run over VW
linear's). Targets: apple (alpha = 1) relative error <= 0.5 on most tasks, and
apple's held-out error <= VW stage_poly's (same alpha) on at least as many tasks
as it loses.

Run: ``python benchmarks/bench_apple.py [--seeds 5] [--tasks spam,dna-binary]
[--synthetic-examples 50000] [--rates 0.125,0.25,0.5,1,2] [--results DIR] [--render]``.
Writes ``results/apple.json`` and ``results/apple.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from harness import libsvm_to_vw, load_average, machine_info, markdown_table, read_predictions, run_vw  # noqa: E402

from polybeam import datasets  # noqa: E402
from polybeam.datasets.synthetic import PlantedPolynomial  # noqa: E402
from polybeam.formats.libsvm import LibsvmFormat  # noqa: E402
from polybeam.learners.batch import ExampleBatch  # noqa: E402
from polybeam.learners.config import LearnerConfig  # noqa: E402
from polybeam.learners.polynomial import make_learner  # noqa: E402

BITS = 18
CUBIC_BITS = 24
ALPHAS = (0.125, 0.25, 0.5, 0.75, 1.0)
RATES = (0.125, 0.25, 0.5, 1.0, 2.0)
# Expanded features per learner call: cubic rows can carry tens of thousands of products.
CHUNK_FEATURES = 2_000_000


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


@dataclasses.dataclass(frozen=True)
class Task:
    name: str
    kind: str  # "binary" or "regression"
    dataset: str | None = None  # a bundled dataset, else the synthetic task


TASKS = (
    Task("spam", "binary", "spam"),
    Task("letter-binary", "binary", "letter"),
    Task("satellite-binary", "binary", "satellite"),
    Task("dna-binary", "binary", "dna"),
    Task("synthetic", "binary"),
    Task("synthetic-regression", "regression"),
)


@dataclasses.dataclass(frozen=True)
class Method:
    key: str
    settings: dict
    bits: int = BITS
    vw_alpha: float | None = None  # for apple: the VW stage_poly run it is compared with
    stream: bool = False  # apple without the example count: expansions after 1000, 2000, 4000, ... (VW's schedule)

    def config(self, rate: float) -> LearnerConfig:
        # The paper's learner (and VW's) learns on the raw features (no centring) and keeps its
        # products (no guard).
        # VW's update on both sides: raw labels (scale_labels, polybeam's default for squared loss since issue 22,
        # is off), uncentred features, no guard.
        return LearnerConfig(
            loss="squared",
            step="adaptive",
            learning_rate=rate,
            bits=self.bits,
            center=False,
            scale_labels=False,
            apple_guard=False,
            **self.settings,
        )


METHODS = (
    Method("lin", {}),
    Method("quad", {"expand": "quadratic"}),
    Method("cubic", {"expand": "cubic"}, bits=CUBIC_BITS),
    *(Method(f"apple({alpha:g})", {"expand": "apple", "alpha": alpha}, vw_alpha=alpha) for alpha in ALPHAS),
    Method("ssm(1)", {"expand": "apple", "alpha": 1.0, "expand_rule": "ssm"}),
    *(Method(f"apple-stream({alpha:g})", {"expand": "apple", "alpha": alpha}, stream=True) for alpha in (0.5, 1.0)),
)


# -- data ---------------------------------------------------------------------------------


def write_libsvm(path: str, labels: np.ndarray, batch: ExampleBatch) -> str:
    with open(path, "w") as handle:
        for row in range(len(batch)):
            slots, values = batch.row(row)
            features = " ".join(f"{s}:{v:.10g}" for s, v in zip(slots.tolist(), values.tolist()))
            handle.write(f"{labels[row]:.10g} {features}\n")
    return path


def split_files(task: Task, seed: int, folder: str, synthetic_examples: int) -> tuple[str, str]:
    """The task's seeded 80/20 split as LIBSVM files (the same files feed polybeam and VW)."""
    if task.dataset is not None:
        return datasets.write_split(task.dataset, os.path.join(folder, f"{task.name}-{seed}"), seed=seed, binary=True)
    examples = PlantedPolynomial(seed=0).generate(synthetic_examples)
    batch = examples.to_batch(BITS)
    labels = examples.labels
    if task.kind == "regression":
        noise = PlantedPolynomial(seed=0).planted.noise
        labels = examples.scores + noise * np.random.default_rng(1000 + seed).standard_normal(len(examples))
    order = np.random.default_rng(seed).permutation(len(batch))
    n_test = int(round(0.2 * len(batch)))
    os.makedirs(os.path.join(folder, f"{task.name}-{seed}"), exist_ok=True)
    paths = []
    for part, rows in (("train", np.sort(order[n_test:])), ("test", np.sort(order[:n_test]))):
        path = os.path.join(folder, f"{task.name}-{seed}", f"{task.name}.{part}.libsvm")
        paths.append(write_libsvm(path, labels[rows], batch.take(rows)))
    return paths[0], paths[1]


def parse(path: str, bits: int) -> ExampleBatch:
    with open(path, "rb") as handle:
        parsed = LibsvmFormat(bits=bits).parse(handle.read(), source=path)
    if parsed.dead_letters:
        raise ValueError(f"{path}: unreadable rows {parsed.dead_letters[:3]}")
    return parsed.batch


def chunks(batch: ExampleBatch, method: Method) -> list[ExampleBatch]:
    """``batch`` in learner calls of a bounded expanded size (rows in order)."""
    per_row = max(1.0, batch.nnz / max(len(batch), 1))
    expanded = {"quadratic": per_row**2 / 2, "cubic": per_row**3 / 6}.get(method.settings.get("expand"), per_row * 8)
    rows = int(np.clip(CHUNK_FEATURES / max(expanded, 1.0), 1, 4096))
    return [batch.take(np.arange(start, min(start + rows, len(batch)))) for start in range(0, len(batch), rows)]


def test_error(task: Task, predictions: np.ndarray, labels: np.ndarray) -> float:
    if task.kind == "regression":
        return float(np.mean((predictions - labels) ** 2))
    return float(np.mean(np.where(predictions > 0, 1.0, -1.0) != labels))


# -- polybeam -----------------------------------------------------------------------------


def run_polybeam(task: Task, method: Method, train: ExampleBatch, test: ExampleBatch, rates) -> dict:
    """Every rate; the one with the best progressive loss is tested."""
    train, test = (dataclasses.replace(b, bits=method.bits) for b in (train, test))
    parts = chunks(train, method)
    runs, best = [], None
    for rate in rates:
        learner = make_learner(method.config(rate), total=None if method.stream else len(train))
        started = time.perf_counter()
        for part in parts:
            learner.learn(part)
        seconds = time.perf_counter() - started
        run = {"rate": rate, "progressive_loss": learner.progressive_loss, "seconds": seconds}
        runs.append(run)
        if best is None or run["progressive_loss"] < best[0]["progressive_loss"]:
            best = (run, learner)
    run, learner = best
    model = learner.to_model()
    error = test_error(task, model.predict(test), test.labels)
    expanded_nnz = model.expansion.expand(test).nnz if model.expansion is not None else test.nnz
    return {
        "rate": run["rate"],
        "progressive_loss": run["progressive_loss"],
        "seconds": run["seconds"],
        "error": error,
        "features_per_example": expanded_nnz / max(len(test), 1),
        "parents": len(getattr(learner, "parents", [])) if method.settings.get("expand") == "apple" else None,
        "nonzero_weights": model.nonzero,
        "runs": runs,
    }


# -- VW -----------------------------------------------------------------------------------


def run_vw_method(task: Task, alpha: float | None, train_vw: str, test_vw: str, folder: str, rates) -> dict:
    """VW linear (alpha None) or --stage_poly --sched_exponent alpha; rate by progressive loss."""
    extra = [] if alpha is None else ["--stage_poly", "--sched_exponent", f"{alpha:g}"]
    runs, best = [], None
    tag = "lin" if alpha is None else f"poly{alpha:g}"
    for rate in rates:
        model = os.path.join(folder, f"vw-{tag}-{rate:g}.model")
        vw = run_vw(
            "-d", train_vw, "-b", str(BITS), "--loss_function", "squared", "-l", f"{rate:g}", "-f", model, *extra
        )
        run = {"rate": rate, "progressive_loss": vw.average_loss, "seconds": vw.run.seconds, "model": model}
        runs.append(run)
        if best is None or run["progressive_loss"] < best["progressive_loss"]:
            best = run
    predictions_path = os.path.join(folder, f"vw-{tag}.predictions")
    run_vw("-t", "-i", best["model"], "-d", test_vw, "-p", predictions_path, "--quiet")
    predictions = np.array(read_predictions(predictions_path))
    labels = np.array([float(line.split(" ", 1)[0]) for line in open(test_vw)])
    return {
        "rate": best["rate"],
        "progressive_loss": best["progressive_loss"],
        "seconds": best["seconds"],
        "error": test_error(task, predictions, labels),
        "runs": [{k: v for k, v in run.items() if k != "model"} for run in runs],
    }


# -- the study ----------------------------------------------------------------------------


def run_task(task: Task, seed: int, folder: str, args) -> dict:
    train_path, test_path = split_files(task, seed, folder, args.synthetic_examples)
    train, test = parse(train_path, BITS), parse(test_path, BITS)
    result = {
        "train_examples": len(train),
        "test_examples": len(test),
        "base_features_per_example": train.nnz / len(train),
        "polybeam": {},
        "vw": {},
    }
    for method in METHODS:
        if args.methods and method.key not in args.methods:
            continue
        result["polybeam"][method.key] = run_polybeam(task, method, train, test, args.rates)
        entry = result["polybeam"][method.key]
        log(
            f"{task.name} seed {seed} polybeam {method.key}: error {entry['error']:.4f} (rate {entry['rate']:g}, "
            f"progressive {entry['progressive_loss']:.4f}, {entry['seconds']:.2f} s, "
            f"{entry['features_per_example']:.0f} features/example)"
        )
    if not args.no_vw:
        train_vw = libsvm_to_vw(train_path, train_path[: -len(".libsvm")] + ".vw")
        test_vw = libsvm_to_vw(test_path, test_path[: -len(".libsvm")] + ".vw")
        for alpha in (None, *ALPHAS):
            key = "lin" if alpha is None else f"stage_poly({alpha:g})"
            result["vw"][key] = run_vw_method(task, alpha, train_vw, test_vw, os.path.dirname(train_path), args.rates)
            entry = result["vw"][key]
            log(
                f"{task.name} seed {seed} VW {key}: error {entry['error']:.4f} (rate {entry['rate']:g}, "
                f"progressive {entry['progressive_loss']:.4f}, {entry['seconds']:.2f} s)"
            )
    return result


def summarise(report: dict) -> dict:
    """Mean errors and times over seeds; relative errors and times (eq. 2)."""
    summary = {}
    for task_name, seeds in report["tasks"].items():
        rows = {}
        for system in ("polybeam", "vw"):
            keys = seeds[0][system].keys()
            for key in keys:
                entries = [seed[system][key] for seed in seeds]
                rows[(system, key)] = {
                    "error": float(np.mean([e["error"] for e in entries])),
                    "seconds": float(np.mean([e["seconds"] for e in entries])),
                    "progressive_loss": float(np.mean([e["progressive_loss"] for e in entries])),
                    "rate": entries[0]["rate"] if len(entries) == 1 else [e["rate"] for e in entries],
                    "features_per_example": entries[0].get("features_per_example"),
                    "parents": entries[0].get("parents"),
                }
        baselines = [rows[("polybeam", key)]["error"] for key in ("lin", "quad", "cubic") if ("polybeam", key) in rows]
        low, high = (min(baselines), max(baselines)) if len(baselines) == 3 else (None, None)
        for (system, _key), row in rows.items():
            if low is not None and high > low:
                row["relative_error"] = (row["error"] - low) / (high - low)
            else:
                row["relative_error"] = None
            lin = rows.get((system, "lin"))
            row["relative_time"] = row["seconds"] / lin["seconds"] if lin and lin["seconds"] > 0 else None
        summary[task_name] = {f"{system}:{key}": row for (system, key), row in rows.items()}
    return summary


def targets(summary: dict) -> dict:
    """apple(1) relative error <= 0.5 on most tasks; apple vs VW stage_poly wins and losses per alpha."""
    under_half = [
        task
        for task, rows in summary.items()
        if (rows.get("polybeam:apple(1)") or {}).get("relative_error") is not None
        and rows["polybeam:apple(1)"]["relative_error"] <= 0.5
    ]
    rated = [
        task
        for task, rows in summary.items()
        if (rows.get("polybeam:apple(1)") or {}).get("relative_error") is not None
    ]
    versus = {}
    for alpha in ALPHAS:
        wins = losses = ties = 0
        for rows in summary.values():
            ours, theirs = rows.get(f"polybeam:apple({alpha:g})"), rows.get(f"vw:stage_poly({alpha:g})")
            if ours is None or theirs is None:
                continue
            if ours["error"] < theirs["error"]:
                wins += 1
            elif ours["error"] > theirs["error"]:
                losses += 1
            else:
                ties += 1
        versus[f"{alpha:g}"] = {"wins": wins, "losses": losses, "ties": ties}
    return {
        "apple1_relative_error_at_most_half": {
            "tasks": under_half,
            "count": len(under_half),
            "of": len(rated),
            "met": len(under_half) > len(rated) / 2,
        },
        "apple_vs_vw_stage_poly": versus,
        # None when VW was not run (--no-vw): nothing was compared.
        "apple1_vs_vw_met": versus["1"]["wins"] >= versus["1"]["losses"] if sum(versus["1"].values()) else None,
    }


def fmt(value, digits=3) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def render(report: dict) -> str:
    summary, goal = report["summary"], report["targets"]
    lines = [
        "# Apple: relative error and time (Agarwal et al., eq. 2), VW --stage_poly in the same run",
        "",
        f"Measured {report['started']} on {report['machine'].get('cpus')} CPUs ({report['machine'].get('python')}), "
        f"VW {report['machine'].get('vowpalwabbit')}; {report['seeds']} random 80/20 splits of each bundled dataset "
        "(errors and times are their means), one of each synthetic task; one pass, "
        f"squared loss, normalised adaptive steps (VW's defaults on both sides), learning rate picked from "
        f"{', '.join(f'{r:g}' for r in report['rates'])} by progressive validation loss; 18 bits (cubic 24). "
        "Error: 0-1 error of the sign on the test set (binary), mean squared error (regression). "
        "Relative error: eq. 2 against polybeam's lin/quad/cubic. Relative time: over the same system's linear run "
        "(polybeam: learner on pre-parsed batches; VW: whole training run, start-up included).",
        "",
        "## Targets",
        "",
        f"- apple (alpha = 1) relative error <= 0.5: {goal['apple1_relative_error_at_most_half']['count']} of "
        f"{goal['apple1_relative_error_at_most_half']['of']} tasks "
        f"({', '.join(goal['apple1_relative_error_at_most_half']['tasks'])}): "
        f"**{'met' if goal['apple1_relative_error_at_most_half']['met'] else 'MISSED'}**",
        "- apple vs VW --stage_poly at the same alpha (held-out error; wins / losses / ties): "
        + "; ".join(
            f"alpha {a}: {v['wins']} / {v['losses']} / {v['ties']}" for a, v in goal["apple_vs_vw_stage_poly"].items()
        )
        + f": **{ {True: 'met', False: 'MISSED', None: 'not measured'}[goal['apple1_vs_vw_met']] }** at alpha = 1",
        "",
        "## Per task",
    ]
    header = [
        "method",
        "test error",
        "relative error",
        "relative time",
        "seconds",
        "rate",
        "progressive loss",
        "features / example",
        "parents",
    ]
    for task_name, rows in summary.items():
        info = report["tasks"][task_name][0]
        lines += [
            "",
            f"### {task_name} ({info['train_examples']} train / {info['test_examples']} test examples, "
            f"{info['base_features_per_example']:.1f} base features per example)",
            "",
        ]
        table = []
        for key, row in rows.items():
            table.append(
                [
                    key.replace("polybeam:", "polybeam ").replace("vw:", "VW "),
                    fmt(row["error"], 4),
                    fmt(row["relative_error"]),
                    fmt(row["relative_time"], 2),
                    fmt(row["seconds"], 3),
                    fmt(row["rate"]),
                    fmt(row["progressive_loss"], 4),
                    fmt(row["features_per_example"], 1) if row["features_per_example"] else "",
                    fmt(row["parents"]),
                ]
            )
        lines.append(markdown_table(header, table))
    lines += ["", "## Relative error, all tasks", ""]
    keys = [key for key in next(iter(summary.values())) if key != "vw:lin"]
    table = [[key] + [fmt(rows.get(key, {}).get("relative_error"), 2) for rows in summary.values()] for key in keys]
    lines.append(markdown_table(["method", *summary], table))
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=5, help="random splits of each bundled dataset (default: 5)")
    parser.add_argument("--tasks", default=",".join(task.name for task in TASKS))
    parser.add_argument("--methods", default="", help="comma-separated polybeam methods (default: all)")
    parser.add_argument("--rates", default=",".join(f"{r:g}" for r in RATES))
    parser.add_argument("--synthetic-examples", type=int, default=50_000)
    parser.add_argument("--results", default=os.path.join(HERE, "results"))
    parser.add_argument("--out", default=None, help="scratch folder (default: a temporary one)")
    parser.add_argument("--no-vw", action="store_true")
    parser.add_argument("--render", action="store_true", help="only rewrite apple.md from apple.json")
    args = parser.parse_args(argv)
    args.rates = [float(r) for r in args.rates.split(",")]
    args.methods = [m for m in args.methods.split(",") if m]
    json_path, md_path = os.path.join(args.results, "apple.json"), os.path.join(args.results, "apple.md")
    if args.render:
        with open(json_path) as handle:
            report = json.load(handle)
    else:
        chosen = [task for task in TASKS if task.name in args.tasks.split(",")]
        report = {
            "started": time.strftime("%Y-%m-%d %H:%M:%S"),
            "machine": machine_info(),
            "load_average_start": load_average(),
            "seeds": args.seeds,
            "rates": args.rates,
            "tasks": {},
        }
        with tempfile.TemporaryDirectory() as scratch:
            folder = args.out or scratch
            for task in chosen:
                seeds = args.seeds if task.dataset is not None else 1
                report["tasks"][task.name] = [run_task(task, seed, folder, args) for seed in range(seeds)]
        report["load_average_end"] = load_average()
        report["summary"] = summarise(report)
        report["targets"] = targets(report["summary"])
        os.makedirs(args.results, exist_ok=True)
        with open(json_path, "w") as handle:
            json.dump(report, handle, indent=1, default=str)
    with open(md_path, "w") as handle:
        handle.write(render(report))
    print(json.dumps(report["targets"]))
    return report


if __name__ == "__main__":
    main()
