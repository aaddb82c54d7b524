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
>>> def show(model):  # examples learned in pass 1, examples held out to judge each pass, non-zero weights
...     print(model.metadata["examples"], model.metadata["holdout"]["passes"][0]["examples"], model.nonzero)
>>> with beam.Pipeline(runner="FnApiRunner") as p:
...     _ = p | beam.Create([batch, batch]) | Train(loss="logistic", bits=10, passes=2) | beam.Map(show)
70 10 3
"""

from __future__ import annotations

import pickle
import sys

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.transforms.util import WaitOn

from polybeam.formats.acceptance import InputRejected
from polybeam.formats.input_settings import InputSettings
from polybeam.learners import lbfgs
from polybeam.learners.background import BackgroundLearner
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.holdout import (
    HoldoutScore,
    PassSelection,
    held_out_part,
    record_pass,
    train_passes,
    training_count,
    training_part,
)
from polybeam.learners.linear import LinearLearner
from polybeam.learners.model_shards import shard_of
from polybeam.learners.multitask import SharedKeys, shared_config
from polybeam.learners.polynomial import linear_part, make_learner
from polybeam.transforms.checkpoints import WriteCheckpoint
from polybeam.transforms.combining import MergeFn
from polybeam.transforms.key_shards import KEY_SHARDS, KeyShard, SplitByShard, feature_names, key_segments
from polybeam.transforms.keyed_files import key_text
from polybeam.transforms.keys import KeyFn, split_by_key
from polybeam.transforms.order import LabelOrderOf, ShuffleExamples
from polybeam.transforms.progress import Progress, holdout_progress_line
from polybeam.transforms.windows import RecordWindow, combine_globally, in_window, is_global


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


class _MergeTree(beam.PTransform):
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
    return learner.start_pass() if linear_part(learner).examples_seen else learner


class _Learning(beam.DoFn):
    """What the DoFns that learn a pass share: the config, progress lines."""

    def __init__(self, config: LearnerConfig, progress: bool = False, progress_every: int = 0):
        self.config = config
        self.progress = progress
        self.progress_every = progress_every

    def setup(self):
        self._progress = Progress(quiet=not self.progress, every=self.progress_every)


class _LearnOnePass(_Learning):
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


class _LearnKeyPass(_Learning):
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


def _score_key(element):
    """The holdout score of one key's state (joined to its held-out batches, ``CoGroupByKey``)."""
    key, grouped = element
    states = list(grouped["state"])
    learner = states[0] if states else None
    if learner is None or not linear_part(learner).examples_seen:
        return  # no learner learned this key in the pass (its holdout stopped it earlier)
    models, score = None, HoldoutScore()
    for held in grouped["held"]:
        models = models or learner.candidate_models()
        score.add(models, held)
    if models is not None:
        yield key, score


class _TrainShard(beam.DoFn):
    """Trains every key of a shard, one after the other, each key's learner with a state of the slots it
    touches: all passes at once (a key's examples are all here), with the holdout judging each pass as
    ``Train`` does (:func:`polybeam.learners.holdout.train_passes`). A key of the initial learners
    goes on from its learner; a key without examples keeps nothing. Emits a :class:`KeyShard` of the
    shard's models."""

    def __init__(self, config: LearnerConfig, metadata: dict | None, shards: int):
        self.config = config
        self.metadata = metadata
        self.shards = shards

    def setup(self):
        self._stopped = Metrics.counter("polybeam.train", "learners_stopped_early")
        self._keys = Metrics.counter("polybeam.train", "keys_trained")

    def process(self, element):
        shard, grouped = element
        config = self.config
        initial = dict(grouped.get("initial", ()))
        # Apple spaces its epochs over what a key's learner will learn when Train would count it.
        expect = config.expand == "apple" and (config.passes > 1 or config.examples_per_pass is not None)
        models = []
        batches = list(grouped["batches"])
        for key, examples in key_segments(batches):
            origin = initial.get(key)
            learner = make_learner(config, sparse=True) if origin is None else continue_from(origin)
            train_passes(learner, [examples], config.passes, expect=expect and origin is None)
            self._report(learner.selection_)
            self._keys.inc()
            models.append((key, learner.to_model(self.metadata)))
        if models:
            yield KeyShard(shard, self.shards, models, names=feature_names(batches))

    def _report(self, selection: PassSelection) -> None:
        if not selection.judged or selection.released:
            return
        for record in selection.history:
            loss = record["holdout_loss"]
            if loss == loss:
                _holdout_metric(record["pass"]).update(int(round(loss * 1e6)))
        if selection.stopped:
            self._stopped.inc()


def learner_total(count: int, passes: int, learners: int | None) -> int:
    """The examples one pass-1 learner spaces apple's epochs over (0: the doubling schedule).

    A lone learner spreads them over all passes. Several learners each see
    their share of the first pass, and their parents freeze when they are
    averaged after it (the paper's parallel apple), so each spreads its epochs
    over its share; when nobody knows how many learners the runner will make
    (a remote runner splits the input as it likes), each expands on the
    doubling schedule (after 1000, 2000, 4000, ... examples), whatever its share.

    >>> learner_total(1000, 3, 1), learner_total(1000, 3, 4), learner_total(1000, 3, None)
    (3000, 250, 0)
    """
    if learners == 1:
        return count * passes
    if learners:
        return max(1, count // learners)
    return 0


def _with_total_examples(batches, config: LearnerConfig, keyed: bool, learners: int | None, known: int | None = None):
    """Each batch paired with the examples its pass-1 learner spaces apple's epochs over
    (``known``: the examples per pass, when given; else they are counted, per key when keyed)."""
    passes = config.passes
    if known is not None:
        total = learner_total(known, passes, learners)
        if keyed:
            return batches | "PairWithCount" >> beam.MapTuple(lambda key, batch: (key, (batch, total)))
        return batches | "PairWithCount" >> beam.Map(lambda batch: (batch, total))
    if keyed:
        counts = batches | "CountExamples" >> beam.CombinePerKey(_CountExamples(config))
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
    count = batches | "CountExamples" >> combine_globally(_CountExamples(config), batches)
    return batches | "PairWithCount" >> beam.Map(
        lambda batch, total: (batch, learner_total(total, passes, learners)), beam.pvalue.AsSingleton(count)
    )


class _CountExamples(beam.CombineFn):
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


def _without_record(element, keyed: bool):
    """A learner (or ``(key, learner)``) without the record of its passes' holdout (a copy)."""
    key, learner = element if keyed else (None, element)
    learner = learner.copy()
    learner.selection_ = PassSelection.of(learner.config)
    return (key, learner) if keyed else learner


def _held_out(element, config: LearnerConfig, keyed: bool):
    """The held-out examples of a batch (or ``(key, batch)``), if it has any."""
    key, batch = element if keyed else (None, element)
    held = held_out_part(batch, config)
    if held is not None:
        yield (key, held) if keyed else held


class _ScoreHoldout(beam.DoFn):
    """Scores held-out examples with the learner of the pass just ended (a side input, the window's):
    one :class:`HoldoutScore` per window per bundle, keyed None to join the state (per key: :func:`_score_key`)."""

    def start_bundle(self):
        self._scores: dict = {}  # window -> (the learner's candidate models, their score)

    def process(self, held, learner, window=beam.DoFn.WindowParam):
        if learner is None or not linear_part(learner).examples_seen:
            return  # the learner learned nothing in the pass (its holdout stopped it earlier)
        if window not in self._scores:  # the models are extracted once per window per bundle, not per batch
            self._scores[window] = (learner.candidate_models(), HoldoutScore())
        models, score = self._scores[window]
        score.add(models, held)

    def finish_bundle(self):
        for window, (_, score) in self._scores.items():
            yield in_window((None, score), window)
        self._scores = {}


class _SumHoldoutScores(beam.CombineFn):
    def create_accumulator(self) -> HoldoutScore:
        return HoldoutScore()

    def add_input(self, total: HoldoutScore, score: HoldoutScore) -> HoldoutScore:
        return total.merge([score])

    def merge_accumulators(self, totals) -> HoldoutScore:
        totals = iter(totals)
        return next(totals).merge(totals)

    def extract_output(self, total: HoldoutScore) -> HoldoutScore:
        return total


def _holdout_metric(number: int):
    """The distribution of pass ``number``'s holdout losses (in millionths: Beam's distributions hold integers)."""
    return Metrics.distribution("polybeam.train", f"holdout_loss_micros_pass_{number}")


def _judge(element, number: int, final: bool, progress: bool):
    """Records pass ``number``'s holdout score in its learner (a copy: elements do not change), or
    passes on a learner whose holdout stopped it before; see :func:`polybeam.learners.holdout.record_pass`."""
    key, grouped = element
    states, scores, previous = list(grouped["state"]), list(grouped["score"]), list(grouped.get("previous", ()))
    prior = previous[0] if previous else None
    if prior is not None and prior.selection_.stopped:
        yield key, prior
        return
    if not states:
        return
    judged = states[0].copy()
    if prior is not None:
        judged.selection_ = prior.selection_.copy()
    if not judged.selection_.holding_out:  # released after the first pass: the learner goes on, unjudged
        yield key, judged
        return
    score = scores[0] if scores else HoldoutScore()
    record_pass(judged, score, number, final=final)
    selection = judged.selection_
    if selection.released:  # this (first) pass held out too few to judge by
        if progress:
            print(holdout_progress_line(selection), file=sys.stderr, flush=True)
        yield key, judged
        return
    loss = selection.history[-1]["holdout_loss"]
    if loss == loss:  # not NaN
        _holdout_metric(number).update(int(round(loss * 1e6)))
    if selection.stopped:
        Metrics.counter("polybeam.train", "learners_stopped_early").inc()
    if progress:
        print(holdout_progress_line(selection), file=sys.stderr, flush=True)
    yield key, judged


def _require_examples(count: int) -> int:
    if count == 0:
        raise InputRejected(
            "Train got no example, so its model would have learned nothing; check what feeds it "
            "(ReadExamples' file pattern and format), or pass allow_empty=True to Train to accept "
            "an empty input"
        )
    return count


class _ReportModel(beam.DoFn):
    """Publishes what training produced as Beam metrics."""

    def __init__(self, keyed: bool):
        self.keyed = keyed
        self.nonzero = Metrics.distribution("polybeam.train", "nonzero_weights")
        self.examples = Metrics.counter("polybeam.train", "examples_trained")

    def process(self, element):
        if isinstance(element, KeyShard):
            models = [model for _, model in element]
        else:
            models = [element[1] if self.keyed else element]
        for model in models:
            self.nonzero.update(model.nonzero)
            self.examples.inc(int(model.metadata.get("examples", 0)))
        yield element


def _to_model(state, metadata: dict | None, keyed: bool):
    if keyed:
        key, learner = state
        return key, learner.to_model(metadata)
    return state.to_model(metadata)


class _LossGradientFn(beam.DoFn):
    """Sums the finishing stage's loss and gradient over a bundle's training examples at the point of the
    pass (a side input: ``(model, dense weights)``), one :class:`~polybeam.learners.lbfgs.LossGradient`
    per bundle."""

    def __init__(self, config: LearnerConfig):
        self.config = config

    def start_bundle(self):
        self._totals: dict = {}  # window -> its sum

    def process(self, batch: ExampleBatch, point, window=beam.DoFn.WindowParam):
        model, points = point
        if batch is None or len(batch) == 0:
            return
        if window not in self._totals:
            self._totals[window] = lbfgs.PassSums.zero(points[0].shape, len(points))
        # (the stage's holdout: the examples the learner's holdout period holds out, see lbfgs.Finishing)
        period = lbfgs.stage_holdout_period(self.config)
        self._totals[window].add(model, points, batch, period, self.config.seed)

    def finish_bundle(self):
        for window, total in self._totals.items():
            yield in_window(total, window)
        self._totals = {}


class _SumLossGradients(MergeFn):
    """Adds the bundles' losses and gradients (any order: the sum is additive). The first part is
    copied, not summed into (see MergeFn): it is an input element, which a CombineFn must not change,
    and summing the next bundle's part into it did."""


class _LbfgsState:
    """The finishing stage's state between passes: :class:`~polybeam.learners.lbfgs.Finishing` (the online
    model it started from, an optimiser per L2, the best candidate on the holdout)."""

    def __init__(self, model, config: LearnerConfig):
        self.stage = lbfgs.Finishing(model, config.lbfgs_l2, lbfgs.stage_holdout_period(config), config.seed)

    def point(self):
        return self.stage.model, self.stage.points()

    def told(self, total):
        """A new state (elements do not change) that took the pass's sums (None: no example reached it)."""
        state = pickle.loads(pickle.dumps(self))
        state.stage.told(total)
        return state

    def finished(self):
        return self.stage.finished()


class _FinishWithLbfgs(beam.PTransform):
    """The finishing stage (:mod:`polybeam.learners.lbfgs`): ``config.lbfgs_passes`` passes over the
    training batches, each summing the loss and gradient at one point across workers, warm-started from
    the one Model of the online passes (the input); outputs the finished Model."""

    def __init__(self, batches, config: LearnerConfig):
        super().__init__()
        self.batches = batches
        self.config = config

    def expand(self, models):
        config = self.config
        state = models | "LbfgsStart" >> beam.Map(_LbfgsState, config)
        for number in range(1, config.lbfgs_passes + 1):
            point = state | f"LbfgsPoint{number}" >> beam.Map(lambda s: s.point())
            parts = self.batches | f"LbfgsLossGradient{number}" >> beam.ParDo(
                _LossGradientFn(config), beam.pvalue.AsSingleton(point)
            )
            total = parts | f"LbfgsSum{number}" >> combine_globally(_SumLossGradients(), parts)
            # (a window whose bundles had no training example has no sum: told(None) takes the empty one)
            state = state | f"LbfgsStep{number}" >> beam.Map(
                lambda s, t: s.told(t), beam.pvalue.AsSingleton(total, default_value=None)
            )
        return state | "LbfgsModel" >> beam.Map(lambda s: s.finished())


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
    initial : PCollection, optional
        Learners to start from (see :class:`~polybeam.transforms.checkpoints.ReadLearners`):
        one learner, or ``(key, learner)`` pairs with ``key``; a key without
        one starts afresh. Every pass then continues from the previous state.
    first_pass : int, default 1
        The number of this job's first pass: after resuming from the state of
        pass ``k``, ``k + 1``. Passes ``first_pass`` to ``config.passes`` run.
    checkpoint_dir : str, optional
        Write the learner state(s) after every pass there
        (:class:`~polybeam.transforms.checkpoints.WriteCheckpoint`).
    learners : int or None, default 1
        How many learners the first pass will have (per key): the runner's
        bundles, 1 on the local runner's single worker, its worker count with
        several, None when unknown (remote runners). Apple spaces its epochs by
        it (see :func:`learner_total`).
    fanout : int, optional
        Average the partial learners (one per bundle) in a tree of merges with
        this fan-out instead of all at once on one worker: with B bundles, no
        merge holds more than about ``max(B / fanout, fanout)`` learners
        (:class:`_MergeTree`).
        Averages of averages weigh each learner by the importance it saw, so the
        model is the same up to rounding. Each bundle then learns in a ParDo
        rather than in a lifted CombineFn.
    checkpoints_after : sequence of PCollection, optional
        What the checkpoints wait for before they are written (the job's input
        check, :class:`~polybeam.transforms.input_check.CheckInput`: a refused
        input leaves no checkpoint to resume from).
    progress : bool, default False
        Print each learner's progress line on the worker's stderr at doubling
        example counts (see :mod:`polybeam.transforms.progress`); the same
        figures are Beam metrics either way.
    progress_every : int, default 0
        Make the learning-curve points (the progress lines, the metrics and the
        model's ``learning_curve``) every this many examples of a learner's pass,
        as VW's ``-P N``; 0: at doubling counts (1, 2, 4, 8, ...).
    allow_empty : bool, default False
        Emit a model even when no example arrives (all its weights zero);
        without it such a job fails (``InputRejected``) rather than write a
        model that learned nothing.
    key_shards : int, default KEY_SHARDS
        Per key: how many shards the keys are hashed into. Each shard's
        examples go to one worker, whose DoFn trains the shard's keys one after
        the other, each with all its passes (one learner per key, a state of
        the slots the key touches: memory and time follow the data, not the
        number of keys times ``2**bits``). With ``checkpoint_dir`` or when
        resuming, per-key learners go through the passes as one learner does,
        a key per element, each later pass joining a key's state to its
        examples (``CoGroupByKey``).
    keyed_output : {"pairs", "shards"}, default "pairs"
        Per key: emit ``(key, Model)`` pairs, or (what ``WriteKeyedModels``
        writes best) one :class:`~polybeam.transforms.key_shards.KeyShard` of
        many keys' models per shard. With ``checkpoint_dir`` or when resuming,
        always pairs.

    With ``lbfgs_passes`` > 0 in the config (``Train(loss="logistic", lbfgs_passes=10)``), the
    online passes end with the finishing stage of :mod:`polybeam.learners.lbfgs`: that many
    passes over the training examples, each summing the regularised loss and gradient at one
    L-BFGS point across workers (a ParDo per bundle and a CombineFn), warm-started from the
    averaged online model; its summary is the model's ``metadata["lbfgs"]``. One model only
    (not per key).
    shared_keys : SharedKeys, optional
        Train ONE shared per-key model (``--key-model shared``): every example
        is crossed with its key (:mod:`polybeam.learners.multitask`) and the
        model records the crossing and the keys it trained, so that it
        predicts each key with the shared weights plus the key's own.
        Excludes ``key``.
    shuffle_buffer : int, default 0
        Every pass learns its examples through a shuffle buffer of this many
        (:class:`~polybeam.transforms.order.ShuffleExamples`), a new order each
        pass; the holdout keeps the same examples. 0: in the order they come.
        One model only (not per key).
    shuffle_seed : int, default 0
        The seed of the shuffle buffer's orders.

    After it is applied, ``label_order`` is a PCollection of one
    :class:`~polybeam.learners.label_order.LabelOrder` (per window) of the
    labels as this job's first pass learns them (None per key): whether they
    come sorted, which misleads an online learner.

    The input is a PCollection of ExampleBatch, or what
    :class:`~polybeam.transforms.read.ReadExamples` returns
    (``p | ReadExamples(path) | Train()``): then the models wait for its
    input check, so a refused read emits none (and checkpoints none).
    """

    def __init__(
        self,
        config: LearnerConfig | None = None,
        *,
        key: KeyFn | None = None,
        metadata: dict | None = None,
        initial=None,
        first_pass: int = 1,
        checkpoint_dir: str | None = None,
        learners: int | None = 1,
        fanout: int | None = None,
        checkpoints_after=(),
        progress: bool = False,
        progress_every: int = 0,
        allow_empty: bool = False,
        key_shards: int = KEY_SHARDS,
        keyed_output: str = "pairs",
        shared_keys: SharedKeys | None = None,
        shuffle_buffer: int = 0,
        shuffle_seed: int = 0,
        **settings,
    ):
        super().__init__()
        if config is not None and settings:
            raise ValueError("give either a LearnerConfig or keyword settings, not both")
        self.config = config if config is not None else LearnerConfig(**settings)
        if first_pass < 1 or (initial is None and first_pass != 1):
            raise ValueError(f"first_pass must be 1, or >= 1 with initial learners; got {first_pass}")
        self.key = key
        self.metadata = metadata
        self.initial = initial
        self.first_pass = first_pass
        self.checkpoint_dir = checkpoint_dir
        self.learners = learners
        if key is not None and self.config.lbfgs_passes:
            raise ValueError("the L-BFGS finishing stage (lbfgs_passes) trains one model; it does not run per key")
        if fanout is not None and fanout < 2:
            raise ValueError(f"fanout must be at least 2, got {fanout}")
        self.fanout = fanout
        self.checkpoints_after = tuple(checkpoints_after)
        self.progress = progress
        if progress_every < 0:
            raise ValueError(f"progress_every must be 0 (doubling counts) or a count of examples, got {progress_every}")
        self.progress_every = progress_every
        self.allow_empty = allow_empty
        if key_shards < 1:
            raise ValueError(f"key_shards must be at least 1, got {key_shards}")
        self.key_shards = key_shards
        if keyed_output not in ("pairs", "shards"):
            raise ValueError(f"keyed_output must be 'pairs' or 'shards', got {keyed_output!r}")
        self.keyed_output = keyed_output
        if shared_keys is not None and key is not None:
            raise ValueError("a shared per-key model (shared_keys) takes no key function")
        if key is not None and self.config.lbfgs_passes:
            raise ValueError(
                "the L-BFGS finishing stage (lbfgs_passes) trains one model, not one per key; "
                "leave lbfgs_passes at 0 with a key"
            )
        self.config = shared_config(self.config, shared_keys is not None)
        self.shared_keys = shared_keys
        if shuffle_buffer < 0:
            raise ValueError(f"shuffle_buffer must be 0 (no shuffling) or a number of examples, got {shuffle_buffer}")
        if shuffle_buffer and key is not None:
            raise ValueError(
                "shuffle_buffer mixes the examples of one model; with a key (a model per key) leave it at 0"
            )
        self.shuffle_buffer = shuffle_buffer
        self.shuffle_seed = shuffle_seed
        self.label_order = None

    def expand(self, batches):
        self._take_input(getattr(getattr(batches, "examples", batches), "polybeam_input", None))
        config, keyed = self.config, self.key is not None
        batches, checks = self._checked_input(batches)
        self._input_checks = tuple(checks)
        if keyed and self.checkpoint_dir is None and self.first_pass == 1:
            # Per key: shards of keys, each shard's keys trained in one DoFn (no Beam element per key).
            shards = self._train_shards(batches)
            if checks:
                shards = shards | "AfterInputChecks" >> WaitOn(*checks)
            if not is_global(shards):
                shards = shards | "RecordWindow" >> beam.ParDo(RecordWindow())
            shards = shards | "ReportModel" >> beam.ParDo(_ReportModel(keyed))
            return shards if self.keyed_output == "shards" else shards | "PerKey" >> beam.FlatMap(KeyShard.model_pairs)
        batches = split_by_key(batches, self.key)
        if self.shared_keys is not None:
            from polybeam.transforms.shared_keys import CrossKeys, RecordTrainedKeys  # (it builds on Train's module)

            crossing = batches | "CrossKeys" >> CrossKeys(self.shared_keys, config)
            batches = crossing.crossed
        # The held-out examples, taken out once: every pass's judgement reads them (a tenth of the input).
        held = batches | "HeldOut" >> beam.FlatMap(_held_out, config, keyed) if config.holds_out else None
        if self.initial is None:
            states, number = self._first_pass(batches, keyed), 1
            states = self._judged(held, states, None, number, keyed)
            self._checkpoint(states, number, keyed)
        elif self.first_pass == 1:
            # A warm start: this run's passes are judged afresh (a resumed run goes on with its record).
            states, number = self.initial | "ForgetPasses" >> beam.Map(_without_record, keyed), 0
        else:
            states, number = self.initial, self.first_pass - 1
        first_to_run = number + 1  # (after the passes already done)
        for number in range(first_to_run, config.passes + 1):
            if keyed:  # each key's state joined to its batches: a keyed join, not a broadcast of every key
                merged = (
                    {"state": states, "batches": batches}
                    | f"Join{number}" >> beam.CoGroupByKey()
                    | f"Learn{number}" >> beam.ParDo(_LearnKeyPass(config, self.progress, self.progress_every))
                )
            else:
                start = beam.pvalue.AsSingleton(states)
                learn = _LearnOnePass(keyed, config, self.progress, self.progress_every)
                partial = self._pass_input(batches, number) | f"Learn{number}" >> beam.ParDo(learn, start)
                merged = partial | f"Pass{number}" >> self._merge(keyed, partial)
            states = self._judged(held, merged, states, number, keyed)
            self._checkpoint(states, number, keyed)
        models = states | "ToModel" >> beam.Map(_to_model, self.metadata, keyed)
        if config.lbfgs_passes:
            models = models | "FinishWithLbfgs" >> _FinishWithLbfgs(batches, config)
        if self.shared_keys is not None:
            models = models | "RecordTrainedKeys" >> RecordTrainedKeys(self.shared_keys, crossing.trained)
        if checks:
            models = models | "AfterInputChecks" >> WaitOn(*checks)
        if not is_global(models):
            models = models | "RecordWindow" >> beam.ParDo(RecordWindow())
        return models | "ReportModel" >> beam.ParDo(_ReportModel(keyed))

    def _train_shards(self, batches):
        """``(key, Model)`` of every key: examples grouped by a hash of their key into ``key_shards``
        shards (joined to the initial learners' shards in a warm start), each shard's keys trained in turn."""
        shards = self.key_shards
        grouped = {"batches": batches | "SplitByShard" >> beam.ParDo(SplitByShard(self.key, shards))}
        if self.initial is not None:
            grouped["initial"] = (
                self.initial
                | "ForgetPasses" >> beam.Map(_without_record, True)
                | "InitialShards" >> beam.Map(lambda pair: (shard_of(key_text(pair[0]), shards), pair))
            )
        return (
            grouped
            | "GroupShards" >> beam.CoGroupByKey()
            | "TrainShards" >> beam.ParDo(_TrainShard(self.config, self.metadata, shards))
        )

    def _judged(self, held, merged, previous, number: int, keyed: bool):
        """The learners after pass ``number``, judged on the held-out examples ``held`` when the config
        holds some out (see polybeam.learners.holdout): each pass's holdout loss joins the record of the
        passes before (``previous``), and a learner whose holdout stopped improving goes back to
        its best pass and learns no more. Without a holdout, ``merged`` itself."""
        config = self.config
        if not config.holds_out:
            return merged
        if keyed:  # each key's state joined to its held-out examples
            scores = (
                {"state": merged, "held": held}
                | f"JoinHeldOut{number}" >> beam.CoGroupByKey()
                | f"ScoreHoldout{number}" >> beam.FlatMap(_score_key)
            )
        else:
            scores = (
                held
                | f"ScoreHoldout{number}" >> beam.ParDo(_ScoreHoldout(), beam.pvalue.AsSingleton(merged))
                | f"SumHoldout{number}" >> beam.CombinePerKey(_SumHoldoutScores())
            )
        joined = {
            "state": merged if keyed else merged | f"KeyState{number}" >> beam.Map(lambda state: (None, state)),
            "score": scores,
        }
        if previous is not None:
            joined["previous"] = (
                previous if keyed else previous | f"KeyPrevious{number}" >> beam.Map(lambda state: (None, state))
            )
        judged = (
            joined
            | f"JoinHoldout{number}" >> beam.CoGroupByKey()
            | f"Judge{number}" >> beam.FlatMap(_judge, number, number == config.passes, self.progress and not keyed)
        )
        return judged if keyed else judged | f"Unkey{number}" >> beam.Values()

    def _take_input(self, read: InputSettings | None) -> None:
        """Learn the class names the read maps labels to, and record how it read, in every model (the
        examples of :class:`~polybeam.transforms.read.ReadExamples` say: ``examples.polybeam_input``)."""
        if read is None:
            return
        config = self.config
        names = read.class_names
        if names and not config.class_names and config.label_kind in ("binary", "multiclass"):
            try:
                config = config.replace(class_names=names)
            except ValueError as error:
                raise ValueError(f"the read's classes {', '.join(names)} do not fit the learner: {error}") from None
        if config.label_kind in ("binary", "multiclass") and tuple(config.class_names) != tuple(names):
            raise ValueError(
                f"the learner's class names ({', '.join(config.class_names) or 'none'}) differ from those the "
                f"read maps labels to ({', '.join(names) or 'none'}): give the same class_names to both "
                "(label_names= of ReadExamples), or leave them to the read"
            )
        self.config = config
        metadata = dict(self.metadata or {})
        metadata.setdefault("input", read.to_dict())
        self.metadata = metadata

    def _checked_input(self, batches) -> tuple:
        """``(batches, checks)``: the ExampleBatches, and what the models must wait for (the read's input
        check, when given a ReadResult; the count of examples, unless ``allow_empty``)."""
        checks = []
        if isinstance(batches, tuple) and hasattr(batches, "examples"):  # a ReadResult
            if getattr(batches, "checked", None) is not None:
                checks.append(batches.checked)
            batches = batches.examples
        if not self.allow_empty:
            count = batches | "CountInput" >> combine_globally(_CountExamples(), batches)
            if checks:  # after the read's check, whose message says more (the dead letters, the likely cause)
                count = count | "AfterReadCheck" >> WaitOn(*checks)
            checks.append(count | "RequireExamples" >> beam.Map(_require_examples))
        return batches, checks

    def _pass_input(self, batches, number: int):
        """The (unkeyed) batches pass ``number`` learns: through the shuffle buffer when there is one. The
        job's first pass also counts the order of their labels (``label_order``)."""
        if self.shuffle_buffer:
            shuffle = ShuffleExamples(self.shuffle_buffer, seed=self.shuffle_seed, salt=number)
            batches = batches | f"Shuffle{number}" >> shuffle
        if self.label_order is None:
            self.label_order = batches | "LabelOrder" >> LabelOrderOf()
        return batches

    def _first_pass(self, batches, keyed: bool):
        config = self.config
        if not keyed:
            batches = self._pass_input(batches, 1)
        first_fn = TrainFn(
            config,
            output="state",
            metadata=self.metadata,
            progress=self.progress,
            sparse=keyed,
            progress_every=self.progress_every,
        )
        first_input = batches
        if config.expand == "apple" and config.examples_per_pass is not None:
            first_input = _with_total_examples(batches, config, keyed, self.learners, config.examples_per_pass)
        elif config.expand == "apple" and config.passes > 1:
            # The later passes wait for the first one anyway, so counting the examples
            # first costs little, and lets apple space its epochs over what each learner sees.
            first_input = _with_total_examples(batches, config, keyed, self.learners)
        if self.fanout is not None:  # one learner per bundle, then the merge tree
            # (no previous state: start=None, given so that Beam fills the window parameter after it)
            learn = _LearnOnePass(keyed, config, self.progress, self.progress_every)
            partial = first_input | "Learn1" >> beam.ParDo(learn, None)
            return partial | "Pass1" >> self._merge(keyed, partial)
        if keyed:
            return first_input | "Pass1" >> beam.CombinePerKey(first_fn)
        return first_input | "Pass1" >> combine_globally(first_fn, first_input)

    def _merge(self, keyed: bool, partial):
        """The transform that averages the ``partial`` learners (per key), through a merge tree with ``fanout``."""
        merge = MergeLearnersFn(self.config, output="state", sparse=keyed)
        if self.fanout is not None:
            return _MergeTree(merge, self.fanout, keyed)
        return beam.CombinePerKey(merge) if keyed else combine_globally(merge, partial)

    def _checkpoint(self, states, number: int, keyed: bool) -> None:
        if self.checkpoint_dir is not None:
            waits = self.checkpoints_after + getattr(self, "_input_checks", ())
            if waits:
                states = states | f"Checkpoint{number}Waits" >> WaitOn(*waits)
            states | f"Checkpoint{number}" >> WriteCheckpoint(
                self.checkpoint_dir, number, keyed=keyed, config=self.config
            )
