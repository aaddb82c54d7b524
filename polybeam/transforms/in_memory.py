"""Every pass in one worker's memory: the input gathered once (per window), each later pass a loop over it.

For an input that fits a worker's memory, the streaming passes of
:mod:`polybeam.transforms.train` pay a Beam stage per pass (a side input of the
previous state, a learner per bundle, an average, the holdout's judgement):
about half a second a pass on the local runner whatever the data. Gathered,
the batches are read and hashed once and every pass runs in process, as one
learner's ``fit`` does (:func:`polybeam.learners.holdout.train_passes`: the
holdout judges each pass and keeps the best), in milliseconds for a thousand
rows. ``Train.Globally(..., in_memory=True)`` trains this way.

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

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics

from polybeam.learners.config import LearnerConfig
from polybeam.learners.holdout import train_passes
from polybeam.learners.polynomial import make_learner
from polybeam.transforms.holdout_passes import report_selection
from polybeam.transforms.passes import continue_from
from polybeam.transforms.windows import combine_globally


class GatherBatches(beam.CombineFn):
    """The batches of a window as one list (in the order the runner hands them over)."""

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
        return batches


class TrainAllPasses(beam.DoFn):
    """Learns a window's gathered batches for every pass of ``config`` with one learner (a fresh one, or
    going on from ``start``, a side input), the holdout judging each pass; emits the learner (its state,
    as the streaming passes do). ``shuffle_seed``: every pass learns each batch's rows in a new order
    drawn from it (None: in their order)."""

    def __init__(self, config: LearnerConfig, shuffle_seed: int | None = None):
        self.config = config
        self.shuffle_seed = shuffle_seed

    def setup(self):
        self._stopped = Metrics.counter("polybeam.train", "learners_stopped_early")

    def process(self, batches, start=None):
        config = self.config
        learner = make_learner(config) if start is None else continue_from(start)
        # Apple spaces its epochs over what it will learn, as the streaming passes do when they count it.
        expect = start is None and config.expand == "apple" and (config.passes > 1 or config.examples_per_pass)
        shuffle = None if self.shuffle_seed is None else np.random.RandomState(self.shuffle_seed)
        train_passes(learner, batches, config.passes, expect=bool(expect), shuffle=shuffle)
        report_selection(learner.selection_, self._stopped)
        yield learner.compact()


class TrainInMemory(beam.PTransform):
    """The learner after every pass of ``config`` over the input batches, gathered in one worker's memory
    (per window); ``initial``: a PCollection of one learner to go on from (a warm start)."""

    def __init__(self, config: LearnerConfig, initial=None, shuffle_seed: int | None = None):
        super().__init__()
        self.config, self.initial, self.shuffle_seed = config, initial, shuffle_seed

    def expand(self, batches):
        gathered = batches | "Gather" >> combine_globally(GatherBatches(), batches)
        train = TrainAllPasses(self.config, self.shuffle_seed)
        if self.initial is None:
            return gathered | "TrainAllPasses" >> beam.ParDo(train)
        return gathered | "TrainAllPasses" >> beam.ParDo(train, beam.pvalue.AsSingleton(self.initial))
