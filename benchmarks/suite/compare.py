"""Before/after tables of two suite runs (``run.py``'s JSON), per task and learner.

Run ``python benchmarks/suite/compare.py BEFORE.json AFTER.json [--title T] [--out FILE.md]``:
one table for the regression tasks (polybeam's learners and the peers of the
after run), one for the classification tasks whose polybeam errors moved by
more than the suite's margin (0.005), with the count of better and worse.

>>> before = {"results": {"t": {"task": "regression", "summary": {"polybeam": {"error": 1.2}, "vw": {"error": 0.9}}}}}
>>> after = {"results": {"t": {"task": "regression", "summary": {"polybeam": {"error": 0.8}, "vw": {"error": 0.9}}}}}
>>> print(render(before, after, "x").splitlines()[6])
| t | 1.2000 -> 0.8000 | 0.9000 |
"""

from __future__ import annotations

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]

from harness import markdown_table  # noqa: E402

MARGIN = 0.005
OURS = ("polybeam", "polybeam apple", "polybeam 20 passes")
PEERS = ("vw", "sklearn ridgecv", "sklearn batch")
# Issue 31: centring and the finishing stage against their alternatives, on log loss (``run.py`` records it).
LOSS_MARGIN = 0.002
ALTERNATIVES = (
    ("polybeam", "polybeam no-center"),
    ("polybeam 20 passes", "polybeam 20 passes no-center"),
    ("polybeam lbfgs", "polybeam"),
)


def _loss(result: dict, name: str) -> float | None:
    """Held-out log loss (classification) or relative MSE (regression) of ``name``, when recorded."""
    entry = result["summary"].get(name)
    if entry is None:
        return None
    return entry["error"] if result["task"] == "regression" else entry.get("log_loss")


def loss_sections(before: dict, after: dict) -> list[str]:
    """Log loss / relative MSE: every polybeam learner's moves of more than LOSS_MARGIN, and each default
    against its alternative in the after run (none when the runs did not record log loss).

    >>> run = {"results": {"t": {"task": "binary", "summary": {"polybeam": {"error": 0.1, "log_loss": 0.3}}}}}
    >>> loss_sections(run, run)[2]
    'None.'
    """
    old, new = before["results"], after["results"]
    learners = sorted({name for r in new.values() for name in r["summary"] if name.startswith("polybeam")})
    moved = []
    for task, result in new.items():
        for name in learners:
            a, b = (_loss(old[task], name) if task in old else None), _loss(result, name)
            if a is not None and b is not None and abs(b - a) > LOSS_MARGIN:
                moved.append([task, name, f"{a:.4f}", f"{b:.4f}", f"{b - a:+.4f}"])
    lines = [
        f"## Log loss (classification) or relative MSE (regression) that moved by more than {LOSS_MARGIN}",
        "",
        markdown_table(["task", "learner", "before", "after", "change"], moved) if moved else "None.",
        "",
    ]
    for ours, theirs in ALTERNATIVES:
        rows = [
            [task, f"{_loss(r, ours):.4f}", f"{_loss(r, theirs):.4f}", f"{_loss(r, ours) - _loss(r, theirs):+.4f}"]
            for task, r in new.items()
            if _loss(r, ours) is not None
            and _loss(r, theirs) is not None
            and _loss(r, ours) - _loss(r, theirs) > LOSS_MARGIN
        ]
        lines += [
            f"## After: {ours} worse than {theirs} by more than {LOSS_MARGIN} ({len(rows)} tasks)",
            "",
            markdown_table(["task", ours, theirs, "difference"], rows) if rows else "None.",
            "",
        ]
    return lines


def _error(summary: dict, name: str) -> float | None:
    return summary[name]["error"] if name in summary else None


def render(before: dict, after: dict, title: str) -> str:
    old, new = before["results"], after["results"]
    regression = [name for name, r in new.items() if r["task"] == "regression" and name in old]
    ours = [name for name in OURS if any(name in new[t]["summary"] for t in regression)]
    peers = [name for name in PEERS if any(name in new[t]["summary"] for t in regression)]

    def moved(task, name):
        a, b = _error(old[task]["summary"], name), _error(new[task]["summary"], name)
        return "" if b is None else f"{b:.4f}" if a is None else f"{a:.4f} -> {b:.4f}"

    rows = [
        [
            task,
            *(moved(task, name) for name in ours),
            *(
                "" if _error(new[task]["summary"], p) is None else f"{_error(new[task]['summary'], p):.4f}"
                for p in peers
            ),
        ]
        for task in regression
    ]
    changes, better, worse = [], 0, 0
    for task, result in new.items():
        if result["task"] == "regression" or task not in old:
            continue
        for name in OURS:
            a, b = _error(old[task]["summary"], name), _error(result["summary"], name)
            if a is None or b is None or abs(b - a) <= MARGIN:
                continue
            better, worse = better + (b < a), worse + (b > a)
            changes.append([task, result["task"], name, f"{a:.4f}", f"{b:.4f}", f"{b - a:+.4f}"])
    return "\n".join(
        [
            f"# {title}",
            "",
            "## Regression tasks: held-out MSE over the test labels' variance (before -> after)",
            "",
            markdown_table(["task", *ours, *peers], rows),
            "",
            f"## Classification tasks whose polybeam error moved by more than {MARGIN} ({better} better, {worse} worse)",
            "",
            markdown_table(["task", "kind", "learner", "before", "after", "change"], changes) if changes else "None.",
            "",
            *loss_sections(before, after),
        ]
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--title", default="The suite before and after")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    with open(args.before) as a, open(args.after) as b:
        markdown = render(json.load(a), json.load(b), args.title)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(markdown)
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
