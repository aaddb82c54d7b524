"""The L-BFGS finishing stage on Beam (:mod:`polybeam.learners.lbfgs`): after the online passes, passes
over the training examples, each summing the regularised loss and gradient at one point across workers
(a ParDo per bundle and a CombineFn), warm-started from the averaged online model."""

from __future__ import annotations

import pickle

import apache_beam as beam

from polybeam.learners import lbfgs
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.transforms.combining import MergeFn
from polybeam.transforms.windows import combine_globally, in_window


class _LossGradientFn(beam.DoFn):
    """Sums the finishing stage's loss and gradient over a bundle's training examples at the point of the
    pass (a side input: ``(model, points)``, each :class:`~polybeam.learners.lbfgs.SparseWeights`), one :class:`~polybeam.learners.lbfgs.LossGradient`
    per bundle."""

    def __init__(self, config: LearnerConfig):
        self.config = config

    def start_bundle(self):
        self._totals: dict = {}  # window -> its sum

    def process(self, batch: ExampleBatch, point, window=beam.DoFn.WindowParam):
        model, points = point
        if batch is None or len(batch) == 0 or not points:  # (no points: the stage does not run)
            return
        if window not in self._totals:
            self._totals[window] = lbfgs.PassSums.zero(points)
        # (the stage's holdout: the examples the learner's holdout period holds out, see lbfgs.Finishing)
        period = lbfgs.stage_holdout_period(self.config)
        self._totals[window].add(model, points, batch, period, self.config.seed)

    def finish_bundle(self):
        for window, total in self._totals.items():
            yield in_window(total, window)
        self._totals = {}


class SumLossGradients(MergeFn):
    """Adds the bundles' losses and gradients (any order: the sum is additive). The first part is
    copied, not summed into (see MergeFn): it is an input element, which a CombineFn must not change,
    and summing the next bundle's part into it did."""


class _LbfgsState:
    """The finishing stage's state between passes: :class:`~polybeam.learners.lbfgs.Finishing` (the online
    model it started from, an optimiser per L2, the best candidate on the holdout). ``why`` None: the stage
    runs only when the online model is an average of more than two learners
    (:func:`~polybeam.learners.lbfgs.averaged_why`), else its passes do nothing and it returns the model."""

    def __init__(self, model, config: LearnerConfig, why: str | None = None):
        why = why if why is not None else lbfgs.averaged_why(model)
        self.model = model
        self.stage = None
        if why is not None:
            period = lbfgs.stage_holdout_period(config)
            self.stage = lbfgs.Finishing(model, config.lbfgs_l2, period, config.seed, why)

    def point(self):
        return (self.model, []) if self.stage is None else (self.stage.model, self.stage.points())

    def told(self, total):
        """A new state (elements do not change) that took the pass's sums (None: no example reached it)."""
        if self.stage is None:
            return self
        state = pickle.loads(pickle.dumps(self))
        state.stage.told(total)
        return state

    def finished(self):
        return self.model if self.stage is None else self.stage.finished()


class FinishWithLbfgs(beam.PTransform):
    """The finishing stage (:mod:`polybeam.learners.lbfgs`): ``config.lbfgs_passes`` passes over the
    training batches, each summing the loss and gradient at one point across workers, warm-started from
    the one Model of the online passes (the input); outputs the finished Model. ``passes``: how many
    (default ``config.lbfgs_passes``); ``why``: why the stage runs, for the model's summary; None: only
    after an average of more than two learners (see :func:`polybeam.learners.lbfgs.finishing_plan`)."""

    def __init__(self, batches, config: LearnerConfig, passes: int | None = None, why: str | None = "asked for"):
        super().__init__()
        self.batches = batches
        self.config = config
        self.passes = config.lbfgs_passes if passes is None else passes
        self.why = why

    def expand(self, models):
        config = self.config
        state = models | "LbfgsStart" >> beam.Map(_LbfgsState, config, self.why)
        for number in range(1, self.passes + 1):
            point = state | f"LbfgsPoint{number}" >> beam.Map(lambda s: s.point())
            parts = self.batches | f"LbfgsLossGradient{number}" >> beam.ParDo(
                _LossGradientFn(config), beam.pvalue.AsSingleton(point)
            )
            total = parts | f"LbfgsSum{number}" >> combine_globally(SumLossGradients(), parts)
            # (a window whose bundles had no training example has no sum: told(None) takes the empty one)
            state = state | f"LbfgsStep{number}" >> beam.Map(
                lambda s, t: s.told(t), beam.pvalue.AsSingleton(total, default_value=None)
            )
        return state | "LbfgsModel" >> beam.Map(lambda s: s.finished())
