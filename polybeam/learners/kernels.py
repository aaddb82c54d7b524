"""Numba kernels of the online linear learner, one call per ExampleBatch.

The weights are stored as ``scale * raw`` so that L2 decay of every weight costs
one multiplication of ``scale`` per example; ``raw`` is renormalised only when
``scale`` becomes tiny.

Per example the kernel: predicts with the current weights, adds the loss to the
progressive-validation sums (loss before learning, so it measures how well the
learner generalises), picks the step size, computes each feature's rate (AdaGrad
with VW's feature-scale normalisation for the adaptive rule), turns the loss's
gradient into a safe or plain update and applies it. The arithmetic mirrors the
slow reference in ``tests/learners/reference_linear.py`` line for line.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from polybeam.learners.losses import SQUARED, loss_derivative, loss_value, plain_update, safe_update

# Step rule codes.
CONSTANT = 0
DECAY = 1
INVERSE = 2
ADAPTIVE = 3
STEP_CODES = {"constant": CONSTANT, "decay": DECAY, "inverse": INVERSE, "adaptive": ADAPTIVE}

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
N_STATS = 9

# VW's floor on x**2, so that tiny values do not blow up normalised rates.
MIN_X2 = 1.1754943508222875e-38
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
    stats,
    loss,
    step,
    eta,
    power_t,
    l2,
    bias,
    normalized,
    safe,
):
    """Learn every example of a CSR batch in order, updating the state in place."""
    n = labels.shape[0]
    adaptive = step == ADAPTIVE
    max_len = 0
    for i in range(n):
        max_len = max(max_len, indptr[i + 1] - indptr[i])
    rates = np.empty(max_len + 1)

    for i in range(n):
        start = indptr[i]
        stop = indptr[i + 1]
        importance = importances[i]
        y = labels[i] if loss == SQUARED else binary_label(labels[i])

        p = stats[SCALE] * raw_margin(raw, indices, values, start, stop, bias)
        if loss == SQUARED:
            stats[LABEL_MIN] = min(stats[LABEL_MIN], y)
            stats[LABEL_MAX] = max(stats[LABEL_MAX], y)
            p = min(max(p, stats[LABEL_MIN]), stats[LABEL_MAX])
        stats[EXAMPLES] += 1.0
        stats[WEIGHT_SUM] += importance
        stats[LOSS_SUM] += importance * loss_value(loss, p, y)
        t_before = stats[TIME]
        stats[TIME] += importance
        if importance <= 0.0:
            continue

        if step == CONSTANT or step == ADAPTIVE:
            eta_t = eta
        elif step == DECAY:
            eta_t = eta * (t_before + importance) ** (-power_t)
        else:
            eta_t = 1.0 / (l2 * (t_before + 1.0))

        gradient = loss_derivative(loss, p, y)
        update = 0.0
        multiplier = 1.0
        if gradient != 0.0:
            # Per-feature rates (slot 0 of ``rates`` is the bias) and ppu, the
            # change of the prediction per unit of update.
            ppu = 0.0
            norm_x = 0.0
            grad_sq = importance * gradient * gradient
            for k in range(start - 1 if bias else start, stop):
                if k < start:
                    slot = 0
                    x = 1.0
                else:
                    slot = indices[k]
                    x = values[k]
                x2 = max(x * x, MIN_X2)
                rate = 1.0
                if adaptive:
                    sum_sq_grad[slot] += grad_sq * x2
                    # A gradient so small that its square underflows moves nothing.
                    rate = 1.0 / math.sqrt(sum_sq_grad[slot]) if sum_sq_grad[slot] > 0.0 else 0.0
                    if normalized:
                        magnitude = max(abs(x), math.sqrt(MIN_X2))
                        if magnitude > feature_scale[slot]:
                            if feature_scale[slot] > 0.0:
                                # Rescale as if the new scale had been known all along.
                                raw[slot] *= feature_scale[slot] / magnitude
                            feature_scale[slot] = magnitude
                        # sum_sq_grad already carries x**2, so one factor of
                        # 1/scale makes the step invariant to the feature's units.
                        inv = 1.0 / feature_scale[slot]
                        norm_x += x2 * inv * inv
                        rate *= inv
                rates[k - start + 1] = rate
                ppu += x2 * rate
            if adaptive and normalized and norm_x > 0.0:
                stats[NORM_WEIGHT] += importance
                stats[NORM_SUM] += importance * norm_x
                multiplier = math.sqrt(stats[NORM_WEIGHT] / stats[NORM_SUM])
                ppu *= multiplier
            if safe:
                update = safe_update(loss, p, y, eta_t * importance, ppu)
            else:
                update = plain_update(loss, p, y, eta_t * importance)

        if l2 > 0.0:
            decay = 1.0 - eta_t * l2 * importance
            if decay <= 0.0:
                raw[:] = 0.0
                stats[SCALE] = 1.0
            else:
                stats[SCALE] *= decay
                if stats[SCALE] < MIN_SCALE:
                    raw *= stats[SCALE]
                    stats[SCALE] = 1.0

        if update != 0.0:
            coefficient = update * multiplier / stats[SCALE]
            for k in range(start - 1 if bias else start, stop):
                if k < start:
                    raw[0] += coefficient * rates[0]
                else:
                    raw[indices[k]] += coefficient * rates[k - start + 1] * values[k]


@numba.njit(cache=True, nogil=True)
def predict_batch(indptr, indices, values, weights, bias, out):
    """Margins ``w . x (+ bias)`` of every example into ``out``."""
    for i in range(out.shape[0]):
        out[i] = raw_margin(weights, indices, values, indptr[i], indptr[i + 1], bias)


@numba.njit(cache=True)
def merge_into(target, source_indices, source_values, share):
    """``target[source_indices] += share * source_values`` (duplicates-safe)."""
    for k in range(source_indices.shape[0]):
        target[source_indices[k]] += share * source_values[k]
