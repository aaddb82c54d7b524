"""The learning curve: progressive loss and non-zero weights at doubling example counts, as VW prints them.

A learner records a point each time the examples it has learned in the
current pass reach 1, 2, 4, 8, ... (or, with ``every=N``, N, 2N, 3N, ...: VW's
``-P N``): the pass, the examples so far, their
importance weight and loss sums (so the progressive loss so far, and since
the previous point), and how many weights are non-zero then. The model keeps
the points (``metadata["learning_curve"]``) for ``polybeam plot``, and a
``progress`` callback sees each point as it is made (the Beam transforms use
it for the progress line and the metrics).

Learners that learn in parallel merge their curves point by point: the k-th
points of a pass add their examples, weights and losses (the job's progress
when each learner had learned its first 2^k, or k*N, examples) and keep the largest
non-zero count.

>>> curve = LearningCurve()
>>> curve.room(), curve.advance(1)  # one example until the first point; it is due
(1, True)
>>> curve.record(pass_number=1, examples=1, weight=1.0, loss=0.5, nonzero=3)["progressive_loss"]
0.5
>>> curve.room(), curve.next_count, curve.advance(1)
(1, 2, True)

Every 1000 examples instead:

>>> steady = LearningCurve(every=1000)
>>> steady.room(), steady.advance(999), steady.advance(1), steady.next_count
(1000, False, True, 2000)
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable


def _ratio(loss: float, weight: float) -> float | None:
    """A mean loss; None (JSON's null, equal to itself) where no importance weight was seen."""
    return loss / weight if weight > 0 else None


def _with_means(point: dict, previous: dict | None) -> dict:
    """``point`` with its progressive loss and its loss since ``previous`` (the pass's last point, or None)."""
    point["progressive_loss"] = _ratio(point["loss"], point["weight"])
    point["since_last"] = _ratio(
        point["loss"] - (previous["loss"] if previous else 0.0),
        point["weight"] - (previous["weight"] if previous else 0.0),
    )
    return point


class LearningCurve:
    """The points of one learner (see the module docstring)."""

    def __init__(self, points: Iterable[dict] | None = None, *, in_pass: int = 0, every: int = 0):
        if every < 0:
            raise ValueError(f"curve points come every N > 0 examples, or at doubling counts (0); got {every}")
        self.points: list[dict] = [dict(point) for point in points or ()]
        self.in_pass = in_pass  # examples learned in the current pass
        self.every = every  # examples between points; 0: at doubling counts
        # Told of each point with the curve (not saved: each process sets its own).
        self.progress: Callable[[dict, LearningCurve], None] | None = None

    @property
    def next_count(self) -> int:
        """The in-pass example count of the next point: the next power of 2 (or multiple of ``every``)."""
        if self.every:
            return (self.in_pass // self.every + 1) * self.every
        return 1 << self.in_pass.bit_length() if self.in_pass else 1

    def room(self) -> int:
        """Examples to learn before the next point."""
        return self.next_count - self.in_pass

    def advance(self, examples: int) -> bool:
        """Count ``examples`` learned; whether the next point is due now."""
        self.in_pass += examples
        if self.every:
            return self.in_pass % self.every == 0
        return self.in_pass & (self.in_pass - 1) == 0  # a power of 2

    def record(self, *, pass_number: int, examples: int, weight: float, loss: float, nonzero: int) -> dict:
        """Add a point (``examples``, ``weight`` and ``loss`` are the pass's sums so far)."""
        previous = self.points[-1] if self.points and self.points[-1]["pass"] == pass_number else None
        point = {
            "pass": pass_number,
            "examples": int(examples),
            "weight": float(weight),
            "loss": float(loss),
            "nonzero": int(nonzero),
        }
        self.points.append(_with_means(point, previous))
        if self.progress is not None:
            self.progress(point, self)
        return point

    def start_pass(self) -> None:
        self.in_pass = 0

    def to_state(self) -> dict:
        return {"points": self.points, "in_pass": self.in_pass, "every": self.every}

    @classmethod
    def from_state(cls, state: dict | None) -> LearningCurve:
        state = state or {}
        return cls(state.get("points", ()), in_pass=int(state.get("in_pass", 0)), every=int(state.get("every", 0)))

    @classmethod
    def merged(cls, curves: Iterable[LearningCurve], current_pass: int) -> LearningCurve:
        """The curves of learners that learned ``current_pass`` in parallel (see the module docstring).

        Points of earlier passes came with the state every learner started from: they are kept once.
        """
        curves = list(curves)
        points = [dict(point) for point in curves[0].points if point["pass"] < current_pass]
        by_rank: dict[int, dict] = {}
        for curve in curves:
            rank = 0
            for point in curve.points:
                if point["pass"] != current_pass:
                    continue
                merged = by_rank.get(rank)
                if merged is None:
                    by_rank[rank] = dict(point)
                else:
                    for name in ("examples", "weight", "loss"):
                        merged[name] += point[name]
                    merged["nonzero"] = max(merged["nonzero"], point["nonzero"])
                rank += 1
        previous = None
        for rank in sorted(by_rank):
            previous = _with_means(by_rank[rank], previous)
            points.append(previous)
        return cls(points, in_pass=sum(curve.in_pass for curve in curves), every=curves[0].every)


def progress_line(point: dict, rate: float) -> str:
    """One progress line (VW's columns: progressive loss so far and since the last line)."""
    speed = f"{rate:8.0f} ex/s" if math.isfinite(rate) else "       - ex/s"

    def loss(value):
        return "-" if value is None else f"{value:.6f}"

    return (
        f"polybeam[{os.getpid()}] pass {point['pass']} {point['examples']:>10} examples {speed}  "
        f"progressive loss {loss(point['progressive_loss'])}  since last {loss(point['since_last'])}  "
        f"non-zero {point['nonzero']}"
    )
