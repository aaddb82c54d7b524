"""Losses as numba functions of a prediction ``p`` and a label ``y``.

Each loss provides its value, its derivative in ``p`` and its *safe update*: the
change of ``p`` (per unit of the example's "prediction per update" ``ppu``) that
results from following the loss's gradient flow for a total step ``scale``,
instead of taking one straight gradient step. Following the flow is what makes
an update importance-aware: an example with importance 2 moves the prediction as
two copies of it would, and no step overshoots the label (Karampatziakis and
Langford, "Online Importance Weight Aware Updates", 2011). The closed forms below
solve ``dp/dh = -ppu * dloss/dp`` for ``h`` from 0 to ``scale``.

Conventions: squared loss is ``(p - y)**2`` (derivative ``2 (p - y)``), as VW
reports it; logistic is ``log(1 + exp(-y p))`` and hinge ``max(0, 1 - y p)`` with
``y`` in {-1, +1}; quantile (pinball) loss is ``tau (y - p)`` above the prediction
and ``(1 - tau) (p - y)`` below it; Poisson loss, on a log-mean ``p`` and a count
``y >= 0``, is ``exp(p) - y p`` less its least value ``y - y log y``, so that it is
0 at ``p = log y`` and twice it is the Poisson deviance. ``parameter`` is the
loss's number (quantile's tau; ignored by the others).

Which losses exist, and what the rest of polybeam knows of each, is the table
in :mod:`polybeam.learners.loss_specs`; a new loss adds its code there and its
arithmetic to each function here.

>>> round(float(loss_value(LOGISTIC, 0.0, 1.0, 0.0)), 6)
0.693147
>>> float(safe_update(SQUARED, 0.0, 1.0, 1e9, 1.0, 0.0))   # never past the label
1.0
>>> round(float(loss_value(POISSON, math.log(3.0), 3.0, 0.0)), 12)   # 0 at the mean
0.0
>>> float(safe_update(QUANTILE, 0.0, 2.0, 1e9, 1.0, 0.9))   # never past the label either
2.0
"""

from __future__ import annotations

import math

import numba

from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernels below)
from polybeam.learners.loss_specs import (  # noqa: F401  (the codes: re-exported)
    HINGE,
    LOGISTIC,
    MAX_LOG_MEAN,
    POISSON,
    QUANTILE,
    SOFTMAX,
    SQUARED,
)

# Softmax's log loss lives in its own kernel (polybeam.learners.softmax), not in the functions below:
# its code only completes the kernels' settings (polybeam.learners.kernel_settings).

# Below this total step the flow and a straight gradient step agree to ~1e-12,
# and the closed forms would lose precision to cancellation.
_TINY_STEP = 1e-9


@numba.njit(cache=True)
def log1pexp(z):
    """log(1 + exp(z)) without overflow."""
    if z > 0:
        return z + math.log1p(math.exp(-z))
    return math.log1p(math.exp(z))


@numba.njit(cache=True)
def _mean(p):
    """A Poisson log-mean's mean, exp(p), finite."""
    return math.exp(min(p, MAX_LOG_MEAN))


@numba.njit(cache=True)
def loss_value(loss, p, y, parameter):
    """The loss of prediction ``p`` on label ``y``."""
    if loss == SQUARED:
        return (p - y) * (p - y)
    if loss == LOGISTIC:
        return log1pexp(-y * p)
    if loss == QUANTILE:
        return parameter * (y - p) if y >= p else (1.0 - parameter) * (p - y)
    if loss == POISSON:
        least = y - y * math.log(y) if y > 0.0 else 0.0
        return _mean(p) - y * p - least
    margin = 1.0 - y * p
    return margin if margin > 0.0 else 0.0


@numba.njit(cache=True)
def loss_derivative(loss, p, y, parameter):
    """d loss / d p."""
    if loss == SQUARED:
        return 2.0 * (p - y)
    if loss == LOGISTIC:
        z = y * p
        # -y / (1 + exp(z)), written to stay finite for large |z|.
        if z > 0:
            e = math.exp(-z)
            return -y * e / (1.0 + e)
        return -y / (1.0 + math.exp(z))
    if loss == QUANTILE:
        if y > p:
            return -parameter
        return 1.0 - parameter if y < p else 0.0
    if loss == POISSON:
        return _mean(p) - y
    return -y if y * p < 1.0 else 0.0


@numba.njit(cache=True)
def loss_curvature(loss, p, y, parameter):
    """d^2 loss / d p^2 (0 where the loss is piecewise linear): the L-BFGS stage's preconditioner."""
    if loss == SQUARED:
        return 2.0
    if loss == LOGISTIC:
        flip = 1.0 / (1.0 + math.exp(min(y * p, MAX_LOG_MEAN)))
        return flip * (1.0 - flip)
    if loss == POISSON:
        return _mean(p)
    return 0.0


@numba.njit(cache=True)
def _logistic_flow(z0, c):
    """Margin gain ``d >= 0`` from following the logistic flow: d + e^z0 (e^d - 1) = c.

    ``z0 = y p`` is the margin before the update and ``c = scale * ppu`` the
    flow's length. Each regime is solved where it stays accurate:

    * z0 > 30: e^z0 dominates, and d = log(1 + c e^-z0) to 1e-13;
    * -30 <= z0 <= 30: Newton's method on d itself (no cancellation when d is
      tiny), started at an upper bound of the root, min(c, log(c + e^z0) - z0);
      the left side is increasing and convex, so Newton descends monotonically;
    * z0 < -30: in terms of the new margin u = z0 + d the equation is
      u + e^u = X with X = c + z0 + e^z0; for X < -30, e^u is negligible and
      d = c + e^z0 - e^u with u = X - e^X; otherwise Newton on u from above
      (X, or log X when X > 1), and d = u - z0 is large, so exact enough.
    """
    if z0 > 30.0:
        return math.log1p(c * math.exp(-z0))
    ez0 = math.exp(z0)
    if z0 >= -30.0:
        log_c = math.log(c)
        upper = max(log_c, z0) + math.log1p(math.exp(-abs(log_c - z0))) - z0
        d = min(c, upper)
        for _ in range(100):
            # e^z0 (e^d - 1), without overflowing e^d when d is large (z0 + d
            # stays below log(c + e^z0), so e^(z0 + d) is finite).
            grown = math.exp(z0 + d)
            extra = ez0 * math.expm1(d) if d < 700.0 else grown - ez0
            step = (d + extra - c) / (1.0 + grown)
            d -= step
            if abs(step) <= 1e-15 * (1.0 + abs(d)):
                break
        return max(d, 0.0)
    target = c + z0 + ez0
    if target < -30.0:
        u = target - math.exp(target)
        return max(c + ez0 - math.exp(u), 0.0)
    u = math.log(target) if target > 1.0 else target
    for _ in range(100):
        eu = math.exp(u)
        step = (u + eu - target) / (1.0 + eu)
        u -= step
        if abs(step) <= 1e-15 * (1.0 + abs(u)):
            break
    return max(u - z0, 0.0)


@numba.njit(cache=True)
def _poisson_flow(p, y, c):
    """Change of the log-mean ``p`` along the Poisson flow dp/dh = y - exp(p) for a length ``c``.

    In ``u = exp(-p)`` the flow is linear, du/dh = 1 - y u, whence (y > 0)
    ``c y - log(1 + exp(p) (exp(c y) - 1) / y)``, which tends to ``log y - p``
    (the optimum) and never passes it; and (y = 0) ``-log(1 + c exp(p))``.
    The logarithm of the sum is taken from logarithms, so neither term overflows.
    """
    if y <= 0.0:
        log_term = min(p, MAX_LOG_MEAN) + math.log(c)
        return -log1pexp(log_term)
    cy = c * y
    # log(exp(cy) - 1), accurate for small and large cy.
    log_grown = math.log(math.expm1(cy)) if cy < 30.0 else cy + math.log1p(-math.exp(-cy))
    log_term = min(p, MAX_LOG_MEAN) - math.log(y) + log_grown
    return cy - log1pexp(log_term)


@numba.njit(cache=True)
def safe_update(loss, p, y, scale, ppu, parameter):
    """Change of ``p`` per unit of ``ppu`` after a gradient flow of length ``scale``.

    The weights then move by ``update * rate_i * x_i``, which changes the
    prediction by ``update * ppu``.
    """
    flow = scale * ppu
    if flow < _TINY_STEP:
        return -scale * loss_derivative(loss, p, y, parameter)
    if loss == SQUARED:
        return (y - p) * -math.expm1(-2.0 * flow) / ppu
    if loss == LOGISTIC:
        return y * _logistic_flow(y * p, flow) / ppu
    if loss == QUANTILE:
        # The flow moves p toward y at a constant speed and stops there (VW's quantile update).
        if y > p:
            return min(parameter * scale, (y - p) / ppu)
        if y < p:
            return max(-(1.0 - parameter) * scale, (y - p) / ppu)
        return 0.0
    if loss == POISSON:
        return _poisson_flow(p, y, flow) / ppu
    margin = 1.0 - y * p
    if margin <= 0.0:
        return 0.0
    return y * min(scale, margin / ppu)


@numba.njit(cache=True)
def plain_update(loss, p, y, scale, parameter):
    """The straight gradient step, in the same units as :func:`safe_update`."""
    return -scale * loss_derivative(loss, p, y, parameter)


@numba.njit(cache=True)
def batch_losses(loss, predictions, labels, parameter, out):
    """``out[i]`` = the loss of ``predictions[i]`` (margins, clamped where the loss clamps) on ``labels[i]``
    (binary labels as -1/+1): evaluation's per-example losses, by the learner's own arithmetic."""
    for i in range(labels.shape[0]):
        out[i] = loss_value(loss, predictions[i], labels[i], parameter)


@numba.njit(cache=True)
def batch_derivatives(loss, margins, labels, parameter, derivative, curvature):
    """Each example's loss derivative and curvature at its margin (the L-BFGS stage's gradient)."""
    for i in range(labels.shape[0]):
        derivative[i] = loss_derivative(loss, margins[i], labels[i], parameter)
        curvature[i] = loss_curvature(loss, margins[i], labels[i], parameter)
