"""A learner fed by an unbounded stream, handing out numbered model versions.

:class:`StreamLearner` is what streaming training keeps per key between the batches that reach it: the
online learner itself, the number of the last version it handed out, the examples learned so far, and,
for each source (a file), the row ranges it has learned, so that a job started again after a crash
learns every example exactly once (:meth:`StreamLearner.unlearned` drops the rows a version already
holds). :meth:`StreamLearner.learn` takes batches in any order and learns them in the order they arrived
(then by source and row): a runner may hand a buffer's batches back in any order.

Each :meth:`StreamLearner.version` is a :class:`ModelVersion`: its number, the examples learned so far
and since the last version, the latest event time learned, the progressive loss since the last version
(each example's loss taken before learning it), and the model.

>>> import dataclasses
>>> import numpy as np
>>> from polybeam.learners.batch import ExampleBatch
>>> from polybeam.learners.config import LearnerConfig
>>> rows = [(1.0, {1: 1.0}), (-1.0, {2: 1.0})] * 50
>>> batch = ExampleBatch.from_rows(rows, bits=10)
>>> batch = dataclasses.replace(batch, source="a.vw", row_ids=np.arange(100, dtype=np.int64) * 10)
>>> stream = StreamLearner(LearnerConfig(loss="logistic", bits=10))
>>> stream.learn([(5.0, batch)])
100
>>> version = stream.version()
>>> version.number, version.examples, version.learned, version.watermark, version.progressive_loss < 0.69
(1, 100, 100, 5.0, True)
>>> len(stream.unlearned(batch))  # a version holds these rows: a restarted job skips them
0
>>> again = StreamLearner.from_bytes(stream.to_bytes())
>>> again.number, again.examples, again.ranges
(1, 100, {'a.vw': [[0, 990]]})
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Iterable

import numpy as np

from polybeam.learners import kernels
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.model import Model
from polybeam.learners.polynomial import linear_part, make_learner
from polybeam.learners.state_file import learner_to_bytes, read_learner_state


@dataclasses.dataclass
class ModelVersion:
    """One model version of a stream: ``number`` (1, 2, ...), ``examples`` learned in all versions so far,
    ``learned`` since the previous version, ``watermark`` (seconds since the epoch: the latest event time
    of an example learned; None when none had one), ``progressive_loss`` of the examples learned since the
    previous version (None when none were), ``created`` (wall clock), ``key`` (None: one model) and
    ``model``."""

    number: int
    examples: int
    learned: int
    watermark: float | None
    progressive_loss: float | None
    created: float
    model: Model
    key: str | None = None

    def summary(self) -> dict:
        """The version's entry in a model folder's index (everything but the model)."""
        return {
            "version": self.number,
            "examples": self.examples,
            "learned": self.learned,
            "watermark": self.watermark,
            "progressive_loss": self.progressive_loss,
            "created": self.created,
            **({"key": self.key} if self.key is not None else {}),
        }


def add_range(ranges: list[list[int]], start: int, stop: int) -> list[list[int]]:
    """``ranges`` (sorted, disjoint ``[first, last]`` row ids, both learned) with ``[start, stop]`` added,
    overlapping ranges joined (row ids are byte offsets of lines: neighbours are not ``last + 1``).

    >>> add_range([[0, 10], [30, 40]], 12, 29)
    [[0, 10], [12, 29], [30, 40]]
    >>> add_range([[0, 10], [30, 40]], 5, 35), add_range([], 3, 4)
    ([[0, 40]], [[3, 4]])
    """
    merged: list[list[int]] = []
    for first, last in sorted([*ranges, [start, stop]]):
        if merged and first <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], last)
        else:
            merged.append([first, last])
    return merged


def in_ranges(row_ids: np.ndarray, ranges: list[list[int]]) -> np.ndarray:
    """Which of ``row_ids`` fall in one of ``ranges`` (sorted, disjoint, inclusive).

    >>> in_ranges(np.array([0, 5, 11, 30]), [[0, 10], [30, 40]]).tolist()
    [True, True, False, True]
    """
    if not ranges:
        return np.zeros(len(row_ids), dtype=bool)
    bounds = np.asarray(ranges, dtype=np.int64)
    place = np.searchsorted(bounds[:, 0], row_ids, side="right") - 1
    return (place >= 0) & (row_ids <= bounds[np.maximum(place, 0), 1])


class StreamLearner:
    """One key's learner over an unbounded stream (see the module's docstring)."""

    def __init__(self, config: LearnerConfig, learner=None, *, number: int = 0, examples: int = 0, ranges=None):
        self.config = config
        # (apple spaces its expansions by examples seen: an unbounded stream has no total to plan by)
        self.learner = learner if learner is not None else make_learner(config)
        self.number = int(number)  # the last version handed out
        self.examples = int(examples)  # learned in all versions so far
        self.ranges: dict[str, list[list[int]]] = {k: [list(r) for r in v] for k, v in (ranges or {}).items()}
        self._since = self._loss_sums()  # (loss, weight) at the last version
        self._learned_since = 0
        self._watermark: float | None = None

    def _loss_sums(self) -> tuple[float, float]:
        stats = linear_part(self.learner).stats_
        return float(stats[kernels.LOSS_SUM]), float(stats[kernels.WEIGHT_SUM])

    def unlearned(self, batch: ExampleBatch) -> ExampleBatch:
        """``batch`` without the rows a version already holds (by its source and row ids; a batch without
        them is all new)."""
        ranges = self.ranges.get(batch.source) if batch.source is not None else None
        if not ranges or batch.row_ids is None or not len(batch):
            return batch
        seen = in_ranges(np.asarray(batch.row_ids), ranges)
        return batch if not seen.any() else batch.take(~seen)

    def learn(self, timed_batches: Iterable[tuple[float | None, ExampleBatch]]) -> int:
        """Learn ``(event time, batch)`` pairs in arrival order (event time, then source and first row); rows a
        version already holds are skipped. Returns the examples learned."""

        def order(pair):
            moment, batch = pair
            return (moment if moment is not None else -math.inf, *batch.read_place())

        learned = 0
        for moment, batch in sorted(timed_batches, key=order):
            fresh = self.unlearned(batch)
            if len(fresh):
                self.learner.learn(fresh)
                learned += len(fresh)
            if batch.source is not None and batch.row_ids is not None and len(batch):
                rows = self.ranges.get(batch.source, [])
                self.ranges[batch.source] = add_range(rows, int(np.min(batch.row_ids)), int(np.max(batch.row_ids)))
            if moment is not None:
                self._watermark = moment if self._watermark is None else max(self._watermark, moment)
        self.examples += learned
        self._learned_since += learned
        return learned

    def version(self, key: str | None = None) -> ModelVersion:
        """The next version: the model as it is now, and what was learned since the last one."""
        loss, weight = self._loss_sums()
        since_loss, since_weight = self._since
        progressive = (loss - since_loss) / (weight - since_weight) if weight > since_weight else None
        self.number += 1
        version = ModelVersion(
            number=self.number,
            examples=self.examples,
            learned=self._learned_since,
            watermark=self._watermark,
            progressive_loss=progressive,
            created=time.time(),
            model=self.learner.to_model(),
            key=key,
        )
        self._since, self._learned_since = (loss, weight), 0
        return version

    def to_bytes(self) -> bytes:
        """The whole state (a learner-state file whose info holds the version, counts and ranges)."""
        info = {"stream": {"version": self.number, "examples": self.examples, "ranges": self.ranges}}
        return learner_to_bytes(self.learner, info)

    @classmethod
    def from_bytes(cls, data: bytes) -> StreamLearner:
        learner, info = read_learner_state(data)
        stream = info.get("stream", {})
        return cls(
            learner.config,
            learner,
            number=stream.get("version", 0),
            examples=stream.get("examples", 0),
            ranges=stream.get("ranges", {}),
        )
