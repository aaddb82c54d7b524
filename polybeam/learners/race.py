"""Centring's race block by block: keep centring only where its lower loss is more than noise.

A learner that centres (:mod:`polybeam.learners.centring`) races an uncentred
copy of itself over the first pass (``LinearLearner.centring_verdict``). Both
predict each example before learning it, so the difference of their
progressive losses estimates the difference of their losses on new data. On a
few hundred examples that estimate is noisy: centring that wins the race by 3%
can lose on held-out data by more (the suite's Soybean, Zoo). Centring changes
the model's trajectory and can only cost where it does not condition anything,
so the simpler learner, without centring, is the default and centring has to
show its gain: it is kept only when the uncentred learner's mean loss exceeds
the centred one's by :data:`GAIN_STANDARD_ERRORS` standard error.

The standard error comes from blocks of :data:`BLOCK` examples (longer ones
in long races, see :data:`GROWTH`). Both learners
split their examples at the same counts and record each block's loss and
importance; the block differences of the two sums ``S_k`` over importance
``n_k`` give the per-example variance ``sum_k (S_k - n_k D)^2 / n_k / (K - 1)``
(``D`` the mean difference), blocks of unequal size (a worker's last one)
included. Blocks, not examples, because the kernels learn whole batches and
count sums; examples within a block are averaged, which keeps the estimate
honest for losses that drift along the pass.

>>> race = RaceBlocks.start(block=2)
>>> stats = np.zeros(kernels.N_STATS)
>>> for loss in (1.0, 3.0, 2.0):  # three examples, one at a time
...     stats[kernels.LOSS_SUM] += loss; stats[kernels.WEIGHT_SUM] += 1.0
...     race.advance(1, stats)
>>> race.closed(stats)  # two blocks: the first full, the second open
(array([4., 2.]), array([2., 1.]))
>>> shown, gain, error = gain_shown(np.array([1.0, 1.0, 1.0]), np.array([2.0, 2.1, 1.9]), np.ones(3))
>>> shown, round(gain, 6), round(error, 6)  # differences 1, 1.1, 0.9: variance 0.01, error sqrt(0.01 / 3)
(True, 1.0, 0.057735)
>>> gain_shown(np.array([1.0, 1.0, 1.0]), np.array([2.0, 0.5, 1.0]), np.ones(3))[0]
False
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

import numpy as np

from polybeam.learners import kernels

# Examples per block of the race: small enough that a race of a hundred examples has a few blocks to
# estimate its noise from. Past GROWTH blocks, a block is a GROWTH-th of the examples before it, so that a
# race of a hundred thousand examples splits its learning a thousand times, not six thousand (splitting
# costs a kernel call, about 10 microseconds).
BLOCK = 16
GROWTH = 256
# Standard errors by which centring's progressive loss must beat the uncentred learner's: the
# one-standard-error rule of model selection (the simpler model unless the other is better by more than
# its error). Chosen before measuring; the suite (benchmarks/results/suite_centring_race.md) then showed
# centring kept on every task where it helps by more than its noise.
GAIN_STANDARD_ERRORS = 1.0


@dataclasses.dataclass
class RaceBlocks:
    """One racing learner's loss and importance, block by block, over the first pass.

    ``losses`` and ``weights`` hold the closed blocks, of ``examples`` examples
    in all; the open block runs from the pass statistics ``mark`` (loss and
    importance sums) over ``in_block`` examples.
    """

    block: int = BLOCK
    losses: list[float] = dataclasses.field(default_factory=list)
    weights: list[float] = dataclasses.field(default_factory=list)
    mark: tuple[float, float] = (0.0, 0.0)
    in_block: int = 0
    examples: int = 0

    @classmethod
    def start(cls, stats: np.ndarray | None = None, *, block: int = BLOCK) -> RaceBlocks:
        """A record whose first block starts at the pass statistics ``stats`` (None: zero)."""
        return cls(block=block, mark=_sums(stats) if stats is not None else (0.0, 0.0))

    def copy(self) -> RaceBlocks:
        """An independent record (its block lists copied)."""
        return dataclasses.replace(self, losses=list(self.losses), weights=list(self.weights))

    def room(self) -> int:
        """Examples to learn before the open block closes."""
        return self._length() - self.in_block

    def _length(self) -> int:
        return max(self.block, self.examples // GROWTH)

    def advance(self, examples: int, stats: np.ndarray) -> None:
        """Count ``examples`` learned (at most :meth:`room`), the pass statistics now ``stats``."""
        self.in_block += examples
        if self.in_block >= self._length():
            self._close(stats)

    def _close(self, stats: np.ndarray) -> None:
        loss, weight = _sums(stats)
        self.losses.append(loss - self.mark[0])
        self.weights.append(weight - self.mark[1])
        self.examples += self.in_block
        self.mark, self.in_block = (loss, weight), 0

    def closed(self, stats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(losses, weights)`` per block, the open block (if it holds examples) the last."""
        losses, weights = list(self.losses), list(self.weights)
        if self.in_block:
            loss, weight = _sums(stats)
            losses.append(loss - self.mark[0])
            weights.append(weight - self.mark[1])
        return np.array(losses), np.array(weights)

    @classmethod
    def merged(cls, records: Iterable[tuple[RaceBlocks, np.ndarray]], stats: np.ndarray) -> RaceBlocks:
        """The blocks of several workers' records (each with its pass statistics), their open blocks
        closed, continuing from the merged pass statistics ``stats``."""
        losses: list[float] = []
        weights: list[float] = []
        block, examples = BLOCK, 0
        for record, own_stats in records:
            record_losses, record_weights = record.closed(own_stats)
            losses.extend(record_losses.tolist())
            weights.extend(record_weights.tolist())
            block, examples = record.block, examples + record.examples + record.in_block
        return cls(block=block, losses=losses, weights=weights, mark=_sums(stats), examples=examples)

    def to_state(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_state(cls, state: dict | None) -> RaceBlocks | None:
        if state is None:
            return None
        return cls(**{**state, "mark": tuple(state["mark"])})


def _sums(stats: np.ndarray) -> tuple[float, float]:
    return float(stats[kernels.LOSS_SUM]), float(stats[kernels.WEIGHT_SUM])


def gain_shown(
    centred: np.ndarray, uncentred: np.ndarray, weights: np.ndarray, standard_errors: float = GAIN_STANDARD_ERRORS
) -> tuple[bool, float, float]:
    """``(shown, gain, standard_error)``: whether the uncentred learner's mean loss per unit of importance
    exceeds the centred one's (``gain``) by ``standard_errors`` of its standard error, from the two
    learners' loss sums and the importance of the same blocks. Fewer than two blocks with importance
    show nothing (the error is unknown: NaN)."""
    used = weights > 0
    centred, uncentred, weights = centred[used], uncentred[used], weights[used]
    total = float(weights.sum())
    if total <= 0:
        return False, float("nan"), float("nan")
    with np.errstate(over="ignore", invalid="ignore"):  # a diverging learner's losses: NaN shows nothing
        differences = uncentred - centred
        gain = float(differences.sum() / total)
        if len(weights) < 2:
            return False, gain, float("nan")
        variance = float(((differences - weights * gain) ** 2 / weights).sum() / (len(weights) - 1))
    error = math.sqrt(variance / total) if variance >= 0 else float("nan")
    return bool(gain > standard_errors * error), gain, error
