"""Label order: whether the labels of a stream come sorted, or in long runs of one label.

An online learner learns in the order it is given: on examples sorted by
label it learns one class, then forgets it for the next, and ends predicting
the last (scikit-learn's digits sorted by label: accuracy 0.10, against 0.95
shuffled). :class:`LabelOrder` counts, batch by batch, what tells such an
order from a random one, and adds up across batches and workers:

* **label changes** between neighbouring examples, against how many a random
  order of the same labels would make: ``pairs * (1 - sum_k n_k (n_k - 1) /
  (n (n - 1)))`` for label values seen ``n_k`` times out of ``n`` (the runs
  test of Wald and Wolfowitz). Sorted or grouped labels change a few times
  per batch, a random order about as often as expected: the ratio is near 0
  for one and near 1 for the other.
* **drift** of the labels' shares from batch to batch: a random order gives
  every batch about the shares of the whole, sorted or partly mixed input (a
  shuffle buffer too small for it) gives each batch a few labels of its own.
  Measured as the batches' mean chi-square divergence from the whole,
  ``D = sum_b (n_b / n) sum_k (p_bk - p_k)^2 / p_k`` (``p_bk``: label ``k``'s
  share of batch ``b``), less what a random order gives by chance
  (``(B - 1)(K - 1) / (n - 1)`` for ``B`` batches and ``K`` labels). When
  each batch holds ``k`` of ``K`` equally common labels, ``D = K / k - 1``:
  ``1 / (1 + D)`` is the share of the labels' mix a batch holds. It is
  ``chi2 / n`` of the batches-by-labels table, whose chi-square adds up
  across batches from each label's ``sum_b n_bk^2 / n_b``:
  ``chi2 = n sum_k (sum_b n_bk^2 / n_b) / n_k - n``.
* **rises and falls** between neighbours, for labels of many values
  (regression targets: two random examples share a label less than
  :data:`MANY_VALUES` of the time), where nearly every neighbour differs
  whatever the order: sorted values only rise (or only fall); a random order
  rises about as often as it falls. (Class labels that cycle, 1, 2, ..., K,
  1, 2, ..., rise too, but change at every neighbour: the runs test judges
  them, and finds nothing wrong.)

Only neighbours within a batch count, and batches as they come (batches are
read in file order; the order of batches across workers is the runner's). The labels' values are
counted up to :data:`MAX_VALUES` distinct ones; beyond, the runs test needs
no more (a random order then changes label at nearly every neighbour).

>>> import numpy as np
>>> sorted_labels = np.repeat([1.0, 2.0, 3.0], 500)
>>> order = LabelOrder().add(sorted_labels)
>>> round(order.change_ratio, 3), order.sorted
(0.002, True)
>>> shuffled = LabelOrder().add(np.random.default_rng(0).permutation(sorted_labels))
>>> round(shuffled.change_ratio, 2), shuffled.sorted
(1.02, False)
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numba
import numpy as np

from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernels below)

# Distinct label values counted; beyond this many, the labels are taken as continuous.
MAX_VALUES = 1000
# A batch of at most this many label values (classes, mostly) is counted in one compiled pass; a batch of
# more, by sorting (np.unique). Sorting every batch cost a job's main thread about a fifth of a second a
# million examples.
FEW_VALUES = 64
# A random order changes label about as often as expected: on the bundled data in file order and the
# benchmark suite's training files (three seeds each; batches of 256 to 4,096), the ratio is 0.87 at the
# least where 50 or more changes are expected; the same labels sorted give at most 0.08 for classes
# (benchmarks/bench_label_order.py, docs/order.md).
MIN_CHANGE_RATIO = 0.5
# Fewer expected changes than this cannot tell an order from chance (a file of a few dozen examples).
MIN_EXPECTED_CHANGES = 50
# Labels are many-valued when two random examples share one less often than this (100 or more values:
# regression targets, not classes, which may come in cycles 1, 2, ..., K, 1, 2, ... that rise mostly).
MANY_VALUES = 0.01
# A random order of many-valued labels rises as often as it falls: |trend| at most 0.07 on the suite's
# training files; sorted labels give 1.
MAX_TREND = 0.5
# Neighbours that differ needed to judge rises against falls.
MIN_STEPS = 100
# Batches whose label shares drift this much mislead a learner: each holds under three quarters of the
# labels' mix. Letter recognition sorted by label through `train --shuffle-buffer` of 2,000 / 4,000 /
# 6,000 / 8,000 examples: drift 1.27 / 0.55 / 0.19 / 0.00, held-out error 0.45 / 0.34 / 0.33 / 0.32 (0.31
# in the file's order); the same 20 times over (320,000 examples), buffers of 2,000 / 4,000 / 8,000 /
# 30,000: drift 0.98 / 0.48 / 0.11 / 0.00, error 0.35 / 0.30 / 0.25 / 0.23. Random orders (the bundled
# data, the benchmark suite's training files) give at most 0.05 (benchmarks/results/label_order.md).
MAX_DRIFT = 1 / 3


class LabelOrder:
    """The counts of :mod:`polybeam.learners.label_order` over the batches seen (see the module docstring).

    Attributes
    ----------
    examples : int
        Labels counted.
    pairs : int
        Neighbouring pairs of labels (within a batch).
    changes, rises, falls : int
        Pairs whose labels differ, rise, fall.
    values : dict or None
        How many times each label value came (None: more than :data:`MAX_VALUES` distinct values).
    batches : int
        Batches counted.
    squares : dict or None
        For each label value, ``sum_b n_bk^2 / n_b`` over batches ``b`` (for :attr:`drift`).
    """

    def __init__(self):
        self.examples = 0
        self.pairs = 0
        self.changes = 0
        self.rises = 0
        self.falls = 0
        self.values: dict[float, int] | None = {}
        self.batches = 0
        self.squares: dict[float, float] | None = {}

    def add(self, labels: np.ndarray) -> LabelOrder:
        """Count one batch's labels, in their order (vectorised: no Python per example)."""
        labels = np.asarray(labels, dtype=np.float64)
        if len(labels) == 0:
            return self
        self.examples += len(labels)
        self.batches += 1
        self.pairs += len(labels) - 1
        rises, falls, distinct, counts = _count_labels(labels, FEW_VALUES)
        self.rises += rises
        self.falls += falls
        self.changes += rises + falls
        if self.values is not None:
            if len(distinct) > FEW_VALUES:  # (the kernel gave up: many values, which sorting counts faster)
                distinct, counts = np.unique(labels, return_counts=True)
            order = np.argsort(distinct)
            distinct, counts = distinct[order].tolist(), counts[order]
            self._count_values(zip(distinct, counts.tolist()), zip(distinct, (counts**2 / len(labels)).tolist()))
        return self

    def _count_values(self, counts: Iterable[tuple[float, int]], squares: Iterable[tuple[float, float]]) -> None:
        values, sums = self.values, self.squares
        for value, count in counts:
            values[value] = values.get(value, 0) + count
        for value, square in squares:
            sums[value] = sums.get(value, 0.0) + square
        if len(values) > MAX_VALUES:
            self.values = self.squares = None

    def merge(self, others: Iterable[LabelOrder]) -> LabelOrder:
        """Add the counts of ``others`` to this one (in place; returns it)."""
        for other in others:
            if other is self:
                continue
            self.examples += other.examples
            self.pairs += other.pairs
            self.changes += other.changes
            self.rises += other.rises
            self.falls += other.falls
            self.batches += other.batches
            if self.values is not None and other.values is not None:
                self._count_values(other.values.items(), other.squares.items())
            else:
                self.values = self.squares = None
        return self

    # -- what the counts say ----------------------------------------------------------------------

    @property
    def repeat_share(self) -> float:
        """How often two examples drawn at random (without replacement) share their label."""
        n = self.examples
        if n < 2 or self.values is None:
            return 0.0  # (more than MAX_VALUES values: as good as never)
        return sum(count * (count - 1) for count in self.values.values()) / (n * (n - 1))

    @property
    def expected_changes(self) -> float:
        """The label changes a random order of the same labels would make among ``pairs`` neighbours."""
        return self.pairs * (1.0 - self.repeat_share)

    @property
    def change_ratio(self) -> float:
        """Label changes seen over those a random order would make (NaN when none would)."""
        expected = self.expected_changes
        return self.changes / expected if expected > 0 else math.nan

    @property
    def trend(self) -> float:
        """``(rises - falls) / (rises + falls)``: +1 for ascending labels, -1 descending, near 0 in a
        random order (NaN when no neighbours differ)."""
        steps = self.rises + self.falls
        return (self.rises - self.falls) / steps if steps else math.nan

    @property
    def drift(self) -> float:
        """How far the batches' label shares are from the whole's, beyond chance: their mean chi-square
        divergence less a random order's (0: alike; ``K / k - 1`` when each batch holds ``k`` of ``K``
        equally common labels; NaN: one batch, one label, or more than MAX_VALUES values)."""
        n, values = self.examples, self.values
        if self.batches < 2 or values is None or len(values) < 2:
            return math.nan
        chi2 = n * sum(self.squares[value] / count for value, count in values.items()) - n
        chance = (self.batches - 1) * (len(values) - 1) * n / (n - 1)  # (its mean under random orders)
        return max(chi2 - chance, 0.0) / n

    @property
    def drifting(self) -> bool:
        """Whether the labels' shares drift from batch to batch: each holds under three quarters of the
        labels' mix, beyond chance."""
        return self.drift > MAX_DRIFT

    @property
    def runs(self) -> bool:
        """Whether the labels come in runs far longer than a random order's."""
        return self.expected_changes >= MIN_EXPECTED_CHANGES and self.change_ratio < MIN_CHANGE_RATIO

    @property
    def monotone(self) -> bool:
        """Whether many-valued labels mostly rise (or mostly fall) from one example to the next."""
        many_valued = self.repeat_share < MANY_VALUES
        return many_valued and self.rises + self.falls >= MIN_STEPS and abs(self.trend) > MAX_TREND

    @property
    def sorted(self) -> bool:
        """Whether the order would mislead an online learner: long runs of one label, shares that drift
        from batch to batch, or sorted labels."""
        return self.runs or self.drifting or self.monotone

    def warning(self, remedy: str) -> str | None:
        """One line saying what is wrong with the order and ``remedy``, or None when nothing is."""
        if self.runs:
            found = (
                f"the labels come in long runs: {self.changes} label changes between neighbouring examples "
                f"where a random order would make about {self.expected_changes:.0f}"
            )
        elif self.drifting:
            found = (
                f"the labels' shares drift through the input: its batches hold about {1 / (1 + self.drift):.0%} "
                "of its mix of labels each, where a random order gives each all of it"
            )
        elif self.monotone:
            direction = "rise" if self.trend > 0 else "fall"
            share = max(self.rises, self.falls) / (self.rises + self.falls)
            found = f"the labels come sorted: {share:.0%} of neighbouring examples {direction}"
        else:
            return None
        return f"{found}; an online learner then learns mostly the last labels it sees: {remedy}"

    def to_dict(self) -> dict:
        """The counts and what they say (JSON-able: a report's ``label_order``)."""
        return {
            "examples": self.examples,
            "label_changes": self.changes,
            "expected_changes": round(self.expected_changes, 3),
            "change_ratio": None if math.isnan(self.change_ratio) else round(self.change_ratio, 4),
            "drift": None if math.isnan(self.drift) else round(self.drift, 4),
            "trend": None if math.isnan(self.trend) else round(self.trend, 4),
            "sorted": self.sorted,
        }

    def __repr__(self) -> str:
        return (
            f"LabelOrder(examples={self.examples}, changes={self.changes}, "
            f"expected={self.expected_changes:.1f}, trend={self.trend:.3f})"
        )


@numba.njit(cache=True, nogil=True)
def _count_labels(labels, limit):
    """``(rises, falls, values, counts)`` of a batch's labels in order: neighbours that rise and fall, and
    each distinct value's count (in order of appearance), or ``limit + 1`` values and no counts once
    there are more than ``limit`` of them."""
    rises = falls = 0
    for i in range(1, labels.shape[0]):
        rises += labels[i] > labels[i - 1]
        falls += labels[i] < labels[i - 1]
    values = np.empty(limit + 1)
    counts = np.zeros(limit + 1, dtype=np.int64)
    found = 0
    for label in labels:
        k = 0
        while k < found and values[k] != label:
            k += 1
        if k == found:
            if found == limit:
                return rises, falls, values, counts[:0]
            values[found] = label
            found += 1
        counts[k] += 1
    return rises, falls, values[:found], counts[:found]
