"""Slow, plain-Python online learners: the specification the kernels must meet.

Weights are dicts and every formula is written out per example and per feature,
with no numba and no vectorisation, so that it can be read against the papers
and the module docstrings of ``polybeam.learners``. Sparsity is applied
*eagerly*: every truncation step touches every weight, which is what the
kernels' lazy time stamps must reproduce. The GSA greedy steps are written in
the papers' own forms (softmax's eq. 10 with e_j = exp(w_j . x)), not the
kernels' rearranged ones.
"""

from __future__ import annotations

import math

from polybeam.learners.centring import VARIED_BY

MIN_X2 = 1.1754943508222875e-38


def loss_value(loss, p, y, tau=0.5):
    if loss == "squared":
        return (p - y) ** 2
    if loss == "logistic":
        z = -y * p
        return z + math.log1p(math.exp(-z)) if z > 0 else math.log1p(math.exp(z))
    if loss == "quantile":  # the pinball loss
        return tau * (y - p) if y >= p else (1.0 - tau) * (p - y)
    if loss == "poisson":  # exp(p) - y p, less its least value (at p = log y)
        return math.exp(p) - y * p - (y - y * math.log(y) if y > 0 else 0.0)
    return max(0.0, 1.0 - y * p)


def loss_derivative(loss, p, y, tau=0.5):
    if loss == "squared":
        return 2.0 * (p - y)
    if loss == "logistic":
        z = y * p
        flip = math.exp(-z) / (1.0 + math.exp(-z)) if z >= 0 else 1.0 / (1.0 + math.exp(z))
        return -y * flip
    if loss == "quantile":
        return -tau if y > p else (1.0 - tau if y < p else 0.0)
    if loss == "poisson":
        return math.exp(p) - y
    return -y if y * p < 1.0 else 0.0


def poisson_flow(p, y, c):
    """The change of p along dp/dh = y - exp(p) for a length c: classical Runge-Kutta in steps small beside the
    flow's rate, max(y, exp(p)) (slow and sure, and independent of the kernel's closed form)."""
    steps = min(max(4000, math.ceil(200 * c * max(y, math.exp(p)))), 2_000_000)
    h = c / steps
    start = p
    for _ in range(steps):
        k1 = y - math.exp(p)
        k2 = y - math.exp(p + 0.5 * h * k1)
        k3 = y - math.exp(p + 0.5 * h * k2)
        k4 = y - math.exp(p + h * k3)
        p += h * (k1 + 2 * k2 + 2 * k3 + k4) / 6.0
    return p - start


def logistic_flow(z0, c):
    """Solve d + e^z0 (e^d - 1) = c for d >= 0 by bisection, slow and sure.

    For z0 > 30 the closed form log(1 + c e^-z0); for z0 < -30 bisection on the
    new margin u = z0 + d (u + e^u = c + z0 + e^z0), since d is then large.
    """
    if z0 > 30.0:
        return math.log1p(c * math.exp(-z0))
    if z0 >= -30.0:
        lo, hi = 0.0, c
        for _ in range(400):
            mid = 0.5 * (lo + hi)
            if z0 + mid > 700:
                hi = mid
                continue
            grown = math.exp(z0) * math.expm1(mid) if mid < 700 else math.exp(z0 + mid) - math.exp(z0)
            if mid + grown > c:
                hi = mid
            else:
                lo = mid
        return 0.5 * (lo + hi)
    target = c + z0 + math.exp(z0)
    lo, hi = z0, max(z0, min(target, math.log(target) if target > 1 else target))
    for _ in range(400):
        mid = 0.5 * (lo + hi)
        if mid + (math.exp(mid) if mid < 700 else math.inf) > target:
            hi = mid
        else:
            lo = mid
    return max(0.5 * (lo + hi) - z0, 0.0)


def safe_update(loss, p, y, scale, ppu, tau=0.5):
    flow = scale * ppu
    if flow < 1e-9:
        return -scale * loss_derivative(loss, p, y, tau)
    if loss == "squared":
        return (y - p) * (1.0 - math.exp(-2.0 * flow)) / ppu
    if loss == "logistic":
        return y * logistic_flow(y * p, flow) / ppu
    if loss == "quantile":  # p moves toward y at speed tau (or 1 - tau) and stops there
        speed = tau if y > p else 1.0 - tau
        moved = min(speed * flow, abs(y - p))
        return math.copysign(moved, y - p) / ppu if y != p else 0.0
    if loss == "poisson":
        return poisson_flow(p, y, flow) / ppu
    if y * p >= 1.0:
        return 0.0
    return y * min(scale, (1.0 - y * p) / ppu)


def bounded(value):
    if value != value:
        return 0.0
    return min(max(value, -1e300), 1e300)


def clean(step):
    return step if 0.0 < step < math.inf else 0.0


def greedy_step(loss, p, y, xx, target=0.95, exact=False, tau=0.5):
    """GSA's greedy step for one binary/regression example, as the paper writes it (quantile loss: the step
    that reaches the label)."""
    if xx <= 0:
        return 0.0
    if loss == "squared":
        return clean(1.0 / (2.0 * xx))
    if loss == "quantile":
        g = loss_derivative(loss, p, y, tau)
        return clean((p - y) / g / xx) if g != 0 else 0.0
    if loss == "hinge":
        return clean((1.0 - y * p) / xx) if y * p < 1.0 else 0.0
    if exact:
        g = loss_derivative(loss, p, y)
        if g == 0:
            return 0.0
        return clean((p - y * math.log(target / (1 - target))) / (g * xx))
    p1 = 1.0 / (1.0 + math.exp(-p)) if p >= 0 else math.exp(p) / (1.0 + math.exp(p))
    p0 = 1.0 - p1
    b0, b1 = math.exp(p0), math.exp(p1)
    if y > 0:  # eq. 16, label 1
        step = (p1 - target) / (target * (1 - p0 * b0 - p1 * b1) + p1 * (1 - b0)) * 2 / xx
    else:
        step = (p0 - target) / (target * (1 - p0 * b0 - p1 * b1) + p0 * (1 - b1)) * 2 / xx
    return clean(step)


def softmax_greedy_step(scores, k, xx, target=0.95):
    """Eq. 10 in the paper's form: e_j = exp(w_j . x), b_j = exp(p_j)."""
    if xx <= 0:
        return 0.0
    top = max(scores)  # eq. 10 is homogeneous in the e_j: shifting the scores changes nothing
    e = [math.exp(s - top) for s in scores]
    total = sum(e)
    b = [math.exp(v / total) for v in e]
    numerator = -target * total + e[k]
    denominator = target * sum(ej * (1 - bj) for ej, bj in zip(e, b)) + e[k] - math.e * e[k] / b[k]
    return clean(numerator / denominator / xx)


class _Reference:
    """What the binary and softmax references share: step sizes, rates and sparsity."""

    def __init__(
        self,
        step,
        learning_rate,
        power_t,
        l2,
        bias,
        normalized,
        gsa_target,
        sparsity,
        gravity,
        truncate_every,
        truncate_threshold,
    ):
        self.step, self.eta, self.power_t, self.l2 = step, learning_rate, power_t, l2
        self.bias, self.normalized, self.gsa_target = bias, normalized, gsa_target
        self.sparsity, self.gravity, self.K = sparsity, gravity, truncate_every
        self.theta = math.inf if truncate_threshold is None else truncate_threshold
        # The cumulative penalty (VW's --l1): the total pull so far, and where each slot's account opened.
        self.pull_total = 0.0
        self.opened = {}
        self.G = {}
        self.N = {}
        self.t = 0.0
        self.steps = 0
        self.loss_sum = 0.0
        self.weight_sum = 0.0
        self.examples = 0
        self.norm_weight = 0.0
        self.norm_sum = 0.0
        self.greedy_sum = 0.0
        self.greedy_weight = 0.0

    def features(self, slots, values):
        pairs = [(0, 1.0)] if self.bias else []
        return pairs + list(zip((int(s) for s in slots), (float(v) for v in values)))

    def seen(self, slot, x):
        """The value the normalised adaptive step predicts with: clipped to the largest magnitude
        its feature had before this example."""
        known = self.N.get(slot, 0.0)
        if self.step == "adaptive" and self.normalized and known > 0 and abs(x) > known:
            return math.copysign(known, x)
        return x

    def base_step(self, t_before, importance):
        if self.step in ("constant", "adaptive"):
            return self.eta
        if self.step == "decay":
            return self.eta * max(t_before + importance, 1.0) ** -self.power_t
        if self.step == "inverse":
            return 1.0 / (self.l2 * (t_before + 1.0))
        return self.greedy_sum / self.greedy_weight if self.greedy_weight > 0 else 0.0

    def multiplier(self):
        if self.step == "adaptive" and self.normalized and self.norm_sum > 0:
            return math.sqrt(self.norm_weight / self.norm_sum)
        return 1.0

    def rate(self, key, slot):
        """Per-coordinate rate: key indexes G (slot, or (slot, class)); N is per slot."""
        if self.step == "gsa" and self.normalized and self.N.get(slot, 0.0) > 0:
            return 1.0 / self.N[slot] ** 2  # a plain step in normalised feature space
        if self.step != "adaptive":
            return 1.0
        g = self.G.get(key, 0.0)
        if g <= 0:
            return 0.0
        rate = 1.0 / math.sqrt(g)
        if self.normalized and self.N.get(slot, 0.0) > 0:
            rate /= self.N[slot]
        return rate

    def observe_scale(self, slot, x, rescale):
        """VW's normalisation: a larger |x| rescales the slot's weights; returns x**2 / N**2."""
        x2 = max(x * x, MIN_X2)
        magnitude = max(abs(x), math.sqrt(MIN_X2))
        old = self.N.get(slot, 0.0)
        if magnitude > old:
            if old > 0:
                rescale(slot, old / magnitude)
            self.N[slot] = magnitude
        return x2 / self.N[slot] ** 2

    def squared_norm(self, features, rescale):
        """x . x for GSA's greedy step, in normalised feature space when normalising."""
        if self.normalized:
            return sum(self.observe_scale(j, x, rescale) for j, x in features)
        return sum(x * x for _, x in features)

    def penalty(self, key, slot):
        """(rate, threshold) of the sparsity penalty for one weight: normalising learners
        penalise the normalised weight w * N (see polybeam.learners.sparsity)."""
        n = self.N.get(slot, 0.0)
        if self.step == "adaptive":
            g = self.G.get(key, 0.0)
            rate = 1.0 / math.sqrt(g) if g > 0 else 0.0
        elif self.step == "gsa" and self.normalized and n > 0:
            rate = 1.0 / n
        else:
            rate = 1.0
        normalising = self.normalized and self.step in ("adaptive", "gsa") and n > 0
        return rate, (self.theta / n if normalising else self.theta)

    def sparsify(self, weights, eta_t, importance):
        """Eager truncation / rounding / subgradient over every weight (keys slot or (slot, class))."""
        multiplier = self.multiplier()
        if self.sparsity == "subgradient":
            if importance > 0:
                for key, w in list(weights.items()):
                    if w != 0:
                        rate, _ = self.penalty(key, key[0] if isinstance(key, tuple) else key)
                        amount = eta_t * multiplier * self.gravity * importance * rate
                        weights[key] = w - amount if w > 0 else w + amount
        elif self.sparsity == "cumulative" and self.steps % self.K == 0:
            self.pull_total += eta_t * multiplier * self.K * self.gravity  # the weights keep their sums
        elif self.sparsity in ("truncate", "round") and self.steps % self.K == 0:
            for key, w in list(weights.items()):
                rate, theta = self.penalty(key, key[0] if isinstance(key, tuple) else key)
                if self.sparsity == "truncate" and abs(w) <= theta:
                    amount = eta_t * multiplier * self.K * self.gravity * rate
                    weights[key] = max(0.0, abs(w) - amount) * (1 if w > 0 else -1)
                elif self.sparsity == "round" and abs(w) < theta:
                    weights[key] = 0.0

    def in_force(self, weights, key):
        """The weight in force of ``key``: under the cumulative penalty its sum of steps truncated
        by the pull its slot owes since the account opened, at the weight's current rate."""
        w = weights.get(key, 0.0)
        if self.sparsity != "cumulative":
            return w
        slot = key[0] if isinstance(key, tuple) else key
        opened = self.opened.get(slot, 0.0)
        owed = self.pull_total - opened if opened != 0.0 else 0.0  # 0 is "not opened", as in the kernel
        rate, _ = self.penalty(key, slot)
        return max(0.0, abs(w) - owed * rate) * (1 if w > 0 else -1)

    def open_accounts(self, features):
        """An example's slots open their accounts at their first touch (one opened while the
        total is still 0 opens again at its next touch, as the kernel's time stamp 0 means "never")."""
        if self.sparsity == "cumulative":
            for j, _ in features:
                if self.opened.get(j, 0.0) == 0.0:
                    self.opened[j] = self.pull_total

    def settle(self, weights, keys_by_slot):
        """Make the weights in force of these slots their sums and open their accounts again."""
        if self.sparsity != "cumulative":
            return
        for slot, keys in keys_by_slot.items():
            for key in keys:
                weights[key] = self.in_force(weights, key)
            if self.opened.get(slot, 0.0) != 0.0:
                self.opened[slot] = self.pull_total

    def rounded(self, weights):
        """The subgradient baseline rounds small weights to zero at the end."""
        if self.sparsity != "subgradient":
            return {key: self.in_force(weights, key) for key in weights}
        kept = {}
        for key, w in weights.items():
            _, theta = self.penalty(key, key[0] if isinstance(key, tuple) else key)
            kept[key] = 0.0 if abs(w) < theta else w
        return kept

    @property
    def progressive_loss(self):
        return self.loss_sum / self.weight_sum


class ReferenceLinearLearner(_Reference):
    def __init__(
        self,
        loss="squared",
        step="adaptive",
        learning_rate=0.5,
        power_t=0.5,
        l2=0.0,
        bias=True,
        normalized=True,
        safe_updates=True,
        gsa_target=0.95,
        gsa_exact=False,
        sparsity="none",
        gravity=0.0,
        truncate_every=1,
        truncate_threshold=None,
        scale_labels=False,
        quantile_tau=0.5,
    ):
        super().__init__(
            step,
            learning_rate,
            power_t,
            l2,
            bias,
            normalized,
            gsa_target,
            sparsity,
            gravity,
            truncate_every,
            truncate_threshold,
        )
        self.loss, self.safe, self.gsa_exact, self.tau = loss, safe_updates, gsa_exact, quantile_tau
        self.w = {}  # true weights, no global scale trick
        self.label_min = 0.0
        self.label_max = 0.0
        # Regressions of values clamp their predictions to the labels' range; classes are -1 and +1.
        self.clamps = loss in ("squared", "quantile")
        self.binary = loss in ("logistic", "hinge")
        # scale_labels: the labels counted so far (importance-weighted), whose mean the bias follows
        # and whose standard deviation an adaptive step is in units of.
        self.scale_labels = scale_labels and loss in ("squared", "quantile")
        self.labels = []

    def in_force_terms(self, features, importance):
        """Each position's w * x for the margin. Normalised GSA observes each feature's scale in
        the same loop as the kernel predicts, so a slot repeated in one example is penalised (the
        cumulative penalty's rate 1 / N) at the scale its earlier occurrence left."""
        if not (self.step == "gsa" and self.normalized and importance > 0 and self.sparsity == "cumulative"):
            return [self.in_force(self.w, j) * self.seen(j, x) for j, x in features]
        scales, terms = dict(self.N), []
        for j, x in features:
            terms.append(self.in_force(self.w, j) * x)
            self.N[j] = max(self.N.get(j, 0.0), abs(x), math.sqrt(MIN_X2))
        self.N = scales
        return terms

    def learn_one(self, label, importance, slots, values):
        features = self.features(slots, values)
        self.open_accounts(features)
        y = (1.0 if label > 0 else -1.0) if self.binary else label
        p = bounded(sum(self.in_force_terms(features, importance)))
        if self.clamps:
            self.label_min = min(self.label_min, y)
            self.label_max = max(self.label_max, y)
            p = min(max(p, self.label_min), self.label_max)
        self.examples += 1
        self.steps += 1
        self.weight_sum += importance
        self.loss_sum += importance * loss_value(self.loss, p, y, self.tau)
        t_before = self.t
        self.t += importance
        spread = 1.0
        if self.scale_labels and importance > 0:
            before = self.label_mean()
            self.labels.append((importance, y))
            after = self.label_mean()
            weight = sum(i for i, _ in self.labels)
            spread = math.sqrt(max(sum(i * (v - after) ** 2 for i, v in self.labels) / weight, 0.0))
            if self.bias and after != before:
                self.w[0] = self.w.get(0, 0.0) + after - before
                p = min(max(p + after - before, self.label_min), self.label_max)
        if self.step == "gsa" and importance > 0:
            xx = self.squared_norm(features, lambda s, f: self.w.__setitem__(s, self.w.get(s, 0.0) * f))
            if xx > 0:
                self.greedy_sum += importance * greedy_step(
                    self.loss, p, y, xx, self.gsa_target, self.gsa_exact, self.tau
                )
                self.greedy_weight += importance
        eta_t = self.base_step(t_before, importance)
        decay_step = eta_t
        if self.step == "adaptive":
            eta_t *= spread
        g = loss_derivative(self.loss, p, y, self.tau) if importance > 0 else 0.0
        rates = []
        update = 0.0
        if g != 0.0 and eta_t > 0:
            ppu = norm_x = 0.0
            for j, x in features:
                if self.step == "adaptive":
                    self.G[j] = self.G.get(j, 0.0) + importance * g * g * max(x * x, MIN_X2)
                    if self.normalized:
                        norm_x += self.observe_scale(j, x, lambda s, f: self.w.__setitem__(s, self.w.get(s, 0.0) * f))
            for j, x in features:  # each slot's rate after all its positions (a repeated slot: one rate)
                rate = self.rate(j, j)
                rates.append(rate)
                ppu += max(x * x, MIN_X2) * rate
            if self.step == "adaptive" and self.normalized and norm_x > 0:
                self.norm_weight += importance
                self.norm_sum += importance * norm_x
            multiplier = self.multiplier()
            ppu = min(ppu * multiplier, 1e300)
            if self.safe:
                update = safe_update(self.loss, p, y, eta_t * importance, ppu, self.tau)
            else:
                update = -eta_t * importance * g
            update *= multiplier
        if self.l2 > 0 and importance > 0:
            decay = max(0.0, 1.0 - decay_step * self.l2 * importance)
            self.w = {j: w * decay for j, w in self.w.items()}
        for (j, x), rate in zip(features, rates):
            self.w[j] = self.w.get(j, 0.0) + update * rate * x
        self.sparsify(self.w, eta_t, importance)

    def label_mean(self):
        weight = sum(i for i, _ in self.labels)
        return sum(i * v for i, v in self.labels) / weight if weight > 0 else 0.0

    def final_weights(self):
        """Weights as the model holds them (the subgradient baseline rounds at the end)."""
        return self.rounded(self.w)

    def learn(self, batch):
        for i in range(len(batch)):
            slots, values = batch.row(i)
            self.learn_one(float(batch.labels[i]), float(batch.weights[i]), slots, values)
        return self


class ReferenceSoftmaxLearner(_Reference):
    def __init__(
        self,
        classes,
        step="adaptive",
        learning_rate=0.5,
        power_t=0.5,
        l2=0.0,
        bias=True,
        normalized=True,
        gsa_target=0.95,
        sparsity="none",
        gravity=0.0,
        truncate_every=1,
        truncate_threshold=None,
    ):
        super().__init__(
            step,
            learning_rate,
            power_t,
            l2,
            bias,
            normalized,
            gsa_target,
            sparsity,
            gravity,
            truncate_every,
            truncate_threshold,
        )
        self.classes = classes
        self.w = {}  # (slot, class) -> weight

    def learn_one(self, label, importance, slots, values):
        features = self.features(slots, values)
        self.open_accounts(features)
        k = int(label) - 1
        scores = [
            sum(self.in_force(self.w, (j, c)) * self.seen(j, x) for j, x in features) for c in range(self.classes)
        ]
        top = max(scores)
        exps = [math.exp(s - top) for s in scores]
        probabilities = [e / sum(exps) for e in exps]
        self.examples += 1
        self.steps += 1
        self.weight_sum += importance
        self.loss_sum += importance * (-math.log(probabilities[k]) if probabilities[k] > 0 else 745.0)
        t_before = self.t
        self.t += importance
        if self.step == "gsa" and importance > 0:
            xx = self.squared_norm(features, self.rescale_row)
            if xx > 0:
                self.greedy_sum += importance * softmax_greedy_step(scores, k, xx, self.gsa_target)
                self.greedy_weight += importance
        eta_t = self.base_step(t_before, importance)
        gradient = [probabilities[c] - (1.0 if c == k else 0.0) for c in range(self.classes)]
        if importance > 0 and eta_t > 0:
            if self.step == "adaptive":
                norm_x = 0.0
                for j, x in features:
                    for c in range(self.classes):
                        self.G[(j, c)] = self.G.get((j, c), 0.0) + importance * gradient[c] ** 2 * max(x * x, MIN_X2)
                    if self.normalized:
                        norm_x += self.observe_scale(j, x, self.rescale_row)
                if self.normalized and norm_x > 0:
                    self.norm_weight += importance
                    self.norm_sum += importance * norm_x
            if self.l2 > 0:
                decay = max(0.0, 1.0 - eta_t * self.l2 * importance)
                self.w = {key: w * decay for key, w in self.w.items()}
            multiplier = self.multiplier()
            for j, x in features:
                for c in range(self.classes):
                    step = eta_t * importance * multiplier * self.rate((j, c), j)
                    self.w[(j, c)] = self.w.get((j, c), 0.0) - step * gradient[c] * x
        self.sparsify(self.w, eta_t, importance)

    def rescale_row(self, slot, factor):
        for c in range(self.classes):
            self.w[(slot, c)] = self.w.get((slot, c), 0.0) * factor

    def final_weights(self):
        return self.rounded(self.w)

    def learn(self, batch):
        for i in range(len(batch)):
            slots, values = batch.row(i)
            self.learn_one(float(batch.labels[i]), float(batch.weights[i]), slots, values)
        return self


class CentredReference:
    """Online centring (polybeam.learners.centring) in plain Python, in front of a reference learner.

    The first example names the candidate slots (its slots but the bias's, 0);
    a candidate the example lacks stops being centred: a normalising learner
    scales its weight by N / |mean| when |mean| exceeds N, the slot's scale (the
    fold extrapolates no further than the values spread), and the slot's scale
    becomes its largest raw |x|; then the weight is refitted by least squares
    over the ``n`` examples counted and the one lacking it, ``w' = w (n + 1) s^2 /
    ((n + 1) s^2 + mean^2)``, and ``w' * mean * n / (n + 1)`` is folded into the
    bias. Every other example adds to the candidates' sums, and the first
    occurrence of each becomes ``x - mean`` (this example counted), but for the
    first example counted when ``first_raw`` (GSA).
    """

    def __init__(self, learner, first_raw=False, raw_rows=0):
        self.learner = learner
        self.first_raw = first_raw
        self.raw_rows = raw_rows
        self.candidates = None
        self.sums = {}
        self.squares = {}
        self.magnitudes = {}
        self.count = 0

    def _keys(self, slot):
        """The reference's weight keys of ``slot`` and of the bias, class by class for softmax."""
        classes = getattr(self.learner, "classes", 0)
        if classes:
            return [((slot, c), (0, c)) for c in range(classes)]
        return [(slot, 0)]

    @property
    def centring(self):
        return self.count >= self.raw_rows and self.count > 0

    def _start_centring(self):
        """After the raw rows: candidates whose values varied are centred, the same function (the bias
        takes w * mean), their AdaGrad sums and scales start afresh; the others stay raw."""
        weights = self.learner.w
        for slot in list(self.candidates):
            n = self.count
            mean = self.sums[slot] / n
            if not self._varied(slot):
                self.candidates.remove(slot)
                del self.sums[slot]
                continue
            pairs = self._keys(slot)
            self.learner.settle(weights, {slot: [key for key, _ in pairs], 0: [bias for _, bias in pairs]})
            for key, bias in pairs:
                weights[bias] = weights.get(bias, 0.0) + weights.get(key, 0.0) * mean
                self.learner.G.pop(key, None)
            self.learner.N.pop(slot, None)

    def _varied(self, slot):
        mean = self.sums[slot] / self.count
        return self.squares[slot] / self.count - mean * mean > 1e-9 * mean * mean

    def _fold(self, slot, refit=True):
        if not self.centring:  # raw rows: the weights are raw
            return
        weights = self.learner.w
        pairs = self._keys(slot)
        # The fold reads the weights in force (the cumulative penalty keeps sums: settle them first).
        self.learner.settle(weights, {slot: [key for key, _ in pairs], 0: [bias for _, bias in pairs]})
        n = self.count
        mean = self.sums[slot] / n if n else 0.0
        share, present = 1.0, 1.0
        if refit:  # not the model's exact fold
            variance = max(self.squares[slot] / n - mean * mean, 0.0) if n else 0.0
            spread = (n + 1) * variance
            share = spread / (spread + mean * mean) if spread + mean * mean > 0 else 0.0
            present = n / (n + 1)
            learner = self.learner
            if learner.normalized and learner.step in ("adaptive", "gsa"):
                learned = learner.N.get(slot, 0.0)
                if abs(mean) > learned:
                    share *= learned / abs(mean)
                learner.N[slot] = max(learned, self.magnitudes[slot])
        for key, bias in pairs:
            weights[key] = weights.get(key, 0.0) * share
            weights[bias] = weights.get(bias, 0.0) - weights[key] * mean * present

    def learn(self, batch):
        for i in range(len(batch)):
            slots, values = batch.row(i)
            slots, values = [int(s) for s in slots], [float(v) for v in values]
            if self.candidates is None:
                self.candidates = sorted(set(slots) - {0})
                self.sums = {s: 0.0 for s in self.candidates}
                self.squares = {s: 0.0 for s in self.candidates}
                self.magnitudes = {s: 0.0 for s in self.candidates}
            for slot in [s for s in self.candidates if s not in slots]:
                self._fold(slot)
                self.candidates.remove(slot)
                del self.sums[slot]
            if self.candidates:
                self.count += 1
                for slot, x in zip(slots, values):
                    if slot in self.sums:
                        self.sums[slot] += x
                        self.squares[slot] += x * x
                        self.magnitudes[slot] = max(self.magnitudes[slot], abs(x))
                centred, done = [], set()
                raw_row = (self.first_raw and self.count == 1) or self.count <= self.raw_rows
                for slot, x in zip(slots, values):
                    if slot in self.sums and slot not in done and not raw_row:
                        done.add(slot)
                        mean = self.sums[slot] / self.count
                        # Rounding is not signal: a constant column centres to exactly 0.
                        x = 0.0 if abs(x - mean) <= 1e-9 * max(abs(x), abs(mean)) else x - mean
                    centred.append(x)
                values = centred
            self.learner.learn_one(float(batch.labels[i]), float(batch.weights[i]), slots, values)
            if self.candidates and self.count == self.raw_rows:
                self._start_centring()
        if self.candidates and self.centring and self.count >= VARIED_BY:  # (at the end of the batch)
            for slot in [s for s in self.candidates if not self._varied(s)]:  # nothing to condition
                self._fold(slot)
                self.candidates.remove(slot)
                del self.sums[slot]
        return self

    def final_weights(self):
        """The reference's weights with the remaining means folded into the bias, as a model holds them
        (exactly: the model's function is the centred one, for the values training saw)."""
        for slot in list(self.candidates or []):
            self._fold(slot, refit=False)
            self.candidates.remove(slot)
        return self.learner.final_weights()
