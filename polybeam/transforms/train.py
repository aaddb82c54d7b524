"""Train: learn a model (or one per key) from a PCollection of ExampleBatches.

The first pass is a plain ``CombineFn`` whose accumulator is the learner state,
so runners lift it: every bundle learns into its own partial learner
(``add_input`` learns a batch), partial learners are compacted before the
shuffle and averaged by ``merge_accumulators``. Each later pass starts every
bundle from the averaged state of the previous pass (a side input) and averages
again: iterative parameter mixing.

Example
-------
>>> import apache_beam as beam
>>> from polybeam.learners.batch import ExampleBatch
>>> batch = ExampleBatch.from_rows([(1.0, {1: 1.0}), (-1.0, {2: 1.0})] * 20, bits=10)
>>> with beam.Pipeline(runner="FnApiRunner") as p:
...     models = (p | beam.Create([batch, batch])
...                 | Train(loss="logistic", bits=10, passes=2)
...                 | beam.Map(lambda model: print(model.metadata["examples"], model.nonzero)))
80 3
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from polybeam.learners.background import BackgroundLearner
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.linear import LinearLearner
from polybeam.learners.polynomial import make_learner
from polybeam.transforms.keys import KeyFn, split_by_key


class TrainFn(beam.CombineFn):
    """A CombineFn whose accumulator is a learner (linear or polynomial, as the config asks).

    The accumulator learns on a helper thread while the worker reads the next
    batches (:class:`~polybeam.learners.background.BackgroundLearner`); it is
    settled before it is merged, compacted, pickled or extracted.
    ``output="model"`` extracts the sparse Model, ``"state"`` the learner itself
    (to continue training in another pass).
    """

    def __init__(self, config: LearnerConfig, output: str = "model", metadata: dict | None = None):
        self.config = config
        self.output = output
        self.metadata = metadata

    def create_accumulator(self) -> BackgroundLearner:
        return BackgroundLearner(make_learner(self.config))

    def add_input(self, accumulator: BackgroundLearner, element) -> BackgroundLearner:
        if isinstance(element, tuple):  # (batch, examples over all passes): see Train
            return accumulator.learn(*element)
        return accumulator.learn(element)

    def merge_accumulators(self, accumulators) -> BackgroundLearner:
        learners = [accumulator.settle() for accumulator in accumulators]
        return BackgroundLearner(learners[0].merge(learners[1:]))

    def compact(self, accumulator: BackgroundLearner) -> BackgroundLearner:
        accumulator.settle().compact()
        return accumulator

    def extract_output(self, accumulator: BackgroundLearner):
        learner = accumulator.settle()
        return learner.to_model(self.metadata) if self.output == "model" else learner


class MergeLearnersFn(beam.CombineFn):
    """Averages the partial learners of a later pass into one state or Model."""

    def __init__(self, config: LearnerConfig, output: str = "model", metadata: dict | None = None):
        self.config = config
        self.output = output
        self.metadata = metadata

    def create_accumulator(self) -> list[LinearLearner]:
        return []

    def add_input(self, learners, learner: LinearLearner):
        learners.append(learner)
        return learners

    def merge_accumulators(self, accumulators):
        accumulators = iter(accumulators)
        first = next(accumulators)
        for more in accumulators:
            first.extend(more)
        return first

    def compact(self, learners):
        return [learners[0].merge(learners[1:])] if len(learners) > 1 else learners

    def extract_output(self, learners):
        learner = learners[0].merge(learners[1:]) if learners else make_learner(self.config)
        return learner.to_model(self.metadata) if self.output == "model" else learner


class _LearnOnePass(beam.DoFn):
    """Continues training from the previous pass's state, one learner per key per bundle."""

    def __init__(self, keyed: bool):
        self.keyed = keyed

    def start_bundle(self):
        self._learners: dict = {}

    def process(self, element, start):
        key, batch = element if self.keyed else (None, element)
        learner = self._learners.get(key)
        if learner is None:
            origin = start[key] if self.keyed else start
            learner = self._learners[key] = BackgroundLearner(origin.copy().start_pass())
        learner.learn(batch)

    def finish_bundle(self):
        for key, background in self._learners.items():
            learner = background.settle()
            value = (key, learner.compact()) if self.keyed else learner.compact()
            yield WindowedValue(value, MIN_TIMESTAMP, [GlobalWindow()])
        self._learners = {}


def _with_total_examples(batches, keyed: bool, passes: int):
    """Each batch paired with the number of examples (of its key) over all passes."""
    if keyed:
        counts = batches | "CountExamples" >> beam.CombinePerKey(_CountExamples())
        return batches | "PairWithCount" >> beam.Map(
            lambda pair, totals: (pair[0], (pair[1], totals[pair[0]] * passes)), beam.pvalue.AsDict(counts)
        )
    count = batches | "CountExamples" >> beam.CombineGlobally(_CountExamples())
    return batches | "PairWithCount" >> beam.Map(lambda batch, total: (batch, total * passes), beam.pvalue.AsSingleton(count))


class _CountExamples(beam.CombineFn):
    def create_accumulator(self) -> int:
        return 0

    def add_input(self, count: int, batch: ExampleBatch) -> int:
        return count + len(batch)

    def merge_accumulators(self, counts) -> int:
        return sum(counts)

    def extract_output(self, count: int) -> int:
        return count


class _ReportModel(beam.DoFn):
    """Publishes what training produced as Beam metrics."""

    def __init__(self, keyed: bool):
        self.keyed = keyed
        self.nonzero = Metrics.distribution("polybeam.train", "nonzero_weights")
        self.examples = Metrics.counter("polybeam.train", "examples_trained")

    def process(self, element):
        model = element[1] if self.keyed else element
        self.nonzero.update(model.nonzero)
        self.examples.inc(int(model.metadata.get("examples", 0)))
        yield element


class Train(beam.PTransform):
    """Learn one model, or one model per key, from ExampleBatches.

    Parameters
    ----------
    config : LearnerConfig, optional
        The learner settings; keyword arguments build one instead
        (``Train(loss="logistic", passes=3)``).
    key : callable, optional
        ``key(batch)`` returns one key per example (an array), or a single key
        for the whole batch; then one model is trained per key and the output is
        a PCollection of ``(key, Model)``. Without it, a PCollection of one Model.
    metadata : dict, optional
        Extra facts to record in the model (e.g. ``{"input_format": "libsvm"}``).
    """

    def __init__(
        self,
        config: LearnerConfig | None = None,
        *,
        key: KeyFn | None = None,
        metadata: dict | None = None,
        **settings,
    ):
        super().__init__()
        if config is not None and settings:
            raise ValueError("give either a LearnerConfig or keyword settings, not both")
        self.config = config if config is not None else LearnerConfig(**settings)
        self.key = key
        self.metadata = metadata

    def expand(self, batches):
        config, keyed = self.config, self.key is not None
        batches = split_by_key(batches, self.key)
        last = config.passes == 1
        first_fn = TrainFn(config, output="model" if last else "state", metadata=self.metadata)
        first_input = batches
        if config.expand == "apple" and config.examples_per_pass is None and config.passes > 1:
            # The later passes wait for the first one anyway, so counting the examples
            # first costs little, and lets apple space its epochs over all passes.
            first_input = _with_total_examples(batches, keyed, config.passes)
        if keyed:
            states = first_input | "Pass1" >> beam.CombinePerKey(first_fn)
        else:
            states = first_input | "Pass1" >> beam.CombineGlobally(first_fn)
        for number in range(2, config.passes + 1):
            output = "model" if number == config.passes else "state"
            start = beam.pvalue.AsDict(states) if keyed else beam.pvalue.AsSingleton(states)
            partial = batches | f"Learn{number}" >> beam.ParDo(_LearnOnePass(keyed), start)
            merge = MergeLearnersFn(config, output, metadata=self.metadata)
            if keyed:
                states = partial | f"Pass{number}" >> beam.CombinePerKey(merge)
            else:
                states = partial | f"Pass{number}" >> beam.CombineGlobally(merge)
        return states | "ReportModel" >> beam.ParDo(_ReportModel(keyed))
