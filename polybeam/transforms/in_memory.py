"""Every pass in one worker's memory: the input gathered once (per window), each later pass a loop over it.

For an input that fits a worker's memory, the streaming passes of
:mod:`polybeam.transforms.train` pay a Beam stage per pass (a side input of the
previous state, a learner per bundle, an average, the holdout's judgement):
about half a second a pass on the local runner whatever the data. Gathered,
the batches are read and hashed once and every pass runs in process, as one
learner's ``fit`` does (:func:`polybeam.learners.fitting.train_passes`: the
holdout judges each pass and keeps the best), in milliseconds for a thousand
rows. ``Train.Globally(..., in_memory=True)`` trains this way, and so does
``polybeam train`` on an input small enough (``--in-memory``, see
:func:`in_memory_choice`). The finishing stage (``lbfgs_passes``) then runs
in the same memory too (:class:`FinishInMemory`): each L-BFGS evaluation a
loop over the gathered batches, not a Beam stage.

>>> import apache_beam as beam
>>> import numpy as np
>>> from polybeam.learners.batch import ExampleBatch
>>> from polybeam.learners.config import LearnerConfig
>>> from polybeam.learners.polynomial import make_learner
>>> batch = ExampleBatch.from_rows([(1.0, {1: 1.0}), (-1.0, {2: 1.0})] * 20, bits=10)
>>> config = LearnerConfig(loss="logistic", bits=10, passes=5)
>>> fitted = make_learner(config).fit([batch, batch]).to_model()  # one learner's fit, in plain Python
>>> with beam.Pipeline(runner="FnApiRunner") as p:
...     _ = (p | beam.Create([batch, batch]) | TrainInMemory(config)
...          | beam.Map(lambda learner: print(np.array_equal(learner.to_model().weights, fitted.weights))))
True
"""

from __future__ import annotations

import sys

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics

from polybeam.learners import lbfgs
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.fitting import small_input_cross_validates, train_passes
from polybeam.learners.holdout import held_out_rows
from polybeam.learners.polynomial import make_learner
from polybeam.transforms.holdout_passes import report_selection
from polybeam.transforms.passes import continue_from
from polybeam.transforms.progress import Progress
from polybeam.transforms.windows import combine_globally


class GatherBatches(beam.CombineFn):
    """The batches of a window as one list, in read order (by source and first row: a runner hands them
    over in the order its workers' bundles finish, and the model must not depend on it). Batches with
    event times keep the order they come in: a window learns its panes one after the other, and a pane's
    rows are not in the order of their first row ids."""

    def create_accumulator(self) -> list:
        return []

    def add_input(self, batches: list, batch) -> list:
        batches.append(batch)
        return batches

    def merge_accumulators(self, accumulators) -> list:
        accumulators = iter(accumulators)
        first = next(accumulators)
        for more in accumulators:
            first.extend(more)
        return first

    def extract_output(self, batches: list) -> list:
        if any(batch.timestamps is not None for batch in batches):
            return batches
        return sorted(batches, key=ExampleBatch.read_place)


class TrainAllPasses(beam.DoFn):
    """Learns a window's gathered batches for every pass of ``config`` with one learner (a fresh one, or
    going on from ``start``, a side input), the holdout judging each pass; emits the learner (its state,
    as the streaming passes do). ``shuffle_seed``: every pass learns each batch's rows in a new order
    drawn from it (None: in their order). ``progress``: print the learning curve's lines and each judged
    pass's holdout line on the worker's stderr, as the streaming passes do (the metrics are counted
    either way); ``progress_every``: their schedule (see :mod:`polybeam.transforms.progress`)."""

    def __init__(
        self,
        config: LearnerConfig,
        shuffle_seed: int | None = None,
        progress: bool = False,
        progress_every: int = 0,
        *,
        only_cross_validated: bool = False,
        learners: int = 1,
    ):
        self.config = config
        self.shuffle_seed = shuffle_seed
        self.progress, self.progress_every = progress, progress_every
        self.only_cross_validated = only_cross_validated
        self.learners = learners

    def setup(self):
        self._stopped = Metrics.counter("polybeam.train", "learners_stopped_early")

    def process(self, batches, start=None):
        config = self.config
        if self.only_cross_validated and not (batches and cross_validates_input(config, batches)):
            return
        # (after the streamed passes, which counted their own work: cross-validation's only prints its choice)
        reporter = Progress(quiet=not self.progress or self.only_cross_validated, every=self.progress_every)
        learner = make_learner(config) if start is None else continue_from(start)
        learner = learner if self.only_cross_validated else reporter.attach(learner)
        # Apple spaces its epochs over what it will learn, as the streaming passes do when they count it.
        expect = start is None and config.expand == "apple" and (config.passes > 1 or config.examples_per_pass)
        shuffle = None if self.shuffle_seed is None else np.random.RandomState(self.shuffle_seed)

        def after_pass(learner, number, learned):
            if number and not self.only_cross_validated:
                reporter.learned(learned["examples"])
                reporter.publish()
            line = learner.selection_.line_after(number)
            if self.progress and line:
                print(line, file=sys.stderr, flush=True)

        train_passes(
            learner,
            batches,
            config.passes,
            expect=bool(expect),
            shuffle=shuffle,
            after_pass=after_pass,
            learners=self.learners,
        )
        report_selection(learner.selection_, self._stopped)
        yield learner.compact()


class TrainInMemory(beam.PTransform):
    """The learner after every pass of ``config`` over the input batches, gathered in one worker's memory
    (per window); ``initial``: a PCollection of one learner to go on from (a warm start); ``learners``: how
    many learners learn each pass, as that many workers would (see :class:`TrainAllPasses`). Once applied,
    ``gathered`` is the PCollection of the gathered batches (one list per window), for
    :class:`FinishInMemory`."""

    def __init__(
        self,
        config: LearnerConfig,
        initial=None,
        shuffle_seed: int | None = None,
        progress: bool = False,
        progress_every: int = 0,
        *,
        learners: int = 1,
    ):
        super().__init__()
        self.config, self.initial, self.shuffle_seed = config, initial, shuffle_seed
        self.progress, self.progress_every = progress, progress_every
        self.learners = learners
        self.gathered = None

    def expand(self, batches):
        self.gathered = gathered = batches | "Gather" >> combine_globally(GatherBatches(), batches)
        train = TrainAllPasses(
            self.config, self.shuffle_seed, self.progress, self.progress_every, learners=self.learners
        )
        if self.initial is None:
            return gathered | "TrainAllPasses" >> beam.ParDo(train)
        return gathered | "TrainAllPasses" >> beam.ParDo(train, beam.pvalue.AsSingleton(self.initial))


def cross_validates_input(config: LearnerConfig, batches: list) -> bool:
    """Whether a fresh learner's passes over ``batches`` are chosen by cross-validation (see
    :func:`polybeam.learners.fitting.small_input_cross_validates`)."""
    if config.passes < 2 or config.holdout_period <= 0:
        return False
    held = sum(int(mask.sum()) for mask in (held_out_rows(batch, config) for batch in batches) if mask is not None)
    return small_input_cross_validates(config, held, sum(len(batch) for batch in batches))


def _released(batch, first):
    """``batch`` when the first pass's holdout was released (too few held out to judge by)."""
    if first.selection_.released:
        yield batch


def _chosen(streamed, cross_validated: list):
    return cross_validated[0] if cross_validated else streamed


class CrossValidateSmallInput(beam.PTransform):
    """Takes ``(batches, learners)``: the streamed passes' input and their learner (per window). Where the
    first pass (``first``, a PCollection of its judged learner) held out too few examples to judge by, the
    input is small: it is gathered in one worker and its passes are chosen by cross-validation and learned
    again (:mod:`polybeam.learners.fitting`), as the passes in memory do, and that learner replaces the
    streamed one. Elsewhere nothing is gathered and the streamed learner stays."""

    def __init__(self, config: LearnerConfig, first, shuffle_seed=None, progress=False, progress_every=0):
        super().__init__()
        self.config, self.first, self.shuffle_seed = config, first, shuffle_seed
        self.progress, self.progress_every = progress, progress_every

    def expand(self, inputs):
        batches, learners = inputs
        small = batches | "KeepIfReleased" >> beam.FlatMap(_released, beam.pvalue.AsSingleton(self.first))
        gathered = small | "Gather" >> combine_globally(GatherBatches(), small)
        train = TrainAllPasses(
            self.config, self.shuffle_seed, self.progress, self.progress_every, only_cross_validated=True
        )
        chosen = gathered | "CrossValidate" >> beam.ParDo(train)
        return learners | "Choose" >> beam.Map(_chosen, beam.pvalue.AsList(chosen))


def _finish(model, batches: list, config: LearnerConfig, passes: int, why: str | None):
    why = why if why is not None else lbfgs.averaged_why(model)
    if why is None:  # (only after an average of more than two learners, and this is not one)
        return model
    return lbfgs.finish(
        model,
        batches,
        passes,
        config.lbfgs_l2,
        period=lbfgs.stage_holdout_period(config),
        seed=config.seed,
        why=why,
    )


class FinishInMemory(beam.PTransform):
    """The finishing stage (:mod:`polybeam.learners.lbfgs`) over batches already gathered in memory
    (``gathered``: :attr:`TrainInMemory.gathered`): every evaluation a loop in the worker, the same model
    as :class:`~polybeam.transforms.lbfgs_stage.FinishWithLbfgs` makes from the same batches."""

    def __init__(self, gathered, config: LearnerConfig, passes: int | None = None, why: str | None = "asked for"):
        super().__init__()
        self.gathered, self.config, self.why = gathered, config, why
        self.passes = config.lbfgs_passes if passes is None else passes

    def expand(self, models):
        # (the model and its window's batches meet by window: the side input is the window's list)
        return models | "Finish" >> beam.Map(
            _finish, beam.pvalue.AsSingleton(self.gathered), self.config, self.passes, self.why
        )
