"""``polybeam inspect`` on a folder of per-key models: what the folder holds, without loading every model.

The figures come from the shards' indexes (one entry per key: examples,
progressive loss, non-zero weights, holdout), never from the models
themselves, so a folder of a million keys is summed up in seconds: how many
keys and shards, the settings, the examples and losses over keys (quantiles),
the keys with the most examples and the holdout's counts. ``--key K`` shows
one key's model in full.
"""

from __future__ import annotations

import math

import numpy as np

from polybeam.learners.config import LearnerConfig
from polybeam.transforms.keyed_files import KeyedFolder

QUANTILES = (0.0, 0.1, 0.5, 0.9, 1.0)


def keyed_summary(folder: str, top: int = 10) -> dict:
    """The summary of the per-key folder ``folder`` (see the module docstring)."""
    keyed = KeyedFolder(folder)
    index = keyed.index
    keys, examples, losses, nonzero, kinds = [], [], [], [], {}
    for key, entry in keyed.entries():
        keys.append(key)
        examples.append(entry.get("examples") or 0)
        loss = entry.get("progressive_loss")
        losses.append(np.nan if loss is None else float(loss))
        nonzero.append(entry.get("nonzero_weights") or 0)
        kinds[entry.get("kind", "linear")] = kinds.get(entry.get("kind", "linear"), 0) + 1
    examples, losses, nonzero = np.array(examples), np.array(losses), np.array(nonzero)

    def spread(values: np.ndarray) -> dict | None:
        values = values[np.isfinite(values)]
        if not len(values):
            return None
        return {f"q{round(q * 100):d}": float(np.quantile(values, q)) for q in QUANTILES}

    config = index.get("config")
    busiest = np.argsort(-examples, kind="stable")[:top]
    return {
        "folder": folder,
        "key": index.get("key"),
        "layout": "shards" if keyed.sharded else "files",
        "shards": index.get("shards") if keyed.sharded else None,
        "keys": len(keys),
        "kinds": kinds,
        "examples": int(examples.sum()),
        "progressive_loss": _weighted_loss(losses, examples),
        "nonzero_weights": int(nonzero.sum()),
        "examples_per_key": spread(examples.astype(float)),
        "loss_per_key": spread(losses),
        "nonzero_per_key": spread(nonzero.astype(float)),
        "holdout": index.get("holdout"),
        "config": config,
        "input": index.get("input"),
        "busiest_keys": [
            {
                "key": keys[i],
                "examples": int(examples[i]),
                "progressive_loss": None if math.isnan(losses[i]) else float(losses[i]),
                "nonzero_weights": int(nonzero[i]),
            }
            for i in busiest
        ],
    }


def _weighted_loss(losses: np.ndarray, examples: np.ndarray) -> float | None:
    known = np.isfinite(losses) & (examples > 0)
    return float(np.average(losses[known], weights=examples[known])) if known.any() else None


def describe(summary: dict) -> str:
    """``summary`` as lines for a terminal."""
    config = LearnerConfig.from_dict(summary["config"]) if summary.get("config") else None
    where = f"{summary['shards']} shard file(s)" if summary["layout"] == "shards" else "one file per key"
    lines = [f"polybeam per-key models: {summary['keys']} keys ({summary['key']}) in {where}"]
    if config is not None:
        lines.append(
            f"settings: loss={config.loss} step={config.step} bits={config.bits} passes={config.passes}"
            + (f" expand={config.expand}" if config.expand != "none" else "")
        )
    kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(summary["kinds"].items()))
    loss = summary["progressive_loss"]
    lines.append(
        f"trained on {summary['examples']} examples; progressive loss over keys "
        + (f"{loss:.6g}" if loss is not None else "n/a")
        + f"; models: {kinds}"
    )
    lines.append(f"non-zero weights: {summary['nonzero_weights']} in all")
    for name, label in (
        ("examples_per_key", "examples per key"),
        ("loss_per_key", "progressive loss per key"),
        ("nonzero_per_key", "non-zero weights per key"),
    ):
        spread = summary.get(name)
        if spread:
            lines.append(
                f"{label}: min {spread['q0']:.4g}, 10% {spread['q10']:.4g}, median {spread['q50']:.4g}, "
                f"90% {spread['q90']:.4g}, max {spread['q100']:.4g}"
            )
    holdout = summary.get("holdout")
    if holdout:
        lines.append(
            f"holdout: {holdout['keys_judged']} keys judged, {holdout['keys_released']} released (too few "
            f"held out), {holdout['keys_stopped_early']} stopped early"
        )
    if summary["busiest_keys"]:
        lines.append(f"the {len(summary['busiest_keys'])} keys with the most examples:")
        lines.append(f"  {'examples':>9}  {'loss':>9}  {'non-zero':>8}  key")
        for entry in summary["busiest_keys"]:
            loss = entry["progressive_loss"]
            lines.append(
                f"  {entry['examples']:>9}  {f'{loss:.4g}' if loss is not None else '-':>9}  "
                f"{entry['nonzero_weights']:>8}  {entry['key']}"
            )
    lines.append("one key's model in full: polybeam inspect --model FOLDER --key KEY")
    return "\n".join(lines)
