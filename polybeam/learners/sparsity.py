"""Sparsity: truncated gradient, its cumulative-penalty form, coefficient rounding and L1 subgradient.

Truncated gradient, rounding and the subgradient baseline are Langford, Li and
Zhang's; the cumulative penalty is VW's ``--l1`` (the name is Tsuruoka, Tsujii and
Ananiadou's, 2009, whose weights pay the pull themselves: see below).

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

The cumulative penalty (``cumulative``, the default for a gravity) is VW's
``--l1``: a weight's steps are summed untouched by the penalty, and the weight
in force is that sum truncated by the total pull the weight has owed since its
account opened: ``sign(S) * max(|S| - P, 0)``. A noise weight's sum is a random
walk that grows like the square root of its touches while the pull grows
linearly, so it ends at exactly 0, last step included. (Paying the pull out of
the weight itself, as the paper's truncation and Tsuruoka et al.'s cumulative
penalty do, leaves a mean-reverting weight: right after each touch it holds that
touch's step, so a noise feature seen recently is non-zero whatever the gravity.
On flights with 1000 random features that kept 96% of them at a gravity that
zeroed the real features.) ``raw`` holds the sums S and ``synced`` the clock at
which each account opened (its first touch; 0: not yet). The pull owed is
``(clock - opened) * rate`` with the weight's current rate: AdaGrad's rate
falls as the sum of squared gradients grows, so this is the pull measured at
today's step size, the threshold of regularised dual averaging (Xiao 2010;
Duchi et al. 2011) on the sum of the steps. The kernels predict with the weight
in force and add each step to S; nothing is written back. Reading the weights
(a model, :func:`in_force`) leaves the sums alone; settling them (before a merge
or when centring folds a slot into the bias) makes the weights in force the new
sums and opens the accounts again, which merging would do anyway: it resets the
clock and the time stamps.

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
SPARSITY_CODES = {
    "none": NONE,
    "truncate": TRUNCATE,
    "round": ROUND,
    "subgradient": SUBGRADIENT,
    "cumulative": CUMULATIVE,
}
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


@numba.njit(cache=True, inline="always")
def opened_at(stamp, clock):
    """When a cumulative-penalty account opened: its time stamp, or now (``clock``) for one
    never opened (stamp 0). The kernels store the opening; an account opened while the clock
    is still 0 reads as unopened and opens again at its next touch.

    >>> opened_at(2.0, 5.0), opened_at(0.0, 5.0)
    (2.0, 5.0)
    """
    return stamp if stamp != 0.0 else clock


@numba.njit(cache=True, nogil=True)
def nonzero_in_force(raw, sum_sq_grad, feature_scale, synced, clock, scale, threshold, adaptive, normalized, sparsity):
    """How many slots (rows of ``raw``) hold a non-zero weight once every pending truncation is paid, as
    :func:`flush` would pay it, without changing anything: one pass, no array made (a learning-curve
    point counts them; ``sum_sq_grad``, ``feature_scale`` and ``synced`` may be empty, as the learner keeps
    them)."""
    slots, outputs = raw.shape
    lazy = synced.shape[0] > 0
    gsa_normalized = normalized and not adaptive and feature_scale.shape[0] > 0
    count = 0
    for slot in range(slots):
        feature = feature_scale[slot] if feature_scale.shape[0] > 0 else 0.0
        for output in range(outputs):
            value = raw[slot, output]
            if value != 0.0 and lazy and (sparsity == CUMULATIVE or sparsity == TRUNCATE or sparsity == ROUND):
                grad = sum_sq_grad[slot, output] if sum_sq_grad.shape[0] > 0 else 0.0
                rate, limit = penalty_terms(adaptive, gsa_normalized, normalized, grad, feature, threshold)
                if sparsity == CUMULATIVE:
                    owed = clock - synced[slot] if synced[slot] != 0.0 else 0.0
                    value = value if abs(value) - owed * rate > 0.0 else 0.0
                elif clock - synced[slot] > 0.0:
                    value = settled_raw(value, clock - synced[slot], rate, limit, scale, sparsity)
            if value != 0.0:
                count += 1
                break
    return count


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


def in_force(raw: np.ndarray, synced: np.ndarray, *, clock: float, rates) -> np.ndarray:
    """The cumulative penalty's weights in force, in raw units: each sum truncated by the pull its
    account owes (``rates`` shaped like ``raw``, rows are slots). A new array; the sums stay.

    >>> in_force(np.array([0.5, -0.05, 2.0]), np.array([1.0, 1.0, 0.0]), clock=1.25, rates=np.ones(3)).tolist()
    [0.25, 0.0, 2.0]
    """
    owed = np.where(synced != 0.0, clock - synced, 0.0).reshape(synced.shape + (1,) * (raw.ndim - 1))
    with np.errstate(over="ignore"):  # an infinite pull leaves 0, as in the kernels
        return np.sign(raw) * np.maximum(np.abs(raw) - owed * rates, 0.0) + 0.0  # + 0.0: no -0.0


def settled_accounts(raw: np.ndarray, synced: np.ndarray, *, clock: float, rates) -> tuple[np.ndarray, np.ndarray]:
    """The cumulative penalty settled: ``(weights in force, stamps)``, the weights in force to
    become the sums and every opened account opened again now (new arrays; see :func:`in_force`)."""
    weights = in_force(raw, synced, clock=clock, rates=np.broadcast_to(rates, raw.shape))
    return weights, np.where(synced != 0.0, clock, 0.0)


def flush(raw: np.ndarray, scale: float, synced: np.ndarray, *, clock: float, rates, thresholds, sparsity: int) -> None:
    """Pay every weight's pending truncation or rounding, in place (rows of ``raw`` are slots).

    The cumulative penalty settles instead: the weights in force become the sums
    and every opened account opens again now.
    """
    if sparsity == CUMULATIVE:
        raw[...], synced[...] = settled_accounts(raw, synced, clock=clock, rates=rates)
        return
    owed_by_slot = clock - synced
    if sparsity not in (TRUNCATE, ROUND) or not np.any(owed_by_slot > 0):
        synced[:] = clock
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
    np.copyto(raw, np.where(due, settled / scale, raw))
    synced[:] = clock
