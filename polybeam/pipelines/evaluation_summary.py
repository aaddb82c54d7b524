"""What ``polybeam evaluate`` prints before its JSON line: the report as lines for a terminal, as ``train`` does.

One model: what was read, the metrics, where the report went. A folder of
per-key models: the metrics of all keys together, the spread of the loss over
keys and the keys with the most examples. Models per window: a line per window
(per key and window: the window's keys and the spread of their loss).

>>> report = {"records": 10, "examples": 9, "dead_letters": 1, "skipped": 0, "loss": 0.25, "error": 0.1,
...           "auc": 0.9, "mse": 0.08, "model": "m.model", "dead_letter_file": "d.jsonl",
...           "report": "r.json", "wall_seconds": 1.25}
>>> print(describe_evaluation(report))
read: records read 10 = examples 9 + dead letters 1 + skipped 0 (ok)
scored 9 examples with m.model: loss 0.25  error 0.1  AUC 0.9  MSE 0.08
dead letters to d.jsonl
report: r.json
wall time: 1.2 s
"""

from __future__ import annotations

import math

import numpy as np

from polybeam.formats.records import ReadCounts

# The metrics a summary line shows, when known, with their labels (MAE and coverage: the losses that report
# them, polybeam.learners.loss_specs).
SHOWN_METRICS = (
    ("loss", "loss"),
    ("error", "error"),
    ("auc", "AUC"),
    ("mse", "MSE"),
    ("mae", "MAE"),
    ("coverage", "coverage"),
)
# How many keys and windows the summary lists one by one (the report lists them all).
LISTED = 10


def _known(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def metrics_text(metrics: dict, digits: int = 6) -> str:
    """The metrics that are known, in one line: ``loss 0.25  error 0.1  AUC 0.9  MSE 0.08``.

    A regression's error is its MSE: it is shown once, as MSE.

    >>> metrics_text({"examples": 4, "loss": 0.5, "error": 0.5, "auc": None, "mse": 0.5})
    'loss 0.5  MSE 0.5'
    >>> metrics_text({"examples": 4, "loss": 0.5, "error": 2.0, "auc": None, "mse": 2.0, "mae": 1.0, "coverage": 0.75})
    'loss 0.5  MSE 2  MAE 1  coverage 0.75'
    >>> metrics_text({"examples": 0, "loss": None, "error": None, "auc": None, "mse": None})
    'no examples'
    """
    shown = []
    regression = metrics.get("auc") is None and metrics.get("error") == metrics.get("mse")
    for name, label in SHOWN_METRICS:
        if _known(metrics.get(name)) and not (name == "error" and regression):
            shown.append(f"{label} {metrics[name]:.{digits}g}")
    return "  ".join(shown) if shown else "no examples"


def _spread(values: list[float]) -> str:
    """``min 0.1, median 0.2, max 0.3`` of the finite ``values``."""
    known = np.array([value for value in values if _known(value)], dtype=float)
    if not len(known):
        return "n/a"
    return f"min {known.min():.4g}, median {np.median(known):.4g}, max {known.max():.4g}"


def _key_table(per_key: dict, indent: str = "") -> list[str]:
    """The keys with the most examples, a line each, with their metrics."""
    busiest = sorted(per_key.items(), key=lambda item: (-(item[1].get("examples") or 0), str(item[0])))[:LISTED]
    lines = [
        f"{indent}the {len(busiest)} keys with the most examples:"
        if len(per_key) > len(busiest)
        else f"{indent}per key:"
    ]
    lines.append(f"{indent}  {'examples':>9}  {'loss':>9}  {'error':>9}  {'AUC':>9}  key")
    for key, metrics in busiest:
        cells = [f"{metrics[name]:.4g}" if _known(metrics.get(name)) else "-" for name in ("loss", "error", "auc")]
        lines.append(f"{indent}  {metrics.get('examples', 0):>9}  {cells[0]:>9}  {cells[1]:>9}  {cells[2]:>9}  {key}")
    return lines


def _keyed_lines(report: dict) -> list[str]:
    per_key = report.get("keys") or {}
    lines = [
        f"scored per key ({report['key']}) with {report['model']}: {len(per_key)} keys",
        f"all keys together: {report.get('examples', 0)} examples  {metrics_text(report)}",
    ]
    if per_key:
        lines.append(f"loss per key: {_spread([m.get('loss') for m in per_key.values()])}")
        lines += _key_table(per_key)
    if report.get("examples_without_model"):
        lines.append(f"{report['examples_without_model']} examples had no model for their key: dead letters")
    return lines


def _window_line(name: str, entry: dict) -> str:
    if not entry or not all(isinstance(value, dict) for value in entry.values()):  # one model's metrics
        return f"  {name}: {entry['examples']} examples  {metrics_text(entry, 4)}"
    examples = sum(metrics.get("examples") or 0 for metrics in entry.values())
    return (
        f"  {name}: {len(entry)} keys, {examples} examples; loss per key "
        f"{_spread([metrics.get('loss') for metrics in entry.values()])}"
    )


def _windowed_lines(report: dict) -> list[str]:
    windows = report.get("windows") or {}
    per = "per key and window" if report.get("key") else "per window"
    lines = [
        f"models {per} ({report['window_spec']}) in {report['model']}: {len(windows)} windows scored, "
        "each window's examples by that window's model",
        f"all windows together: {report.get('examples', 0)} scored examples  {metrics_text(report)}",
    ]
    names = sorted(windows)
    lines += [_window_line(name, windows[name]) for name in names[:LISTED]]
    if len(names) > LISTED:
        lines.append(f"  ... and {len(names) - LISTED} more windows (the report lists every one)")
    unscored = report.get("examples_without_model") or {}
    if unscored:
        listed = ", ".join(f"{name} ({count})" for name, count in sorted(unscored.items())[:LISTED])
        lines.append(f"{sum(unscored.values())} examples fell in windows without a model, not scored: {listed}")
    return lines


def describe_evaluation(report: dict) -> str:
    """``polybeam evaluate``'s report as lines for a terminal (see the module docstring)."""
    windowed = bool(report.get("window_spec"))
    # A windowed report's examples are those scored (a sliding window scores an example once per window):
    # the read's own count is examples_read.
    counts = ReadCounts.from_dict({**report, "examples": report.get("examples_read", 0)} if windowed else report)
    lines = [f"read: {counts.describe()}"]
    if windowed:
        lines += _windowed_lines(report)
    elif report.get("key"):
        lines += _keyed_lines(report)
    else:
        lines.append(f"scored {report.get('examples', 0)} examples with {report['model']}: {metrics_text(report)}")
    lines += [
        f"dead letters to {report['dead_letter_file']}",
        f"report: {report['report']}",
        f"wall time: {report['wall_seconds']:.1f} s",
    ]
    return "\n".join(lines)
