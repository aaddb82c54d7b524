"""The groups of :class:`~polybeam.learners.config.LearnerConfig`: steps, sparsity, expansion, holdout,
finishing and multitask settings, each a frozen dataclass whose fields declare their rules
(:mod:`polybeam.learners.setting_rules`) and whose ``__post_init__`` holds the rules that tie its own
settings together. Rules that need the loss stay with ``LearnerConfig``.

>>> SparsitySettings(gravity=1e-3).sparsity
'cumulative'
>>> StepSettings(step="gsa").for_loss("poisson")
Traceback (most recent call last):
...
ValueError: step 'gsa' (greedy step averaging) cannot learn poisson loss; use step='adaptive'
>>> HoldoutSettings(holdout_period=1)
Traceback (most recent call last):
...
ValueError: holdout_period must be a whole number >= 2 (one example in that many is held out), or 0 to hold out nothing; got 1
"""

from __future__ import annotations

import math
from dataclasses import dataclass, make_dataclass, replace

from polybeam.learners.choices import (
    DEFAULT_EARLY_TERMINATE,
    DEFAULT_GSA_TARGET,
    DEFAULT_HOLDOUT_MIN_EXAMPLES,
    DEFAULT_HOLDOUT_PERIOD,
    DEFAULT_PASS_SCHEDULE,
    DEFAULT_SMALL_HOLDOUT,
    DEFAULT_STEP_RULES,
    EXPANSION_RULES,
    EXPANSIONS,
    PASS_SCHEDULES,
    SMALL_HOLDOUT_RULES,
    SPARSITY,
    STEP_RULES,
)
from polybeam.learners.loss_specs import loss_parameters, loss_spec
from polybeam.learners.setting_rules import Rule, check_settings, setting

# The sparsity settings that do not go together: (refused when, the message; {sparsity} is the method).
_SPARSITY_RULES = (
    (
        lambda s: s.sparsity in ("cumulative", "truncate", "subgradient") and s.gravity <= 0,
        "sparsity {sparsity!r} needs gravity > 0; e.g. gravity=1e-4",
    ),
    (
        lambda s: s.sparsity == "cumulative" and s.truncate_threshold is not None,
        "sparsity 'cumulative' pulls every weight (no truncate_threshold); "
        "for the paper's K/theta form use sparsity='truncate'",
    ),
    (
        lambda s: s.sparsity in ("round", "subgradient") and s.truncate_threshold is None,
        "sparsity {sparsity!r} needs truncate_threshold (weights below it become 0)",
    ),
    (
        lambda s: s.sparsity == "none" and (s.gravity > 0 or s.truncate_threshold is not None),
        "gravity and truncate_threshold need a sparsity other than 'none'",
    ),
)


@dataclass(frozen=True)
class StepSettings:
    """How steps are sized: the step rule, its rate and decay, L2, and the update's normalisation and safety. (``LearnerConfig.steps``)

    Parameters
    ----------
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
    gsa_target : float
        p_hat of ``gsa``: the greedy step of a logistic or softmax example moves
        the probability of its true class to this value.
    gsa_exact : bool
        ``gsa`` with logistic loss: the exact greedy step of the GSA paper's
        section 3.2 instead of its eq. 16 (the binary case of softmax's eq. 10).
    """

    step: str | None = setting(None, Rule.choice(STEP_RULES, optional=True))
    learning_rate: float | None = setting(None, Rule.number(low=0, open_low=True, optional=True))
    power_t: float = setting(0.5, Rule.number(low=0))
    l2: float = setting(0.0, Rule.number(low=0))
    normalized: bool = True
    safe_updates: bool = True
    gsa_target: float = setting(
        DEFAULT_GSA_TARGET,
        Rule.number(
            low=0.5,
            high=1.0,
            open_low=True,
            open_high=True,
            message="gsa_target (p_hat) must lie strictly between 0.5 and 1; got {value}",
        ),
    )
    gsa_exact: bool = False

    def __post_init__(self) -> None:
        check_settings(self)
        if self.step == "inverse" and self.l2 <= 0:
            raise ValueError("step 'inverse' (1 / (l2 * (t + 1))) needs l2 > 0; set l2, e.g. l2=1e-4")
        if self.step in ("gsa", "inverse") and self.learning_rate is not None:
            raise ValueError(f"step {self.step!r} sets its own step sizes; give no learning rate")

    def for_loss(self, loss: str) -> StepSettings:
        """These settings with the loss's defaults filled in (its step rule and rate), refusing a step
        rule the loss cannot take."""
        spec = loss_spec(loss)
        step = self.step
        if step is None:
            step = DEFAULT_STEP_RULES[loss] if self.learning_rate is None else "adaptive"
        if step == "gsa" and not spec.greedy:
            raise ValueError(f"step 'gsa' (greedy step averaging) cannot learn {loss} loss; use step='adaptive'")
        rate = self.learning_rate
        if step not in ("gsa", "inverse") and rate is None:
            rate = spec.default_rate
        return self if (step, rate) == (self.step, self.learning_rate) else replace(self, step=step, learning_rate=rate)


@dataclass(frozen=True)
class SparsitySettings:
    """How weights are made sparse: truncated gradient (or its baselines) with gravity, period and threshold. (``LearnerConfig.truncation``)

    Parameters
    ----------
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
    """

    sparsity: str | None = setting(None, Rule.choice(SPARSITY, optional=True))
    gravity: float = setting(0.0, Rule.number(low=0))
    truncate_every: int = setting(1, Rule.whole(low=1))
    truncate_threshold: float | None = setting(None, Rule.number(low=0, optional=True))

    def __post_init__(self) -> None:
        check_settings(self)
        if self.sparsity is None:
            # A threshold asks for the paper's K/theta form; a gravity alone for the cumulative penalty.
            if self.gravity <= 0:
                chosen = "none"
            else:
                chosen = "cumulative" if self.truncate_threshold is None else "truncate"
            object.__setattr__(self, "sparsity", chosen)
        for refused, message in _SPARSITY_RULES:
            if refused(self):
                raise ValueError(message.format(sparsity=self.sparsity))

    @property
    def threshold(self) -> float:
        """theta as a number (infinity when unset)."""
        return math.inf if self.truncate_threshold is None else float(self.truncate_threshold)


@dataclass(frozen=True)
class ExpansionSettings:
    """Polynomial features: apple's stages, or all pairs or triples (with their namespace interactions). (``LearnerConfig.expansion``)

    Parameters
    ----------
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
    interactions : tuple of str
        quadratic / cubic: only products of one feature from each namespace
        named (by first letter), like VW's ``-q ab`` and ``--cubic abc``:
        ``("ab", "abc")``. Needs VW text input. Default: all pairs / triples.
    """

    expand: str = setting("none", Rule.choice(EXPANSIONS))
    alpha: float = setting(1.0, Rule.number(low=0))
    expand_rule: str = setting("weight", Rule.choice(EXPANSION_RULES))
    max_degree: int = setting(6, Rule.whole(low=1, high=32))
    expansions: int = setting(5, Rule.whole(low=0))
    expand_after: int = setting(1000, Rule.whole(low=1))
    apple_guard: bool = True
    examples_per_pass: int | None = setting(None, Rule.whole(low=1, optional=True))
    repeat_factors: bool = True
    interactions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_settings(self)
        object.__setattr__(self, "interactions", check_interactions(self.interactions, self.expand))


@dataclass(frozen=True)
class HoldoutSettings:
    """The holdout that judges passes: which examples it holds out, when it stops, when it judges at all. (``LearnerConfig.holdout``)

    Parameters
    ----------
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
        With a holdout: this many passes in a row without a lower holdout loss
        end a run of passes at one rate (VW's ``--early_terminate``, which then
        stops training).
    pass_schedule : {"restart", "constant"}
        With a holdout that judges, what ends a run of passes at one rate
        (``early_terminate`` passes without a lower holdout loss than the run's
        best) leads to. ``restart``: learning starts again from the beginning at
        half the learning rate, and training stops once a restart's best pass is
        no better than the run's before it; the holdout keeps the best pass of
        all. A lower rate is what more passes need where the first rate overfits
        (short texts, many rare or noisy features), and learning from the
        beginning undoes what the higher rate fitted to noise. ``constant``: one
        rate throughout; training stops (VW's ``--passes``). Step rules without
        a rate (``gsa``, ``inverse``) and warm starts from a model file go on at
        one rate.
    holdout_min_examples : int
        A holdout judges passes only when the first pass held out at least this
        many examples (per learner: per key with ``key``). With fewer, their
        mean loss is too noisy to tell passes apart; ``small_holdout`` says
        what the passes do instead. 0 always judges.
    small_holdout : {"cross-validate", "release"}
        With fewer than ``holdout_min_examples`` held out. ``cross-validate``
        (one learner's passes over a gathered input): every example is held
        out once, in one of ten folds by where it sits; a learner per fold
        learns the other nine, pass by pass, and their losses on their own
        folds judge each pass (the runs and restarts of ``pass_schedule``);
        the best pass's rate and its place in its run are then learned again
        from the beginning on every example (see :mod:`polybeam.learners.fitting`).
        ``release``, and always per key: from the second pass on the learner
        learns every example at one rate and keeps its last pass, as with
        ``holdout_period=0``.
    """

    holdout_period: int = setting(
        DEFAULT_HOLDOUT_PERIOD,
        Rule.whole(
            low=0,
            excluded=(1,),
            message="holdout_period must be a whole number >= 2 (one example in that many is held out), "
            "or 0 to hold out nothing; got {value!r}",
        ),
    )
    early_terminate: int = setting(DEFAULT_EARLY_TERMINATE, Rule.whole(low=1))
    holdout_min_examples: int = setting(DEFAULT_HOLDOUT_MIN_EXAMPLES, Rule.whole(low=0))
    pass_schedule: str = setting(DEFAULT_PASS_SCHEDULE, Rule.choice(PASS_SCHEDULES))
    small_holdout: str = setting(DEFAULT_SMALL_HOLDOUT, Rule.choice(SMALL_HOLDOUT_RULES))

    def __post_init__(self) -> None:
        check_settings(self)


@dataclass(frozen=True)
class FinishingSettings:
    """The L-BFGS finishing stage after the online passes. (``LearnerConfig.finishing``)

    Parameters
    ----------
    lbfgs_passes : int
        The finishing stage (:mod:`polybeam.learners.lbfgs`): after the
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
    """

    lbfgs_passes: int = setting(0, Rule.whole(low=0))
    lbfgs_l2: float | None = setting(None, Rule.number(low=0, optional=True))

    def __post_init__(self) -> None:
        check_settings(self)


@dataclass(frozen=True)
class MultitaskSettings:
    """A shared per-key model's settings. (``LearnerConfig.multitask``)

    Parameters
    ----------
    offset_prior : float, optional
        A shared per-key model's prior on its key offsets (``Train(shared_keys=...)``,
        ``--key-model shared``; :mod:`polybeam.learners.multitask`): with
        adaptive steps, each key-crossed weight's AdaGrad sum starts as if
        this many examples of unit gradient (at the feature's largest
        magnitude) had come before, so the offsets of a key with few rows stay
        small. None: ``DEFAULT_OFFSET_PRIOR`` (0.03) for a shared per-key
        model; other models have no offsets (0).
    """

    offset_prior: float | None = setting(None, Rule.number(low=0, optional=True))

    def __post_init__(self) -> None:
        check_settings(self)


# The losses' own numbers (quantile's tau), a setting each, named by the loss table's entry: a loss
# that takes a number adds its setting here by its LossParameter alone.
LossParameters = make_dataclass(
    "LossParameters",
    [(parameter.name, "float | None", None) for parameter in loss_parameters()],
    frozen=True,
    namespace={
        "__doc__": "The losses' own numbers (``LearnerConfig.loss_parameters``), None unless the loss takes it."
    },
)
LossParameters.__module__ = __name__  # (so that pickle finds the class here)

# LearnerConfig's groups: its attribute -> the group's class.
GROUPS = {
    "loss_parameters": LossParameters,
    "steps": StepSettings,
    "truncation": SparsitySettings,
    "expansion": ExpansionSettings,
    "holdout": HoldoutSettings,
    "finishing": FinishingSettings,
    "multitask": MultitaskSettings,
}


def check_interactions(interactions, kind: str) -> tuple[str, ...]:
    """Validated namespace interactions (strings of 2 or 3 namespace letters) for a quadratic / cubic expansion."""
    if isinstance(interactions, str):
        interactions = tuple(part for part in interactions.split(",") if part)
    interactions = tuple(str(text) for text in interactions)
    if not interactions:
        return ()
    if kind not in ("quadratic", "cubic"):
        raise ValueError(f"namespace interactions restrict the quadratic or cubic expansion, not {kind!r}")
    largest = 2 if kind == "quadratic" else 3
    for text in interactions:
        if ":" in text:
            raise ValueError(
                f"interaction {text!r}: no ':' wildcard; expand all pairs / triples without interactions instead"
            )
        if not 2 <= len(text.encode("utf-8")) <= largest:
            raise ValueError(
                f"interaction {text!r} must name {'2' if largest == 2 else '2 or 3'} namespaces by their first "
                f"letter (like VW's -q ab{' or --cubic abc' if largest == 3 else ''}); a 3-letter interaction needs the cubic expansion"
            )
    return interactions
