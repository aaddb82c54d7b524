"""LearnerConfig: everything that decides how a learner learns, in one frozen value.

It is what the command line and PipelineOptions fill, what a model file records
and what a Python user passes to ``Train``. It holds configuration only: no
state, no data.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Mapping

from polybeam.learners.hashing import DEFAULT_BITS, check_bits

LOSSES = ("squared", "logistic", "hinge")
STEPS = ("constant", "decay", "inverse", "adaptive")
# Default eta per loss. 0.5 is VW's default for every loss; for logistic loss
# 1.0 gave lower held-out error on all four bundled data sets and a lower
# progressive loss on the 1M-example synthetic benchmark, while squared and
# hinge loss did best at 0.5 on the large data (benchmarks/bench_default_rates.py).
DEFAULT_LEARNING_RATES = {"squared": 0.5, "logistic": 1.0, "hinge": 0.5}


@dataclass(frozen=True)
class LearnerConfig:
    """How an online linear learner learns.

    Parameters
    ----------
    loss : {"squared", "logistic", "hinge"}
        ``squared`` is ``(p - y)**2`` on real labels (predictions are clamped to
        the range of labels seen, as VW does); ``logistic`` and ``hinge`` take
        labels +1 and -1 (or 0, read as -1).
    step : {"constant", "decay", "inverse", "adaptive"}
        The step size rule: ``constant`` eta; ``decay`` eta * t**-power_t (t the
        importance-weighted number of examples including this one);
        ``inverse`` 1 / (l2 * (t + 1)) with t the examples before this one
        (Pegasos; needs ``l2 > 0``); ``adaptive`` per-coordinate AdaGrad steps
        eta / sqrt(sum of squared gradients), normalised by each feature's largest
        magnitude when ``normalized`` (VW's default update).
    learning_rate : float, optional
        eta; defaults to 1.0 for logistic loss and 0.5 (VW's default) otherwise.
        Not used by ``inverse``.
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
    bias : bool
        Learn a bias weight (slot 0, feature value 1).
    normalized : bool
        With ``adaptive``: divide each feature's step by the largest magnitude
        seen for it (and rescale its weight when that grows), so that learning
        does not depend on the units of a feature, as VW's ``--normalized``.
    safe_updates : bool
        Importance-aware updates (Karampatziakis & Langford): the step follows the
        loss's gradient flow, so it never overshoots the label however large the
        learning rate or importance weight. Off: plain ``w -= step * gradient``.

    Examples
    --------
    >>> LearnerConfig(loss="logistic").learning_rate, LearnerConfig(loss="squared").learning_rate
    (1.0, 0.5)
    >>> LearnerConfig(loss="logistic", step="inverse")
    Traceback (most recent call last):
    ...
    ValueError: step 'inverse' (1 / (l2 * (t + 1))) needs l2 > 0; set l2, e.g. l2=1e-4
    """

    loss: str = "squared"
    step: str = "adaptive"
    learning_rate: float | None = None
    power_t: float = 0.5
    l2: float = 0.0
    bits: int = DEFAULT_BITS
    seed: int = 0
    passes: int = 1
    bias: bool = True
    normalized: bool = True
    safe_updates: bool = True

    def __post_init__(self) -> None:
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {', '.join(LOSSES)}; got {self.loss!r}")
        if self.step not in STEPS:
            raise ValueError(f"step must be one of {', '.join(STEPS)}; got {self.step!r}")
        if self.learning_rate is None:
            object.__setattr__(self, "learning_rate", DEFAULT_LEARNING_RATES[self.loss])
        _check_number("learning_rate", self.learning_rate, positive=True)
        _check_number("power_t", self.power_t)
        if self.power_t < 0:
            raise ValueError(f"power_t must be >= 0; got {self.power_t}")
        _check_number("l2", self.l2)
        if self.l2 < 0:
            raise ValueError(f"l2 must be >= 0; got {self.l2}")
        if self.step == "inverse" and self.l2 <= 0:
            raise ValueError("step 'inverse' (1 / (l2 * (t + 1))) needs l2 > 0; set l2, e.g. l2=1e-4")
        object.__setattr__(self, "bits", check_bits(self.bits))
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or not 0 <= self.seed < 2**32:
            raise ValueError(f"seed must be an integer in [0, 2**32); got {self.seed!r}")
        if not isinstance(self.passes, int) or isinstance(self.passes, bool) or self.passes < 1:
            raise ValueError(f"passes must be a whole number >= 1; got {self.passes!r}")

    @property
    def label_kind(self) -> str:
        """The labels this configuration can learn from (see ``label_problems``)."""
        return "real" if self.loss == "squared" else "binary"

    def replace(self, **changes: Any) -> "LearnerConfig":
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> "LearnerConfig":
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
