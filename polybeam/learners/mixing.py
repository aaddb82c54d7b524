"""Parameter mixing in one process: every pass split over N learners as N workers would learn it.

On a cluster, ``Train`` learns a pass with one learner per bundle (a fresh one
in the first pass, a copy of the last average in later ones) and averages them
(:mod:`polybeam.transforms.passes`, the per-coordinate weighted mean of
:mod:`polybeam.learners.averaging`). How much that average loses against one
learner over all the data depends on how many learners there were, which one
machine never shows. :func:`mixed_pass` learns a pass the way N workers would:
the pass's examples cut into N contiguous, near-equal shares (as a runner
splits a file), each learned by its own copy of the learner as the pass began,
the copies averaged by the learners' own ``merge`` (what the combine's
``merge_accumulators`` calls), a few at a time as a worker merges the partial
learners the runner hands it. ``polybeam train --learners N`` and
``fit(..., learners=N)`` train so (see :func:`polybeam.learners.fitting.train_passes`).

The average is the same whatever the grouping of the merges (they are
weighted means carrying their weights, see :mod:`polybeam.learners.averaging`),
up to rounding.

>>> from polybeam.learners.batch import ExampleBatch
>>> from polybeam.learners.config import LearnerConfig
>>> from polybeam.learners.linear import LinearLearner
>>> batch = ExampleBatch.from_rows([(1.0, {1: 1.0}), (-1.0, {2: 1.0})] * 50)
>>> [sum(len(part) for part in share) for share in shares([batch, batch], 3)]
[67, 66, 67]
>>> learner = mixed_pass(LinearLearner(LearnerConfig(loss="logistic")), shares([batch], 4))
>>> learner.examples_seen
100
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from polybeam.learners.batch import ExampleBatch

# How many partial learners one merge takes at once: a worker merges what the runner hands it, a few at a
# time, and holding all of 256 dense learners of 2**18 slots at once would take 2.5 GB.
MERGE_GROUP = 16


def shares(parts: Sequence[ExampleBatch], learners: int) -> list[list[ExampleBatch]]:
    """The rows of ``parts`` (in order) cut into ``learners`` contiguous, near-equal shares, each a list of
    views of the parts' rows (no copy). A share may be empty when there are fewer rows than learners."""
    if learners < 1:
        raise ValueError(f"learners must be at least 1, got {learners}")
    sizes = np.array([len(part) for part in parts], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    edges = np.linspace(0, int(starts[-1]), learners + 1).round().astype(np.int64)
    out: list[list[ExampleBatch]] = []
    for low, high in zip(edges[:-1].tolist(), edges[1:].tolist()):
        share = []
        index = max(int(np.searchsorted(starts, low, side="right")) - 1, 0)
        while index < len(parts) and starts[index] < high:
            begin, end = max(low - int(starts[index]), 0), min(high - int(starts[index]), int(sizes[index]))
            if end > begin:
                part = parts[index]
                share.append(part if (begin, end) == (0, len(part)) else part.rows_between(begin, end))
            index += 1
        out.append(share)
    return out


def mixed_pass(learner, pass_shares: Sequence[Sequence[ExampleBatch]], *, prepare=None):
    """Learn one pass split over ``len(pass_shares)`` learners: each share learned, batch by batch, by its
    own copy of ``learner`` as the pass begins (``prepare(batch)``, when given, returns what a learner learns
    of a batch: say, its rows in a new order), then averaged into ``learner`` (in place, which it returns).
    A share without examples makes no learner, as a worker without a bundle makes none."""
    prepare = prepare if prepare is not None else (lambda batch: batch)
    origin = learner.copy() if len(pass_shares) > 1 else None
    averaged = 0
    group: list = []
    for number, share in enumerate(pass_shares):
        if not any(len(batch) for batch in share):
            continue
        partial = learner if averaged == 0 else origin.copy()
        for batch in share:
            partial.learn(prepare(batch))
        if partial is not learner:
            group.append(partial)
        averaged += 1
        if len(group) == MERGE_GROUP or (group and number == len(pass_shares) - 1):
            learner.merge(group)
            group = []
    if group:
        learner.merge(group)
    return learner


def learner_total(count: int, passes: int, learners: int | None) -> int:
    """The examples one pass-1 learner spaces apple's epochs over (0: the doubling schedule).

    A lone learner spreads them over all passes. Several learners each see
    their share of the first pass, and their parents freeze when they are
    averaged after it (the paper's parallel apple), so each spreads its epochs
    over its share; when nobody knows how many learners the runner will make
    (a remote runner splits the input as it likes), each expands on the
    doubling schedule (after 1000, 2000, 4000, ... examples), whatever its share.

    >>> learner_total(1000, 3, 1), learner_total(1000, 3, 4), learner_total(1000, 3, None)
    (3000, 250, 0)
    """
    if learners == 1:
        return count * passes
    if learners:
        return max(1, count // learners)
    return 0
