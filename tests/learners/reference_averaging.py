"""Plain-Python references of the merge's per-coordinate averaging and of the finishing stage's
objective: dicts and loops, one example and one feature at a time (see polybeam.learners.averaging
and polybeam.learners.lbfgs)."""

from __future__ import annotations

import math


def slot_masses(batches, bias=True):
    """Per slot, the importance-weighted sum of squared values; the bias slot 0 counts each example once."""
    mass = {}
    for batch in batches:
        for i in range(len(batch)):
            importance = float(batch.weights[i])
            if bias:
                mass[0] = mass.get(0, 0.0) + importance
            for k in range(batch.indptr[i], batch.indptr[i + 1]):
                slot = int(batch.indices[k])
                mass[slot] = mass.get(slot, 0.0) + importance * float(batch.values[k]) ** 2
    return mass


def weighted_average(weights, masses, shares, slots):
    """``weights``: per learner a list (one value per slot); ``masses``: per learner a dict slot -> mass;
    ``shares``: each learner's share of the pass's importance. Per slot: the mass-weighted mean where
    any learner has mass there, else the share-weighted mean."""
    out = []
    for slot in range(slots):
        total = sum(mass.get(slot, 0.0) for mass in masses)
        if total > 0:
            out.append(sum(mass.get(slot, 0.0) * w[slot] for w, mass in zip(weights, masses)) / total)
        else:
            out.append(sum(share * w[slot] for w, share in zip(weights, shares)))
    return out


def objective(weights, batches, loss, l2, bias=True):
    """F(w) = sum_i importance_i * loss_i + l2 / 2 * ||w without the bias||^2; ``weights`` a list per slot
    (softmax: a list of per-class lists)."""
    total = 0.0
    for batch in batches:
        for i in range(len(batch)):
            rows = range(batch.indptr[i], batch.indptr[i + 1])
            if loss == "softmax":
                classes = len(weights[0])
                scores = [
                    (weights[0][c] if bias else 0.0) + sum(weights[batch.indices[k]][c] * batch.values[k] for k in rows)
                    for c in range(classes)
                ]
                top = max(scores)
                log_norm = top + math.log(sum(math.exp(s - top) for s in scores))
                value = log_norm - scores[int(batch.labels[i]) - 1]
            else:
                margin = (weights[0] if bias else 0.0) + sum(weights[batch.indices[k]] * batch.values[k] for k in rows)
                if loss == "logistic":
                    y = 1.0 if batch.labels[i] > 0 else -1.0
                    value = math.log1p(math.exp(-y * margin)) if -y * margin < 30 else -y * margin
                else:
                    value = (margin - batch.labels[i]) ** 2
            total += float(batch.weights[i]) * value
    flat = [
        v
        for slot, w in enumerate(weights)
        if not (bias and slot == 0)
        for v in (w if isinstance(w, (list, tuple)) else [w])
    ]
    return total + 0.5 * l2 * sum(v * v for v in flat)
