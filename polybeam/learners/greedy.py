"""Greedy steps of greedy step averaging (GSA; Zhang, Yao and Tian).

For one example, the *greedy step* is the step size that, taken along the
example's own gradient, would fit that example: squared and quantile loss reach
the label, hinge loss the margin 1, logistic and softmax loss move the probability of the
true class to ``target`` (p_hat, 0.95 by default; a probability of 1 is never
reached). GSA then steps with the running mean of all greedy steps so far, so no
learning rate is needed. All steps here are in the units of our gradients
(d loss / d score times x), with ``xx = x . x`` (the bias counts as a feature
of value 1). A step is never negative or non-finite: an example already past
its target, or one with ``xx`` overflowing, contributes a zero step.

>>> round(float(greedy_step(SQUARED, 0.0, 1.0, 4.0, 0.95, False)), 6)   # 1 / (2 x.x)
0.125
>>> float(greedy_step(LOGISTIC, 5.0, 1.0, 2.0, 0.95, False))   # already past p_hat
0.0
"""

from __future__ import annotations

import math

import numba

from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernels below)
from polybeam.learners.losses import HINGE, LOGISTIC, SQUARED, loss_derivative

E = math.e


@numba.njit(cache=True)
def _clean(step):
    if step > 0.0 and step < math.inf:
        return step
    return 0.0


@numba.njit(cache=True)
def sigmoid(z):
    if z >= 0.0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


@numba.njit(cache=True)
def greedy_step(loss, p, y, xx, target, exact, parameter=0.0):
    """The greedy step of one example with score ``p``, label ``y`` and ``xx = x . x`` (``parameter``: the
    loss's number, quantile's tau). Squared, hinge and logistic loss have steps of their own; any other
    loss that greedy step averaging learns (its entry's ``greedy``) takes the step that fits the label along
    its gradient, ``p - step * loss' * xx = y``, as quantile loss does."""
    if not xx > 0.0:
        return 0.0
    if loss == SQUARED:
        # p - step * 2 (p - y) * xx = y
        return _clean(1.0 / (2.0 * xx))
    if loss == HINGE:
        margin = 1.0 - y * p
        return _clean(margin / xx) if margin > 0.0 else 0.0
    if loss == LOGISTIC:
        return _logistic_step(p, y, xx, target, exact)
    gradient = loss_derivative(loss, p, y, parameter)
    return _clean((p - y) / gradient / xx) if gradient != 0.0 else 0.0


@numba.njit(cache=True)
def _logistic_step(p, y, xx, target, exact):
    if exact:
        # Section 3.2: the step that puts the score exactly at +-logit(target).
        gradient = loss_derivative(LOGISTIC, p, y, 0.0)
        if gradient == 0.0:
            return 0.0
        goal = y * math.log(target / (1.0 - target))
        denominator = gradient * xx
        if denominator == 0.0:  # a subnormal x.x times a tiny gradient underflows
            return 0.0
        return _clean((p - goal) / denominator)
    # Eq. 16: softmax's linearised step (eq. 10) for two classes.
    p1 = sigmoid(p)
    p0 = 1.0 - p1
    b0 = math.exp(p0)
    b1 = math.exp(p1)
    spread = target * (1.0 - p0 * b0 - p1 * b1)
    if y > 0.0:
        numerator, denominator = p1 - target, spread + p1 * (1.0 - b0)
    else:
        numerator, denominator = p0 - target, spread + p0 * (1.0 - b1)
    if denominator == 0.0:
        return 0.0
    # Divide in two so that a subnormal x.x overflows to inf (cleaned to 0), never traps.
    return _clean(2.0 * (numerator / denominator) / xx)


@numba.njit(cache=True)
def softmax_greedy_step(probabilities, label, xx, target):
    """Eq. 10: the linearised step moving the true class's probability to ``target``.

    ``probabilities`` are the current class probabilities and ``label`` the
    0-based true class.
    """
    if not xx > 0.0:
        return 0.0
    spread = 0.0
    for k in range(probabilities.shape[0]):
        spread += probabilities[k] * math.exp(probabilities[k])
    p_true = probabilities[label]
    denominator = target * (1.0 - spread) + p_true * (1.0 - E / math.exp(p_true))
    if denominator == 0.0:
        return 0.0
    return _clean((p_true - target) / denominator / xx)
