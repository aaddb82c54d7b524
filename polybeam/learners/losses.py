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
``y`` in {-1, +1}.

>>> round(float(loss_value(LOGISTIC, 0.0, 1.0)), 6)
0.693147
>>> float(safe_update(SQUARED, 0.0, 1.0, 1e9, 1.0))   # never past the label
1.0
"""

from __future__ import annotations

import math

import numba

SQUARED = 0
LOGISTIC = 1
HINGE = 2
LOSS_CODES = {"squared": SQUARED, "logistic": LOGISTIC, "hinge": HINGE}

# Below this total step the flow and a straight gradient step agree to ~1e-12,
# and the closed forms would lose precision to cancellation.
_TINY_STEP = 1e-9


@numba.njit(cache=True, inline="always")
def log1pexp(z):
    """log(1 + exp(z)) without overflow."""
    if z > 0:
        return z + math.log1p(math.exp(-z))
    return math.log1p(math.exp(z))


@numba.njit(cache=True)
def loss_value(loss, p, y):
    """The loss of prediction ``p`` on label ``y``."""
    if loss == SQUARED:
        return (p - y) * (p - y)
    if loss == LOGISTIC:
        return log1pexp(-y * p)
    margin = 1.0 - y * p
    return margin if margin > 0.0 else 0.0


@numba.njit(cache=True)
def loss_derivative(loss, p, y):
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
    return -y if y * p < 1.0 else 0.0


@numba.njit(cache=True)
def _logistic_flow(z0, c):
    """Margin gain ``d`` from following the logistic flow: d + e^z0 (e^d - 1) = c.

    ``z0 = y p`` is the margin before the update and ``c = scale * ppu`` the
    flow's length. The left side is increasing and convex in ``d``, so Newton's
    method started above the root descends to it monotonically.
    """
    if z0 > 30.0:
        # exp(z0) dominates: the gain is c / (1 + e^z0) to double precision.
        e = math.exp(-z0)
        return c * e / (1.0 + e)
    ez0 = math.exp(z0)
    # Upper bounds on the root: d <= c, and z0 + d <= log(c + e^z0).
    log_c = math.log(c)
    upper = max(log_c, z0) + math.log1p(math.exp(-abs(log_c - z0))) - z0
    d = min(c, upper)
    for _ in range(60):
        ed = math.exp(z0 + d)
        value = d + ed - ez0 - c
        step = value / (1.0 + ed)
        d -= step
        if abs(step) <= 1e-13 * (1.0 + abs(d)):
            break
    return max(d, 0.0)


@numba.njit(cache=True)
def safe_update(loss, p, y, scale, ppu):
    """Change of ``p`` per unit of ``ppu`` after a gradient flow of length ``scale``.

    The weights then move by ``update * rate_i * x_i``, which changes the
    prediction by ``update * ppu``.
    """
    flow = scale * ppu
    if flow < _TINY_STEP:
        return -scale * loss_derivative(loss, p, y)
    if loss == SQUARED:
        return (y - p) * -math.expm1(-2.0 * flow) / ppu
    if loss == LOGISTIC:
        return y * _logistic_flow(y * p, flow) / ppu
    margin = 1.0 - y * p
    if margin <= 0.0:
        return 0.0
    return y * min(scale, margin / ppu)


@numba.njit(cache=True)
def plain_update(loss, p, y, scale):
    """The straight gradient step, in the same units as :func:`safe_update`."""
    return -scale * loss_derivative(loss, p, y)
