"""Plots (matplotlib, the optional ``plot`` extra): a model's learning curve, weights by degree and non-zeros
over time (``polybeam plot --model``), and anytime curves (``polybeam timeliness --plot``, ``polybeam plot
--prefixes``)."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

import numpy as np

from polybeam.pipelines.errors import OptionError
from polybeam.transforms.files import write_atomically


def check_plotting() -> None:
    """Fail fast, before launching a job that plots, when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise OptionError("plots need matplotlib: pip install 'polybeam[plot]'") from None


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise OptionError("plots need matplotlib: pip install 'polybeam[plot]'") from None
    return plt


def _save(figure, path: str) -> str:
    plt = _pyplot()
    image = io.BytesIO()
    figure.savefig(image, format="png", dpi=120)
    plt.close(figure)
    write_atomically(path, image.getvalue())  # any Beam file system: a worker may draw it
    return path


def weight_degrees(model) -> dict[int, dict[str, float]]:
    """``degree -> {"weights": count, "abs_sum": sum of |w|}`` of the model's non-zero weights (the bias is
    degree 0; a softmax weight row counts once, with its largest |w|)."""
    slots = np.asarray(model.slots, dtype=np.int64)
    magnitudes = np.abs(np.asarray(model.weights, dtype=np.float64))
    if magnitudes.ndim == 2:
        magnitudes = magnitudes.max(axis=1)
    degrees = np.ones(len(slots), dtype=np.int64)
    table = model.monomials
    if len(table):
        found = np.searchsorted(table.slots, slots)
        inside = found < len(table.slots)
        products = np.zeros(len(slots), dtype=bool)
        products[inside] = table.slots[found[inside]] == slots[inside]
        degrees[products] = np.diff(table.offsets)[found[products]]
    if model.config.bias:
        degrees[slots == 0] = 0
    return {int(d): {"weights": int(np.sum(degrees == d)), "abs_sum": float(magnitudes[degrees == d].sum())}
            for d in np.unique(degrees)}  # fmt: skip


def learning_curve_points(model) -> list[dict]:
    """The model's learning-curve points, with each pass's final figures added as its last point."""
    points = [dict(p) for p in model.metadata.get("learning_curve", [])]
    for number, summary in enumerate(model.metadata.get("passes", []), 1):
        counted = [p for p in points if p["pass"] == number]
        if summary.get("examples") and (not counted or counted[-1]["examples"] < summary["examples"]):
            last = counted[-1] if counted else {"nonzero": None}
            points.append({"pass": number, "examples": int(summary["examples"]), "progressive_loss": summary["loss"],
                           "since_last": None, "nonzero": last["nonzero"], "final": True})  # fmt: skip
    points.sort(key=lambda p: (p["pass"], p["examples"]))
    return points


def plot_model(model, path: str, *, title: str | None = None) -> str:
    """A PNG of ``model``'s progressive loss and non-zero weights against examples (a line per pass; each
    pass's examples follow the earlier passes'), and its non-zero weights by degree."""
    plt = _pyplot()
    points = learning_curve_points(model)
    figure, (loss_axes, nonzero_axes, degree_axes) = plt.subplots(1, 3, figsize=(15, 4.3))
    offset = 0
    for number in sorted({p["pass"] for p in points}):
        mine = [p for p in points if p["pass"] == number]
        x = np.array([offset + p["examples"] for p in mine], dtype=float)
        loss = np.array([np.nan if p["progressive_loss"] is None else p["progressive_loss"] for p in mine])
        since = np.array([np.nan if p.get("since_last") is None else p["since_last"] for p in mine])
        loss_axes.plot(x, loss, marker=".", label=f"pass {number}: progressive loss")
        loss_axes.plot(x, since, linestyle=":", linewidth=1, label=f"pass {number}: since last point")
        nonzero = [(xi, p["nonzero"]) for xi, p in zip(x, mine) if p.get("nonzero") is not None]
        if nonzero:
            nonzero_axes.plot(*zip(*nonzero), marker=".", label=f"pass {number}")
        offset += max(p["examples"] for p in mine)
    for axes, label in ((loss_axes, "progressive loss"), (nonzero_axes, "non-zero weights")):
        axes.set_xscale("log")
        axes.set_xlabel("examples learned (doubling counts; passes one after another)")
        axes.set_ylabel(label)
        axes.grid(alpha=0.3)
        if points:
            axes.legend(fontsize=7)
    loss_axes.set_title("learning curve")
    nonzero_axes.set_title("non-zero weights over time")
    degrees = weight_degrees(model)
    names = ["bias" if d == 0 else f"degree {d}" for d in degrees]
    bars = degree_axes.bar(names, [entry["weights"] for entry in degrees.values()], color="tab:blue")
    degree_axes.bar_label(bars, labels=[f"sum |w| {entry['abs_sum']:.3g}" for entry in degrees.values()], fontsize=7)
    degree_axes.set_ylabel("non-zero weights")
    kind = model.expansion.kind if model.expansion is not None else "linear"
    degree_axes.set_title(f"weights by degree ({kind})")
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    return _save(figure, path)


def plot_curves(path: str, curves: Mapping[str, Sequence[Sequence[float]]], *, stop: float | None = None,
                alpha: float | None = None, title: str = "Explained variance against feature cost") -> str:  # fmt: skip
    """Write a PNG of each method's explained variance against cumulative cost, like Hu et al.'s Figures 4-5.

    ``curves`` maps a label to its ``[[cost, explained variance], ...]``; the
    x axis stops a little past ``stop`` (the alpha-stopping cost), marked by a
    dashed line.
    """
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(7, 4.5))
    for label, curve in curves.items():
        costs = [point[0] for point in curve]
        values = [point[1] for point in curve]
        axes.plot(costs, values, marker=".", markersize=4, linewidth=1.3, label=label)
    if stop is not None:
        axes.axvline(stop, color="grey", linestyle="--", linewidth=0.8,
                     label=f"{alpha:g}-stopping cost" if alpha is not None else "stopping cost")  # fmt: skip
        axes.set_xlim(0, stop * 1.15)
    axes.set_xlabel("cumulative feature cost")
    axes.set_ylabel("held-out explained variance")
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    return _save(figure, path)
