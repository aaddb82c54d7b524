"""Every loss polybeam learns, in one table: what labels it reads, what its predictions are, what it supports.

Each place that behaves differently per loss reads the loss's :class:`LossSpec`
here, never its name: the option check and the defaults (:mod:`polybeam.learners.config`),
the kernels' switches (:mod:`polybeam.learners.kernel_settings`), predictions and their
kinds (:mod:`polybeam.learners.predictions`), evaluation's metrics
(:mod:`polybeam.learners.evaluation`), the L-BFGS finishing stage, the scikit-learn
estimators, RunInference and Beam YAML. The arithmetic (value, derivative, curvature,
safe update, greedy step) is numba code in :mod:`polybeam.learners.losses`, under the
entry's ``code``.

A new loss is an entry in :data:`LOSS_SPECS` and its arithmetic in ``losses.py``;
a loss with a parameter (quantile's tau) also names a field of ``LearnerConfig``
and, for the estimators, a parameter of theirs.

This module imports nothing, so ``polybeam COMMAND --help`` lists the losses
without loading numba.

>>> spec = loss_spec("poisson")
>>> spec.labels, spec.link, spec.finishing, spec.probability
('count', 'exp', True, False)
>>> [name for name, spec in LOSS_SPECS.items() if spec.labels == "binary"]
['logistic', 'hinge']
>>> loss_spec("huber")
Traceback (most recent call last):
...
ValueError: loss must be one of squared, logistic, hinge, softmax, quantile, poisson; got 'huber'
"""

from __future__ import annotations

from dataclasses import dataclass

# The kernels' codes (polybeam.learners.losses switches on them in compiled code).
SQUARED = 0
LOGISTIC = 1
HINGE = 2
SOFTMAX = 3
QUANTILE = 4
POISSON = 5

# A Poisson log-mean is exponentiated at most at this value (e^700 ~ 1e304: finite).
MAX_LOG_MEAN = 700.0

# What the labels of a loss are (polybeam.formats.labels reads each kind): any finite number, a finite
# number >= 0, one of two classes, one of K classes.
LABEL_KINDS = ("real", "count", "binary", "multiclass")
# How a margin (w . x + b) becomes a prediction in the label's units (polybeam.learners.model).
LINKS = ("identity", "sigmoid", "softmax", "exp")
# What evaluate reports beside examples, loss, error, AUC and MSE (polybeam.learners.evaluation.METRICS).
METRIC_NAMES = ("mae", "coverage")


@dataclass(frozen=True)
class LossParameter:
    """A number a loss takes (quantile's tau): the ``LearnerConfig`` field (and ``--option``) that holds it,
    its default and the open interval it must lie in."""

    name: str
    default: float
    low: float
    high: float
    meaning: str

    def check(self, value) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not self.low < value < self.high:
            raise ValueError(
                f"{self.name} must be a number strictly between {self.low:g} and {self.high:g}; got {value!r}"
            )
        return float(value)


@dataclass(frozen=True)
class LossSpec:
    """One loss: its kernel code and what the rest of polybeam needs to know of it.

    ``labels``: the label kind it learns from (:data:`LABEL_KINDS`); ``link``: how a margin becomes a
    prediction (:data:`LINKS`); ``clamps``: predictions are clamped to the training labels' range (as VW
    does for regression); ``scales_labels``: adaptive steps are in units of the labels' running spread and
    the bias follows their running mean (``LearnerConfig.scale_labels``); ``probability``: predictions are
    probabilities; ``prediction``: what ``predict`` writes when not told (label, probability or score);
    ``finishing``: smooth, so the L-BFGS finishing stage can minimise it; ``greedy``: greedy step averaging
    (``step="gsa"``) can learn it; ``metrics``: what ``evaluate``
    reports besides examples, loss, error, AUC and MSE; ``default_rate``: the adaptive rule's eta when none is
    given; ``parameter``: the number it takes, if any.
    """

    name: str
    code: int
    meaning: str
    labels: str
    link: str
    default_rate: float
    prediction: str
    clamps: bool = False
    scales_labels: bool = False
    probability: bool = False
    finishing: bool = False
    greedy: bool = True
    metrics: tuple[str, ...] = ()
    default_step: str = "adaptive"
    parameter: LossParameter | None = None

    def __post_init__(self) -> None:
        if self.labels not in LABEL_KINDS or self.link not in LINKS or not set(self.metrics) <= set(METRIC_NAMES):
            raise ValueError(f"loss {self.name!r}: unknown label kind, link or metric")

    @property
    def classes(self) -> bool:
        """Whether its labels are classes (two, or K)."""
        return self.labels in ("binary", "multiclass")


# Default rates: 0.5 is VW's for every loss; for logistic loss 1.0 gave lower held-out error on all four bundled
# data sets and a lower progressive loss on the 1M-example synthetic benchmark, while squared and hinge loss did
# best at 0.5 on the large data (benchmarks/bench_default_rates.py). Quantile and Poisson loss take VW's 0.5.
LOSS_SPECS: dict[str, LossSpec] = {
    spec.name: spec
    for spec in (
        LossSpec(
            "squared",
            SQUARED,
            "(p - y)^2 on real labels (regression of the mean)",
            labels="real",
            link="identity",
            default_rate=0.5,
            prediction="label",
            clamps=True,
            scales_labels=True,
            finishing=True,
        ),
        LossSpec(
            "logistic",
            LOGISTIC,
            "log(1 + exp(-y p)) on two classes (probabilities)",
            labels="binary",
            link="sigmoid",
            default_rate=1.0,
            prediction="probability",
            probability=True,
            finishing=True,
        ),
        LossSpec(
            "hinge",
            HINGE,
            "max(0, 1 - y p) on two classes (a linear SVM)",
            labels="binary",
            link="identity",
            default_rate=0.5,
            prediction="score",
        ),
        LossSpec(
            "softmax",
            SOFTMAX,
            "multinomial log loss on K classes (one score per class)",
            labels="multiclass",
            link="softmax",
            default_rate=2.0,
            prediction="label",
            probability=True,
            finishing=True,
        ),
        LossSpec(
            "quantile",
            QUANTILE,
            "pinball loss on real labels: predicts the tau-quantile of y (VW's quantile loss)",
            labels="real",
            link="identity",
            default_rate=0.5,
            prediction="label",
            clamps=True,
            scales_labels=True,
            metrics=("mae", "coverage"),
            parameter=LossParameter(
                "quantile_tau",
                0.5,
                0.0,
                1.0,
                "--loss quantile: the quantile it predicts (0.5: the median, 0.9: the 90th percentile)",
            ),
        ),
        LossSpec(
            "poisson",
            POISSON,
            "exp(p) - y p on counts and rates >= 0: p is the log of the mean (VW's Poisson loss; its loss is half "
            "the Poisson deviance)",
            labels="count",
            link="exp",
            default_rate=0.5,
            prediction="label",
            finishing=True,
            # GSA's one mean step, times a gradient exp(p) - y that grows exponentially above the mean,
            # diverged on the kernels' test data, safe updates or not.
            greedy=False,
            metrics=("mae",),
        ),
    )
}
LOSSES = tuple(LOSS_SPECS)


def loss_spec(name: str) -> LossSpec:
    """The entry of loss ``name``; an unknown name raises ``ValueError`` listing the losses."""
    try:
        return LOSS_SPECS[name]
    except (KeyError, TypeError):
        raise ValueError(f"loss must be one of {', '.join(LOSSES)}; got {name!r}") from None


def losses_where(**wanted) -> tuple[str, ...]:
    """The names of the losses whose entries have the given values.

    >>> losses_where(probability=True)
    ('logistic', 'softmax')
    """
    return tuple(name for name, spec in LOSS_SPECS.items() if all(getattr(spec, k) == v for k, v in wanted.items()))


def loss_parameters() -> tuple[LossParameter, ...]:
    """The parameters the losses take (each a ``LearnerConfig`` field and an option)."""
    return tuple(spec.parameter for spec in LOSS_SPECS.values() if spec.parameter is not None)
