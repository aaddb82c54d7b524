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
    return {
        int(d): {"weights": int(np.sum(degrees == d)), "abs_sum": float(magnitudes[degrees == d].sum())}
        for d in np.unique(degrees)
    }


def _since(last: dict, summary: dict) -> float | None:
    """The mean loss between a pass's last point and its end, from the sums of both (None when unknown).

    >>> _since({"weight": 2.0, "loss": 1.0}, {"importance_weight": 4.0, "loss": 0.5})
    0.5
    """
    weight, mean = summary.get("importance_weight"), summary.get("loss")
    if weight is None or mean is None or "weight" not in last or weight <= last["weight"]:
        return None
    return (mean * weight - last["loss"]) / (weight - last["weight"])


def learning_curve_points(model) -> list[dict]:
    """The model's learning-curve points, with each pass's final figures added as its last point."""
    points = [dict(p) for p in model.metadata.get("learning_curve", [])]
    for number, summary in enumerate(model.metadata.get("passes", []), 1):
        counted = [p for p in points if p["pass"] == number]
        if summary.get("examples") and (not counted or counted[-1]["examples"] < summary["examples"]):
            last = counted[-1] if counted else {"nonzero": None}
            points.append(
                {
                    "pass": number,
                    "examples": int(summary["examples"]),
                    "progressive_loss": summary["loss"],
                    "since_last": _since(last, summary),
                    "nonzero": last["nonzero"],
                    "final": True,
                }
            )
    points.sort(key=lambda p: (p["pass"], p["examples"]))
    return points


def pass_spans(points: Sequence[dict]) -> list[tuple[int, float, float]]:
    """``(pass, start, end)`` of each pass on the plots' x axis: the passes one after another on a linear axis,
    each as wide as the examples it learned.

    >>> pass_spans([{"pass": 1, "examples": 4}, {"pass": 1, "examples": 10}, {"pass": 2, "examples": 10}])
    [(1, 0.0, 10.0), (2, 10.0, 20.0)]
    """
    spans, offset = [], 0.0
    for number in sorted({p["pass"] for p in points}):
        width = float(max(p["examples"] for p in points if p["pass"] == number))
        spans.append((number, offset, offset + width))
        offset += width
    return spans


# The share of a pass whose points the linear axis leaves out: they would stack into one vertical stroke at the
# pass's start (a point at 1, 2, 4, ... examples of thousands), swinging widely over a handful of examples.
EARLY_SHARE = 0.01


def drawn_points(points: Sequence[dict], spans) -> list[dict]:
    """The points the learning curve draws: each pass's from ``EARLY_SHARE`` of its examples on.

    >>> spans = [(1, 0.0, 1000.0)]
    >>> [p["examples"] for p in drawn_points([{"pass": 1, "examples": n} for n in (1, 8, 16, 1000)], spans)]
    [16, 1000]
    """
    widths = {number: end - start for number, start, end in spans}
    return [p for p in points if p["examples"] >= EARLY_SHARE * widths[p["pass"]]]


def _limits(values) -> tuple[float, float] | None:
    values = [value for value in values if value is not None and np.isfinite(value)]
    if not values:
        return None
    low, high = min(values), max(values)
    margin = 0.08 * (high - low) or 0.1 * abs(high) or 0.1
    return low - margin, high + margin


def _overlapping(texts, renderer) -> bool:
    """Whether any two of the visible ``texts`` overlap on the canvas."""
    boxes = [text.get_window_extent(renderer).padded(1.5) for text in texts if text.get_visible() and text.get_text()]
    return any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])


def fit_labels(figure, texts, *, smallest: float = 6.0, rotate: bool = True) -> None:
    """Make a row of labels readable: smaller (down to ``smallest`` points), then turned upright (``rotate``),
    then every other one hidden, until no two overlap (measured by the figure's renderer)."""
    texts = [text for text in texts if text.get_text()]
    if len(texts) < 2:
        return
    renderer = figure.canvas.get_renderer()
    size = texts[0].get_fontsize()
    while _overlapping(texts, renderer) and size > smallest:
        size = max(smallest, size - 1)
        for text in texts:
            text.set_fontsize(size)
    if rotate and _overlapping(texts, renderer):
        for text in texts:
            text.set_rotation(90)
    step = 1
    while _overlapping(texts, renderer) and step < len(texts):
        step *= 2
        for index, text in enumerate(texts):
            text.set_visible(index % step == 0)


def _mark_passes(axes, spans) -> list:
    """Shade every other pass's span, and name each pass above its span; the names (Text artists)."""
    names = []
    for number, start, end in spans:
        if number % 2 == 0:
            axes.axvspan(start, end, color="0.93", zorder=0)
        names.append(
            axes.text(
                (start + end) / 2,
                1.01,
                f"pass {number}",
                transform=axes.get_xaxis_transform(),
                ha="center",
                va="bottom",
                fontsize=8,
            )
        )
    axes.set_xlim(spans[0][1] if spans else 0, spans[-1][2] if spans else 1)
    return names


def model_figure(model, *, title: str | None = None):
    """The figure ``plot_model`` draws (see there)."""
    from matplotlib.lines import Line2D

    plt = _pyplot()
    every_point = learning_curve_points(model)
    spans = pass_spans(every_point)
    points = drawn_points(every_point, spans)
    offsets = {number: start for number, start, _ in spans}
    figure = plt.figure(figsize=(13, 8.5))
    grid = figure.add_gridspec(2, 3, height_ratios=(1.15, 1))
    loss_axes = figure.add_subplot(grid[0, :])
    nonzero_axes = figure.add_subplot(grid[1, :2], sharex=loss_axes)
    degree_axes = figure.add_subplot(grid[1, 2])
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for number, _, _ in spans:
        mine = [p for p in points if p["pass"] == number]
        color = colors[(number - 1) % len(colors)]
        x = np.array([offsets[number] + p["examples"] for p in mine], dtype=float)
        loss = np.array([np.nan if p["progressive_loss"] is None else p["progressive_loss"] for p in mine])
        since = np.array([np.nan if p.get("since_last") is None else p["since_last"] for p in mine])
        loss_axes.plot(x, loss, marker=".", color=color, label=f"pass {number}: progressive loss")
        # The loss since the previous point (drawn or not) is a mean over the examples in between: a step over them.
        earlier = [p["examples"] for p in every_point if p["pass"] == number and p["examples"] < mine[0]["examples"]]
        first = offsets[number] + (earlier[-1] if earlier else 0)
        loss_axes.plot(
            np.concatenate([[first], x]),
            np.concatenate([since[:1], since]),
            drawstyle="steps-pre",
            linestyle=":",
            linewidth=1,
            color=color,
            label=f"pass {number}: since last point",
        )
        nonzero = [(xi, p["nonzero"]) for xi, p in zip(x, mine) if p.get("nonzero") is not None]
        if nonzero:
            nonzero_axes.plot(*zip(*nonzero), marker=".", color=color, label=f"pass {number}")
    limits = _limits([p["progressive_loss"] for p in points] + [p.get("since_last") for p in points])
    if limits is not None:
        loss_axes.set_ylim(*limits)
    pass_names = [_mark_passes(axes, spans) for axes in (loss_axes, nonzero_axes)]
    if points:
        loss_axes.legend(
            handles=[
                Line2D([], [], color="0.2", marker=".", label="progressive loss (the pass so far)"),
                Line2D([], [], color="0.2", linestyle=":", label="loss since the previous point"),
            ],
            fontsize=8,
            loc="best",
        )
    counts = [p["examples"] for p in every_point if not p.get("final")]
    schedule = "at doubling counts" if _doubling(counts) else f"every {min(counts)} examples"
    loss_axes.set_ylabel("progressive loss")
    loss_axes.set_title(
        f"learning curve (points {schedule}; passes side by side)"
        if every_point
        else "learning curve (the model records none)",
        pad=18,
    )
    nonzero_axes.set_ylabel("non-zero weights")
    nonzero_axes.set_xlabel(f"examples learned, the passes one after another (from {EARLY_SHARE:.0%} of each pass on)")
    nonzero_axes.set_title("non-zero weights over time", pad=18)
    for axes in (loss_axes, nonzero_axes):
        axes.grid(alpha=0.3)
    degrees = weight_degrees(model)
    names = ["bias" if d == 0 else str(d) for d in degrees]
    bars = degree_axes.bar(names, [entry["weights"] for entry in degrees.values()], color="tab:blue")
    labels = degree_axes.bar_label(
        bars, labels=[f"sum |w|\n{entry['abs_sum']:.3g}" for entry in degrees.values()], fontsize=8, padding=2
    )
    degree_axes.set_xlabel("degree of the monomial")
    degree_axes.set_ylabel("non-zero weights")
    kind = model.expansion.kind if model.expansion is not None else "linear"
    degree_axes.set_title(f"weights by degree ({kind})", pad=18)
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    for names_of_passes in pass_names:
        fit_labels(figure, names_of_passes, rotate=False)
    fit_labels(figure, degree_axes.get_xticklabels())
    fit_labels(figure, labels)
    _make_room(degree_axes, labels, figure)
    return figure


def _doubling(counts: Sequence[int]) -> bool:
    """Whether the curve's points (their in-pass example counts) come at powers of two."""
    return all(count & (count - 1) == 0 for count in counts)


def _make_room(axes, labels, figure) -> None:
    """Raise ``axes``' top so that the bars' labels (perhaps turned upright) stay inside it."""
    renderer = figure.canvas.get_renderer()
    tops = [
        axes.transData.inverted().transform(label.get_window_extent(renderer))[1, 1]
        for label in labels
        if label.get_visible()
    ]
    if tops:
        low, high = axes.get_ylim()
        axes.set_ylim(low, max(high, max(tops) + 0.03 * (high - low)))


def plot_model(model, path: str, *, title: str | None = None) -> str:
    """A PNG of ``model``'s learning curve (progressive loss and the loss since the previous point) and its
    non-zero weights against examples learned, the passes side by side on a linear axis (each pass's
    examples follow the earlier passes'), and its non-zero weights by degree."""
    return _save(model_figure(model, title=title), path)


def plot_curves(
    path: str,
    curves: Mapping[str, Sequence[Sequence[float]]],
    *,
    stop: float | None = None,
    alpha: float | None = None,
    title: str = "Explained variance against feature cost",
) -> str:
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
        axes.axvline(
            stop,
            color="grey",
            linestyle="--",
            linewidth=0.8,
            label=f"{alpha:g}-stopping cost" if alpha is not None else "stopping cost",
        )
        axes.set_xlim(0, stop * 1.15)
    axes.set_xlabel("cumulative feature cost")
    axes.set_ylabel("held-out explained variance")
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    return _save(figure, path)
