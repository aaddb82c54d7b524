"""Greedy step averaging (GSA) against tuned SGD and AdaGrad: the GSA paper's comparison on the bundled data.

Zhang, Yao and Tian ("Greedy Step Averaging: a parameter-free stochastic
optimization method") compare GSA, which has no learning rate, with SGD at
rates 0.001-5 (and other tuned methods) and report held-out log loss and
precision after 1, 2 and the last pass (their appendix tables). This script
repeats that comparison in one run on polybeam's bundled data:

* tasks: spam (logistic), letter A-M vs N-Z (logistic), letter (softmax, 26
  classes), satellite (softmax, 6 classes), dna (softmax, 3 classes);
* splits: ``--seeds`` random 80/20 splits (``polybeam.datasets.write_split``
  with ``seed=0..seeds-1``, as the paper's "randomly take 80% as training set");
  each training set is learned in the bundled files' (pre-shuffled) order,
  the same order every pass, and evaluated on its 20% after every pass;
* features, every comparison run on each: ``raw`` (the bundled values as they
  are), ``maxabs`` (each feature divided by its largest |x| on the training
  split, so training values lie in [-1, 1]; test values are scaled with the
  same factors) and, with ``--scalings raw,maxabs,minmax``, ``minmax`` (each
  feature mapped linearly from its training [min, max], zeros included, to
  [-1, 1], which is what LIBSVM's ``svm-scale`` does to make the ``.scale``
  files the paper used; it makes the data dense);
* methods: GSA as polybeam runs it by default (features normalised online by
  their largest |x|, safe updates for logistic loss), the paper's GSA (plain
  steps on the features as given: ``normalized=False, safe_updates=False``),
  for the logistic tasks also the exact greedy step of the paper's section 3.2
  (``gsa_exact=True``) in both forms; SGD (``step="constant",
  safe_updates=False``) at the paper's rates; plain AdaGrad (``step=
  "adaptive", normalized=False, safe_updates=False``) and polybeam's default
  adaptive step (VW's normalised AdaGrad with safe updates) at a few rates.

The target checked: GSA's mean held-out accuracy within 1% (absolute) of the
best tuned SGD's (the rate with the best mean accuracy over the splits, chosen
per pass) after 1, 2 and 5 passes on every task. It writes
``results/gsa.json`` (every run), ``results/gsa.md`` (protocol, targets,
paper-style tables) and ``results/gsa.logloss.png`` / ``gsa.accuracy.png``
(held-out loss and accuracy per pass).

Run: ``python benchmarks/bench_gsa.py [--seeds 10] [--passes 5] [--scalings raw,maxabs]
[--tasks spam,dna] [--results DIR] [--render]``
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import math
import os
import re
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from harness import load_average, machine_info, markdown_table  # noqa: E402

from polybeam import datasets  # noqa: E402
from polybeam.formats.libsvm import LibsvmFormat  # noqa: E402
from polybeam.learners.batch import ExampleBatch  # noqa: E402
from polybeam.learners.config import LearnerConfig  # noqa: E402
from polybeam.learners.evaluation import Evaluation  # noqa: E402
from polybeam.learners.greedy import greedy_step, softmax_greedy_step  # noqa: E402
from polybeam.learners.linear import LinearLearner  # noqa: E402
from polybeam.learners.losses import LOGISTIC  # noqa: E402

# The bundled data have at most 180 features, numbered from 1, and a LIBSVM
# index below 2**bits is its own slot: 10 bits keep every feature apart.
BITS = 10
SGD_RATES = (0.001, 0.01, 0.1, 1.0, 5.0)
ADAGRAD_RATES = (0.01, 0.1, 0.5, 1.0)
REPORTED_PASSES = (1, 2, 5)
ACCURACY_GAP = 0.01
SCALINGS = ("raw", "maxabs", "minmax")
# The comparison the target is judged on: SGD's rate grid is only meaningful
# on features of unit scale (the paper's .scale data); see ``FAIR_REASON``.
FAIR_SCALING = "maxabs"
FAIR_REASON = (
    "SGD's rate grid (0.001-5) is only meaningful on features of about unit scale, the paper's `.scale` "
    "data. On the raw features every rate diverges on spam (capital-run features up to 15841) and "
    "satellite (pixel values up to 157), so the 'best tuned SGD' there is not tuned and GSA wins by "
    "default. Max-abs scaling from the training split gives SGD its best case; polybeam's default GSA "
    "normalises features online by the same largest |x|, so it learns the same model from raw and "
    "scaled features and needs neither tuning nor a scaling pass."
)
FAMILIES = ("GSA", "SGD", "AdaGrad", "adaptive (VW)")
# Diagnostic row (fair scaling only): SGD at the rate GSA found, not a tuned method.
SGD_AT_GSA_STEP = "diagnostic-sgd-at-gsa-step"


@dataclasses.dataclass(frozen=True)
class Task:
    """One learning problem on a bundled dataset."""

    name: str
    dataset: str
    loss: str
    binary: bool = False
    classes: int = 0

    @property
    def settings(self) -> dict:
        return {"loss": self.loss, "bits": BITS, **({"classes": self.classes} if self.classes else {})}


TASKS = (
    Task("spam", "spam", "logistic"),
    Task("letter-binary", "letter", "logistic", binary=True),
    Task("letter", "letter", "softmax", classes=26),
    Task("satellite", "satellite", "softmax", classes=6),
    Task("dna", "dna", "softmax", classes=3),
)


@dataclasses.dataclass(frozen=True)
class Method:
    """A learner configuration of the comparison: its family, table label and LearnerConfig fields."""

    key: str
    family: str
    label: str
    settings: dict

    def config(self, task: Task) -> LearnerConfig:
        return LearnerConfig(**task.settings, center=False, **self.settings)  # the paper's learners: raw features

    @property
    def is_gsa(self) -> bool:
        return self.family == "GSA"


def methods(task: Task) -> list[Method]:
    """The paper's line-up for ``task``: GSA variants, SGD, AdaGrad and polybeam's adaptive default."""
    gsa = [
        Method("gsa", "GSA", "GSA (online-normalised; polybeam's default for squared and hinge loss)", {"step": "gsa"}),
        Method(
            "gsa-paper",
            "GSA",
            "GSA, paper (plain steps on the given features)",
            {"step": "gsa", "normalized": False, "safe_updates": False},
        ),
    ]
    if task.loss == "logistic":
        gsa += [
            Method(
                "gsa-exact", "GSA", "GSA exact step (sec. 3.2), online-normalised", {"step": "gsa", "gsa_exact": True}
            ),
            Method(
                "gsa-exact-paper",
                "GSA",
                "GSA exact step (sec. 3.2), paper",
                {"step": "gsa", "gsa_exact": True, "normalized": False, "safe_updates": False},
            ),
        ]
    sgd = [
        Method(
            f"sgd-{rate:g}", "SGD", f"r={rate:g}", {"step": "constant", "learning_rate": rate, "safe_updates": False}
        )
        for rate in SGD_RATES
    ]
    adagrad = [
        Method(
            f"adagrad-{rate:g}",
            "AdaGrad",
            f"eta={rate:g}",
            {"step": "adaptive", "learning_rate": rate, "normalized": False, "safe_updates": False},
        )
        for rate in ADAGRAD_RATES
    ]
    vw = [
        Method(f"vw-adaptive-{rate:g}", "adaptive (VW)", f"eta={rate:g}", {"step": "adaptive", "learning_rate": rate})
        for rate in ADAGRAD_RATES
    ]
    return gsa + sgd + adagrad + vw


# -- data ---------------------------------------------------------------------------------


def load_split(task: Task, seed: int, folder: str) -> tuple[ExampleBatch, ExampleBatch]:
    """The seeded 80/20 split of ``task``'s dataset, written as LIBSVM files and parsed back."""
    train_path, test_path = datasets.write_split(
        task.dataset, os.path.join(folder, f"{task.name}-{seed}"), seed=seed, binary=task.binary
    )
    parser = LibsvmFormat(bits=BITS)
    batches = []
    for path in (train_path, test_path):
        with open(path, "rb") as handle:
            parsed = parser.parse(handle.read(), source=path)
        if parsed.dead_letters:
            raise ValueError(f"{path}: unreadable rows {parsed.dead_letters[:3]}")
        batches.append(parsed.batch)
    return batches[0], batches[1]


def scale_features(train: ExampleBatch, test: ExampleBatch, scaling: str) -> tuple[ExampleBatch, ExampleBatch]:
    """Both batches with features scaled by statistics of the training batch (see the module docstring)."""
    if scaling == "raw":
        return train, test
    slots = 1 << train.bits
    if scaling == "maxabs":
        largest = np.zeros(slots)
        np.maximum.at(largest, train.indices, np.abs(train.values))

        def scaled(batch: ExampleBatch) -> ExampleBatch:
            divisor = largest[batch.indices]
            # A feature never seen in training has no weight to scale for.
            return dataclasses.replace(batch, values=batch.values / np.where(divisor > 0, divisor, 1.0))

        return scaled(train), scaled(test)
    if scaling == "minmax":
        matrix = train.to_csr()
        seen = np.flatnonzero(matrix.getnnz(axis=0))
        dense = matrix[:, seen].toarray()
        low, high = dense.min(axis=0), dense.max(axis=0)
        varies = high > low  # svm-scale drops constant features
        seen, low, high = seen[varies], low[varies], high[varies]

        def scaled(batch: ExampleBatch) -> ExampleBatch:
            from scipy import sparse

            values = batch.to_csr()[:, seen].toarray()
            values = 2.0 * (values - low) / (high - low) - 1.0
            placed = sparse.csr_matrix(values)  # exact zeros stay implicit
            placed = sparse.csr_matrix((placed.data, seen[placed.indices], placed.indptr), shape=(len(batch), slots))
            return ExampleBatch.from_slot_matrix(placed, batch.labels, bits=batch.bits, weights=batch.weights)

        return scaled(train), scaled(test)
    raise ValueError(f"unknown scaling {scaling!r}; choose from {', '.join(SCALINGS)}")


def mean_squared_norm(batch: ExampleBatch) -> float:
    """Mean x . x over examples, the bias (value 1) included: what the greedy steps divide by."""
    rows = np.repeat(np.arange(len(batch)), np.diff(batch.indptr))
    return float(np.mean(np.bincount(rows, batch.values**2, len(batch)) + 1.0))


# -- learning -----------------------------------------------------------------------------


def learning_curve(config: LearnerConfig, train: ExampleBatch, test: ExampleBatch, passes: int) -> dict:
    """Held-out loss, accuracy (and AUC) after each of ``passes`` passes, and GSA's mean greedy step then."""
    learner = LinearLearner(config)
    curve: dict[str, list] = {"loss": [], "accuracy": [], "auc": [], "greedy_step": []}
    for pass_number in range(passes):
        if pass_number:
            learner.start_pass()
        learner.learn(train)
        result = Evaluation.of(learner.to_model(), [test]).result()
        curve["loss"].append(float(result["loss"]))
        curve["accuracy"].append(1.0 - float(result["error"]))
        curve["auc"].append(result["auc"])
        curve["greedy_step"].append(learner.greedy_step)
    return {metric: values for metric, values in curve.items() if any(v is not None for v in values)}


def run_benchmark(tasks, seeds: int, passes: int, scalings) -> dict:
    """Every method on every task, split and scaling; curves per seed under runs[task][scaling][method]."""
    runs: dict = {}
    norms: dict = {}
    seconds: dict = {}
    with tempfile.TemporaryDirectory() as scratch:
        for task in tasks:
            started = time.perf_counter()
            runs[task.name] = {scaling: {m.key: [] for m in methods(task)} for scaling in scalings}
            norms[task.name] = {scaling: [] for scaling in scalings}
            for seed in range(seeds):
                train_raw, test_raw = load_split(task, seed, scratch)
                for scaling in scalings:
                    train, test = scale_features(train_raw, test_raw, scaling)
                    norms[task.name][scaling].append(mean_squared_norm(train))
                    for method in methods(task):
                        runs[task.name][scaling][method.key].append(
                            learning_curve(method.config(task), train, test, passes)
                        )
                    if scaling == FAIR_SCALING:
                        # Plain SGD at the paper's GSA's mean step after pass 1 (same units: plain steps
                        # on these features): if it matches GSA, GSA's shortfall is the size of its step.
                        rate = runs[task.name][scaling]["gsa-paper"][-1]["greedy_step"][0]
                        config = LearnerConfig(
                            **task.settings, step="constant", learning_rate=rate, safe_updates=False, center=False
                        )
                        runs[task.name][scaling].setdefault(SGD_AT_GSA_STEP, []).append(
                            learning_curve(config, train, test, passes) | {"learning_rate": rate}
                        )
            seconds[task.name] = time.perf_counter() - started
            print(f"{task.name}: {seeds} splits x {len(scalings)} scalings in {seconds[task.name]:.1f} s", flush=True)
    return {"runs": runs, "mean_squared_norm": norms, "seconds": seconds}


# -- summaries, targets -------------------------------------------------------------------


def _mean(values) -> float | None:
    values = [np.nan if v is None else v for v in values]
    if not values:
        return None
    with np.errstate(invalid="ignore", over="ignore"):
        mean = float(np.mean(values))
    return None if math.isnan(mean) else mean


def summarise(runs: dict) -> dict:
    """Means (and the accuracy's standard deviation) over splits, per pass: summary[task][scaling][method]."""
    summary: dict = {}
    for task, by_scaling in runs.items():
        summary[task] = {}
        for scaling, by_method in by_scaling.items():
            summary[task][scaling] = {}
            for key, curves in by_method.items():
                passes = len(curves[0]["loss"])
                entry = {}
                for metric in ("loss", "accuracy", "auc", "greedy_step"):
                    # AUC only for binary tasks, greedy steps only for GSA.
                    entry[metric] = [_mean([c[metric][p] for c in curves if metric in c]) for p in range(passes)]
                entry["accuracy_std"] = [float(np.std([c["accuracy"][p] for c in curves])) for p in range(passes)]
                if "learning_rate" in curves[0]:
                    entry["learning_rate"] = _mean([c["learning_rate"] for c in curves])
                summary[task][scaling][key] = entry
    return summary


def best_of(summary_row: dict, keys, metric: str, pass_index: int) -> tuple[str, float] | None:
    """The method among ``keys`` with the best mean ``metric`` after pass ``pass_index`` (0-based)."""
    candidates = [(key, summary_row[key][metric][pass_index]) for key in keys]
    candidates = [(key, value) for key, value in candidates if value is not None and math.isfinite(value)]
    if not candidates:
        return None
    pick = min if metric == "loss" else max
    return pick(candidates, key=lambda item: item[1])


def paired_gap_error(runs_row: dict, best_key: str, gsa_key: str, pass_index: int) -> float:
    """Standard error of the per-split accuracy gap best SGD - GSA (the splits are shared)."""
    gaps = np.array(
        [b["accuracy"][pass_index] - g["accuracy"][pass_index] for b, g in zip(runs_row[best_key], runs_row[gsa_key])]
    )
    return float(gaps.std(ddof=1) / math.sqrt(len(gaps))) if len(gaps) > 1 else float("nan")


def targets_of(report: dict, gsa_keys=("gsa", "gsa-paper")) -> list[dict]:
    """GSA's accuracy within ACCURACY_GAP of the best SGD rate's, per task, scaling, GSA variant and pass."""
    summary, runs = report["summary"], report["runs"]
    rows = []
    for task in report["tasks"]:
        name = task["name"]
        for scaling in report["scalings"]:
            row = summary[name][scaling]
            sgd = [key for key in row if key.startswith("sgd-")]
            for gsa_key in gsa_keys:
                for passes in report["reported_passes"]:
                    index = passes - 1
                    best_key, best = best_of(row, sgd, "accuracy", index)
                    accuracy = row[gsa_key]["accuracy"][index]
                    gap = best - accuracy
                    rows.append(
                        {
                            "task": name,
                            "scaling": scaling,
                            "gsa": gsa_key,
                            "passes": passes,
                            "best_sgd": best_key,
                            "best_sgd_accuracy": best,
                            "gsa_accuracy": accuracy,
                            "gap": gap,
                            "gap_standard_error": paired_gap_error(runs[name][scaling], best_key, gsa_key, index),
                            "met": bool(gap <= ACCURACY_GAP),
                            "fair": scaling == FAIR_SCALING,
                        }
                    )
    return rows


def greedy_step_shape(target: float = 0.95) -> dict:
    """Eq. 16's and eq. 10's greedy steps against the exact one, for one example with x . x = 1.

    At a score of 0 (p = 0.5) the exact logistic step (sec. 3.2) is logit(p_hat) / 0.5; the linearised
    eq. 16 assumes a small step and gives a fraction of it; softmax's eq. 10 for K uniform classes.
    """
    shape = {
        "logistic_eq16_at_p_half": float(greedy_step(LOGISTIC, 0.0, 1.0, 1.0, target, False)),
        "logistic_exact_at_p_half": float(greedy_step(LOGISTIC, 0.0, 1.0, 1.0, target, True)),
    }
    for classes in (3, 6, 26):
        shape[f"softmax_eq10_uniform_{classes}"] = float(
            softmax_greedy_step(np.full(classes, 1.0 / classes), 0, 1.0, target)
        )
        # From uniform probabilities a step eta moves the true class's score ahead of every other by eta x.x.
        shape[f"softmax_exact_uniform_{classes}"] = math.log(target * (classes - 1) / (1.0 - target))
    return shape


# -- report -------------------------------------------------------------------------------


def fmt(value, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a" if value is None else str(value)
    if abs(value) >= 1000:
        return f"{value:.3g}"
    return f"{value:.{digits}f}"


def method_table(report: dict, task: Task, scaling: str) -> str:
    """The paper's appendix table: loss and accuracy (and AUC) after each reported pass, best of each family bold."""
    row = report["summary"][task.name][scaling]
    passes = [p for p in report["reported_passes"]]
    metrics = ["loss", "accuracy"] + (["auc"] if task.loss == "logistic" else [])
    header = (
        ["family", "method"] + [f"{metric} {p}" for metric in metrics for p in passes] + ["mean greedy step 1 / last"]
    )
    table_methods = methods(task)
    bold: set = set()
    best_overall = ["best", ""]
    for metric in metrics:
        for p in passes:
            for family in FAMILIES:
                keys = [m.key for m in table_methods if m.family == family]
                found = best_of(row, keys, metric, p - 1)
                if found:
                    bold.add((found[0], metric, p))
            overall = best_of(row, [m.key for m in table_methods], metric, p - 1)
            best_overall.append(fmt(overall[1]) if overall else "n/a")
    lines = [best_overall + [""]]
    if SGD_AT_GSA_STEP in row:
        table_methods = table_methods + [
            Method(SGD_AT_GSA_STEP, "diagnostic", "SGD at the paper's GSA's mean step after pass 1 (per split)", {})
        ]
    for method in table_methods:
        cells = [method.family, method.label]
        for metric in metrics:
            for p in passes:
                text = fmt(row[method.key][metric][p - 1])
                cells.append(f"**{text}**" if (method.key, metric, p) in bold else text)
        steps = row[method.key]["greedy_step"]
        cells.append(f"{fmt(steps[0], 4)} / {fmt(steps[-1], 4)}" if method.is_gsa and steps[0] is not None else "")
        lines.append(cells)
    return markdown_table(header, lines)


def headline_rows(report: dict, gsa_key: str = "gsa") -> list[list]:
    """Per task and scaling: best SGD accuracy (its rate) and GSA's, after each reported pass."""
    by_key = {(t["task"], t["scaling"], t["gsa"], t["passes"]): t for t in report["targets"]}
    rows = []
    for task in report["tasks"]:
        for scaling in report["scalings"]:
            cells = [task["name"], scaling + (" (fair)" if scaling == FAIR_SCALING else "")]
            for passes in report["reported_passes"]:
                target = by_key[(task["name"], scaling, gsa_key, passes)]
                rate = target["best_sgd"].split("-", 1)[1]
                cells.append(f"{target['best_sgd_accuracy']:.4f} (r={rate})")
                mark = "" if target["met"] else " ✗"
                cells.append(
                    f"{target['gsa_accuracy']:.4f} ({target['gap']:+.4f} ± {fmt(target['gap_standard_error'], 4)}){mark}"
                )
            rows.append(cells)
    return rows


def diagnosis_rows(report: dict) -> list[list]:
    """GSA's mean greedy step after pass 1 and the last pass next to the best SGD rates and x . x."""
    rows = []
    summary = report["summary"]
    last = report["passes"] - 1
    for task in report["tasks"]:
        for scaling in report["scalings"]:
            row = summary[task["name"]][scaling]
            sgd = [key for key in row if key.startswith("sgd-")]
            best_by_pass = [best_of(row, sgd, "accuracy", p - 1)[0].split("-", 1)[1] for p in report["reported_passes"]]
            steps = []
            for key in ("gsa", "gsa-paper", "gsa-exact"):
                if key in row:
                    steps.append(
                        f"{key}: {fmt(row[key]['greedy_step'][0], 4)} → {fmt(row[key]['greedy_step'][last], 4)}"
                    )
            norm = _mean(report["mean_squared_norm"][task["name"]][scaling])
            rows.append([task["name"], scaling, fmt(norm, 1), "; ".join(steps), ", ".join(best_by_pass)])
    return rows


def miss_lines(report: dict) -> list[str]:
    """One line per missed fair check: the gap, GSA's step against the best rate, SGD at GSA's own step."""
    lines = []
    for target in report["targets"]:
        if not target["fair"] or target["met"]:
            continue
        row = report["summary"][target["task"]][target["scaling"]]
        index = target["passes"] - 1
        step = row[target["gsa"]]["greedy_step"][index]
        best_rate = float(target["best_sgd"].split("-", 1)[1])
        text = (
            f"- {target['task']}, {target['gsa']}, after {target['passes']} pass{'es' if target['passes'] > 1 else ''}: "
            f"best SGD (r={best_rate:g}) {target['best_sgd_accuracy']:.4f}, GSA {target['gsa_accuracy']:.4f} "
            f"(gap {target['gap']:+.4f} ± {fmt(target['gap_standard_error'], 4)})"
        )
        if step:
            text += f"; GSA's mean step then {fmt(step, 4)} (best rate / GSA's step = {best_rate / step:.1f})"
        diagnostic = row.get(SGD_AT_GSA_STEP)
        if diagnostic:
            text += (
                f"; SGD at the paper's GSA's step ({fmt(diagnostic['learning_rate'], 4)}) reaches "
                f"{diagnostic['accuracy'][index]:.4f}"
            )
        lines.append(text + ".")
    return lines


def render(report: dict) -> str:
    """The markdown report, from the report dict alone (``--render``)."""
    tasks = [Task(**t) for t in report["tasks"]]
    targets = report["targets"]
    fair = [t for t in targets if t["fair"] and t["gsa"] == "gsa"]
    fair_met = sum(t["met"] for t in fair)
    fair_paper = [t for t in targets if t["fair"] and t["gsa"] == "gsa-paper"]
    shape = report["greedy_step_shape"]
    lines = [
        "# Greedy step averaging vs tuned SGD and AdaGrad",
        "",
        "`python benchmarks/bench_gsa.py` — the comparison of the GSA paper's appendix tables on polybeam's "
        "bundled data (see `benchmarks/README.md`). Figures are means over "
        f"{report['seeds']} random 80/20 splits (seeds 0-{report['seeds'] - 1}); accuracy is 1 - held-out "
        "0-1 (or multiclass) error, loss the held-out log loss.",
        "",
        f"Run: {report['elapsed_seconds']:.0f} s on {report['machine']['cpus']} cores "
        f"(load {report['machine']['load_average']} at the start, {report['load_average_end']} at the end); "
        f"polybeam commit {report['machine'].get('git_commit')}.",
        "",
        "## Target: GSA's accuracy within 1% (absolute) of the best tuned SGD, with no tuning",
        "",
        f"Best SGD = the rate in {{{', '.join(f'{r:g}' for r in SGD_RATES)}}} with the best mean accuracy "
        "over the splits, chosen separately for each task, scaling and number of passes (so SGD is tuned on "
        'the test splits: its best case). GSA = `LearnerConfig(loss=..., step="gsa")`, no rate. '
        "The cell shows GSA's accuracy and, in brackets, the gap best SGD - GSA ± its paired standard error "
        "over the splits; ✗ marks a gap above 0.01.",
        "",
        f"**Fair comparison: {FAIR_SCALING} features.** {FAIR_REASON}",
        "",
        f"**Verdict ({FAIR_SCALING}, polybeam's GSA): {fair_met} of {len(fair)} task x pass checks met"
        + (
            ": "
            + ", ".join(f"{t['task']} after {t['passes']} (gap {t['gap']:+.4f})" for t in fair if not t["met"])
            + " missed"
            if fair_met < len(fair)
            else ""
        )
        + ".**"
        + f" The paper's GSA on the same features: {sum(t['met'] for t in fair_paper)} of {len(fair_paper)}"
        + (
            " (missed: "
            + ", ".join(f"{t['task']} after {t['passes']} ({t['gap']:+.4f})" for t in fair_paper if not t["met"])
            + ")"
            if any(not t["met"] for t in fair_paper)
            else ""
        )
        + ".",
        "",
    ]
    header = ["task", "features"]
    for passes in report["reported_passes"]:
        header += [f"best SGD, {passes} pass{'es' if passes > 1 else ''}", f"GSA, {passes} (gap)"]
    lines += [markdown_table(header, headline_rows(report, "gsa")), ""]
    misses = miss_lines(report)
    if misses:
        lines += [f"Missed checks on {FAIR_SCALING} features (details under 'Why GSA falls short'):", "", *misses, ""]
    lines += [
        "The paper's GSA (`normalized=False, safe_updates=False`: plain steps on the features as given):",
        "",
        markdown_table(header, headline_rows(report, "gsa-paper")),
        "",
        *(
            [
                "Held-out loss and accuracy per pass, GSA against every SGD rate and the best AdaGrad: "
                + ", ".join(f"![{name}]({name})" for name in report["plots"]),
                "",
            ]
            if report.get("plots")
            else []
        ),
        "## Why GSA falls short where it does",
        "",
        "GSA steps with the running mean of every example's greedy step. Mean greedy step after the first "
        "and the last pass (in normalised-feature units for the online-normalised variants, which is the "
        "unit of SGD's rate on max-abs scaled features), mean x . x of a training example (bias included), "
        "and the SGD rate with the best mean accuracy after 1, 2 and 5 passes:",
        "",
        markdown_table(
            ["task", "features", "mean x.x", "mean greedy step, pass 1 → last", "best SGD rate (1, 2, 5)"],
            diagnosis_rows(report),
        ),
        "",
        "The greedy step of a logistic example at score 0 (p = 0.5, x . x = 1): eq. 16 (the paper's "
        f"linearised step, GSA's default) {shape['logistic_eq16_at_p_half']:.3f}, the exact step of section 3.2 "
        f"{shape['logistic_exact_at_p_half']:.3f} ({shape['logistic_exact_at_p_half'] / shape['logistic_eq16_at_p_half']:.1f}x). "
        "Eq. 10 from K uniform classes against the exact step: "
        + ", ".join(
            f"K={k}: {shape[f'softmax_eq10_uniform_{k}']:.3f} vs {shape[f'softmax_exact_uniform_{k}']:.3f}"
            for k in (3, 6, 26)
        )
        + ". The linearisation assumes a small step (lambda << 1); far from the target it misses the exact "
        "step by a factor of several, short for two or a few classes, long for many. Examples already past "
        "p_hat = 0.95 add a step of 0 to the mean.",
        "",
        "## Protocol",
        "",
        "- Data: `polybeam.datasets.write_split(name, dir, seed=s, binary=...)` for s in "
        f"0..{report['seeds'] - 1} (20% test rows drawn at random), parsed with "
        f"`LibsvmFormat(bits={BITS})` (every feature its own slot). letter-binary is A-M (+1) vs N-Z; softmax "
        "labels are the classes 1..K. Training examples keep the bundled files' pre-shuffled order, the same "
        "every pass; the model is evaluated on the test split after every pass "
        f"(1..{report['passes']}).",
        "- Features: `raw` as bundled; `maxabs` x_j / max|x_j| over the training split (test scaled with the "
        "training factors, so it may exceed 1); "
        + (
            "`minmax` x_j mapped from the training [min, max] (implicit zeros included) to [-1, 1], LIBSVM's "
            "svm-scale (dense; constant features dropped). "
            if "minmax" in report["scalings"]
            else ""
        )
        + "A bias feature (value 1) is always learned.",
        '- GSA: `LearnerConfig(loss=..., step="gsa")` (online normalisation, safe updates for logistic loss; '
        "eq. 16 / eq. 10, p_hat = 0.95); `gsa-paper`: `normalized=False, safe_updates=False`; "
        "`gsa-exact` / `gsa-exact-paper`: the same with `gsa_exact=True` (logistic only).",
        f"- SGD: `step='constant', learning_rate=r, safe_updates=False` for r in {list(SGD_RATES)}. "
        f"AdaGrad: `step='adaptive', normalized=False, safe_updates=False` for eta in {list(ADAGRAD_RATES)}; "
        "adaptive (VW): polybeam's default adaptive step (normalised AdaGrad, safe updates) at the same etas.",
        "- No regularisation, weights start at 0, one learner (no averaging across workers).",
        "",
        "## Tables (means over the splits; bold: best of its family in that column; the first row is the best of all)",
        "",
    ]
    for task in tasks:
        for scaling in report["scalings"]:
            lines += [
                f"### {task.name} ({task.loss}{f', {task.classes} classes' if task.classes else ''}), "
                f"{scaling} features",
                "",
                method_table(report, task, scaling),
                "",
            ]
    lines += [
        "## Time",
        "",
        markdown_table(
            ["task", "seconds"],
            [[name, f"{s:.1f}"] for name, s in report["seconds"].items()]
            + [["total (with plots)", f"{report['elapsed_seconds']:.1f}"]],
        ),
        "",
    ]
    return "\n".join(lines)


def plot(report: dict, folder: str) -> list[str]:
    """Held-out log loss and accuracy per pass: GSA vs each SGD rate and the best AdaGrad, a panel per task and scaling."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks, scalings, summary = report["tasks"], report["scalings"], report["summary"]
    passes = np.arange(1, report["passes"] + 1)
    written = []
    for metric, ylabel in (("loss", "held-out log loss"), ("accuracy", "held-out accuracy")):
        figure, axes = plt.subplots(
            len(tasks), len(scalings), figsize=(4.2 * len(scalings), 2.9 * len(tasks)), squeeze=False
        )
        colours = plt.cm.viridis(np.linspace(0.0, 0.9, len(SGD_RATES)))
        for i, task in enumerate(tasks):
            for j, scaling in enumerate(scalings):
                axis, row = axes[i][j], summary[task["name"]][scaling]
                shown = []
                for rate, colour in zip(SGD_RATES, colours):
                    shown.append(row[f"sgd-{rate:g}"][metric])
                    axis.plot(
                        passes, _finite(row[f"sgd-{rate:g}"][metric]), color=colour, marker=".", label=f"SGD r={rate:g}"
                    )
                adagrad = [key for key in row if key.startswith("adagrad-")]
                best = best_of(row, adagrad, metric, len(passes) - 1)
                if best:
                    shown.append(row[best[0]][metric])
                    axis.plot(
                        passes,
                        _finite(row[best[0]][metric]),
                        color="tab:orange",
                        linestyle=":",
                        marker="x",
                        label=f"AdaGrad eta={best[0].split('-', 1)[1]} (best)",
                    )
                for key, style in (("gsa", "-"), ("gsa-paper", "--"), ("gsa-exact", "-.")):
                    if key in row:
                        shown.append(row[key][metric])
                        axis.plot(
                            passes,
                            _finite(row[key][metric]),
                            color="black" if key != "gsa-exact" else "tab:red",
                            linestyle=style,
                            linewidth=2,
                            label={"gsa": "GSA (default)", "gsa-paper": "GSA (paper)", "gsa-exact": "GSA exact"}[key],
                        )
                _frame(axis, shown, metric, row)
                axis.set_title(f"{task['name']}, {scaling}", fontsize=9)
                axis.set_xticks(passes)
                axis.tick_params(labelsize=7)
                if j == 0:
                    axis.set_ylabel(ylabel, fontsize=8)
                if i == len(tasks) - 1:
                    axis.set_xlabel("passes", fontsize=8)
        handles, labels = [], []
        for axis in axes.flat:
            for handle, label in zip(*axis.get_legend_handles_labels()):
                if label not in labels and not label.startswith("AdaGrad"):
                    handles.append(handle)
                    labels.append(label)
        handles.append(plt.Line2D([], [], color="tab:orange", linestyle=":", marker="x"))
        labels.append("best AdaGrad")
        figure.suptitle(f"GSA vs SGD rates, {ylabel} (mean over {report['seeds']} splits)", y=0.998, fontsize=10)
        figure.legend(
            handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.985), ncol=5, fontsize=8, frameon=False
        )
        figure.tight_layout(rect=(0, 0, 1, 0.95))
        path = os.path.join(folder, f"gsa.{'logloss' if metric == 'loss' else 'accuracy'}.png")
        figure.savefig(path, dpi=90)
        plt.close(figure)
        written.append(path)
    return written


def _finite(values) -> list[float]:
    return [np.nan if v is None or not math.isfinite(v) else v for v in values]


def _frame(axis, shown, metric: str, row: dict) -> None:
    """Log scale for losses, up to 20x GSA's loss (diverged runs leave the frame); accuracy's top 0.25."""
    if metric == "loss":
        axis.set_yscale("log")
        good = [v for curve in shown for v in _finite(curve) if math.isfinite(v) and v > 0]
        low = min(good) * 0.8
        high = min(max(good) * 1.2, 20.0 * np.nanmax(_finite(row["gsa"][metric])))
        axis.set_ylim(low, max(high, low * 2))
    else:
        good = [v for curve in shown for v in _finite(curve) if math.isfinite(v)]
        top = max(good)
        axis.set_ylim(max(min(good), top - 0.25) - 0.005, top + 0.01)


# -- main ---------------------------------------------------------------------------------


def finish(report: dict, results: str) -> dict:
    """Targets, markdown and plots from the measured runs; writes gsa.json, gsa.md and the PNGs."""
    report["summary"] = summarise(report["runs"])
    report["targets"] = targets_of(report)
    report["greedy_step_shape"] = greedy_step_shape()
    os.makedirs(results, exist_ok=True)
    if importlib.util.find_spec("matplotlib") is None:
        print("matplotlib is not installed: no plots (pip install -e '.[bench]')")
        report["plots"] = []
    else:
        report["plots"] = [os.path.basename(p) for p in plot(report, results)]
    report.setdefault("elapsed_seconds", time.perf_counter() - report.pop("_started", time.perf_counter()))
    report["load_average_end"] = report.get("load_average_end") or load_average()
    with open(os.path.join(results, "gsa.md"), "w") as handle:
        handle.write(render(report))
    with open(os.path.join(results, "gsa.json"), "w") as handle:
        handle.write(to_json(report))
    return report


_NUMBER_LIST = re.compile(r"\[\n\s*((?:[-\w.+]+)(?:,\n\s*[-\w.+]+)*)\n\s*\]")


def to_json(report: dict) -> str:
    """Strict JSON (diverged runs' non-finite floats as null), 5 significant digits, number lists on one line."""
    text = json.dumps(_json_ready(report), indent=1, allow_nan=False)
    return _NUMBER_LIST.sub(lambda match: "[" + re.sub(r",\n\s*", ", ", match.group(1)) + "]", text) + "\n"


def _json_ready(value):
    if isinstance(value, dict):
        return {key: _json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(item) for item in value]
    if isinstance(value, float):
        return float(f"{value:.5g}") if math.isfinite(value) else None
    return value


def print_summary(report: dict) -> None:
    header = ["task", "features"]
    for passes in report["reported_passes"]:
        header += [f"best SGD {passes}", f"GSA {passes}"]
    print(markdown_table(header, headline_rows(report, "gsa")))
    fair = [t for t in report["targets"] if t["fair"] and t["gsa"] == "gsa"]
    for target in fair:
        print(
            f"target GSA within {ACCURACY_GAP:.0%} of best SGD: {target['task']:>13} {target['scaling']} "
            f"after {target['passes']} pass(es): best SGD {target['best_sgd_accuracy']:.4f} ({target['best_sgd']}) "
            f"GSA {target['gsa_accuracy']:.4f} gap {target['gap']:+.4f} -> {'met' if target['met'] else 'MISSED'}"
        )
    print(
        f"fair comparison ({FAIR_SCALING}): {sum(t['met'] for t in fair)} of {len(fair)} met; "
        f"run {report['elapsed_seconds']:.0f} s"
    )


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="random 80/20 splits per task (default 10)")
    parser.add_argument("--passes", type=int, default=5, help="passes over the training split (default 5)")
    parser.add_argument("--scalings", default="raw,maxabs,minmax", help="comma-separated: raw, maxabs, minmax")
    parser.add_argument("--tasks", default=",".join(t.name for t in TASKS), help="comma-separated task names")
    parser.add_argument("--results", default=os.path.join(HERE, "results"))
    parser.add_argument("--render", action="store_true", help="only rewrite gsa.md and the plots from gsa.json")
    args = parser.parse_args(argv)

    if args.render:
        with open(os.path.join(args.results, "gsa.json")) as handle:
            report = json.load(handle)
        for key in ("summary", "targets", "plots"):
            report.pop(key, None)
        return finish(report, args.results)

    by_name = {task.name: task for task in TASKS}
    tasks = [by_name[name] for name in args.tasks.split(",")]
    scalings = args.scalings.split(",")
    unknown = set(scalings) - set(SCALINGS)
    if unknown:
        parser.error(f"unknown scalings {sorted(unknown)}; choose from {', '.join(SCALINGS)}")
    if FAIR_SCALING not in scalings:
        parser.error(f"the targets are judged on {FAIR_SCALING} features; include it in --scalings")
    started = time.perf_counter()
    report = {
        "machine": machine_info(),
        "tasks": [dataclasses.asdict(task) for task in tasks],
        "scalings": scalings,
        "seeds": args.seeds,
        "passes": args.passes,
        "reported_passes": [p for p in REPORTED_PASSES if p <= args.passes] or [args.passes],
        "sgd_rates": list(SGD_RATES),
        "adagrad_rates": list(ADAGRAD_RATES),
        "accuracy_gap": ACCURACY_GAP,
        "fair_scaling": FAIR_SCALING,
        "methods": {task.name: [dataclasses.asdict(m) for m in methods(task)] for task in tasks},
    }
    report.update(run_benchmark(tasks, args.seeds, args.passes, scalings))
    report["_started"] = started
    report = finish(report, args.results)
    print_summary(report)
    return report


if __name__ == "__main__":
    main()
