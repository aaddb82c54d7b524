"""Plots of anytime curves (matplotlib, the optional ``plot`` extra)."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

from polybeam.pipelines.jobs import OptionError
from polybeam.transforms.files import write_atomically


def check_plotting() -> None:
    """Fail fast, before launching a job that plots, when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise OptionError("plots need matplotlib: pip install 'polybeam[plot]'") from None


def plot_curves(path: str, curves: Mapping[str, Sequence[Sequence[float]]], *, stop: float | None = None,
                alpha: float | None = None, title: str = "Explained variance against feature cost") -> str:  # fmt: skip
    """Write a PNG of each method's explained variance against cumulative cost, like Hu et al.'s Figures 4-5.

    ``curves`` maps a label to its ``[[cost, explained variance], ...]``; the
    x axis stops a little past ``stop`` (the alpha-stopping cost), marked by a
    dashed line.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise OptionError("plots need matplotlib: pip install 'polybeam[plot]'") from None
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
    image = io.BytesIO()
    figure.savefig(image, format="png", dpi=120)
    plt.close(figure)
    write_atomically(path, image.getvalue())  # any Beam file system: a worker draws it
    return path
