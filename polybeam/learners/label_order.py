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
* **rises and falls** between neighbours, for labels of many values
  (regression targets: two random examples share a label less than
  :data:`MANY_VALUES` of the time), where nearly every neighbour differs
  whatever the order: sorted values only rise (or only fall); a random order
  rises about as often as it falls. (Class labels that cycle, 1, 2, ..., K,
  1, 2, ..., rise too, but change at every neighbour: the runs test judges
  them, and finds nothing wrong.)

Only neighbours within a batch count (batches are read in file order; the
order of batches across workers is the runner's). The labels' values are
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

import numpy as np

# Distinct label values counted; beyond this many, the labels are taken as continuous.
MAX_VALUES = 1000
# A random order changes label about as often as expected: measured on the bundled data (file order) and
# the benchmark suite's training files (three seeds each), the ratio is 0.80 at the least (85 examples),
# 0.96 from 1,000 examples on; the same labels sorted give at most 0.08 for classes (see docs/order.md).
MIN_CHANGE_RATIO = 0.5
# Fewer expected changes than this cannot tell an order from chance (a file of a few dozen examples).
MIN_EXPECTED_CHANGES = 50
# Labels are many-valued when two random examples share one less often than this (20 or more values).
MANY_VALUES = 0.05
# A random order of many-valued labels rises as often as it falls: |trend| at most 0.07 on the suite's
# training files; sorted labels give 1.
MAX_TREND = 0.5
# Neighbours that differ needed to judge rises against falls.
MIN_STEPS = 100


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
    """

    def __init__(self):
        self.examples = 0
        self.pairs = 0
        self.changes = 0
        self.rises = 0
        self.falls = 0
        self.values: dict[float, int] | None = {}

    def add(self, labels: np.ndarray) -> LabelOrder:
        """Count one batch's labels, in their order (vectorised: no Python per example)."""
        labels = np.asarray(labels, dtype=np.float64)
        if len(labels) == 0:
            return self
        self.examples += len(labels)
        self.pairs += len(labels) - 1
        rises = int(np.count_nonzero(labels[1:] > labels[:-1]))
        falls = int(np.count_nonzero(labels[1:] < labels[:-1]))
        self.rises += rises
        self.falls += falls
        self.changes += rises + falls
        if self.values is not None:
            distinct, counts = np.unique(labels, return_counts=True)
            self._count_values(zip(distinct.tolist(), counts.tolist()))
        return self

    def _count_values(self, pairs: Iterable[tuple[float, int]]) -> None:
        values = self.values
        for value, count in pairs:
            values[value] = values.get(value, 0) + count
        if len(values) > MAX_VALUES:
            self.values = None

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
            if self.values is not None and other.values is not None:
                self._count_values(other.values.items())
            else:
                self.values = None
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
        """Whether the order would mislead an online learner: long runs of one label, or sorted labels."""
        return self.runs or self.monotone

    def warning(self, remedy: str) -> str | None:
        """One line saying what is wrong with the order and ``remedy``, or None when nothing is."""
        if self.runs:
            found = (
                f"the labels come in long runs: {self.changes} label changes between neighbouring examples "
                f"where a random order would make about {self.expected_changes:.0f}"
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
            "trend": None if math.isnan(self.trend) else round(self.trend, 4),
            "sorted": self.sorted,
        }

    def __repr__(self) -> str:
        return (
            f"LabelOrder(examples={self.examples}, changes={self.changes}, "
            f"expected={self.expected_changes:.1f}, trend={self.trend:.3f})"
        )
