"""Sparsity: truncated gradient, its cumulative-penalty form, coefficient rounding and L1 subgradient.

Truncated gradient, rounding and the subgradient baseline are Langford, Li and
Zhang's; the cumulative penalty is Tsuruoka, Tsujii and Ananiadou's (2009).

Truncated gradient shrinks, every K examples, each weight with |w| <= theta
toward zero by eta * K * g (eq. 6). Doing that to every weight every K examples
would cost O(2**bits); instead each weight remembers the value of a global
*truncation clock* when it was last brought up to date (the paper's time
stamps, section 4). The clock adds eta_i * K * g at every truncation step i
(divided by the L2 scale of the weights at that time, so that later L2 decay
shrinks the amount as it shrinks the weights); a weight not touched since then
owes ``rate * scale * (clock - synced)`` and pays it the next time an example
touches it, before merging, and when a model is extracted. Because an
untouched weight only moves toward zero, paying the sum at once equals paying
it step by step, threshold test included. (With L2 decay and a finite theta, a
weight that the decay alone brings under theta starts paying at its next touch
rather than at once.) Rounding (eq. 4) uses the same clock counting truncation
steps. The L1 subgradient baseline (eq. 5) moves every weight every example and
is done eagerly by the kernels.

The cumulative penalty (``cumulative``, the default for a gravity) keeps the
part of the pull a weight could not pay: truncation stops at zero, and a noise
weight that each touch nudges away from zero and the pull brings back would
otherwise be nudged anew every time, never owing more than the pull since its
last touch. Here the unpaid rest stays owed: the weight's time stamp moves only
as far as what it paid, so ``clock - synced`` is the total pull it has owed
since it began minus what it paid, and a weight whose gradients cancel ends at
exactly 0 (VW's ``--l1`` does the same by truncating the sum of a weight's
steps by the total pull). A weight's account opens at its first touch (a slot
never touched has ``synced == 0`` and owes nothing): a feature that appears late,
such as a monomial apple adds at an expansion, does not owe the pull of the
examples before it existed. Paying lazily is still exact: between touches the
weight only moves toward zero, at one rate. Merging starts every weight's
account afresh (it resets the clock and the time stamps).

Which weights the penalty sees: learners that normalise features (adaptive
and GSA steps with ``normalized``) learn, in effect, weights ``w_j * N_j`` of
features ``x_j / N_j``, N_j the largest |x_j| seen. Gravity and theta apply to
those normalised weights, so one gravity suits features of any units; the
``rate`` of a weight is then its step size in that space divided by N_j
(AdaGrad: 1 / sqrt(sum of squared gradients); GSA: 1 / N_j) and its threshold
theta / N_j. Learners with plain steps penalise w itself, as in the paper.

>>> import numpy as np
>>> raw, synced = np.array([0.5, -0.05, 2.0]), np.zeros(3)
>>> flush(raw, 1.0, synced, clock=0.1, rates=np.ones(3), thresholds=np.ones(3), sparsity=TRUNCATE)
>>> raw.tolist(), synced.tolist()
([0.4, 0.0, 2.0], [0.1, 0.1, 0.1])
"""

from __future__ import annotations

import math

import numba
import numpy as np

from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernels below)

NONE = 0
TRUNCATE = 1
ROUND = 2
SUBGRADIENT = 3
CUMULATIVE = 4
SPARSITY_CODES = {"none": NONE, "truncate": TRUNCATE, "round": ROUND, "subgradient": SUBGRADIENT, "cumulative": CUMULATIVE}
LAZY = ("truncate", "round", "cumulative")  # the rules that keep a time stamp per slot


@numba.njit(cache=True, inline="always")
def shrinks(sparsity):
    """Whether the rule shrinks weights by the clock (truncated gradient, either form), rather
    than rounding them."""
    return sparsity == TRUNCATE or sparsity == CUMULATIVE


@numba.njit(cache=True, inline="always")
def keeps_time_stamps(sparsity):
    """Whether the rule pays lazily by per-slot time stamps (see ``LAZY``)."""
    return sparsity == TRUNCATE or sparsity == ROUND or sparsity == CUMULATIVE


@numba.njit(cache=True)
def adaptive_rate(sum_sq_grad, feature_scale, normalized):
    """The per-coordinate factor of the adaptive step (0 before any gradient)."""
    if sum_sq_grad <= 0.0:
        return 0.0
    rate = 1.0 / math.sqrt(sum_sq_grad)
    if normalized and feature_scale > 0.0:
        rate /= feature_scale
    return rate


@numba.njit(cache=True)
def step_rate(adaptive, gsa_normalized, normalized, sum_sq_grad, scale):
    """The per-coordinate step factor of one weight from its AdaGrad sum and feature scale:
    AdaGrad's (adaptive), 1/N**2 for GSA in normalised feature space, else 1.

    Scalars only: numba pays ~15 ns per call for every array passed to a helper,
    which adds up in loops over features.
    """
    if adaptive:
        return adaptive_rate(sum_sq_grad, scale, normalized)
    if gsa_normalized and scale > 0.0:
        return 1.0 / (scale * scale)
    return 1.0


@numba.njit(cache=True)
def rescaled(scale, x, min_magnitude):
    """VW's normalisation: ``(new scale, factor)`` after seeing ``x``; a larger |x| becomes the
    feature's scale and its weights are multiplied by ``factor`` (old / new scale), as if the new
    scale had been known all along."""
    magnitude = max(abs(x), min_magnitude)
    if magnitude > scale:
        return magnitude, (scale / magnitude if scale > 0.0 else 1.0)
    return scale, 1.0


@numba.njit(cache=True)
def penalty_terms(adaptive, gsa_normalized, normalized, sum_sq_grad, scale, threshold):
    """``(rate, threshold)`` of the sparsity penalty for one weight, in w's units (module docstring).

    ``sum_sq_grad`` and ``scale`` are the weight's AdaGrad sum and feature scale
    (pass 0.0 where the learner keeps none).
    """
    if adaptive:
        rate = 1.0 / math.sqrt(sum_sq_grad) if sum_sq_grad > 0.0 else 0.0
    elif gsa_normalized and scale > 0.0:
        rate = 1.0 / scale
    else:
        rate = 1.0
    if normalized and (adaptive or gsa_normalized) and scale > 0.0:
        return rate, threshold / scale
    return rate, threshold


@numba.njit(cache=True)
def settled_raw(raw_value, owed, rate, limit, scale, sparsity):
    """A raw weight (the true weight is ``scale * raw_value``) after ``owed`` clock units.

    Truncation shrinks the true weight toward zero by ``owed * scale * rate``
    when its magnitude is at most ``limit``; rounding zeroes it when smaller
    than ``limit`` and a truncation step has passed (``owed > 0``). Written
    without data-dependent branches: with the clock advancing every example,
    the kernels call this for nearly every feature, where mispredicted branches
    on weight signs would cost more than the arithmetic.
    """
    magnitude = abs(raw_value) * scale
    if shrinks(sparsity):
        shrunk = math.copysign(max(abs(raw_value) - owed * rate, 0.0), raw_value)
        return shrunk if magnitude <= limit else raw_value
    return 0.0 if (owed > 0.0) & (magnitude < limit) else raw_value


@numba.njit(cache=True)
def owed_since(clock, synced, cumulative):
    """The clock units a slot owes: ``clock - synced``, except that under the cumulative
    penalty a slot never touched (``synced == 0``) owes nothing until its account opens.

    >>> owed_since(5.0, 2.0, True), owed_since(5.0, 0.0, True), owed_since(5.0, 0.0, False)
    (3.0, 0.0, 5.0)
    """
    if cumulative and synced == 0.0:
        return 0.0
    return clock - synced


@numba.njit(cache=True)
def unpaid(owed, raw_value, rate):
    """What the cumulative penalty still owes (in clock units) after a raw weight of
    ``raw_value`` paid ``owed`` at ``rate``: the rest it could not pay from its magnitude.

    A weight with no rate yet (AdaGrad before its first gradient) pays nothing
    and keeps owing it all.

    >>> unpaid(5.0, -2.0, 1.0), unpaid(5.0, 7.0, 1.0), unpaid(5.0, 2.0, 0.0)
    (3.0, 0.0, 5.0)
    """
    if rate <= 0.0:
        return owed
    return max(owed - abs(raw_value) / rate, 0.0)


def penalty_arrays(
    sum_sq_grad: np.ndarray, feature_scale: np.ndarray, *, adaptive: bool, normalized: bool, threshold: float, shape
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`penalty_terms` for every weight at once: rates shaped like the weights, thresholds per slot."""
    scaled = normalized and len(feature_scale) > 0
    scales = feature_scale if scaled else np.zeros(shape[0])
    column = (-1,) + (1,) * (len(shape) - 1)
    with np.errstate(divide="ignore"):
        if adaptive:
            rates = np.where(sum_sq_grad > 0, 1.0 / np.sqrt(np.where(sum_sq_grad > 0, sum_sq_grad, 1.0)), 0.0)
        elif scaled:
            inverse = np.where(scales > 0, 1.0 / np.where(scales > 0, scales, 1.0), 1.0)
            rates = np.broadcast_to(inverse.reshape(column), shape)
        else:
            rates = np.ones(shape)
        thresholds = np.where(scales > 0, threshold / np.where(scales > 0, scales, 1.0), threshold)
    return rates, thresholds.reshape(column)


def flush(raw: np.ndarray, scale: float, synced: np.ndarray, *, clock: float, rates, thresholds, sparsity: int) -> None:
    """Pay every weight's pending truncation or rounding, in place (rows of ``raw`` are slots).

    The cumulative penalty keeps what a slot could not pay (for softmax, the
    least any of its classes left unpaid; see :func:`unpaid`).
    """
    # Under the cumulative penalty a slot never touched keeps its account unopened (owed_since).
    opened = (synced != 0.0) | (sparsity != CUMULATIVE)
    owed_by_slot = np.where(opened, clock - synced, 0.0)
    if sparsity not in (TRUNCATE, ROUND, CUMULATIVE) or not np.any(owed_by_slot > 0):
        synced[:] = np.where(opened, clock, 0.0)
        return
    shrinks = sparsity != ROUND
    # Truncation's clock counts in raw units; rounding's counts steps.
    column = owed_by_slot.shape + (1,) * (raw.ndim - 1)
    owed = owed_by_slot.reshape(column) * (scale if shrinks else 1.0)
    weights = raw * scale
    magnitude = np.abs(weights)
    if shrinks:
        due = (owed > 0) & (magnitude <= thresholds)
        settled = np.sign(weights) * np.maximum(magnitude - owed * rates, 0.0) + 0.0  # no -0.0
    else:
        due = (owed > 0) & (magnitude < thresholds)
        settled = np.zeros_like(weights)
    unpaid_rest = np.zeros(column)
    if sparsity == CUMULATIVE:
        rates = np.broadcast_to(rates, raw.shape)
        paying = rates > 0
        rest = np.maximum(owed_by_slot.reshape(column) - np.abs(raw) / np.where(paying, rates, 1.0), 0.0)
        rest = np.where(paying, rest, owed_by_slot.reshape(column))
        unpaid_rest = rest.min(axis=tuple(range(1, raw.ndim))) if raw.ndim > 1 else rest
    np.copyto(raw, np.where(due, settled / scale, raw))
    synced[:] = np.where(opened, clock - unpaid_rest.reshape(synced.shape), 0.0)
