"""Sparsity: truncated gradient, coefficient rounding and L1 subgradient (Langford, Li, Zhang).

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
SPARSITY_CODES = {"none": NONE, "truncate": TRUNCATE, "round": ROUND, "subgradient": SUBGRADIENT}


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
    if sparsity == TRUNCATE:
        shrunk = math.copysign(max(abs(raw_value) - owed * rate, 0.0), raw_value)
        return shrunk if magnitude <= limit else raw_value
    return 0.0 if (owed > 0.0) & (magnitude < limit) else raw_value


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
    """Pay every weight's pending truncation or rounding, in place (rows of ``raw`` are slots)."""
    owed = clock - synced
    if sparsity not in (TRUNCATE, ROUND) or not np.any(owed > 0):
        synced[:] = clock
        return
    # Truncation's clock counts in raw units; rounding's counts steps.
    owed = owed.reshape(owed.shape + (1,) * (raw.ndim - 1)) * (scale if sparsity == TRUNCATE else 1.0)
    weights = raw * scale
    magnitude = np.abs(weights)
    if sparsity == TRUNCATE:
        due = (owed > 0) & (magnitude <= thresholds)
        settled = np.sign(weights) * np.maximum(magnitude - owed * rates, 0.0) + 0.0  # no -0.0
    else:
        due = (owed > 0) & (magnitude < thresholds)
        settled = np.zeros_like(weights)
    np.copyto(raw, np.where(due, settled / scale, raw))
    synced[:] = clock
