"""Warm starts: a learner that continues from a saved model or learner state.

``polybeam train --initial-model PATH`` (VW's ``-i``) accepts either file:

* a **learner-state file** (:mod:`polybeam.learners.state_file`, the
  checkpoints ``train`` writes after each pass): the continuation is exact;
* a **model file**: the learner starts from its weights, its label range (and,
  for squared loss, the labels' running mean and spread), its mean greedy
  step (GSA) and its apple parents; what a model does not keep
  starts afresh (AdaGrad sums, feature scales, truncation clocks), as after
  VW's ``-i`` of a model saved without its adaptive state; it keeps no
  feature means, so such a learner does not centre features.

Either way the source must fit this run: its loss, bits, hashing seed,
expansion, step rule (and its normalisation), sparsity rule, bias and
classes decide what the weights mean and which arrays the learner keeps, so
a mismatch is refused with the differences named. Settings that only change
how learning proceeds from here (learning rate, gravity, passes, ...) may
differ; the run's own apply.

>>> from polybeam.learners.config import LearnerConfig
>>> try:
...     check_compatible(LearnerConfig(loss="logistic", bits=12), LearnerConfig(loss="squared", step="gsa", bits=12),
...                      "m.model")
... except ValueError as error:
...     print(error)
m.model does not fit this run: loss is logistic there, squared here; step is adaptive there, gsa here
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from polybeam.learners import kernels
from polybeam.learners.centring import Centring
from polybeam.learners.choices import RESTART_RATE_FACTOR
from polybeam.learners.config import LearnerConfig
from polybeam.learners.linear import LinearLearner
from polybeam.learners.model import Model, ModelFileError
from polybeam.learners.monomials import Monomial
from polybeam.learners.polynomial import PolynomialLearner, linear_config, make_learner
from polybeam.learners.state_file import is_learner_state, read_learner_state

# Settings that decide what a learner's weights mean or which arrays it keeps.
FIXED_SETTINGS = (
    "loss",
    "bits",
    "seed",
    "expand",
    "max_degree",
    "repeat_factors",
    "interactions",
    "step",
    "normalized",
    "sparsity",
    "bias",
    "classes",
    "class_names",
)
# Apple's parents are part of the state; how they were picked must match too.
APPLE_SETTINGS = ("alpha", "expand_rule", "expansions")


def differences(source: LearnerConfig, config: LearnerConfig) -> list[str]:
    """The fixed settings on which ``source`` and ``config`` disagree, as ``name is A there, B here``."""
    names = FIXED_SETTINGS + (APPLE_SETTINGS if config.expand == "apple" else ())
    found = []
    for name in names:
        theirs, ours = getattr(source, name), getattr(config, name)
        if theirs != ours:
            show = (lambda v: ",".join(v) if v else "none") if isinstance(ours, tuple) else str
            found.append(f"{name} is {show(theirs)} there, {show(ours)} here")
    return found


def check_compatible(source: LearnerConfig, config: LearnerConfig, what: str) -> None:
    """Refuse a warm start whose source (named ``what``) does not fit ``config``."""
    found = differences(source, config)
    if found:
        raise ValueError(f"{what} does not fit this run: {'; '.join(found)}")


def continue_learner(learner, config: LearnerConfig):
    """``learner`` (from a state file) set to learn on with ``config``'s settings (at the lower rate of its
    restarts, when the holdout restarted it: see polybeam.learners.holdout.restart)."""
    restarts = learner.selection_.restarts
    if restarts and config.learning_rate is not None:
        config = dataclasses.replace(config, learning_rate=config.learning_rate * RESTART_RATE_FACTOR**restarts)
    learner.config = config
    if isinstance(learner, PolynomialLearner):
        learner.linear.config = config
        if learner.shadow is not None:
            learner.shadow.config = linear_config(config)
    parts = (learner.linear, learner.shadow) if isinstance(learner, PolynomialLearner) else (learner,)
    for part in parts:
        stats = part.stats_ if part is not None else None
        if (
            part is not None
            and part.config.scale_labels
            and stats[kernels.LABEL_WEIGHT] == 0
            and stats[kernels.TIME] > 0
        ):
            # It learned without scale_labels: no label moments to go on from (see _restore_label_moments).
            range_only = {
                "label_min": stats[kernels.LABEL_MIN],
                "label_max": stats[kernels.LABEL_MAX],
                "importance_weight": stats[kernels.TIME],
            }
            _restore_label_moments(stats, range_only)
    return learner


def learner_from_model(
    model: Model, config: LearnerConfig, *, sparse: bool = False
) -> LinearLearner | PolynomialLearner:
    """A learner that starts from ``model``'s weights (see the module docstring); ``sparse``: with a state
    of the slots it touches (a learner per key)."""
    learner = make_learner(config, sparse=sparse)
    linear = learner.linear if isinstance(learner, PolynomialLearner) else learner
    linear.set_weights(model.slots, model.weights.reshape(len(model.slots), -1))
    linear.names_ = dict(model.names)
    if model.fill_slots is not None:  # missing values start at the model's means (see polybeam.learners.missing)
        linear.missing_.seeded(model.fill_slots, model.fill_values, model.fill_indicated)
    # A model keeps no feature means: centring afresh would move the function (the means of the
    # first examples are not the ones the weights were learned with), so this learner centres nothing.
    linear.centring_ = Centring.off()
    linear.drop_race()  # (nor races it: see LinearLearner.centring_verdict)
    stats, meta = linear.stats_, model.metadata
    stats[kernels.LABEL_MIN] = float(meta.get("label_min", 0.0))
    stats[kernels.LABEL_MAX] = float(meta.get("label_max", 0.0))
    passes = meta.get("passes") or []
    stats[kernels.TIME] = float(sum(p.get("importance_weight", 0.0) for p in passes))
    stats[kernels.LIFETIME_EXAMPLES] = float(sum(p.get("examples", 0) for p in passes))
    if config.scale_labels:
        _restore_label_moments(stats, meta)
    if meta.get("greedy_step") is not None:  # GSA's running mean goes on from where it was
        weight = float(meta.get("importance_weight") or 1.0)
        stats[kernels.GREEDY_SUM] = float(meta["greedy_step"]) * weight
        stats[kernels.GREEDY_WEIGHT] = weight
    linear.mark_pass_start()
    # Passes go on at one rate: a restart would start from nothing and drop the model it continues.
    learner.selection_.schedule = "constant"
    if isinstance(learner, PolynomialLearner):
        _restore_products(learner, model)
        # Apple's guard would start from nothing while apple starts from the model: no fair race.
        learner.shadow = None
    return learner


def _restore_label_moments(stats: np.ndarray, meta: Mapping[str, object]) -> None:
    """The labels' running moments a squared-loss learner scales by, from the model's metadata.

    The bias follows the change of the labels' mean: started from none, the first label would move
    the model's bias by all of its value. A model that records no moments (trained before they
    were kept, or without scale_labels) stands for its examples' weight at the middle and a quarter
    of the range of its labels.
    """
    if meta.get("label_weight"):
        weight, mean, variance = (float(meta[k]) for k in ("label_weight", "label_mean", "label_variance"))
    else:
        low, high = float(meta.get("label_min", 0.0)), float(meta.get("label_max", 0.0))
        weight = float(meta.get("importance_weight") or 1.0)
        mean, variance = (low + high) / 2, ((high - low) / 4) ** 2
    stats[kernels.LABEL_WEIGHT] = weight
    stats[kernels.LABEL_SUM] = weight * mean
    stats[kernels.LABEL_SQUARES] = weight * (variance + mean * mean)


def _restore_products(learner: PolynomialLearner, model: Model) -> None:
    """Apple parents (frozen, as after a merge) and the trace that names each product's slot."""
    if model.expansion is not None and model.expansion.kind == "apple":
        learner.expander.add_parents(model.expansion.parents)
        learner.frozen = True
        learner.residuals = None
        index_of = {parent: i for i, parent in enumerate(learner.parents)}
        for slot, factors in model.monomials.items():
            for position, factor in enumerate(factors):
                parent = index_of.get(Monomial.of(factors[:position] + factors[position + 1 :]))
                if parent is not None:
                    learner.expander.slot_trace[slot] = (parent << 32) | int(factor)
                    break
    base = np.setdiff1d(model.slots, np.fromiter(model.monomials.keys(), dtype=np.int64, count=len(model.monomials)))
    learner.base_slots[base] = True


def initial_learner(
    data: bytes, config: LearnerConfig, what: str, *, sparse: bool = False
) -> LinearLearner | PolynomialLearner:
    """The learner a warm start from the file ``what`` (its bytes ``data``) begins with (``sparse``: see
    :func:`learner_from_model`).

    Raises ValueError (ModelFileError for an unreadable file) naming what does not fit.
    """
    if is_learner_state(data):
        learner, _ = read_learner_state(data)
        check_compatible(learner.config, config, what)
        return continue_learner(learner, config)
    try:
        model = Model.from_bytes(data)
    except ModelFileError as error:
        raise ModelFileError(f"{what}: not a model or learner state file ({error})") from None
    check_compatible(model.config, config, what)
    return learner_from_model(model, config, sparse=sparse)


def source_config(data: bytes) -> LearnerConfig:
    """The configuration recorded in a model or learner-state file."""
    if is_learner_state(data):
        return read_learner_state(data)[0].config
    return Model.from_bytes(data).config
