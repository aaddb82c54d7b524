"""Numba kernels of the online linear learner, one call per ExampleBatch.

The weights are stored as ``scale * raw`` so that L2 decay of every weight costs
one multiplication of ``scale`` per example; ``raw`` is renormalised only when
``scale`` becomes tiny.

Per example the kernel: brings the example's weights up to date with pending
truncation (``sparsity``), predicts, adds the loss to the progressive-validation
sums (loss before learning, so it measures how well the learner generalises),
picks the step size (``step``; for GSA the running mean of greedy steps),
computes each feature's rate (AdaGrad with VW's feature-scale normalisation for
the adaptive rule; for GSA, steps in feature space normalised by each feature's
largest magnitude so far), turns the loss's gradient into a safe or plain update,
applies it, and advances the truncation clock every ``truncate_every``
examples. The arithmetic mirrors the slow references in ``tests/learners/``.
The softmax learner's kernel is in :mod:`polybeam.learners.softmax`.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from polybeam.learners.greedy import greedy_step
from polybeam.learners.losses import SQUARED, loss_derivative, loss_value, plain_update, safe_update
from polybeam.learners.sparsity import ROUND, SUBGRADIENT, TRUNCATE, penalty_terms, settle, slot_rate

# Step rule codes.
CONSTANT = 0
DECAY = 1
INVERSE = 2
ADAPTIVE = 3
GSA = 4
STEP_CODES = {"constant": CONSTANT, "decay": DECAY, "inverse": INVERSE, "adaptive": ADAPTIVE, "gsa": GSA}

# Layout of the float64 ``stats`` vector every kernel reads and updates.
SCALE = 0  # the weights are scale * raw
TIME = 1  # importance-weighted examples seen over all passes (t of the step rules)
EXAMPLES = 2  # examples seen in this pass (count)
WEIGHT_SUM = 3  # importance weight seen in this pass
LOSS_SUM = 4  # importance-weighted progressive loss of this pass
NORM_WEIGHT = 5  # importance weight of examples that moved the normalised rates
NORM_SUM = 6  # their importance-weighted sum of (x / scale)**2
LABEL_MIN = 7  # range of labels seen, for clamping squared-loss predictions
LABEL_MAX = 8
STEPS = 9  # examples seen over all passes (count), for the truncation period
CLOCK = 10  # truncation clock (see polybeam.learners.sparsity)
GREEDY_SUM = 11  # importance-weighted sum of GSA greedy steps
GREEDY_WEIGHT = 12  # their importance weight
N_STATS = 13

# VW's floor on x**2, so that tiny values do not blow up normalised rates.
MIN_X2 = 1.1754943508222875e-38
# Scores and ppu are kept below this so that extreme feature values (1e150 and
# up) give large but finite losses and steps instead of inf - inf = NaN.
MAX_MAGNITUDE = 1e300
# Fold scale into the raw weights before it underflows.
MIN_SCALE = 1e-100


def new_stats() -> np.ndarray:
    stats = np.zeros(N_STATS)
    stats[SCALE] = 1.0
    return stats


@numba.njit(cache=True, inline="always")
def binary_label(y):
    return 1.0 if y > 0.0 else -1.0


@numba.njit(cache=True)
def raw_margin(raw, indices, values, start, stop, bias):
    total = raw[0] if bias else 0.0
    for k in range(start, stop):
        total += raw[indices[k]] * values[k]
    return total


@numba.njit(cache=True, inline="always")
def feature_at(indices, values, start, k):
    """Slot and value of position ``k`` of an example, where ``start - 1`` is the bias."""
    if k < start:
        return 0, 1.0
    return indices[k], values[k]


@numba.njit(cache=True, inline="always")
def bounded(value):
    """``value`` clipped to +-MAX_MAGNITUDE; NaN (an overflow of opposite signs) reads as 0."""
    if value != value:
        return 0.0
    return min(max(value, -MAX_MAGNITUDE), MAX_MAGNITUDE)


@numba.njit(cache=True, inline="always")
def add_finite(raw, slot, delta):
    """``raw[slot] += delta`` unless the step overflowed (then the weight keeps its value)."""
    if abs(delta) < math.inf:
        raw[slot] += delta


@numba.njit(cache=True, inline="always")
def normalised_multiplier(stats, adaptive, normalized):
    if adaptive and normalized and stats[NORM_SUM] > 0.0:
        return math.sqrt(stats[NORM_WEIGHT] / stats[NORM_SUM])
    return 1.0


@numba.njit(cache=True)
def base_step(step, eta, power_t, l2, t_before, importance, stats):
    """The step size of this example before per-coordinate rates."""
    if step == CONSTANT or step == ADAPTIVE:
        return eta
    if step == DECAY:
        # t counts examples by importance; before the first whole example the
        # step stays eta rather than growing without bound.
        return eta * max(t_before + importance, 1.0) ** (-power_t)
    if step == INVERSE:
        return 1.0 / (l2 * (t_before + 1.0))
    if stats[GREEDY_WEIGHT] > 0.0:
        return stats[GREEDY_SUM] / stats[GREEDY_WEIGHT]
    return 0.0


@numba.njit(cache=True)
def decay_l2(raw, synced, stats, eta_t, l2, importance):
    """Multiply every weight by 1 - eta_t * l2 * importance, through the global scale.

    The truncation clock counts in raw units (see ``advance_clock``), so when
    the scale is folded into the raw weights the clock is rescaled with them.
    """
    decay = 1.0 - eta_t * l2 * importance
    if decay <= 0.0:
        raw[:] = 0.0
        stats[SCALE] = 1.0
    else:
        stats[SCALE] *= decay
        if stats[SCALE] < MIN_SCALE:
            raw *= stats[SCALE]
            synced *= stats[SCALE]
            stats[CLOCK] *= stats[SCALE]
            stats[SCALE] = 1.0


@numba.njit(cache=True, inline="always")
def advance_clock(stats, sparsity, amount):
    """One truncation step: truncation adds its shrink amount in raw units (so that
    L2 decay after it shrinks it too, as it shrinks the weights), rounding adds 1."""
    if sparsity == TRUNCATE:
        stats[CLOCK] += amount / stats[SCALE]
    else:
        stats[CLOCK] += 1.0


@numba.njit(cache=True, inline="always")
def settle_raw(raw_value, owed, rate, threshold, stats, sparsity):
    """A raw weight after paying ``owed`` clock units of truncation or rounding."""
    scale = stats[SCALE]
    return settle(scale * raw_value, owed * scale * rate, sparsity, threshold) / scale


@numba.njit(cache=True, inline="always")
def slot_penalty(adaptive, gsa_normalized, normalized, sum_sq_grad, feature_scale, slot, threshold):
    """``penalty_terms`` of one slot, reading only the arrays the learner keeps."""
    grad = sum_sq_grad[slot] if adaptive else 0.0
    scale = feature_scale[slot] if adaptive or gsa_normalized else 0.0
    return penalty_terms(adaptive, gsa_normalized, normalized, grad, scale, threshold)


@numba.njit(cache=True, inline="always")
def observe_scale(raw, feature_scale, slot, x):
    """VW's normalisation: a larger |x| rescales the slot's weight as if the new scale had
    been known all along; returns (x / scale)**2."""
    magnitude = max(abs(x), math.sqrt(MIN_X2))
    if magnitude > feature_scale[slot]:
        if feature_scale[slot] > 0.0:
            raw[slot] *= feature_scale[slot] / magnitude
        feature_scale[slot] = magnitude
    return max(x * x, MIN_X2) / (feature_scale[slot] * feature_scale[slot])


@numba.njit(cache=True)
def subgradient_l1(raw, sum_sq_grad, feature_scale, stats, amount, adaptive, gsa_normalized, normalized):
    """Eq. 5's L1 term for every weight: w -= amount * rate * sign(w) (eager, O(weights))."""
    scale = stats[SCALE]
    for slot in range(raw.shape[0]):
        if raw[slot] != 0.0:
            rate, _ = slot_penalty(adaptive, gsa_normalized, normalized, sum_sq_grad, feature_scale, slot, 0.0)
            weight = scale * raw[slot]
            moved = weight - amount * rate if weight > 0.0 else weight + amount * rate
            if abs(moved) < math.inf:
                raw[slot] = moved / scale


@numba.njit(cache=True, nogil=True)
def learn_batch(
    labels,
    importances,
    indptr,
    indices,
    values,
    raw,
    sum_sq_grad,
    feature_scale,
    synced,
    stats,
    loss,
    step,
    eta,
    power_t,
    l2,
    bias,
    normalized,
    safe,
    sparsity,
    gravity,
    truncate_every,
    threshold,
    gsa_target,
    gsa_exact,
):
    """Learn every example of a CSR batch in order, updating the state in place."""
    n = labels.shape[0]
    adaptive = step == ADAPTIVE
    # GSA learns in normalised feature space: x_j / N_j, with N_j the largest |x_j| so far.
    gsa_normalized = step == GSA and normalized
    lazy = sparsity == TRUNCATE or sparsity == ROUND
    max_len = 0
    for i in range(n):
        max_len = max(max_len, indptr[i + 1] - indptr[i])
    rates = np.empty(max_len + 1)

    for i in range(n):
        start = indptr[i]
        stop = indptr[i + 1]
        first = start - 1 if bias else start
        importance = importances[i]
        y = labels[i] if loss == SQUARED else binary_label(labels[i])

        if lazy:
            clock = stats[CLOCK]
            for k in range(first, stop):
                slot, _ = feature_at(indices, values, start, k)
                owed = clock - synced[slot]
                if owed > 0.0:
                    synced[slot] = clock
                    if raw[slot] != 0.0:
                        rate, limit = slot_penalty(
                            adaptive, gsa_normalized, normalized, sum_sq_grad, feature_scale, slot, threshold
                        )
                        raw[slot] = settle_raw(raw[slot], owed, rate, limit, stats, sparsity)

        p = bounded(stats[SCALE] * raw_margin(raw, indices, values, start, stop, bias))
        if loss == SQUARED:
            stats[LABEL_MIN] = min(stats[LABEL_MIN], y)
            stats[LABEL_MAX] = max(stats[LABEL_MAX], y)
            p = min(max(p, stats[LABEL_MIN]), stats[LABEL_MAX])
        stats[EXAMPLES] += 1.0
        stats[WEIGHT_SUM] += importance
        stats[LOSS_SUM] += importance * loss_value(loss, p, y)
        stats[STEPS] += 1.0
        t_before = stats[TIME]
        stats[TIME] += importance

        gradient = loss_derivative(loss, p, y) if importance > 0.0 else 0.0
        xx = 0.0
        if step == GSA and importance > 0.0:
            xx = 0.0
            for k in range(first, stop):
                slot, x = feature_at(indices, values, start, k)
                xx += observe_scale(raw, feature_scale, slot, x) if gsa_normalized else x * x
            if xx > 0.0:
                stats[GREEDY_SUM] += importance * greedy_step(loss, p, y, xx, gsa_target, gsa_exact)
                stats[GREEDY_WEIGHT] += importance
        eta_t = base_step(step, eta, power_t, l2, t_before, importance, stats)

        update = 0.0
        multiplier = 1.0
        if gradient != 0.0 and eta_t > 0.0:
            # Per-feature rates (slot 0 of ``rates`` is the bias) and ppu, the
            # change of the prediction per unit of update.
            ppu = 0.0
            norm_x = 0.0
            grad_sq = importance * gradient * gradient
            for k in range(first, stop):
                slot, x = feature_at(indices, values, start, k)
                x2 = max(x * x, MIN_X2)
                if adaptive:
                    sum_sq_grad[slot] += grad_sq * x2
                    if normalized:
                        norm_x += observe_scale(raw, feature_scale, slot, x)
                # AdaGrad's sum already carries x**2, so its one factor of 1/N
                # makes the step invariant to the feature's units; GSA's 1/N**2
                # is a plain step in normalised space.
                rate = slot_rate(adaptive, gsa_normalized, sum_sq_grad, feature_scale, slot, normalized)
                rates[k - first] = rate
                ppu += x2 * rate
            if adaptive and normalized and norm_x > 0.0:
                stats[NORM_WEIGHT] += importance
                stats[NORM_SUM] += importance * norm_x
            multiplier = normalised_multiplier(stats, adaptive, normalized)
            ppu = min(ppu * multiplier, MAX_MAGNITUDE)
            if safe:
                update = safe_update(loss, p, y, eta_t * importance, ppu)
            else:
                update = plain_update(loss, p, y, eta_t * importance)
        else:
            multiplier = normalised_multiplier(stats, adaptive, normalized)

        if l2 > 0.0 and importance > 0.0:
            decay_l2(raw, synced, stats, eta_t, l2, importance)

        if update != 0.0:
            coefficient = update * multiplier / stats[SCALE]
            for k in range(first, stop):
                slot, x = feature_at(indices, values, start, k)
                add_finite(raw, slot, coefficient * rates[k - first] * x)

        if sparsity == SUBGRADIENT and importance > 0.0:
            amount = eta_t * multiplier * gravity * importance
            subgradient_l1(raw, sum_sq_grad, feature_scale, stats, amount, adaptive, gsa_normalized, normalized)
        elif lazy and stats[STEPS] % truncate_every == 0.0:
            advance_clock(stats, sparsity, eta_t * multiplier * truncate_every * gravity)


@numba.njit(cache=True, nogil=True)
def predict_batch(indptr, indices, values, weights, bias, out):
    """Margins ``w . x (+ bias)`` of every example into ``out``."""
    for i in range(out.shape[0]):
        out[i] = raw_margin(weights, indices, values, indptr[i], indptr[i + 1], bias)
