"""LearnerConfig: everything that decides how a learner learns, in one frozen value.

It is what the command line and PipelineOptions fill, what a model file records
and what a Python user passes to ``Train``. It holds configuration only: no
state, no data. The settings of the problem (loss, classes, bits, passes, ...)
are its own fields; the rest come in groups (:mod:`polybeam.learners.config_parts`):
``steps``, ``truncation`` (sparsity), ``expansion``, ``holdout``, ``finishing``
and ``multitask``, each a frozen dataclass that holds its own rules. Every
setting is also read and given by its flat name (``config.gravity``,
``LearnerConfig(gravity=1e-3)``), as model files record them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from polybeam.learners.choices import DEFAULT_BITS, LOSSES
from polybeam.learners.config_parts import (
    GROUPS,
    ExpansionSettings,
    FinishingSettings,
    HoldoutSettings,
    LossParameters,
    MultitaskSettings,
    SparsitySettings,
    StepSettings,
)
from polybeam.learners.loss_specs import LOSS_SPECS, loss_parameters, loss_spec
from polybeam.learners.setting_rules import Rule, check_settings, setting

# Default eta per loss when a step rule needs one (each loss's entry says why).
DEFAULT_LEARNING_RATES = {name: spec.default_rate for name, spec in LOSS_SPECS.items()}

# The settings in the order model files and option records list them (the order of the one flat
# dataclass the groups came from: files written since read back the same, byte for byte).
SETTINGS_ORDER = (
    "loss", "step", "learning_rate", "power_t", "l2", "bits", "seed", "passes", "holdout_period",
    "early_terminate", "holdout_min_examples", "pass_schedule", "small_holdout", "bias", "center", "scale_labels", "normalized", "safe_updates",
    "classes", "class_names", "gsa_target", "gsa_exact", "sparsity", "gravity", "truncate_every",
    "truncate_threshold", "expand", "alpha", "expand_rule", "max_degree", "expansions", "expand_after",
    "apple_guard", "examples_per_pass", "repeat_factors", "interactions", "lbfgs_passes", "lbfgs_l2",
    "offset_prior", *(parameter.name for parameter in loss_parameters()),
)  # fmt: skip
# A grouped setting's flat name -> the group that holds it.
GROUP_OF = {field.name: group for group, cls in GROUPS.items() for field in dataclasses.fields(cls)}


@dataclass(frozen=True, init=False)
class LearnerConfig:
    """How an online learner learns.

    ``LearnerConfig(**settings)`` takes every setting by its flat name, those
    of the groups too; a group can also be given whole
    (``LearnerConfig(loss="logistic", truncation=SparsitySettings(gravity=1e-4))``),
    and flat settings then change it. The groups' settings are documented
    with their classes: :class:`~polybeam.learners.config_parts.StepSettings`
    (``steps``), :class:`~polybeam.learners.config_parts.SparsitySettings`
    (``truncation``), :class:`~polybeam.learners.config_parts.ExpansionSettings`
    (``expansion``), :class:`~polybeam.learners.config_parts.HoldoutSettings`
    (``holdout``), :class:`~polybeam.learners.config_parts.FinishingSettings`
    (``finishing``) and :class:`~polybeam.learners.config_parts.MultitaskSettings`
    (``multitask``).

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
    quantile_tau (and any loss's own number) : float, optional
        A number the loss takes, a setting named by its entry's
        ``LossParameter`` in :mod:`polybeam.learners.loss_specs` (held in
        ``config.loss_parameters``): ``quantile_tau``, the quantile ``quantile``
        predicts (0 < tau < 1; default 0.5, the median), VW's
        ``--quantile_tau``. A loss that takes none refuses it.
    bits : int
        Weights live in ``2**bits`` hashed slots (1..30).
    seed : int
        Seeds feature hashing (VW's ``--hash_seed``) and the learner's randomness.
    passes : int
        Passes over the data; in Beam each later pass starts every worker from the
        averaged model of the previous pass.
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
    classes : int
        Number of classes of ``softmax`` (>= 2); taken from ``class_names`` if
        those are given.
    class_names : tuple of str
        Optional names of the classes 1..K (softmax), or of the negative and
        the positive class (logistic, hinge), for reading labels and for
        predictions (see :mod:`polybeam.formats.labels`).
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
    >>> LearnerConfig(gravity=1e-3).truncation
    SparsitySettings(sparsity='cumulative', gravity=0.001, truncate_every=1, truncate_threshold=None)
    """

    loss: str = setting("squared", Rule.choice(LOSSES))
    bits: int = DEFAULT_BITS
    seed: int = setting(
        0, Rule.whole(low=0, high=2**32 - 1, message="seed must be an integer in [0, 2**32); got {value!r}")
    )
    passes: int = setting(1, Rule.whole(low=1))
    bias: bool = True
    center: bool = True
    scale_labels: bool | None = None
    classes: int = setting(0, Rule.whole(low=0))
    class_names: tuple[str, ...] = ()
    steps: StepSettings = StepSettings()
    truncation: SparsitySettings = SparsitySettings()
    expansion: ExpansionSettings = ExpansionSettings()
    holdout: HoldoutSettings = HoldoutSettings()
    finishing: FinishingSettings = FinishingSettings()
    multitask: MultitaskSettings = MultitaskSettings()
    loss_parameters: LossParameters = LossParameters()

    def __init__(self, **settings: Any) -> None:
        own = {field.name for field in dataclasses.fields(self)}
        unknown = sorted(set(settings) - own - set(GROUP_OF))
        if unknown:
            raise TypeError(f"LearnerConfig got unknown settings {unknown}; known: {', '.join(SETTINGS_ORDER)}")
        grouped: dict[str, dict] = {}
        for name in [name for name in settings if name in GROUP_OF]:
            grouped.setdefault(GROUP_OF[name], {})[name] = settings.pop(name)
        for field in dataclasses.fields(self):
            value = settings.get(field.name, field.default)
            if field.name in GROUPS and field.name in grouped:
                # A group given whole changed by flat settings (as dataclasses.replace does), else made from them.
                flat = grouped[field.name]
                value = replace(value, **flat) if field.name in settings else GROUPS[field.name](**flat)
            object.__setattr__(self, field.name, value)
        self.__post_init__()

    def __post_init__(self) -> None:
        set_field = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731
        check_settings(self)
        spec = loss_spec(self.loss)
        self._check_loss_parameters(spec, set_field)
        set_field("steps", self.steps.for_loss(self.loss))
        if self.scale_labels is None:
            set_field("scale_labels", spec.scales_labels and self.step == "adaptive")
        elif self.scale_labels and not spec.scales_labels:
            scaled = " and ".join(name for name, entry in LOSS_SPECS.items() if entry.scales_labels)
            raise ValueError(f"scale_labels is for {scaled} loss, whose labels are numbers; not {self.loss!r}")
        from polybeam.learners.hashing import check_bits  # (here: the kernels' modules import numba)

        set_field("bits", check_bits(self.bits))
        set_field("seed", int(self.seed))
        self._check_classes(set_field)
        if self.lbfgs_passes and not spec.finishing:
            smooth = ", ".join(name for name, entry in LOSS_SPECS.items() if entry.finishing)
            raise ValueError(
                f"the L-BFGS finishing stage (lbfgs_passes) needs a differentiable loss ({smooth}); got {self.loss!r}"
            )

    def __setstate__(self, state: dict) -> None:
        # (a config pickled before the settings were grouped holds them flat)
        if "steps" not in state:
            state = LearnerConfig(**state).__dict__
        self.__dict__.update(state)

    def _check_loss_parameters(self, spec, set_field) -> None:
        """The loss's own number (quantile's tau): its default when unset, checked; another loss's: refused."""
        for parameter in loss_parameters():
            value = getattr(self, parameter.name)
            if parameter is spec.parameter:
                checked = parameter.check(parameter.default if value is None else value)
                set_field("loss_parameters", replace(self.loss_parameters, **{parameter.name: checked}))
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

    def _check_classes(self, set_field) -> None:
        names = tuple(str(name) for name in self.class_names)
        set_field("class_names", names)
        if len(set(names)) != len(names) or any(not name for name in names):
            raise ValueError(f"class_names must be distinct and non-empty; got {names}")
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
        return self.truncation.threshold

    @property
    def label_kind(self) -> str:
        """The labels this configuration can learn from (see ``label_problems``)."""
        return loss_spec(self.loss).labels

    def replace(self, **changes: Any) -> LearnerConfig:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Every setting by its flat name, in :data:`SETTINGS_ORDER` (what model files record)."""
        values = {name: getattr(self, name) for name in SETTINGS_ORDER}
        # Only shared per-key models have an offset prior, only some losses a parameter: other files stay as
        # they were.
        for name in ("offset_prior", *(parameter.name for parameter in loss_parameters())):
            if values[name] is None:
                del values[name]
        return values

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> LearnerConfig:
        """Rebuild a config, refusing fields this version does not know."""
        known = set(SETTINGS_ORDER)
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(
                f"unknown learner settings {unknown}: the model or options come from a newer "
                "polybeam; upgrade polybeam to use them"
            )
        return cls(**values)

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """Every setting's default by its flat name, in :data:`SETTINGS_ORDER` (None: chosen from the others).

        >>> LearnerConfig.defaults()["passes"], LearnerConfig.defaults()["step"]
        (1, None)
        """
        own = {field.name: field.default for field in dataclasses.fields(cls) if field.name not in GROUPS}
        grouped = {name: getattr(GROUPS[group](), name) for name, group in GROUP_OF.items()}
        grouped["sparsity"] = None  # (resolved from gravity and threshold)
        return {name: own[name] if name in own else grouped[name] for name in SETTINGS_ORDER}


def _grouped_setting(group: str, name: str) -> property:
    return property(lambda config: getattr(getattr(config, group), name), doc=f"``{group}.{name}``")


for _name, _group in GROUP_OF.items():  # config.gravity is config.truncation.gravity, and so on
    setattr(LearnerConfig, _name, _grouped_setting(_group, _name))
