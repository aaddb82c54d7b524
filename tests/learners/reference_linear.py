"""A slow, plain-Python online linear learner: the specification the kernels must meet.

Weights are a dict and every formula is written out per example and per
feature, with no numba and no vectorisation, so that it can be read against the
module docstrings of ``polybeam.learners.losses`` and ``kernels``.
"""

from __future__ import annotations

import math

MIN_X2 = 1.1754943508222875e-38


def loss_value(loss, p, y):
    if loss == "squared":
        return (p - y) ** 2
    if loss == "logistic":
        z = -y * p
        return z + math.log1p(math.exp(-z)) if z > 0 else math.log1p(math.exp(z))
    return max(0.0, 1.0 - y * p)


def loss_derivative(loss, p, y):
    if loss == "squared":
        return 2.0 * (p - y)
    if loss == "logistic":
        z = y * p
        flip = math.exp(-z) / (1.0 + math.exp(-z)) if z >= 0 else 1.0 / (1.0 + math.exp(z))
        return -y * flip
    return -y if y * p < 1.0 else 0.0


def logistic_flow(z0, c):
    """Solve d + e^z0 (e^d - 1) = c by bisection (slow and sure)."""
    if z0 > 30.0:
        return c * math.exp(-z0) / (1.0 + math.exp(-z0))
    lo, hi = 0.0, c
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if z0 + mid > 700 or mid + math.exp(z0 + mid) - math.exp(z0) > c:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


def safe_update(loss, p, y, scale, ppu):
    flow = scale * ppu
    if flow < 1e-9:
        return -scale * loss_derivative(loss, p, y)
    if loss == "squared":
        return (y - p) * (1.0 - math.exp(-2.0 * flow)) / ppu
    if loss == "logistic":
        return y * logistic_flow(y * p, flow) / ppu
    if y * p >= 1.0:
        return 0.0
    return y * min(scale, (1.0 - y * p) / ppu)


class ReferenceLinearLearner:
    def __init__(self, loss="squared", step="adaptive", learning_rate=0.5, power_t=0.5, l2=0.0,
                 bias=True, normalized=True, safe_updates=True):
        self.loss, self.step, self.eta, self.power_t, self.l2 = loss, step, learning_rate, power_t, l2
        self.bias, self.normalized, self.safe = bias, normalized, safe_updates
        self.w = {}  # true weights, no global scale trick
        self.G = {}
        self.N = {}
        self.t = 0.0
        self.loss_sum = 0.0
        self.weight_sum = 0.0
        self.examples = 0
        self.norm_weight = 0.0
        self.norm_sum = 0.0
        self.label_min = 0.0
        self.label_max = 0.0

    def features(self, slots, values):
        pairs = [(0, 1.0)] if self.bias else []
        return pairs + list(zip((int(s) for s in slots), (float(v) for v in values)))

    def learn_one(self, label, importance, slots, values):
        features = self.features(slots, values)
        y = label if self.loss == "squared" else (1.0 if label > 0 else -1.0)
        p = sum(self.w.get(j, 0.0) * x for j, x in features)
        if self.loss == "squared":
            self.label_min = min(self.label_min, y)
            self.label_max = max(self.label_max, y)
            p = min(max(p, self.label_min), self.label_max)
        self.examples += 1
        self.weight_sum += importance
        self.loss_sum += importance * loss_value(self.loss, p, y)
        t_before = self.t
        self.t += importance
        if importance <= 0:
            return
        if self.step in ("constant", "adaptive"):
            eta_t = self.eta
        elif self.step == "decay":
            eta_t = self.eta * (t_before + importance) ** -self.power_t
        else:
            eta_t = 1.0 / (self.l2 * (t_before + 1.0))
        g = loss_derivative(self.loss, p, y)
        rates = []
        update, multiplier = 0.0, 1.0
        if g != 0.0:
            ppu = norm_x = 0.0
            for j, x in features:
                x2 = max(x * x, MIN_X2)
                rate = 1.0
                if self.step == "adaptive":
                    self.G[j] = self.G.get(j, 0.0) + importance * g * g * x2
                    rate = 1.0 / math.sqrt(self.G[j]) if self.G[j] > 0 else 0.0
                    if self.normalized:
                        magnitude = max(abs(x), math.sqrt(MIN_X2))
                        old = self.N.get(j, 0.0)
                        if magnitude > old:
                            if old > 0:
                                self.w[j] = self.w.get(j, 0.0) * old / magnitude
                            self.N[j] = magnitude
                        norm_x += x2 / self.N[j] ** 2
                        rate /= self.N[j]
                rates.append(rate)
                ppu += x2 * rate
            if self.step == "adaptive" and self.normalized and norm_x > 0:
                self.norm_weight += importance
                self.norm_sum += importance * norm_x
                multiplier = math.sqrt(self.norm_weight / self.norm_sum)
                ppu *= multiplier
            if self.safe:
                update = safe_update(self.loss, p, y, eta_t * importance, ppu)
            else:
                update = -eta_t * importance * g
        if self.l2 > 0:
            decay = max(0.0, 1.0 - eta_t * self.l2 * importance)
            self.w = {j: w * decay for j, w in self.w.items()}
        for (j, x), rate in zip(features, rates):
            self.w[j] = self.w.get(j, 0.0) + update * multiplier * rate * x

    def learn(self, batch):
        for i in range(len(batch)):
            slots, values = batch.row(i)
            self.learn_one(float(batch.labels[i]), float(batch.weights[i]), slots, values)
        return self

    @property
    def progressive_loss(self):
        return self.loss_sum / self.weight_sum
