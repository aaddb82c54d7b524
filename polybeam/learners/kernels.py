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

from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernels below)
from polybeam.learners.greedy import greedy_step
from polybeam.learners.losses import loss_derivative, loss_value, plain_update, safe_update
from polybeam.learners.sparsity import (
    CUMULATIVE,
    SUBGRADIENT,
    keeps_time_stamps,
    opened_at,
    penalty_terms,
    rescaled,
    settled_raw,
    shrinks,
    step_rate,
)

# Step rule codes (the rules' names: polybeam.learners.choices.STEP_RULES).
CONSTANT = 0
DECAY = 1
INVERSE = 2
ADAPTIVE = 3
GSA = 4
STEP_RULE_CODES = {"constant": CONSTANT, "decay": DECAY, "inverse": INVERSE, "adaptive": ADAPTIVE, "gsa": GSA}

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
LIFETIME_EXAMPLES = 9  # examples seen over all passes (count), for the truncation period
CLOCK = 10  # truncation clock (see polybeam.learners.sparsity)
GREEDY_SUM = 11  # importance-weighted sum of GSA greedy steps
GREEDY_WEIGHT = 12  # their importance weight
LABEL_WEIGHT = 13  # importance weight of the labels seen over all passes (squared loss, scale_labels)
LABEL_SUM = 14  # their importance-weighted sum
LABEL_SQUARES = 15  # and sum of squares
N_STATS = 16

# VW's floor on x**2, so that tiny values do not blow up normalised rates.
MIN_X2 = 1.1754943508222875e-38
MIN_MAGNITUDE = math.sqrt(MIN_X2)
# Scores and ppu are kept below this so that extreme feature values (1e150 and
# up) give large but finite losses and steps instead of inf - inf = NaN.
MAX_MAGNITUDE = 1e300
# Fold scale into the raw weights before it underflows.
MIN_SCALE = 1e-100


def new_stats() -> np.ndarray:
    stats = np.zeros(N_STATS)
    stats[SCALE] = 1.0
    return stats


def padded_stats(stats) -> np.ndarray:
    """A statistics vector saved by an older polybeam (fewer entries), with the entries it lacks at 0."""
    stats = np.asarray(stats, dtype=np.float64)
    return np.concatenate([stats, np.zeros(N_STATS - len(stats))]) if len(stats) < N_STATS else stats.copy()


@numba.njit(cache=True, inline="always")
def label_moments(stats):
    """``(mean, standard deviation)`` of the labels counted in ``stats`` (0, 0 before any)."""
    weight = stats[LABEL_WEIGHT]
    if not weight > 0.0:
        return 0.0, 0.0
    mean = stats[LABEL_SUM] / weight
    # Sums, not Welford's updates, so that merging learners adds them; a label offset a billion
    # times its spread loses the spread to rounding (then 0: the learner keeps to the mean).
    variance = stats[LABEL_SQUARES] / weight - mean * mean
    return mean, math.sqrt(variance) if variance > 0.0 else 0.0


@numba.njit(cache=True)
def count_label(stats, y, importance):
    """Count label ``y`` (of squared loss with ``scale_labels``) and return ``(shift of the label
    mean, the labels' standard deviation)``: the bias moves with the mean and adaptive steps are in
    units of the spread, so that learning does not depend on the labels' offset and unit.

    >>> stats = new_stats()
    >>> count_label(stats, 1000.0, 1.0), count_label(stats, 1002.0, 1.0)
    ((1000.0, 0.0), (1.0, 1.0))
    """
    before, _ = label_moments(stats)
    stats[LABEL_WEIGHT] += importance
    stats[LABEL_SUM] += importance * y
    stats[LABEL_SQUARES] += importance * y * y
    after, spread = label_moments(stats)
    return after - before, spread


@numba.njit(cache=True)
def binary_label(y):
    return 1.0 if y > 0.0 else -1.0


@numba.njit(cache=True)
def raw_margin(raw, indices, values, start, stop, bias):
    total = raw[0] if bias else 0.0
    for k in range(start, stop):
        total += raw[indices[k]] * values[k]
    return total


@numba.njit(cache=True)
def bounded(value):
    """``value`` clipped to +-MAX_MAGNITUDE; NaN (an overflow of opposite signs) reads as 0."""
    if value != value:
        return 0.0
    return min(max(value, -MAX_MAGNITUDE), MAX_MAGNITUDE)


@numba.njit(cache=True, inline="always")
def within_scale(x, known):
    """``x`` clipped to the largest magnitude its feature had before (``known``; none yet: ``x``).

    The normalised adaptive step predicts with this: a weight learned while the
    feature's scale was ``known`` stands for ``weight * known`` per unit of
    x / scale, and a value beyond it (heavy-tailed raw columns, and more so
    apple's products of them) would otherwise multiply that weight by a
    magnitude it never saw. The update then rescales the weight to the new
    scale, as VW does; VW predicts with the unclipped value. On spam, apple's
    progressive log loss after its last expansion was 5-18 with unclipped
    values, 0.18-0.28 clipped (its linear model: 0.24-0.31).

    >>> within_scale(3.0, 2.0), within_scale(-3.0, 2.0), within_scale(1.5, 2.0), within_scale(7.0, 0.0)
    (2.0, -2.0, 1.5, 7.0)
    """
    if known > 0.0 and abs(x) > known:
        return math.copysign(known, x)
    return x


@numba.njit(cache=True)
def longest_row(indptr):
    """The most values any row of a CSR batch has (the size of per-example scratch arrays)."""
    longest = 0
    for i in range(indptr.shape[0] - 1):
        longest = max(longest, indptr[i + 1] - indptr[i])
    return longest


@numba.njit(cache=True)
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


@numba.njit(cache=True)
def advance_clock(stats, sparsity, amount):
    """One truncation step: truncation adds its shrink amount in raw units (so that
    L2 decay after it shrinks it too, as it shrinks the weights), rounding adds 1."""
    if shrinks(sparsity):
        stats[CLOCK] += amount / stats[SCALE]
    else:
        stats[CLOCK] += 1.0


@numba.njit(cache=True)
def subgradient_l1(raw, sum_sq_grad, feature_scale, stats, amount, adaptive, gsa_normalized, normalized):
    """Eq. 5's L1 term for every weight: w -= amount * rate * sign(w) (eager, O(weights))."""
    scale = stats[SCALE]
    keeps_scales = adaptive or gsa_normalized
    for slot in range(raw.shape[0]):
        if raw[slot] != 0.0:
            rate, _ = penalty_terms(
                adaptive,
                gsa_normalized,
                normalized,
                sum_sq_grad[slot] if adaptive else 0.0,
                feature_scale[slot] if keeps_scales else 0.0,
                0.0,
            )
            weight = scale * raw[slot]
            moved = weight - amount * rate if weight > 0.0 else weight + amount * rate
            if abs(moved) < math.inf:
                raw[slot] = moved / scale


@numba.njit(cache=True, nogil=True)
def learn_batch(labels, importances, indptr, indices, values, raw, sum_sq_grad, feature_scale, synced, stats, settings):
    """Learn every example of a CSR batch in order, updating the state in place.

    ``settings`` is the learner's :class:`~polybeam.learners.kernel_settings.KernelSettings`
    (the softmax kernel takes the same arguments). Feature loops run from ``first``
    (``start - 1`` with a bias, which is slot 0 with value 1) to ``stop``, and read
    arrays into scalars before calling any helper (see ``sparsity.step_rate``).

    ``scale_labels`` (squared loss): after an example's loss is counted, the
    bias moves by the change of the labels' running mean (the prediction with
    it), and an adaptive step is ``eta`` times the labels' running standard
    deviation (see :func:`count_label`).
    """
    # The settings as local scalars, under the names the arithmetic below uses.
    loss = settings.loss
    step = settings.step
    eta = settings.learning_rate
    power_t = settings.power_t
    l2 = settings.l2
    bias = settings.bias
    normalized = settings.normalized
    safe = settings.safe_updates
    sparsity = settings.sparsity
    gravity = settings.gravity
    truncate_every = settings.truncate_every
    threshold = settings.threshold
    gsa_target = settings.gsa_target
    gsa_exact = settings.gsa_exact
    scale_labels = settings.scale_labels
    parameter = settings.loss_parameter
    binary_labels = settings.binary_labels
    clamps = settings.clamps
    n = labels.shape[0]
    adaptive = step == ADAPTIVE
    # GSA learns in normalised feature space: x_j / N_j, with N_j the largest |x_j| so far.
    gsa_normalized = step == GSA and normalized
    keeps_scales = adaptive or gsa_normalized
    lazy = keeps_time_stamps(sparsity)
    plain_truncation = shrinks(sparsity) and threshold == math.inf
    # The cumulative penalty predicts with each sum of steps truncated by the pull its account
    # owes since it opened, and leaves the sum in raw (see polybeam.learners.sparsity).
    cumulative = sparsity == CUMULATIVE
    fast_plain = plain_truncation and not adaptive and not gsa_normalized
    fast_adaptive = plain_truncation and adaptive
    fast_gsa = gsa_normalized and (plain_truncation or not lazy)
    max_len = longest_row(indptr)
    rates = np.empty(max_len + 1)
    # Features whose scale grew in this example (rare once scales settle): position, factor.
    grown_at = np.empty(max_len + 1, dtype=np.int64)
    grown_by = np.empty(max_len + 1)

    for i in range(n):
        start = indptr[i]
        stop = indptr[i + 1]
        first = start - 1 if bias else start
        importance = importances[i]
        y = binary_label(labels[i]) if binary_labels else labels[i]

        # One pass over the features: pay pending truncation (lazy sparsity),
        # compute the margin and, for GSA, x . x (normalised: observing each
        # feature's scale; weights of features whose scale grew are rescaled
        # after the margin, so that the prediction uses the weights as they were).
        scale = stats[SCALE]
        clock = stats[CLOCK]
        margin = 0.0
        xx = 0.0
        plain_ppu = 0.0  # ppu of the non-adaptive rules, exact unless a scale grew
        grown = 0
        # The common settings get loops of their own, free of the other rules'
        # branches (which the compiler does not hoist out of the loop); together
        # they cost the lazy truncation about half of what the general loop does.
        done = first
        if fast_plain:
            # Plain, decaying or GSA steps on the raw features, theta = infinity.
            for k in range(first, stop):
                slot = indices[k] if k >= start else 0
                x = values[k] if k >= start else 1.0
                weight = raw[slot]
                if cumulative:  # loop-invariant: the compiler unswitches it
                    opened = opened_at(synced[slot], clock)
                    synced[slot] = opened
                    weight = math.copysign(max(abs(weight) - (clock - opened), 0.0), weight)
                else:
                    owed = clock - synced[slot]
                    synced[slot] = clock
                    weight = math.copysign(max(abs(weight) - owed, 0.0), weight)
                    raw[slot] = weight
                margin += weight * x
                plain_ppu += max(x * x, MIN_X2)
                xx += x * x
                rates[k - first] = 1.0
            done = stop
        elif fast_adaptive:
            # AdaGrad steps, theta = infinity: the rate of a weight is 1 / sqrt(its sum).
            for k in range(first, stop):
                slot = indices[k] if k >= start else 0
                x = values[k] if k >= start else 1.0
                g = sum_sq_grad[slot]
                rate = 1.0 / math.sqrt(g) if g > 0.0 else 0.0
                weight = raw[slot]
                if cumulative:
                    opened = opened_at(synced[slot], clock)
                    synced[slot] = opened
                    weight = math.copysign(max(abs(weight) - (clock - opened) * rate, 0.0), weight)
                else:
                    owed = clock - synced[slot]
                    synced[slot] = clock
                    weight = math.copysign(max(abs(weight) - owed * rate, 0.0), weight)
                    raw[slot] = weight
                margin += weight * (within_scale(x, feature_scale[slot]) if normalized else x)
            done = stop
        elif fast_gsa and importance > 0.0 and plain_truncation:
            # GSA in normalised feature space with truncation, theta = infinity. One
            # division per feature: 1 / N serves the truncation and the rate 1 / N**2.
            for k in range(first, stop):
                slot = indices[k] if k >= start else 0
                x = values[k] if k >= start else 1.0
                old_scale = feature_scale[slot]
                inverse = 1.0 / old_scale if old_scale > 0.0 else 1.0
                weight = raw[slot]
                if cumulative:
                    opened = opened_at(synced[slot], clock)
                    synced[slot] = opened
                    weight = math.copysign(max(abs(weight) - (clock - opened) * inverse, 0.0), weight)
                else:
                    owed = clock - synced[slot]
                    synced[slot] = clock
                    weight = math.copysign(max(abs(weight) - owed * inverse, 0.0), weight)
                    raw[slot] = weight
                margin += weight * x
                magnitude = max(abs(x), MIN_MAGNITUDE)
                if magnitude > old_scale:  # rare once scales settle
                    if old_scale > 0.0:
                        grown_at[grown] = k
                        grown_by[grown] = old_scale / magnitude
                        grown += 1
                    feature_scale[slot] = magnitude
                    inverse = 1.0 / magnitude
                rate = inverse * inverse
                rates[k - first] = rate
                xx += max(x * x, MIN_X2) * rate
            plain_ppu = xx
            done = stop
        elif fast_gsa and importance > 0.0:
            # The same loop without truncation, written out again (not a flag inside
            # one loop) so that untruncated GSA pays nothing for truncation.
            for k in range(first, stop):
                slot = indices[k] if k >= start else 0
                x = values[k] if k >= start else 1.0
                old_scale = feature_scale[slot]
                inverse = 1.0 / old_scale if old_scale > 0.0 else 1.0
                margin += raw[slot] * x
                magnitude = max(abs(x), MIN_MAGNITUDE)
                if magnitude > old_scale:  # rare once scales settle
                    if old_scale > 0.0:
                        grown_at[grown] = k
                        grown_by[grown] = old_scale / magnitude
                        grown += 1
                    feature_scale[slot] = magnitude
                    inverse = 1.0 / magnitude
                rate = inverse * inverse
                rates[k - first] = rate
                xx += max(x * x, MIN_X2) * rate
            plain_ppu = xx
            done = stop
        for k in range(done, stop):
            slot = indices[k] if k >= start else 0
            x = values[k] if k >= start else 1.0
            weight = raw[slot]
            if lazy:
                # theta = infinity has loops of its own above (this loop sees it only for
                # normalised GSA on examples of importance 0).
                rate, limit = penalty_terms(
                    adaptive,
                    gsa_normalized,
                    normalized,
                    sum_sq_grad[slot] if adaptive else 0.0,
                    feature_scale[slot] if keeps_scales else 0.0,
                    threshold,
                )
                if cumulative:  # the weight in force; raw keeps the sum
                    opened = opened_at(synced[slot], clock)
                    synced[slot] = opened
                    weight = settled_raw(weight, clock - opened, rate, limit, scale, sparsity)
                else:
                    owed = clock - synced[slot]
                    synced[slot] = clock
                    weight = settled_raw(weight, owed, rate, limit, scale, sparsity)
                    raw[slot] = weight
            # (adaptive, normalised: the value as far as the feature's known scale; see within_scale)
            margin += weight * (within_scale(x, feature_scale[slot]) if adaptive and normalized else x)
            if gsa_normalized:
                if importance > 0.0:
                    old_scale = feature_scale[slot]
                    new_scale, factor = rescaled(old_scale, x, MIN_MAGNITUDE)
                    if new_scale != old_scale:  # rare once scales settle: no store otherwise
                        feature_scale[slot] = new_scale
                        if factor != 1.0:
                            grown_at[grown] = k
                            grown_by[grown] = factor
                            grown += 1
                    rate = 1.0 / (new_scale * new_scale)
                    rates[k - first] = rate
                    x2 = max(x * x, MIN_X2)
                    xx += x2 * rate
                    plain_ppu += x2 * rate
            elif not adaptive:
                rates[k - first] = 1.0
                plain_ppu += max(x * x, MIN_X2)
                if step == GSA:
                    xx += x * x
        rescale = grown > 0
        for c in range(grown):
            k = grown_at[c]
            raw[indices[k] if k >= start else 0] *= grown_by[c]
        p = bounded(scale * margin)
        if clamps:
            stats[LABEL_MIN] = min(stats[LABEL_MIN], y)
            stats[LABEL_MAX] = max(stats[LABEL_MAX], y)
            p = min(max(p, stats[LABEL_MIN]), stats[LABEL_MAX])
        stats[EXAMPLES] += 1.0
        stats[WEIGHT_SUM] += importance
        stats[LOSS_SUM] += importance * loss_value(loss, p, y, parameter)
        stats[LIFETIME_EXAMPLES] += 1.0
        t_before = stats[TIME]
        stats[TIME] += importance

        label_spread = 1.0
        if scale_labels and importance > 0.0:
            shift, label_spread = count_label(stats, y, importance)
            if bias and shift != 0.0:
                # The mean is the intercept of centred features' least-squares fit: the bias need not
                # travel there in steps (adaptive ones move it by about eta each, whatever the unit).
                raw[0] += shift / stats[SCALE]
                p = min(max(p + shift, stats[LABEL_MIN]), stats[LABEL_MAX])
        gradient = loss_derivative(loss, p, y, parameter) if importance > 0.0 else 0.0
        if step == GSA and importance > 0.0:
            if xx > 0.0:
                # Capped: a huge importance times a huge step (x.x near 0) must not make the mean infinite.
                stats[GREEDY_SUM] = min(
                    stats[GREEDY_SUM] + importance * greedy_step(loss, p, y, xx, gsa_target, gsa_exact, parameter),
                    MAX_MAGNITUDE,
                )
                stats[GREEDY_WEIGHT] += importance
        eta_t = base_step(step, eta, power_t, l2, t_before, importance, stats)
        # AdaGrad's steps do not grow with the gradient; in units of the labels' spread they do (the
        # weights then are those of learning on labels / spread, times spread; L2's decay is unitless).
        decay_step = eta_t
        if adaptive:
            eta_t *= label_spread

        update = 0.0
        if gradient != 0.0 and eta_t > 0.0 and not adaptive and not rescale:
            # Rates and ppu (the change of the prediction per unit of update)
            # came out of the first pass.
            multiplier = 1.0
            ppu = min(plain_ppu, MAX_MAGNITUDE)
            if safe:
                update = safe_update(loss, p, y, eta_t * importance, ppu, parameter)
            else:
                update = plain_update(loss, p, y, eta_t * importance, parameter)
        elif gradient != 0.0 and eta_t > 0.0:
            # Per-feature rates (position 0 of ``rates`` is ``first``) and ppu;
            # adaptive rates depend on this example's gradient, and a grown
            # feature scale changes the rates of earlier positions of its slot.
            ppu = 0.0
            norm_x = 0.0
            grad_sq = importance * gradient * gradient
            if adaptive:
                for k in range(first, stop):
                    slot = indices[k] if k >= start else 0
                    x = values[k] if k >= start else 1.0
                    x2 = max(x * x, MIN_X2)
                    sum_sq_grad[slot] += grad_sq * x2
                    if normalized:
                        new_scale, factor = rescaled(feature_scale[slot], x, MIN_MAGNITUDE)
                        if factor != 1.0:
                            raw[slot] *= factor
                        feature_scale[slot] = new_scale
                        norm_x += x2 / (new_scale * new_scale)
            # The rates once every position has added to its slot's sum and scale (as VW's second
            # loop does): a slot named twice in an example (a repeated word) gets one rate. Taken
            # at each position, an occurrence before the scale grew or the sum filled stepped by
            # the small ones' 1 / |x|: a centred occurrence of -0.03 before a raw 1 made a step
            # of -11 on a positive label.
            for k in range(first, stop):
                slot = indices[k] if k >= start else 0
                x = values[k] if k >= start else 1.0
                # AdaGrad's sum already carries x**2, so its one factor of 1/N
                # makes the step invariant to the feature's units; GSA's 1/N**2
                # is a plain step in normalised space.
                rate = step_rate(
                    adaptive,
                    gsa_normalized,
                    normalized,
                    sum_sq_grad[slot] if adaptive else 0.0,
                    feature_scale[slot] if keeps_scales else 0.0,
                )
                rates[k - first] = rate
                ppu += max(x * x, MIN_X2) * rate
            if adaptive and normalized and norm_x > 0.0:
                stats[NORM_WEIGHT] += importance
                stats[NORM_SUM] += importance * norm_x
            multiplier = normalised_multiplier(stats, adaptive, normalized)
            ppu = min(ppu * multiplier, MAX_MAGNITUDE)
            if safe:
                update = safe_update(loss, p, y, eta_t * importance, ppu, parameter)
            else:
                update = plain_update(loss, p, y, eta_t * importance, parameter)
        multiplier = normalised_multiplier(stats, adaptive, normalized)

        if l2 > 0.0 and importance > 0.0:
            decay_l2(raw, synced, stats, decay_step, l2, importance)

        if update != 0.0:
            coefficient = update * multiplier / stats[SCALE]
            for k in range(first, stop):
                slot = indices[k] if k >= start else 0
                x = values[k] if k >= start else 1.0
                delta = coefficient * rates[k - first] * x
                if abs(delta) < math.inf:  # an overflowing step leaves the weight as it was
                    raw[slot] += delta

        if sparsity == SUBGRADIENT and importance > 0.0:
            amount = eta_t * multiplier * gravity * importance
            subgradient_l1(raw, sum_sq_grad, feature_scale, stats, amount, adaptive, gsa_normalized, normalized)
        elif lazy and (truncate_every == 1.0 or stats[LIFETIME_EXAMPLES] % truncate_every == 0.0):  # no fmod for K = 1
            advance_clock(stats, sparsity, eta_t * multiplier * truncate_every * gravity)


@numba.njit(cache=True, nogil=True)
def predict_batch(indptr, indices, values, weights, bias, out):
    """Margins ``w . x (+ bias)`` of every example into ``out``."""
    for i in range(out.shape[0]):
        out[i] = raw_margin(weights, indices, values, indptr[i], indptr[i + 1], bias)
