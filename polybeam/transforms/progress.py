"""Training progress: a line on stderr at doubling example counts (or every N examples), like VW's, and the
same figures as Beam metrics.

Each learner's learning curve (:mod:`polybeam.learners.curve`) calls a
:class:`Progress` at 1, 2, 4, 8, ... examples of a pass, or at N, 2N, 3N, ...
with ``every=N`` (``polybeam train -P N``, VW's ``-P``). It prints

    polybeam[4242] pass 1       8192 examples   210534 ex/s  progressive loss 0.291733  since last 0.278120  non-zero 57

on stderr (unless quiet: ``--quiet``) and counts the same figures as Beam
metrics in the ``polybeam.train`` namespace, which a runner's UI shows:
``progressive_loss_micros``, ``examples_per_second`` and
``nonzero_weights_at_doubling`` (distributions of every point's figure; the loss
in millionths, as Beam's metrics hold integers), ``latest_progressive_loss_micros``
(a gauge: the progressive loss of the latest point, where the distribution
would average the points), beside the ``learned_examples`` counter the
training DoFns keep.

The learner may learn on a helper thread (see
:mod:`polybeam.learners.background`), and Beam's metrics belong to the
bundle's thread: points are printed when they are made and published as
metrics by :meth:`Progress.publish`, which the DoFns and CombineFns call from
their own thread.
"""

from __future__ import annotations

import math
import sys
import threading
import time

from apache_beam.metrics import Metrics

from polybeam.learners.curve import progress_line as line
from polybeam.learners.holdout import holdout_progress_line
from polybeam.learners.polynomial import linear_part

__all__ = ["NAMESPACE", "Progress", "holdout_progress_line", "line"]

NAMESPACE = "polybeam.train"


class Progress:
    """Prints and publishes learning-curve points (see the module docstring)."""

    def __init__(self, *, quiet: bool = False, every: int = 0):
        self.quiet = quiet
        self.every = every  # examples between points; 0: at doubling counts
        self._lock = threading.Lock()
        self._pending: list[tuple[dict, float]] = []
        self._started: dict[tuple[int, int], float] = {}
        self._attached: dict[int, float] = {}
        self._learned = Metrics.counter(NAMESPACE, "learned_examples")
        self._loss = Metrics.distribution(NAMESPACE, "progressive_loss_micros")
        self._latest_loss = Metrics.gauge(NAMESPACE, "latest_progressive_loss_micros")
        self._speed = Metrics.distribution(NAMESPACE, "examples_per_second")
        self._nonzero = Metrics.distribution(NAMESPACE, "nonzero_weights_at_doubling")

    def learned(self, examples: int) -> None:
        """Count examples learned (from the bundle's thread)."""
        self._learned.inc(examples)

    def attach(self, learner):
        """Make ``learner`` (linear or polynomial) report its points here, on this schedule; returns it."""
        curve = linear_part(learner).curve_
        curve.progress = self
        curve.every = self.every
        if self.every:  # the clock of a pass whose first point comes after N examples (see __call__)
            with self._lock:
                self._attached[id(curve)] = time.perf_counter()
        return learner

    def __call__(self, point: dict, curve) -> None:
        now = time.perf_counter()
        with self._lock:
            # Each learner's pass has its clock: from its first example (the point at 1), or, when the first
            # point comes later (every N examples), from when the learner was attached to learn the pass.
            key = (id(curve), point["pass"])
            if point["examples"] == 1 or key not in self._started:
                attached = self._attached.pop(id(curve), now)
                self._started[key] = attached if point["examples"] > 1 else now
            seconds = now - self._started[key]
            rate = point["examples"] / seconds if seconds > 0 else float("nan")
            self._pending.append((point, rate))
        if not self.quiet:
            print(line(point, rate), file=sys.stderr, flush=True)

    def publish(self) -> None:
        """Count the points made so far as Beam metrics (call from the bundle's thread)."""
        with self._lock:
            pending, self._pending = self._pending, []
        for point, rate in pending:
            if point["progressive_loss"] is not None and math.isfinite(point["progressive_loss"]):
                micros = int(round(point["progressive_loss"] * 1e6))
                self._loss.update(micros)
                self._latest_loss.set(micros)
            if math.isfinite(rate):
                self._speed.update(int(rate))
            self._nonzero.update(point["nonzero"])

    def __getstate__(self):
        return {"quiet": self.quiet, "every": self.every}

    def __setstate__(self, state):
        self.__init__(quiet=state["quiet"], every=state.get("every", 0))
