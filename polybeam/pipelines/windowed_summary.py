"""``polybeam inspect`` on a folder of models per window: its windows in time order, from the index alone.

The figures come from the folder's ``index.json`` (one entry per window: its
bounds, examples, progressive loss and non-zero weights, and with a key how
many keys), never from the models themselves. ``--window NAME`` shows one
window's model in full (with ``--key K``, that key's model in that window).

>>> print(describe({"folder": "daily", "window_spec": "fixed:86400", "timestamp": "column:ts", "key": None,
...     "config": None, "examples": 30, "progressive_loss": 0.5, "nonzero_weights": 6,
...     "windows": [{"window": "window-20261101T000000Z-20261102T000000Z", "start": "2026-11-01T00:00:00Z",
...     "end": "2026-11-02T00:00:00Z", "examples": 30, "progressive_loss": 0.5, "nonzero_weights": 6}]}))
polybeam models per window: 1 windows (fixed:86400) of the times in column ts, in daily
trained on 30 examples; progressive loss over windows 0.5
non-zero weights: 6 in all
                 start                   end   examples       loss  non-zero
  2026-11-01T00:00:00Z  2026-11-02T00:00:00Z         30        0.5         6
one window's model in full: polybeam inspect --model daily --window window-20261101T000000Z-20261102T000000Z
"""

from __future__ import annotations

from polybeam.learners.config import LearnerConfig
from polybeam.learners.windows import TimestampSpec
from polybeam.transforms.windowed_files import WindowedFolder


def windowed_summary(folder: str) -> dict:
    """The summary of the windowed folder ``folder``: its windows in time order with their figures."""
    index = WindowedFolder(folder).index
    windows = []
    for name, entry in sorted(index["entries"].items(), key=lambda item: item[1].get("start_micros", 0)):
        row = {
            "window": name,
            "start": entry.get("start"),
            "end": entry.get("end"),
            "examples": entry.get("examples") or 0,
            "progressive_loss": entry.get("progressive_loss"),
            "nonzero_weights": entry.get("nonzero_weights") or 0,
        }
        if "folder" in entry:
            row["keys"] = entry.get("keys", 0)
        windows.append(row)
    scored = [(row["progressive_loss"], row["examples"]) for row in windows if row["progressive_loss"] is not None]
    weight = sum(examples for _, examples in scored)
    return {
        "folder": folder,
        "kind": "windows",
        "window_spec": index.get("window_spec"),
        "timestamp": index.get("timestamp"),
        "key": index.get("key"),
        "windows": windows,
        "examples": sum(row["examples"] for row in windows),
        "progressive_loss": sum(loss * examples for loss, examples in scored) / weight if weight else None,
        "nonzero_weights": sum(row["nonzero_weights"] for row in windows),
        "config": index.get("config"),
        "input": index.get("input"),
    }


def describe(summary: dict) -> str:
    """``summary`` as lines for a terminal: a line per window."""
    column = TimestampSpec.parse(summary["timestamp"]).column if summary.get("timestamp") else "?"
    keyed = summary.get("key") is not None
    lines = [
        f"polybeam models per window: {len(summary['windows'])} windows ({summary['window_spec']}) of the times in "
        f"column {column}" + (f", per key ({summary['key']})" if keyed else "") + f", in {summary['folder']}"
    ]
    config = LearnerConfig.from_dict(summary["config"]) if summary.get("config") else None
    if config is not None:
        lines.append(
            f"settings: loss={config.loss} step={config.step} bits={config.bits} passes={config.passes}"
            + (f" expand={config.expand}" if config.expand != "none" else "")
        )
    loss = summary["progressive_loss"]
    lines.append(
        f"trained on {summary['examples']} examples; progressive loss over windows "
        + (f"{loss:.6g}" if loss is not None else "n/a")
    )
    lines.append(f"non-zero weights: {summary['nonzero_weights']} in all")
    head = f"  {'start':>20}  {'end':>20}  {'examples':>9}  {'loss':>9}  {'non-zero':>8}"
    lines.append(head + ("  keys" if keyed else ""))
    for row in summary["windows"]:
        loss = row["progressive_loss"]
        line = (
            f"  {row['start']:>20}  {row['end']:>20}  {row['examples']:>9}  "
            f"{f'{loss:.4g}' if loss is not None else '-':>9}  {row['nonzero_weights']:>8}"
        )
        lines.append(line + (f"  {row.get('keys', 0)}" if keyed else ""))
    if summary["windows"]:
        first = summary["windows"][0]["window"]
        lines.append(
            f"one window's model in full: polybeam inspect --model {summary['folder']} --window {first}"
            + (" --key KEY" if keyed else "")
        )
    return "\n".join(lines)


def window_model(folder: str, window: str, key: str | None = None):
    """The model of ``window`` (its name, or its start as the summary shows it) in ``folder``, of ``key`` in it
    with a key; raises ValueError saying what the folder has instead."""
    windowed = WindowedFolder(folder)
    name = window
    if name not in windowed.windows:
        name = next((n for n, entry in windowed.windows.items() if entry.get("start") == window), None)
    if name is None:
        raise ValueError(
            f"{folder} has no window {window!r} (its windows are named window-START-END; "
            f"polybeam inspect --model {folder} lists them)"
        )
    keyed = windowed.index.get("key") is not None
    if keyed and key is None:
        raise ValueError(f"{folder} holds per-key models in each window: add --key KEY")
    if not keyed and key is not None:
        raise ValueError(f"{folder} holds one model per window, not per key: leave out --key")
    model = windowed.model((name, key) if keyed else name)
    if model is None:
        raise ValueError(f"{folder} has no model for key {key!r} in {name}")
    return model
