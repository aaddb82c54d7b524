"""Numba kernels of the softmax (multinomial logistic) learner.

Each hashed slot holds one weight per class (``raw[slot, k]``), so an example
touches the same rows for every class. Per example: pending truncation is paid,
class scores and probabilities are computed, the log loss is added to the
progressive sums, the step is chosen (GSA's eq. 10 greedy step averaged over
examples, AdaGrad per (slot, class), or a global rule) and the plain gradient
step ``w_k -= step * (p_k - [k = y]) * x`` is applied. Shared pieces (stats
layout, step rules, L2 decay, the truncation clock) come from
:mod:`polybeam.learners.kernels`.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernels below)
from polybeam.learners.greedy import softmax_greedy_step
from polybeam.learners.kernels import (
    ADAPTIVE,
    CLOCK,
    EXAMPLES,
    GREEDY_SUM,
    GREEDY_WEIGHT,
    GSA,
    LIFETIME_EXAMPLES,
    LOSS_SUM,
    MAX_MAGNITUDE,
    MIN_MAGNITUDE,
    MIN_X2,
    NORM_SUM,
    NORM_WEIGHT,
    SCALE,
    TIME,
    WEIGHT_SUM,
    advance_clock,
    base_step,
    bounded,
    decay_l2,
    longest_row,
    normalised_multiplier,
    within_scale,
)
from polybeam.learners.sparsity import (
    CUMULATIVE,
    SUBGRADIENT,
    keeps_time_stamps,
    opened_at,
    penalty_terms,
    rescaled,
    settled_raw,
    step_rate,
)

# Log loss of a probability that underflowed to zero.
MAX_LOG_LOSS = 745.0


@numba.njit(cache=True)
def class_scores(raw, indices, values, start, stop, bias, out):
    """Unscaled scores of every class for one example into ``out``."""
    if bias:
        out[:] = raw[0]
    else:
        out[:] = 0.0
    for k in range(start, stop):
        row = raw[indices[k]]
        x = values[k]
        for c in range(out.shape[0]):
            out[c] += row[c] * x


@numba.njit(cache=True)
def clipped_scores(raw, indices, values, start, stop, bias, feature_scale, out):
    """:func:`class_scores` with each value clipped to its feature's known scale (the normalised
    adaptive step's prediction: see ``kernels.within_scale``)."""
    if bias:
        out[:] = raw[0]
    else:
        out[:] = 0.0
    for k in range(start, stop):
        slot = indices[k]
        row = raw[slot]
        x = within_scale(values[k], feature_scale[slot])
        for c in range(out.shape[0]):
            out[c] += row[c] * x


@numba.njit(cache=True)
def in_force_scores(in_force, indices, values, start, stop, bias, feature_scale, clipped, out):
    """:func:`class_scores` of one example from its weights in force (row ``k - first`` for position
    ``k``; the bias first), values clipped as in :func:`clipped_scores` when ``clipped``."""
    out[:] = 0.0
    first = start - 1 if bias else start
    for k in range(first, stop):
        x = values[k] if k >= start else 1.0
        if clipped and k >= start:
            x = within_scale(x, feature_scale[indices[k]])
        for c in range(out.shape[0]):
            out[c] += in_force[k - first, c] * x


@numba.njit(cache=True)
def to_probabilities(scores, out):
    """Softmax of ``scores`` into ``out``, without overflow."""
    top = scores.max()
    total = 0.0
    for c in range(scores.shape[0]):
        out[c] = math.exp(scores[c] - top)
        total += out[c]
    for c in range(scores.shape[0]):
        out[c] /= total


@numba.njit(cache=True, nogil=True)
def learn_batch_softmax(
    labels, importances, indptr, indices, values, raw, sum_sq_grad, feature_scale, synced, stats, settings
):
    """Learn every example of a batch; labels are class ids 1..K (``raw.shape[1] == K``).

    The arguments are ``kernels.learn_batch``'s (``settings``: the learner's
    :class:`~polybeam.learners.kernel_settings.KernelSettings`; the loss, safe
    updates, exact GSA steps and label scaling are the binary kernel's alone). As
    there, feature loops run from ``first`` (the bias at ``start - 1``) and read
    arrays into scalars before calling helpers.
    """
    # The settings as local scalars, under the names the arithmetic below uses.
    step = settings.step
    eta = settings.learning_rate
    power_t = settings.power_t
    l2 = settings.l2
    bias = settings.bias
    normalized = settings.normalized
    sparsity = settings.sparsity
    gravity = settings.gravity
    truncate_every = settings.truncate_every
    threshold = settings.threshold
    gsa_target = settings.gsa_target
    n = labels.shape[0]
    classes = raw.shape[1]
    adaptive = step == ADAPTIVE
    gsa_normalized = step == GSA and normalized
    keeps_scales = adaptive or gsa_normalized
    lazy = keeps_time_stamps(sparsity)
    cumulative = sparsity == CUMULATIVE
    scores = np.empty(classes)
    probabilities = np.empty(classes)
    gradient = np.empty(classes)
    # The cumulative penalty's weights in force for one example (its sums stay in raw).
    in_force = np.empty((longest_row(indptr) + 1 if cumulative else 0, classes))

    for i in range(n):
        start = indptr[i]
        stop = indptr[i + 1]
        first = start - 1 if bias else start
        importance = importances[i]
        label = int(labels[i]) - 1

        if lazy:
            clock = stats[CLOCK]
            scale = stats[SCALE]
            for k in range(first, stop):
                slot = indices[k] if k >= start else 0
                if cumulative:
                    opened = opened_at(synced[slot], clock)
                    owed = clock - opened
                    synced[slot] = opened
                else:
                    owed = clock - synced[slot]
                    synced[slot] = clock
                feature = feature_scale[slot] if keeps_scales else 0.0
                for c in range(classes):
                    rate, limit = penalty_terms(
                        adaptive,
                        gsa_normalized,
                        normalized,
                        sum_sq_grad[slot, c] if adaptive else 0.0,
                        feature,
                        threshold,
                    )
                    settled = settled_raw(raw[slot, c], owed, rate, limit, scale, sparsity)
                    if cumulative:
                        in_force[k - first, c] = settled
                    else:
                        raw[slot, c] = settled

        if cumulative:
            in_force_scores(
                in_force, indices, values, start, stop, bias, feature_scale, adaptive and normalized, scores
            )
        elif adaptive and normalized:
            clipped_scores(raw, indices, values, start, stop, bias, feature_scale, scores)
        else:
            class_scores(raw, indices, values, start, stop, bias, scores)
        for c in range(classes):
            scores[c] = bounded(scores[c] * stats[SCALE])
        to_probabilities(scores, probabilities)
        p_true = probabilities[label]
        stats[EXAMPLES] += 1.0
        stats[WEIGHT_SUM] += importance
        stats[LOSS_SUM] += importance * (-math.log(p_true) if p_true > 0.0 else MAX_LOG_LOSS)
        stats[LIFETIME_EXAMPLES] += 1.0
        t_before = stats[TIME]
        stats[TIME] += importance

        if step == GSA and importance > 0.0:
            xx = 0.0
            for k in range(first, stop):
                x = values[k] if k >= start else 1.0
                if gsa_normalized:
                    slot = indices[k] if k >= start else 0
                    new_scale, factor = rescaled(feature_scale[slot], x, MIN_MAGNITUDE)
                    if factor != 1.0:
                        for c in range(classes):
                            raw[slot, c] *= factor
                    feature_scale[slot] = new_scale
                    xx += max(x * x, MIN_X2) / (new_scale * new_scale)
                else:
                    xx += x * x
            if xx > 0.0:
                # Capped, as in kernels.learn_batch: the running mean must stay finite.
                stats[GREEDY_SUM] = min(
                    stats[GREEDY_SUM] + importance * softmax_greedy_step(probabilities, label, xx, gsa_target),
                    MAX_MAGNITUDE,
                )
                stats[GREEDY_WEIGHT] += importance
        eta_t = base_step(step, eta, power_t, l2, t_before, importance, stats)

        for c in range(classes):
            gradient[c] = probabilities[c]
        gradient[label] -= 1.0

        multiplier = normalised_multiplier(stats, adaptive, normalized)
        if importance > 0.0 and eta_t > 0.0:
            if adaptive:
                norm_x = 0.0
                for k in range(first, stop):
                    slot = indices[k] if k >= start else 0
                    x = values[k] if k >= start else 1.0
                    x2 = max(x * x, MIN_X2)
                    for c in range(classes):
                        sum_sq_grad[slot, c] += importance * gradient[c] * gradient[c] * x2
                    if normalized:
                        new_scale, factor = rescaled(feature_scale[slot], x, MIN_MAGNITUDE)
                        if factor != 1.0:
                            for c in range(classes):
                                raw[slot, c] *= factor
                        feature_scale[slot] = new_scale
                        norm_x += x2 / (new_scale * new_scale)
                if normalized and norm_x > 0.0:
                    stats[NORM_WEIGHT] += importance
                    stats[NORM_SUM] += importance * norm_x
                multiplier = normalised_multiplier(stats, adaptive, normalized)

            if l2 > 0.0:
                decay_l2(raw, synced, stats, eta_t, l2, importance)

            coefficient = eta_t * importance * multiplier / stats[SCALE]
            for k in range(first, stop):
                slot = indices[k] if k >= start else 0
                x = values[k] if k >= start else 1.0
                feature = feature_scale[slot] if keeps_scales else 0.0
                for c in range(classes):
                    rate = step_rate(
                        adaptive, gsa_normalized, normalized, sum_sq_grad[slot, c] if adaptive else 0.0, feature
                    )
                    delta = coefficient * rate * gradient[c] * x
                    if abs(delta) < math.inf:  # an overflowing step leaves the weight as it was
                        raw[slot, c] -= delta

        if sparsity == SUBGRADIENT and importance > 0.0:
            amount = eta_t * multiplier * gravity * importance
            scale = stats[SCALE]
            for slot in range(raw.shape[0]):
                feature = feature_scale[slot] if keeps_scales else 0.0
                for c in range(classes):
                    if raw[slot, c] != 0.0:
                        rate, _ = penalty_terms(
                            adaptive,
                            gsa_normalized,
                            normalized,
                            sum_sq_grad[slot, c] if adaptive else 0.0,
                            feature,
                            0.0,
                        )
                        weight = scale * raw[slot, c]
                        moved = weight - amount * rate if weight > 0.0 else weight + amount * rate
                        if abs(moved) < math.inf:
                            raw[slot, c] = moved / scale
        elif lazy and stats[LIFETIME_EXAMPLES] % truncate_every == 0.0:
            advance_clock(stats, sparsity, eta_t * multiplier * truncate_every * gravity)


@numba.njit(cache=True, nogil=True)
def predict_batch_softmax(indptr, indices, values, weights, bias, out):
    """Class scores of every example into ``out`` (shape n x K)."""
    for i in range(out.shape[0]):
        class_scores(weights, indices, values, indptr[i], indptr[i + 1], bias, out[i])
