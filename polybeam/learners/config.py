"""LearnerConfig: everything that decides how a learner learns, in one frozen value.

It is what the command line and PipelineOptions fill, what a model file records
and what a Python user passes to ``Train``. It holds configuration only: no
state, no data.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from polybeam.learners.choices import (  # noqa: F401  (re-exported: the settings' names live there)
    DEFAULT_BITS,
    DEFAULT_EARLY_TERMINATE,
    DEFAULT_GSA_TARGET,
    DEFAULT_HOLDOUT_MIN_EXAMPLES,
    DEFAULT_HOLDOUT_PERIOD,
    DEFAULT_STEP_RULES,
    EXPANSION_RULES,
    EXPANSIONS,
    LOSSES,
    SPARSITY,
    STEP_RULES,
)
from polybeam.learners.loss_specs import LOSS_SPECS, loss_parameters, loss_spec

# Default eta per loss when a step rule needs one (each loss's entry says why).
DEFAULT_LEARNING_RATES = {name: spec.default_rate for name, spec in LOSS_SPECS.items()}


@dataclass(frozen=True)
class LearnerConfig:
    """How an online linear learner learns.

    Parameters
    ----------
    loss : {"squared", "logistic", "hinge", "softmax", "quantile", "poisson"}
        ``squared`` is ``(p - y)**2`` on real labels (predictions are clamped to
        the range of labels seen, as VW does); ``logistic`` and ``hinge`` take
        labels +1 and -1 (or 0, read as -1); ``softmax`` is multinomial logistic
        regression over ``classes`` classes, labels 1..K (one weight vector per
        class over the same hashed features); ``quantile`` predicts the
        ``quantile_tau`` quantile of real labels (pinball loss); ``poisson``
        predicts the mean of counts (labels >= 0) as ``exp(w . x + b)``. What each
        needs and gives is its entry in :mod:`polybeam.learners.loss_specs`.
    step : {"gsa", "adaptive", "constant", "decay", "inverse"}, optional
        The step size rule: ``gsa`` greedy step averaging (each example's greedy
        step, the one that would fit that example, averaged over all examples so
        far: no learning rate at all); ``adaptive`` per-coordinate AdaGrad steps
        eta / sqrt(sum of squared gradients), normalised by each feature's largest
        magnitude when ``normalized`` (VW's default update); ``constant`` eta;
        ``decay`` eta * t**-power_t (t the importance-weighted number of examples
        including this one, at least 1); ``inverse`` 1 / (l2 * (t + 1)) with t the examples
        before this one (Pegasos; needs ``l2 > 0``). Default: ``adaptive``, at
        the default rate without a learning rate (``gsa`` was the default for
        squared and hinge loss until its noise floor was found: see
        ``choices.DEFAULT_STEP_RULES``).
    learning_rate : float, optional
        eta of ``adaptive``, ``constant`` and ``decay``; defaults to 1.0 for
        logistic loss, 2.0 for softmax loss and 0.5 (VW's default) otherwise
        (``benchmarks/results/default_rates.md``). ``gsa`` and ``inverse``
        take none.
    power_t : float
        Decay exponent of the ``decay`` rule (0.5: eta / sqrt(t)).
    l2 : float
        L2 penalty ``l2/2 * ||w||**2``, applied every example as a multiplicative
        decay ``1 - step * l2 * importance`` of all weights (kept as one global
        scale, so it costs O(1)); with ``adaptive`` the decay uses eta, as VW does.
    bits : int
        Weights live in ``2**bits`` hashed slots (1..30).
    seed : int
        Seeds feature hashing (VW's ``--hash_seed``) and the learner's randomness.
    passes : int
        Passes over the data; in Beam each later pass starts every worker from the
        averaged model of the previous pass.
    holdout_period : int
        With ``passes`` > 1, one example in ``holdout_period`` is held out of
        training in every pass (VW's ``--holdout_period``; chosen by a hash of
        where the example sits in its file, so the same examples on every
        pass, worker and runner; see :mod:`polybeam.learners.holdout`). After
        each pass the model is scored on them; the best pass's model is kept,
        and apple's guard chooses between products and the linear model by
        it. 0 holds nothing out (VW's ``--holdout_off``): every pass trains on
        everything and the last pass's model is kept.
    early_terminate : int
        With a holdout: stop after this many passes in a row without a lower
        holdout loss than the best so far (VW's ``--early_terminate``).
    holdout_min_examples : int
        A holdout judges passes only when the first pass held out at least this
        many examples (per learner: per key with ``key``). With fewer, their
        mean loss is too noisy to tell passes apart and they are worth more as
        training data: from the second pass on the learner learns every example
        and keeps its last pass, as with ``holdout_period=0``. 0 always judges.
    bias : bool
        Learn a bias weight (slot 0, feature value 1).
    center : bool
        Learn on ``x_j - mean_j`` for the features every example so far has
        (running means; needs ``bias``): the same models, a far better
        conditioned problem on unscaled numeric columns. Sparse features are
        left as they are, and model files hold ordinary weights (the means go
        into the bias). See :mod:`polybeam.learners.centring`.
    scale_labels : bool, optional
        Squared loss: the bias follows the labels' running mean (the intercept
        the centred features' fit has) and ``adaptive`` steps are ``eta``
        times the labels' running standard deviation, so that learning does
        not depend on the labels' offset or unit (AdaGrad's steps move a
        weight by about ``eta`` whatever the labels' size: on house prices it
        would never reach them). Default: on for squared loss with
        ``adaptive`` steps (not for ``gsa``, whose greedy steps already fit a
        share of each residual); off gives VW's update exactly.
    normalized : bool
        With ``adaptive``: divide each feature's step by the largest magnitude
        seen for it (and rescale its weight when that grows), so that learning
        does not depend on the units of a feature, as VW's ``--normalized``.
        With ``gsa``: learn in feature space normalised online by each feature's
        largest magnitude (the GSA paper's data sets are scaled to [-1, 1]; this
        does the scaling on the fly). Other rules take plain steps.
    safe_updates : bool
        Importance-aware updates (Karampatziakis & Langford): the step follows the
        loss's gradient flow, so it never overshoots the label however large the
        learning rate or importance weight. Off: plain ``w -= step * gradient``.
        Softmax always takes plain steps.
    classes : int
        Number of classes of ``softmax`` (>= 2); taken from ``class_names`` if
        those are given.
    class_names : tuple of str
        Optional names of the classes 1..K (softmax), or of the negative and
        the positive class (logistic, hinge), for reading labels and for
        predictions (see :mod:`polybeam.formats.labels`).
    gsa_target : float
        p_hat of ``gsa``: the greedy step of a logistic or softmax example moves
        the probability of its true class to this value.
    gsa_exact : bool
        ``gsa`` with logistic loss: the exact greedy step of the GSA paper's
        section 3.2 instead of its eq. 16 (the binary case of softmax's eq. 10).
    sparsity : {"none", "cumulative", "truncate", "round", "subgradient"}, optional
        How weights are made sparse: ``cumulative`` truncated gradient with a
        cumulative penalty (every ``truncate_every`` examples every weight owes
        step * truncate_every * gravity more; the weight in force is the sum of
        its steps truncated by all it owed since its first touch, so a weight
        whose gradients cancel is exactly 0, its latest step included: VW's
        ``--l1``; see :mod:`polybeam.learners.sparsity`); ``truncate`` the
        paper's truncated gradient (every
        ``truncate_every`` examples, weights with ``|w| <= truncate_threshold``
        shrink toward 0 by step * truncate_every * gravity, applied lazily per
        weight); ``round`` sets weights with ``|w| < truncate_threshold`` to zero
        every ``truncate_every`` examples (the paper's eq. 4); ``subgradient``
        adds ``step * gravity * sign(w)`` to every weight's gradient and rounds
        weights below ``truncate_threshold`` to zero at the end (eq. 5; it costs
        O(2**bits) per example and exists as the paper's baseline). Default:
        ``cumulative`` when ``gravity > 0`` (``truncate`` if a
        ``truncate_threshold`` is given too), else ``none``.
    gravity : float
        g, the L1-like pull toward zero.
    truncate_every : int
        K, the truncation period in examples.
    truncate_threshold : float, optional
        theta. ``truncate``: only weights at most this large shrink (None:
        infinity, the online counterpart of L1; theta = gravity is the paper's
        second variant). Required by ``round`` and ``subgradient``.
    expand : {"none", "apple", "quadratic", "cubic"}
        Polynomial features: ``apple`` grows them stage by stage (see
        :mod:`polybeam.learners.polynomial`); ``quadratic`` / ``cubic`` are all
        pairs / triples of base features.
    alpha : float
        apple: each expansion adds (mean base non-zeros per example) ** alpha parents.
    expand_rule : {"weight", "fallback", "ssm"}
        apple: parents by weight magnitude, the risk-consistent fall-back rule,
        or the SSM heuristic (by residual, :mod:`polybeam.learners.ssm`).
    max_degree : int
        apple: the largest degree of a product.
    expansions : int
        apple: how many times the feature set grows (5: the paper's 6 epochs).
    expand_after : int
        apple on a stream of unknown length: the first expansion comes after
        this many examples, the next ones after twice as many each time.
    apple_guard : bool
        apple: learn the same examples without products alongside, and make the
        model the linear one when the products predicted worse (progressive loss
        over the first pass's examples since apple last grew). Costs one linear
        learner over the base features.
    examples_per_pass : int, optional
        apple: the number of training examples in one pass, when known; the
        epochs are then equally spaced over ``examples_per_pass * passes``
        examples. (Train counts the examples itself when there are several passes.)
    repeat_factors : bool
        Whether a product may repeat a factor (``x_a^2``); turn off for binary
        features, where x*x = x.
    offset_prior : float, optional
        A shared per-key model's prior on its key offsets (``Train(shared_keys=...)``,
        ``--key-model shared``; :mod:`polybeam.learners.multitask`): with
        adaptive steps, each key-crossed weight's AdaGrad sum starts as if
        this many examples of unit gradient (at the feature's largest
        magnitude) had come before, so the offsets of a key with few rows stay
        small. None: ``DEFAULT_OFFSET_PRIOR`` (0.03) for a shared per-key
        model; other models have no offsets (0).
    interactions : tuple of str
        quadratic / cubic: only products of one feature from each namespace
        named (by first letter), like VW's ``-q ab`` and ``--cubic abc``:
        ``("ab", "abc")``. Needs VW text input. Default: all pairs / triples.
    lbfgs_passes : int
        The finishing stage (issue 23; :mod:`polybeam.learners.lbfgs`): after the
        online passes, this many passes of L-BFGS over the training examples,
        warm-started from the averaged online model, each pass one evaluation of
        the regularised batch objective (its loss and gradient summed across
        workers). 0 (default): none. Logistic, squared and softmax loss.
    lbfgs_l2 : float or None
        The finishing stage's L2 penalty ``lbfgs_l2 / 2 * ||w||**2`` on the summed
        (not mean) importance-weighted loss, the bias unpenalised: scikit-learn's
        ``LogisticRegression(C=1 / lbfgs_l2)``. Default None: chosen on the holdout
        among 0.1, 1 and 10 (:data:`polybeam.learners.lbfgs.L2_GRID`). Whatever the
        penalty, the stage returns the online model when no L-BFGS point did better
        on the holdout (see :class:`polybeam.learners.lbfgs.Finishing`).

    Examples
    --------
    >>> LearnerConfig(loss="squared").step, LearnerConfig(loss="squared").scale_labels
    ('adaptive', True)
    >>> LearnerConfig(loss="logistic", step="adaptive").learning_rate
    1.0
    >>> LearnerConfig(gravity=1e-3).sparsity
    'cumulative'
    >>> LearnerConfig(loss="logistic", step="inverse")
    Traceback (most recent call last):
    ...
    ValueError: step 'inverse' (1 / (l2 * (t + 1))) needs l2 > 0; set l2, e.g. l2=1e-4
    """

    loss: str = "squared"
    step: str | None = None
    learning_rate: float | None = None
    power_t: float = 0.5
    l2: float = 0.0
    bits: int = DEFAULT_BITS
    seed: int = 0
    passes: int = 1
    holdout_period: int = DEFAULT_HOLDOUT_PERIOD
    early_terminate: int = DEFAULT_EARLY_TERMINATE
    holdout_min_examples: int = DEFAULT_HOLDOUT_MIN_EXAMPLES
    bias: bool = True
    center: bool = True
    scale_labels: bool | None = None
    normalized: bool = True
    safe_updates: bool = True
    classes: int = 0
    class_names: tuple[str, ...] = ()
    gsa_target: float = DEFAULT_GSA_TARGET
    gsa_exact: bool = False
    sparsity: str | None = None
    gravity: float = 0.0
    truncate_every: int = 1
    truncate_threshold: float | None = None
    expand: str = "none"
    alpha: float = 1.0
    expand_rule: str = "weight"
    max_degree: int = 6
    expansions: int = 5
    expand_after: int = 1000
    apple_guard: bool = True
    examples_per_pass: int | None = None
    repeat_factors: bool = True
    interactions: tuple[str, ...] = ()
    lbfgs_passes: int = 0
    lbfgs_l2: float | None = None
    offset_prior: float | None = None
    quantile_tau: float | None = None

    def __post_init__(self) -> None:
        set_field = functools.partial(object.__setattr__, self)
        spec = loss_spec(self.loss)
        self._check_loss_parameters(spec, set_field)
        if self.step is None:
            set_field("step", DEFAULT_STEP_RULES[self.loss] if self.learning_rate is None else "adaptive")
        if self.step not in STEP_RULES:
            raise ValueError(f"step must be one of {', '.join(STEP_RULES)}; got {self.step!r}")
        if self.step == "gsa" and not spec.greedy:
            raise ValueError(f"step 'gsa' (greedy step averaging) cannot learn {self.loss} loss; use step='adaptive'")
        if self.scale_labels is None:
            set_field("scale_labels", spec.scales_labels and self.step == "adaptive")
        elif self.scale_labels and not spec.scales_labels:
            scaled = " and ".join(name for name, entry in LOSS_SPECS.items() if entry.scales_labels)
            raise ValueError(f"scale_labels is for {scaled} loss, whose labels are numbers; not {self.loss!r}")
        if self.step in ("gsa", "inverse"):
            if self.learning_rate is not None:
                raise ValueError(f"step {self.step!r} sets its own step sizes; give no learning rate")
        elif self.learning_rate is None:
            set_field("learning_rate", DEFAULT_LEARNING_RATES[self.loss])
        else:
            _check_number("learning_rate", self.learning_rate, positive=True)
        _check_number("power_t", self.power_t)
        if self.power_t < 0:
            raise ValueError(f"power_t must be >= 0; got {self.power_t}")
        _check_number("l2", self.l2)
        if self.l2 < 0:
            raise ValueError(f"l2 must be >= 0; got {self.l2}")
        if self.step == "inverse" and self.l2 <= 0:
            raise ValueError("step 'inverse' (1 / (l2 * (t + 1))) needs l2 > 0; set l2, e.g. l2=1e-4")
        from polybeam.learners.hashing import check_bits  # (here: the kernels' modules import numba)

        set_field("bits", check_bits(self.bits))
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or not 0 <= self.seed < 2**32:
            raise ValueError(f"seed must be an integer in [0, 2**32); got {self.seed!r}")
        if not _whole(self.passes) or self.passes < 1:
            raise ValueError(f"passes must be a whole number >= 1; got {self.passes!r}")
        if not _whole(self.holdout_period) or self.holdout_period == 1 or self.holdout_period < 0:
            raise ValueError(
                f"holdout_period must be a whole number >= 2 (one example in that many is held out), "
                f"or 0 to hold out nothing; got {self.holdout_period!r}"
            )
        if not _whole(self.early_terminate) or self.early_terminate < 1:
            raise ValueError(f"early_terminate must be a whole number >= 1; got {self.early_terminate!r}")
        if not _whole(self.holdout_min_examples) or self.holdout_min_examples < 0:
            raise ValueError(f"holdout_min_examples must be a whole number >= 0; got {self.holdout_min_examples!r}")
        self._check_classes(set_field)
        _check_number("gsa_target", self.gsa_target)
        if not 0.5 < self.gsa_target < 1.0:
            raise ValueError(f"gsa_target (p_hat) must lie strictly between 0.5 and 1; got {self.gsa_target}")
        self._check_sparsity(set_field)
        self._check_expansion()
        if not _whole(self.lbfgs_passes) or self.lbfgs_passes < 0:
            raise ValueError(f"lbfgs_passes must be a whole number >= 0; got {self.lbfgs_passes!r}")
        if self.lbfgs_l2 is not None:
            _check_number("lbfgs_l2", self.lbfgs_l2)
        if self.lbfgs_l2 is not None and self.lbfgs_l2 < 0:
            raise ValueError(f"lbfgs_l2 must be >= 0; got {self.lbfgs_l2}")
        if self.lbfgs_passes and not spec.finishing:
            smooth = ", ".join(name for name, entry in LOSS_SPECS.items() if entry.finishing)
            raise ValueError(
                f"the L-BFGS finishing stage (lbfgs_passes) needs a differentiable loss ({smooth}); got {self.loss!r}"
            )
        if self.offset_prior is not None:
            _check_number("offset_prior", self.offset_prior)
            if self.offset_prior < 0:
                raise ValueError(f"offset_prior must be >= 0; got {self.offset_prior}")

    def _check_loss_parameters(self, spec, set_field) -> None:
        """The loss's own number (quantile's tau): its default when unset, checked; another loss's: refused."""
        for parameter in loss_parameters():
            value = getattr(self, parameter.name)
            if parameter is spec.parameter:
                set_field(parameter.name, parameter.check(parameter.default if value is None else value))
            elif value is not None:
                owner = next(name for name, entry in LOSS_SPECS.items() if entry.parameter is parameter)
                raise ValueError(f"{parameter.name} is for loss {owner!r}, not {self.loss!r}")

    @property
    def loss_parameter(self) -> float:
        """The loss's number (quantile's tau), or 0 for a loss that takes none.

        >>> LearnerConfig(loss="quantile", quantile_tau=0.9).loss_parameter, LearnerConfig().loss_parameter
        (0.9, 0.0)
        """
        parameter = loss_spec(self.loss).parameter
        return 0.0 if parameter is None else float(getattr(self, parameter.name))

    def _check_expansion(self) -> None:
        if self.expand not in EXPANSIONS:
            raise ValueError(f"expand must be one of {', '.join(EXPANSIONS)}; got {self.expand!r}")
        _check_number("alpha", self.alpha)
        if self.alpha < 0:
            raise ValueError(f"alpha must be >= 0; got {self.alpha}")
        if self.expand_rule not in EXPANSION_RULES:
            raise ValueError(f"expand_rule must be one of {', '.join(EXPANSION_RULES)}; got {self.expand_rule!r}")
        if not _whole(self.max_degree) or not 1 <= self.max_degree <= 32:
            raise ValueError(f"max_degree must be a whole number from 1 to 32; got {self.max_degree!r}")
        if not _whole(self.expansions) or self.expansions < 0:
            raise ValueError(f"expansions must be a whole number >= 0; got {self.expansions!r}")
        if not _whole(self.expand_after) or self.expand_after < 1:
            raise ValueError(f"expand_after must be a whole number >= 1; got {self.expand_after!r}")
        from polybeam.learners.expansion import check_interactions

        object.__setattr__(self, "interactions", check_interactions(self.interactions, self.expand))
        if self.examples_per_pass is not None and (not _whole(self.examples_per_pass) or self.examples_per_pass < 1):
            raise ValueError(f"examples_per_pass must be a whole number >= 1 (or None); got {self.examples_per_pass!r}")

    def _check_classes(self, set_field) -> None:
        names = tuple(str(name) for name in self.class_names)
        set_field("class_names", names)
        if len(set(names)) != len(names) or any(not name for name in names):
            raise ValueError(f"class_names must be distinct and non-empty; got {names}")
        if not _whole(self.classes) or self.classes < 0:
            raise ValueError(f"classes must be a whole number >= 0; got {self.classes!r}")
        labels = loss_spec(self.loss).labels
        if labels == "binary":  # two classes: the names say which label is which
            if self.classes:
                raise ValueError(f"classes is for loss 'softmax', not {self.loss!r} (which has two classes)")
            if names and len(names) != 2:
                raise ValueError(
                    f"loss {self.loss!r} has two classes: class_names are the negative and the positive one; "
                    f"got {len(names)} names"
                )
            return
        if names:
            if self.classes not in (0, len(names)):
                raise ValueError(f"classes is {self.classes} but {len(names)} class_names are given")
            set_field("classes", len(names))
        if labels == "multiclass":
            if self.classes < 2:
                raise ValueError("loss 'softmax' needs classes >= 2 (or class_names); e.g. classes=3")
        elif self.classes or names:
            raise ValueError(
                f"classes and class_names are for loss 'softmax' (or two names for logistic and hinge), not {self.loss!r}"
            )

    def _check_sparsity(self, set_field) -> None:
        _check_number("gravity", self.gravity)
        if self.gravity < 0:
            raise ValueError(f"gravity must be >= 0; got {self.gravity}")
        if self.sparsity is None:
            # A threshold asks for the paper's K/theta form; a gravity alone for the cumulative penalty.
            if self.gravity <= 0:
                set_field("sparsity", "none")
            else:
                set_field("sparsity", "cumulative" if self.truncate_threshold is None else "truncate")
        if self.sparsity not in SPARSITY:
            raise ValueError(f"sparsity must be one of {', '.join(SPARSITY)}; got {self.sparsity!r}")
        if not _whole(self.truncate_every) or self.truncate_every < 1:
            raise ValueError(f"truncate_every must be a whole number >= 1; got {self.truncate_every!r}")
        if self.truncate_threshold is not None:
            _check_number("truncate_threshold", self.truncate_threshold)
            if self.truncate_threshold < 0:
                raise ValueError(f"truncate_threshold must be >= 0; got {self.truncate_threshold}")
        if self.sparsity in ("cumulative", "truncate", "subgradient") and self.gravity <= 0:
            raise ValueError(f"sparsity {self.sparsity!r} needs gravity > 0; e.g. gravity=1e-4")
        if self.sparsity == "cumulative" and self.truncate_threshold is not None:
            raise ValueError(
                "sparsity 'cumulative' pulls every weight (no truncate_threshold); "
                "for the paper's K/theta form use sparsity='truncate'"
            )
        if self.sparsity in ("round", "subgradient") and self.truncate_threshold is None:
            raise ValueError(f"sparsity {self.sparsity!r} needs truncate_threshold (weights below it become 0)")
        if self.sparsity == "none" and (self.gravity > 0 or self.truncate_threshold is not None):
            raise ValueError("gravity and truncate_threshold need a sparsity other than 'none'")

    @property
    def outputs(self) -> int:
        """Scores per example: one per class for softmax, else one."""
        return self.classes if loss_spec(self.loss).labels == "multiclass" else 1

    @property
    def holds_out(self) -> bool:
        """Whether training holds examples out to choose the best pass: several passes and a holdout period.

        >>> LearnerConfig(passes=3).holds_out, LearnerConfig(passes=3, holdout_period=0).holds_out
        (True, False)
        >>> LearnerConfig().holds_out   # one pass: every example is learned, the guard uses progressive loss
        False
        """
        return self.passes > 1 and self.holdout_period > 0

    @property
    def threshold(self) -> float:
        """theta as a number (infinity when unset)."""
        return math.inf if self.truncate_threshold is None else float(self.truncate_threshold)

    @property
    def label_kind(self) -> str:
        """The labels this configuration can learn from (see ``label_problems``)."""
        return loss_spec(self.loss).labels

    def replace(self, **changes: Any) -> LearnerConfig:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        values = dataclasses.asdict(self)
        # Only shared per-key models have an offset prior, only some losses a parameter: other files stay as
        # they were.
        for name in ("offset_prior", *(parameter.name for parameter in loss_parameters())):
            if values[name] is None:
                del values[name]
        return values

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> LearnerConfig:
        """Rebuild a config, refusing fields this version does not know."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(
                f"unknown learner settings {unknown}: the model or options come from a newer "
                "polybeam; upgrade polybeam to use them"
            )
        return cls(**values)


def _check_number(name: str, value: Any, *, positive: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number; got {value!r}")
    if positive and value <= 0:
        raise ValueError(f"{name} must be > 0; got {value}")


def _whole(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)
