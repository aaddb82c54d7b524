"""Learning on a helper thread while the caller reads the next batches.

A Beam worker reads, parses and learns in one thread: each batch is parsed,
then learned, then the next one is parsed. The parsers and the learners are
numba kernels that release the GIL, so the two can overlap: a
:class:`BackgroundLearner` hands each batch to a helper thread and returns at
once, at most :data:`MAX_PENDING` batches ahead, and waits for them only when
the learner itself is needed (merging, compacting, extracting a model,
pickling). VW overlaps its parser and learner the same way.

Batches of one learner are learned in order, on one thread: the result is
exactly that of learning them in the caller's thread. Learners are spread over
a few helper threads (one per core but one), so that many per-key learners do
not mean many threads. An error raised while learning reaches the caller at
its next call.

>>> from polybeam.learners.batch import ExampleBatch
>>> from polybeam.learners.linear import LinearLearner
>>> batch = ExampleBatch.from_rows([(1.0, {1: 1.0}), (-1.0, {2: 1.0})] * 50)
>>> background = BackgroundLearner(LinearLearner())
>>> for _ in range(4):
...     _ = background.learn(batch)
>>> background.settle().examples_seen
400
"""

from __future__ import annotations

import itertools
import os
import threading
from collections import deque
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor

from polybeam.learners.batch import ExampleBatch

# Batches a learner may have queued on its helper thread: enough to keep it busy
# while the caller parses the next one, few enough to bound the memory held.
MAX_PENDING = 2

_lanes: list[ThreadPoolExecutor] = []
_next_lane = itertools.count()
_lock = threading.Lock()


def _forget_lanes() -> None:
    # A forked child has none of its parent's threads: it must start its own.
    global _lanes, _lock
    _lanes = []
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_lanes)


def available_cores() -> int:
    """Cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _lane() -> ThreadPoolExecutor | None:
    """A helper thread for a new learner, or None on a single core (then it learns in the caller's thread)."""
    cores = available_cores()
    if cores < 2:
        return None
    with _lock:
        if not _lanes:
            _lanes.extend(
                ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"polybeam-learn-{i}")
                for i in range(max(1, cores - 1))
            )
        return _lanes[next(_next_lane) % len(_lanes)]


def wait_idle(timeout: float = 5.0) -> None:
    """Wait (at most ``timeout`` seconds) until every helper thread has learned what it was given.

    A job that failed may leave batches on the helper threads (a worker failed on one file while a learner was
    still on the batches of another): their progress lines then come before the command's error, not after it.
    """
    with _lock:
        lanes = list(_lanes)
    futures.wait([lane.submit(int) for lane in lanes], timeout=timeout)


def _learn(learner, batch: ExampleBatch, total: int | None) -> None:
    if total is not None:
        learner.expect(total)
    learner.learn(batch)


class BackgroundLearner:
    """Wraps a learner (linear or polynomial) so that :meth:`learn` returns before learning is done."""

    def __init__(self, learner):
        self.learner = learner
        self._lane = _lane()
        self._pending: deque[Future] = deque()

    def learn(self, batch: ExampleBatch, total: int | None = None) -> BackgroundLearner:
        """Queue ``batch`` (``total``: the examples of all passes, for apple's schedule; see ``expect``)."""
        if self._lane is None:
            _learn(self.learner, batch, total)
            return self
        while len(self._pending) >= MAX_PENDING:
            self._pending.popleft().result()
        self._pending.append(self._lane.submit(_learn, self.learner, batch, total))
        return self

    def settle(self):
        """The learner, once every queued batch is learned (re-raises a learning error)."""
        while self._pending:
            self._pending.popleft().result()
        return self.learner

    def __getstate__(self) -> dict:
        return {"learner": self.settle()}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["learner"])

    def __repr__(self) -> str:
        return f"BackgroundLearner({self.learner!r}, {len(self._pending)} pending)"
