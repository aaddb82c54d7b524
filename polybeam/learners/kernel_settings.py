"""The settings the learning kernels read, built once per learner from its configuration.

Both learning kernels (``kernels.learn_batch`` and ``softmax.learn_batch_softmax``)
take the same arguments: the batch's arrays, the state's arrays, and one
:class:`KernelSettings`. It is a ``typing.NamedTuple`` of scalars, which numba
passes to a compiled function as a plain record (one field per scalar), so the
kernels read ``settings.gravity`` as they read an argument. The configuration's
names (loss, step rule, sparsity rule) become the kernels' integer codes here,
once, rather than on every batch.

Every field has one type whatever the configuration (codes ``int``, rates
``float``, switches ``bool``), so that each kernel compiles one signature.

>>> from polybeam.learners.config import LearnerConfig
>>> settings = KernelSettings.from_config(LearnerConfig(loss="logistic", step="gsa", gravity=0.01))
>>> settings.loss == LOGISTIC, settings.step == kernels.GSA, settings.sparsity == sparsity.CUMULATIVE
(True, True, True)
>>> settings.gravity, settings.threshold, settings.bias
(0.01, inf, True)
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, NamedTuple

from polybeam.learners import kernels, sparsity
from polybeam.learners.loss_specs import LOGISTIC, loss_spec  # noqa: F401  (LOGISTIC: the doctest)

if TYPE_CHECKING:
    from polybeam.learners.config import LearnerConfig


class KernelSettings(NamedTuple):
    """What a learning kernel needs of a :class:`~polybeam.learners.config.LearnerConfig`, as numbers.

    The softmax kernel reads every field but ``loss``, ``safe_updates``, ``gsa_exact``,
    ``scale_labels`` and the loss's switches (its loss is fixed, its updates plain).
    """

    loss: int  # the loss's code (polybeam.learners.loss_specs; SOFTMAX for the softmax kernel)
    loss_parameter: float  # the loss's number (quantile's tau), else 0
    binary_labels: bool  # labels are two classes, read as -1 (0 or below) and +1
    clamps: bool  # predictions are clamped to the range of labels seen
    step: int  # polybeam.learners.kernels' step rule code
    learning_rate: float  # eta of the rules that take one (0 for GSA's and the inverse rule)
    power_t: float
    l2: float
    bias: bool
    normalized: bool
    safe_updates: bool
    sparsity: int  # polybeam.learners.sparsity's code
    gravity: float
    truncate_every: float
    threshold: float  # theta (infinity: plain truncation, or online L1)
    gsa_target: float
    gsa_exact: bool
    scale_labels: bool

    @classmethod
    def from_config(cls, config: LearnerConfig) -> KernelSettings:
        """The settings of ``config``, each field cast to its one type."""
        spec = loss_spec(config.loss)
        return cls(
            loss=spec.code,
            loss_parameter=float(config.loss_parameter),
            binary_labels=spec.labels == "binary",
            clamps=spec.clamps,
            step=kernels.STEP_RULE_CODES[config.step],
            learning_rate=float(config.learning_rate or 0.0),
            power_t=float(config.power_t),
            l2=float(config.l2),
            bias=bool(config.bias),
            normalized=bool(config.normalized),
            safe_updates=bool(config.safe_updates),
            sparsity=sparsity.SPARSITY_CODES[config.sparsity],
            gravity=float(config.gravity),
            truncate_every=float(config.truncate_every),
            threshold=float(config.threshold),
            gsa_target=float(config.gsa_target),
            gsa_exact=bool(config.gsa_exact),
            scale_labels=bool(config.scale_labels),
        )


@functools.lru_cache(maxsize=32)
def settings_of(config: LearnerConfig) -> KernelSettings:
    """``KernelSettings.from_config(config)``, made once per config: a learner per key is made per key."""
    return KernelSettings.from_config(config)
