"""One pass of training on Beam: learners that learn bundles, and their averages (parameter mixing).

The first pass is :class:`TrainFn`, a plain ``CombineFn`` whose accumulator is
the learner, so runners lift it: every bundle learns into its own partial
learner (``add_input`` learns a batch), partial learners are compacted before
the shuffle and averaged by ``merge_accumulators``. A later pass starts every
bundle from the averaged state of the pass before (:class:`LearnOnePass`, a
side input; per key :class:`LearnKeyPass`, a keyed join) and averages again
(:class:`MergeLearnersFn`, or :class:`MergeTree` with a fan-out).
:mod:`polybeam.transforms.train` puts the passes together.

>>> import apache_beam as beam
>>> from polybeam.learners.batch import ExampleBatch
>>> from polybeam.learners.config import LearnerConfig
>>> batch = ExampleBatch.from_rows([(1.0, {1: 1.0}), (-1.0, {2: 1.0})] * 20, bits=10)
>>> with beam.Pipeline(runner="FnApiRunner") as p:
...     _ = (p | beam.Create([batch, batch]) | beam.CombineGlobally(TrainFn(LearnerConfig(loss="logistic", bits=10)))
...          | beam.Map(lambda model: print(model.metadata["examples"], model.nonzero)))
80 3
"""

from __future__ import annotations

import apache_beam as beam

from polybeam.learners.background import BackgroundLearner
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.holdout import PassSelection, training_count, training_part
from polybeam.learners.linear import LinearLearner
from polybeam.learners.mixing import learner_total
from polybeam.learners.polynomial import linear_part, make_learner
from polybeam.transforms.progress import Progress
from polybeam.transforms.windows import combine_globally, in_window


def _feed(
    learner: BackgroundLearner, element, progress: Progress, config: LearnerConfig, holding: bool = True
) -> BackgroundLearner:
    """Learn ``element``: a batch, or ``(batch, examples to space apple's epochs over)`` (see Train),
    but for its held-out examples while the holdout judges (``holding``; see polybeam.learners.holdout);
    count it and publish the progress made so far (from the bundle's thread, where metrics belong)."""
    batch, total = element if isinstance(element, tuple) else (element, None)
    if holding:
        batch = training_part(batch, config)
    progress.learned(len(batch))
    progress.publish()
    if not isinstance(learner, BackgroundLearner):  # a learner of its own (a key's later pass)
        if total is not None:
            learner.expect(total)
        return learner.learn(batch)
    return learner.learn(batch, total)


class TrainFn(beam.CombineFn):
    """A CombineFn whose accumulator is a learner (linear or polynomial, as the config asks).

    The accumulator learns on a helper thread while the worker reads the next
    batches (:class:`~polybeam.learners.background.BackgroundLearner`); it is
    settled before it is merged, compacted, pickled or extracted.
    ``output="model"`` extracts the sparse Model, ``"state"`` the learner itself
    (to continue training in another pass, or to checkpoint).
    """

    def __init__(
        self,
        config: LearnerConfig,
        output: str = "model",
        metadata: dict | None = None,
        progress: bool = False,
        sparse: bool = False,
        progress_every: int = 0,
    ):
        self.config = config
        self.output = output
        self.metadata = metadata
        self.progress = progress
        self.progress_every = progress_every  # examples between curve points; 0: at doubling counts
        self.sparse = sparse  # per key: a state of the slots each key touches (polybeam.learners.slot_table)

    def _progress(self) -> Progress:
        if getattr(self, "_reporter", None) is None:  # one per worker's copy of the CombineFn
            self._reporter = Progress(quiet=not self.progress, every=self.progress_every)
        return self._reporter

    def __getstate__(self):
        return {name: value for name, value in self.__dict__.items() if name != "_reporter"}

    def create_accumulator(self) -> BackgroundLearner:
        return BackgroundLearner(self._progress().attach(make_learner(self.config, sparse=self.sparse)))

    def add_input(self, accumulator: BackgroundLearner, element) -> BackgroundLearner:
        return _feed(accumulator, element, self._progress(), self.config)

    def merge_accumulators(self, accumulators) -> BackgroundLearner:
        learners = [accumulator.settle() for accumulator in accumulators]
        return BackgroundLearner(learners[0].merge(learners[1:]))

    def compact(self, accumulator: BackgroundLearner) -> BackgroundLearner:
        accumulator.settle().compact()
        self._progress().publish()
        return accumulator

    def extract_output(self, accumulator: BackgroundLearner):
        learner = accumulator.settle()
        self._progress().publish()
        return learner.to_model(self.metadata) if self.output == "model" else learner.compact()


class MergeLearnersFn(beam.CombineFn):
    """Averages the partial learners of a later pass into one Model (or state, to go on)."""

    def __init__(
        self, config: LearnerConfig, output: str = "model", metadata: dict | None = None, sparse: bool = False
    ):
        self.config = config
        self.output = output
        self.metadata = metadata
        self.sparse = sparse

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
        learner = learners[0].merge(learners[1:]) if learners else make_learner(self.config, sparse=self.sparse)
        return learner.to_model(self.metadata) if self.output == "model" else learner.compact()


class MergeTree(beam.PTransform):
    """Averages partial learners (per key) in two levels: each goes to one of ``fanout`` groups, each
    group is averaged, then the groups' averages.

    What ``CombineGlobally.with_fanout`` and ``CombinePerKey.with_hot_key_fanout`` do, without their
    windowing steps, which Beam 2.77's FnApiRunner cannot schedule when the result feeds a side input
    that a later pass's judgement waits on ("watermark-pending bundles did not execute"). A learner's
    group is a hash of what it learned, not a random draw, so a retried bundle's learner joins the
    same group and the averages are the same.
    """

    def __init__(self, merge: beam.CombineFn, fanout: int, keyed: bool):
        super().__init__()
        self.merge = merge
        self.fanout = fanout
        self.keyed = keyed

    def expand(self, learners):
        fanout = self.fanout
        if self.keyed:
            grouped = learners | "Group" >> beam.MapTuple(
                lambda key, learner: ((key, _group(learner, fanout)), learner)
            )
        else:
            grouped = learners | "Group" >> beam.Map(lambda learner: (_group(learner, fanout), learner))
        averaged = grouped | "AverageGroups" >> beam.CombinePerKey(self.merge)
        if self.keyed:
            regrouped = averaged | "Ungroup" >> beam.MapTuple(lambda key_group, learner: (key_group[0], learner))
            return regrouped | "AverageKeys" >> beam.CombinePerKey(self.merge)
        partials = averaged | "Ungroup" >> beam.Values()
        return partials | "Average" >> combine_globally(self.merge, partials)


def _group(learner, fanout: int) -> int:
    """The merge group of a partial learner: a hash of what it learned (numbers hash alike in every process)."""
    stats = linear_part(learner).stats_
    return hash((float(stats.sum()), linear_part(learner).examples_seen)) % fanout


def continue_from(origin):
    """A learner that goes on from ``origin`` in a new pass (``origin`` itself is not touched).

    A state that has learned in its current pass closes that pass first; a
    warm start from a model file has no pass of its own to close. The record of
    the passes' holdout stays with ``origin``: the pass's judgement joins it
    again (see ``Train``), so partial learners do not carry it through the shuffle.
    """
    learner = origin.copy()
    learner.selection_ = PassSelection.of(learner.config)
    learner.selection_.schedule = origin.selection_.schedule  # (a warm start from a model never restarts)
    return learner.start_pass() if linear_part(learner).examples_seen else learner


class _Learning(beam.DoFn):
    """What the DoFns that learn a pass share: the config, progress lines."""

    def __init__(self, config: LearnerConfig, progress: bool = False, progress_every: int = 0):
        self.config = config
        self.progress = progress
        self.progress_every = progress_every

    def setup(self):
        self._progress = Progress(quiet=not self.progress, every=self.progress_every)


class LearnOnePass(_Learning):
    """Continues training from the previous pass's state, one learner per key per window per bundle
    (a key the previous state lacks, e.g. new in a warm start, or every key of a first pass
    without a side input, starts afresh). ``start`` is the previous state of the element's window
    (Beam maps each window to the side input's window of the same window fn); each learner leaves
    in the window it learned."""

    def __init__(self, keyed: bool, config: LearnerConfig, progress: bool = False, progress_every: int = 0):
        super().__init__(config, progress, progress_every)
        self.keyed = keyed

    def start_bundle(self):
        self._learners: dict = {}
        self._holding: dict = {}  # per key: whether its holdout still judges (else it learns every example)

    def process(self, element, start, window=beam.DoFn.WindowParam):
        key, batch = element if self.keyed else (None, element)
        key = (window, key)
        learner = self._learners.get(key)
        if learner is None:
            origin = (start or {}).get(key[1]) if self.keyed else start
            if origin is not None and origin.selection_.stopped:
                return  # the holdout stopped this learner early: its later passes learn nothing
            fresh = origin is None
            learner = BackgroundLearner(
                self._progress.attach(make_learner(self.config, sparse=self.keyed) if fresh else continue_from(origin))
            )
            self._learners[key] = learner
            self._holding[key] = fresh or origin.selection_.holding_out
        _feed(learner, batch, self._progress, self.config, self._holding[key])

    def finish_bundle(self):
        for (window, key), background in self._learners.items():
            learner = background.settle()
            self._progress.publish()
            value = (key, learner.compact()) if self.keyed else learner.compact()
            yield in_window(value, window)
        self._learners = {}


class LearnKeyPass(_Learning):
    """A later pass of per-key learners: each key's state joined to its examples (``CoGroupByKey``),
    so no worker holds another key's state; one learner per key learns all of the key's batches.
    A key without a state (new in a warm start) starts afresh; a key whose holdout stopped it, or
    that has no examples this pass, yields nothing (the judgement keeps its previous state)."""

    def process(self, element):
        key, grouped = element
        states = list(grouped["state"])
        origin = states[0] if states else None
        if origin is not None and origin.selection_.stopped:
            return
        learner = None
        holding = origin is None or origin.selection_.holding_out
        for batch in grouped["batches"]:
            if learner is None:
                learner = make_learner(self.config, sparse=True) if origin is None else continue_from(origin)
            learner = _feed(learner, batch, self._progress, self.config, holding)
        self._progress.publish()
        if learner is not None:
            yield key, learner.compact()


def with_total_examples(batches, config: LearnerConfig, keyed: bool, learners: int | None, known: int | None = None):
    """Each batch paired with the examples its pass-1 learner spaces apple's epochs over
    (``known``: the examples per pass, when given; else they are counted, per key when keyed)."""
    passes = config.passes
    if known is not None:
        total = learner_total(known, passes, learners)
        if keyed:
            return batches | "PairWithCount" >> beam.MapTuple(lambda key, batch: (key, (batch, total)))
        return batches | "PairWithCount" >> beam.Map(lambda batch: (batch, total))
    if keyed:
        counts = batches | "CountExamples" >> beam.CombinePerKey(CountExamples(config))
        return (
            {"batches": batches, "count": counts}
            | "JoinCount" >> beam.CoGroupByKey()  # a keyed join: no worker holds every key's count
            | "PairWithCount"
            >> beam.FlatMapTuple(
                lambda key, grouped: (
                    (key, (batch, learner_total(next(iter(grouped["count"]), 0), passes, learners)))
                    for batch in grouped["batches"]
                )
            )
        )
    count = batches | "CountExamples" >> combine_globally(CountExamples(config), batches)
    return batches | "PairWithCount" >> beam.Map(
        lambda batch, total: (batch, learner_total(total, passes, learners)), beam.pvalue.AsSingleton(count)
    )


class CountExamples(beam.CombineFn):
    """Counts examples: those a learner with ``config`` learns (its holdout aside), or all of them."""

    def __init__(self, config: LearnerConfig | None = None):
        self.config = config

    def create_accumulator(self) -> int:
        return 0

    def add_input(self, count: int, batch: ExampleBatch) -> int:
        return count + (len(batch) if self.config is None else training_count(batch, self.config))

    def merge_accumulators(self, counts) -> int:
        return sum(counts)

    def extract_output(self, count: int) -> int:
        return count
