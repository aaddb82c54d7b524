"""Per-coordinate weighted averaging of learners: the merge of the terascale linear learner.

Agarwal, Chapelle, Dudík and Langford (2014, "A reliable effective terascale
linear learning system", section 3) average the weights of the nodes'
online learners coordinate by coordinate, each node's weight counted as much
as that node learned the coordinate: ``w_j = sum_k G_kj w_kj / sum_k G_kj``.
A plain mean instead pulls every weight that only a few workers saw toward
zero, by the share of workers that never saw its feature: with 64 or 256
workers most features of a sparse task are such features.

What "how much a worker learned a coordinate" is: polybeam's learners keep,
per slot, the importance-weighted sum of the squared values of the examples
that carried the slot in the current pass (``slot_mass``; the bias slot
counts every example once). It exists for every step rule (GSA and plain
steps keep no AdaGrad sums), is what AdaGrad's sums are made of up to the
squared loss derivative, adds up exactly across learners, and makes the
merge order-free and associative: an average of averages, each carrying the
sum of its parts' masses, is the average of all parts. A slot that no
learner touched this pass keeps the mean weighted by each learner's importance
weight of the pass (what the merge did before: learners that go on from one
averaged state all hold its weight there, so the mean keeps it).

AdaGrad sums are averaged the same way (each slot's sum weighted by the
masses), not added up: measured on ``PlantedPolynomial`` (400,000 examples,
256 workers, 5 passes of the default adaptive steps, held-out log loss
against one learner's after 5 passes), the mass-weighted mean of the sums gave
1.078, their plain mean (the merge before) 1.104 and their sum (the start's
sums plus every worker's increase, as one learner over all the data would
have them) 1.183: summed sums make every later pass's steps too small for the
1/N of a pass that an average moves. Weighting the weights by each worker's
increase of its AdaGrad sums instead of the slot masses (the paper's choice)
gave 1.074, within noise of the masses, which exist for every step rule and
need no copy of the sums at the start of the pass. Summing the workers' weight
changes instead of averaging them diverged (held-out loss 1.7 after pass 2).

The functions take plain arrays, so the learners' state layout (dense, or
sparse slots) is the caller's business. ``tests/learners/reference_averaging.py``
is the plain-Python reference.

>>> import numpy as np
>>> weights = [np.array([[1.0], [2.0], [0.0]]), np.array([[3.0], [0.0], [5.0]])]
>>> masses = [np.array([1.0, 4.0, 0.0]), np.array([3.0, 0.0, 1.0])]
>>> average = WeightedAverage(shape=(3, 1))
>>> for w, m in zip(weights, masses):
...     average.add(w, m, share=0.5)
>>> average.result().ravel().tolist()   # slot 0: (1*1 + 3*3) / 4; slots 1 and 2: the one learner that saw them
[2.5, 2.0, 5.0]
"""

from __future__ import annotations

import numba
import numpy as np

from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernels below)


@numba.njit(cache=True, nogil=True)
def add_mass(mass, importances, indptr, indices, values, bias):
    """Add each row's ``importance * value**2`` to the mass of its slots (and the importance to the
    bias slot 0 when ``bias``): one pass over the batch's non-zeros."""
    rows = indptr.shape[0] - 1
    for i in range(rows):
        importance = importances[i]
        if bias:
            mass[0] += importance
        for k in range(indptr[i], indptr[i + 1]):
            x = values[k]
            mass[indices[k]] += importance * x * x


class WeightedAverage:
    """Accumulates ``sum_k mass_kj * w_kj`` and ``sum_k mass_kj`` per slot (and the plain
    importance-share mean for slots no learner touched), one learner at a time, so that a merge of
    N learners holds three arrays, not N.

    ``add(weights, mass, share)``: ``weights`` (slots, outputs), ``mass`` (slots,), ``share`` the
    learner's share of the importance weight seen this pass (the shares sum to 1).
    """

    def __init__(self, shape: tuple[int, ...]):
        self.numerator = np.zeros(shape)
        self.mass = np.zeros(shape[0])
        self.plain = np.zeros(shape)

    def add(self, weights: np.ndarray, mass: np.ndarray, share: float) -> None:
        touched = np.flatnonzero(mass)
        self.numerator[touched] += mass[touched, None] * weights[touched]
        self.mass[touched] += mass[touched]
        self.plain += share * weights

    def result(self) -> np.ndarray:
        """The averaged weights: mass-weighted where any learner touched the slot, else the plain mean."""
        out = self.plain
        touched = np.flatnonzero(self.mass)
        out[touched] = self.numerator[touched] / self.mass[touched, None]
        return out


def weighted_mean(weights: list[np.ndarray], masses: list[np.ndarray], shares) -> np.ndarray:
    """The per-coordinate weighted mean of ``weights`` (see the module docstring) in one call."""
    average = WeightedAverage(np.shape(weights[0]))
    for w, m, s in zip(weights, masses, shares):
        average.add(np.asarray(w, dtype=float), np.asarray(m, dtype=float), float(s))
    return average.result()
