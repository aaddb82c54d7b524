"""Train: learn one model, one model per key, or one shared per-key model from ExampleBatches.

As Beam's combiners have ``.Globally`` and ``.PerKey``, training has one
transform per axis, each with a short ``expand``:

* :class:`TrainGlobally` (``Train.Globally``): one Model;
* :class:`TrainPerKey` (``Train.PerKey``): a ``(key, Model)`` pair per key;
* :class:`TrainSharedPerKey` (``Train.SharedPerKey``): ONE model that
  predicts each key with shared weights plus the key's own.

``Train(...)`` builds the one its arguments name (``key=``: per key;
``shared_keys=``: shared). Warm starts (``initial``, ``first_pass``),
checkpoints and the input's windows are arguments of each, not axes: every
pass runs in the input's windows, one model per window.

The first pass is a lifted ``CombineFn`` (:class:`~polybeam.transforms.passes.TrainFn`);
each later pass starts every bundle from the averaged state of the pass before
and averages again (iterative parameter mixing, :mod:`polybeam.transforms.passes`);
a holdout judges every pass (:mod:`polybeam.transforms.holdout_passes`).

Example
-------
>>> import apache_beam as beam
>>> from polybeam.learners.batch import ExampleBatch
>>> batch = ExampleBatch.from_rows([(1.0, {1: 1.0}), (-1.0, {2: 1.0})] * 20, bits=10)
>>> def show(model):  # examples learned in pass 1, examples held out to judge each pass, non-zero weights
...     print(model.metadata["examples"], model.metadata["holdout"]["passes"][0]["examples"], model.nonzero)
>>> with beam.Pipeline(runner="FnApiRunner") as p:
...     train = Train(loss="logistic", bits=10, passes=2, holdout_min_examples=0)  # (judged however few)
...     _ = p | beam.Create([batch, batch]) | train | beam.Map(show)
70 10 3
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.transforms.util import WaitOn

from polybeam.formats.acceptance import InputRejected
from polybeam.formats.input_settings import InputSettings
from polybeam.learners import lbfgs
from polybeam.learners.config import LearnerConfig
from polybeam.learners.multitask import SharedKeys, shared_config
from polybeam.transforms.checkpoints import WriteCheckpoint
from polybeam.transforms.holdout_passes import JudgePass, held_out, without_record
from polybeam.transforms.in_memory import CrossValidateSmallInput, FinishInMemory, TrainInMemory
from polybeam.transforms.key_shards import KEY_SHARDS, KeyShard
from polybeam.transforms.keys import KeyFn, split_by_key
from polybeam.transforms.lbfgs_stage import FinishWithLbfgs
from polybeam.transforms.order import LabelOrderOf, ShuffleExamples
from polybeam.transforms.passes import (
    CountExamples,
    LearnKeyPass,
    LearnOnePass,
    MergeLearnersFn,
    MergeTree,
    TrainFn,
    learner_total,
    with_total_examples,
)
from polybeam.transforms.train_shards import TrainKeyShards
from polybeam.transforms.windows import RecordWindow, combine_globally, is_global

# The settings of feature hashing, which the read and the learner must share.
HASHING = ("bits", "seed")

__all__ = ["MergeLearnersFn", "Train", "TrainFn", "TrainGlobally", "TrainPerKey", "TrainSharedPerKey", "learner_total"]


def config_for_read(config: LearnerConfig, read: InputSettings, hashing_given) -> LearnerConfig:
    """``config`` fitted to the read that feeds it: the read's hashing (bits, seed: given once, to the read;
    a setting in ``hashing_given`` that differs fails) and the class names it maps labels to (taken when the
    config has none; different ones fail), as ``Train`` and ``TrainStream`` take them."""
    for name in HASHING:
        wanted, own = getattr(read, name), getattr(config, name)
        if wanted == own:
            continue
        if name in hashing_given:
            raise ValueError(
                f"the read hashes features with {name}={wanted} but the learner was given {name}={own}: "
                f"give {name} once, to ReadExamples (Train takes the read's)"
            )
        config = config.replace(**{name: wanted})
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
    return config


class _Training(beam.PTransform):
    """What every axis of training shares: the settings, the input's checks, the passes and their
    judgement, checkpoints, and the models' report. A subclass gives its ``expand`` and how a pass
    learns (:meth:`_first_pass`, :meth:`_later_pass`); ``keyed``: its states are ``(key, learner)``.

    Parameters
    ----------
    config : LearnerConfig, optional
        The learner settings; keyword arguments build one instead
        (``Train(loss="logistic", passes=3)``).
    metadata : dict, optional
        Extra facts to record in the model (e.g. ``{"input_format": "libsvm"}``).
    initial : PCollection, optional
        Learners to start from (see :class:`~polybeam.transforms.checkpoints.ReadLearners`):
        one learner, or ``(key, learner)`` pairs per key; a key without one
        starts afresh. Every pass then continues from the previous state.
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
        it (see :func:`~polybeam.learners.mixing.learner_total`).
    fanout : int, optional
        Average the partial learners (one per bundle) in a tree of merges with
        this fan-out instead of all at once on one worker: with B bundles, no
        merge holds more than about ``max(B / fanout, fanout)`` learners
        (:class:`~polybeam.transforms.passes.MergeTree`). Averages of averages
        weigh each learner by the importance it saw, so the model is the same
        up to rounding. Each bundle then learns in a ParDo rather than in a
        lifted CombineFn.
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

    The input is a PCollection of ExampleBatch, or what
    :class:`~polybeam.transforms.read.ReadExamples` returns
    (``p | ReadExamples(path) | Train()``): then the models wait for its
    input check, so a refused read emits none (and checkpoints none).
    """

    keyed = False

    def __init__(
        self,
        config: LearnerConfig | None = None,
        *,
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
        **settings,
    ):
        super().__init__()
        if config is not None and settings:
            raise ValueError("give either a LearnerConfig or keyword settings, not both")
        self.config = self._fitted(config if config is not None else LearnerConfig(**settings))
        # The hashing settings the caller gave the learner; the others are the read's (see _take_input).
        self._hashing_given = set(HASHING) if config is not None else set(HASHING) & set(settings)
        if first_pass < 1 or (initial is None and first_pass != 1):
            raise ValueError(f"first_pass must be 1, or >= 1 with initial learners; got {first_pass}")
        if fanout is not None and fanout < 2:
            raise ValueError(f"fanout must be at least 2, got {fanout}")
        if progress_every < 0:
            raise ValueError(f"progress_every must be 0 (doubling counts) or a count of examples, got {progress_every}")
        self.metadata = metadata
        self.initial = initial
        self.first_pass = first_pass
        self.checkpoint_dir = checkpoint_dir
        self.learners = learners
        self.fanout = fanout
        self.checkpoints_after = tuple(checkpoints_after)
        self.progress = progress
        self.progress_every = progress_every
        self.allow_empty = allow_empty
        self.label_order = None
        self._input_checks: tuple = ()

    def _fitted(self, config: LearnerConfig) -> LearnerConfig:
        """The config this axis trains with, refusing what does not apply to it."""
        return shared_config(config, False)

    # -- the input

    def _read(self, batches) -> tuple:
        """``(batches, checks)``: the ExampleBatches, and what the models must wait for (the read's input
        check, when given a ReadResult; the count of examples, unless ``allow_empty``). Takes the read's
        class names and settings into the config and the models (``examples.polybeam_input``)."""
        self._take_input(getattr(getattr(batches, "examples", batches), "polybeam_input", None))
        checks = []
        if isinstance(batches, tuple) and hasattr(batches, "examples"):  # a ReadResult
            if getattr(batches, "checked", None) is not None:
                checks.append(batches.checked)
            batches = batches.examples
        if not self.allow_empty:
            count = batches | "CountInput" >> combine_globally(CountExamples(), batches)
            if checks:  # after the read's check, whose message says more (the dead letters, the likely cause)
                count = count | "AfterReadCheck" >> WaitOn(*checks)
            checks.append(count | "RequireExamples" >> beam.Map(_require_examples))
        self._input_checks = tuple(checks)
        return batches, self._input_checks

    def _take_input(self, read: InputSettings | None) -> None:
        """Learn the read's hashing and class names (see :func:`config_for_read`) and record how it read, in
        every model."""
        if read is None:
            return
        self.config = config_for_read(self.config, read, self._hashing_given)
        metadata = dict(self.metadata or {})
        metadata.setdefault("input", read.to_dict())
        self.metadata = metadata

    # -- the passes

    def _models(self, batches):
        """The models after every pass: the held-out examples taken out once (every pass's judgement
        reads them), the states this job starts from, each pass learned, judged and checkpointed."""
        config, keyed = self.config, self.keyed
        held = batches | "HeldOut" >> beam.FlatMap(held_out, config, keyed) if config.holds_out else None
        states, done = self._start(batches, held)
        # The first pass's judged learners: this job's, or when resuming, the initial ones (their record of the
        # passes holds the first pass's judgement); a warm start's passes are its own and are never chosen.
        first = states if self.initial is None else self.initial if self.first_pass > 1 else None
        first = first if config.passes > 1 else None
        for number in range(done + 1, config.passes + 1):
            states = self._judged(held, self._later_pass(batches, states, number), states, number)
            self._checkpoint(states, number)
        if first is not None:
            states = self._small_input_passes(batches, first, states)
        return states | "ToModel" >> beam.Map(_to_model, self.metadata, keyed)

    def _small_input_passes(self, batches, first, states):
        """The learners after every pass when the first pass (``first``, judged) held out too few examples
        to judge by (``small_holdout``): ``states`` here, which released the holdout."""
        return states

    def _start(self, batches, held) -> tuple:
        """``(states, passes done)``: afresh, the first pass (judged and checkpointed); in a warm start
        the initial learners, whose passes this run judges afresh; when resuming, the initial learners
        after pass ``first_pass - 1``, going on with their record."""
        if self.initial is None:
            states = self._judged(held, self._first_pass(batches), None, 1)
            self._checkpoint(states, 1)
            return states, 1
        if self.first_pass == 1:
            return self.initial | "ForgetPasses" >> beam.Map(without_record, self.keyed), 0
        return self.initial, self.first_pass - 1

    def _first_pass(self, batches):
        """The learners after the first pass of a fresh start: a lifted CombineFn (:class:`TrainFn`),
        or one learner per bundle and the merge tree with ``fanout``."""
        batches = self._with_totals(batches)
        if self.fanout is not None:
            # (no previous state: start=None, given so that Beam fills the window parameter after it)
            partial = batches | "Learn1" >> beam.ParDo(self._learn_one_pass(), None)
            return partial | "Pass1" >> self._merge(partial)
        first = TrainFn(
            self.config,
            output="state",
            metadata=self.metadata,
            progress=self.progress,
            sparse=self.keyed,
            progress_every=self.progress_every,
        )
        if self.keyed:
            return batches | "Pass1" >> beam.CombinePerKey(first)
        return batches | "Pass1" >> combine_globally(first, batches)

    def _later_pass(self, batches, states, number: int):
        raise NotImplementedError

    def _with_totals(self, batches):
        """The first pass's batches, each paired with the examples its learner spaces apple's epochs over
        when apple knows them (given, or counted first: the later passes wait for the first anyway)."""
        config = self.config
        if config.expand == "apple" and (config.examples_per_pass is not None or config.passes > 1):
            return with_total_examples(batches, config, self.keyed, self.learners, config.examples_per_pass)
        return batches

    def _learn_one_pass(self) -> LearnOnePass:
        return LearnOnePass(self.keyed, self.config, self.progress, self.progress_every)

    def _merge(self, partial):
        """The transform that averages the ``partial`` learners (per key), through a merge tree with ``fanout``."""
        merge = MergeLearnersFn(self.config, output="state", sparse=self.keyed)
        if self.fanout is not None:
            return MergeTree(merge, self.fanout, self.keyed)
        return beam.CombinePerKey(merge) if self.keyed else combine_globally(merge, partial)

    def _judged(self, held, merged, previous, number: int):
        """The learners after pass ``number`` judged on the held-out examples (``merged`` itself when
        the config holds none out)."""
        if not self.config.holds_out:
            return merged
        judge = JudgePass(
            held, previous, number, final=number == self.config.passes, keyed=self.keyed, progress=self.progress
        )
        return merged | f"JudgePass{number}" >> judge

    def _checkpoint(self, states, number: int) -> None:
        if self.checkpoint_dir is None:
            return
        waits = self.checkpoints_after + self._input_checks
        if waits:
            states = states | f"Checkpoint{number}Waits" >> WaitOn(*waits)
        states | f"Checkpoint{number}" >> WriteCheckpoint(
            self.checkpoint_dir, number, keyed=self.keyed, config=self.config
        )

    # -- the output

    def _published(self, models, checks):
        """The models once the input's checks passed, each recording its window, counted as metrics."""
        if checks:
            models = models | "AfterInputChecks" >> WaitOn(*checks)
        if not is_global(models):
            models = models | "RecordWindow" >> beam.ParDo(RecordWindow())
        return models | "ReportModel" >> beam.ParDo(_ReportModel(self.keyed))


class TrainGlobally(_Training):
    """Learn one model from ExampleBatches (per window): ``p | ReadExamples(path) | TrainGlobally(loss="logistic")``.

    Takes the settings of :class:`_Training`, and:

    shuffle_buffer : int, default 0
        Every pass learns its examples through a shuffle buffer of this many
        (:class:`~polybeam.transforms.order.ShuffleExamples`), a new order each
        pass; the holdout keeps the same examples. 0: in the order they come.
    shuffle_seed : int, default 0
        The seed of the shuffle buffer's orders.
    in_memory : bool, default False
        Gather the input (per window) into one worker's memory and run every
        pass there (:mod:`polybeam.transforms.in_memory`): read and hashed
        once, no Beam stage per pass, the same model as the streaming passes
        learn on one bundle. For an input that fits a worker's memory; no
        checkpoints between passes, no merge tree; a shuffle buffer becomes a
        new order of each batch's rows every pass.

    With ``lbfgs_passes`` > 0 in the config (``Train(loss="logistic", lbfgs_passes=10)``), the online
    passes end with the finishing stage of :mod:`polybeam.learners.lbfgs`
    (:class:`~polybeam.transforms.lbfgs_stage.FinishWithLbfgs`); its summary is the model's
    ``metadata["lbfgs"]``.

    After it is applied, ``label_order`` is a PCollection of one
    :class:`~polybeam.learners.label_order.LabelOrder` (per window) of the
    labels as this job's first pass learns them: whether they come sorted,
    which misleads an online learner.
    """

    def __init__(
        self,
        config: LearnerConfig | None = None,
        *,
        shuffle_buffer: int = 0,
        shuffle_seed: int = 0,
        in_memory: bool = False,
        lbfgs_after_averaging: int = lbfgs.AFTER_AVERAGING_PASSES,
        **options,
    ):
        super().__init__(config, **options)
        if lbfgs_after_averaging < 0:
            raise ValueError(
                f"lbfgs_after_averaging must be 0 (never) or a number of passes, got {lbfgs_after_averaging}"
            )
        if self.learners is not None and self.learners < 1:
            raise ValueError(f"learners must be at least 1 (or None: unknown), got {self.learners}")
        if self.learners is None and in_memory:
            raise ValueError("in_memory learns every pass in one worker: give how many learners split it (learners=N)")
        # (passes, why): why None, they run only after an average of more than two learners
        self.finishing = lbfgs.finishing_plan(self.config, self.learners, lbfgs_after_averaging)
        if shuffle_buffer < 0:
            raise ValueError(f"shuffle_buffer must be 0 (no shuffling) or a number of examples, got {shuffle_buffer}")
        self.shuffle_buffer = shuffle_buffer
        self.shuffle_seed = shuffle_seed
        if in_memory and (self.checkpoint_dir is not None or self.first_pass > 1 or self.fanout is not None):
            raise ValueError(
                "in_memory runs every pass in one worker: it writes no checkpoint between passes, resumes "
                "none and merges no partial learners (leave checkpoint_dir, first_pass and fanout out)"
            )
        self.in_memory = in_memory

    def _models(self, batches):
        if not self.in_memory:
            return super()._models(batches)
        # Every pass in one worker's memory (polybeam.transforms.in_memory); a shuffle buffer becomes a new
        # order of each batch's rows every pass.
        self.label_order = batches | "LabelOrder" >> LabelOrderOf()
        initial = self.initial
        if initial is not None:  # a warm start: this run's passes are judged afresh
            initial = initial | "ForgetPasses" >> beam.Map(without_record, False)
        shuffle_seed = self.shuffle_seed if self.shuffle_buffer else None
        self._in_memory = TrainInMemory(
            self.config, initial, shuffle_seed, self.progress, self.progress_every, learners=self.learners
        )
        states = batches | "TrainInMemory" >> self._in_memory
        return states | "ToModel" >> beam.Map(_to_model, self.metadata, False)

    def _small_input_passes(self, batches, first, states):
        """The streamed passes' learner, or, when the first pass held out too few examples to judge by, the
        learner whose passes cross-validation chose over the input gathered in one worker, as the
        passes in memory choose them (:class:`~polybeam.transforms.in_memory.CrossValidateSmallInput`)."""
        if self.config.small_holdout != "cross-validate":
            return states
        shuffle_seed = self.shuffle_seed if self.shuffle_buffer else None
        choose = CrossValidateSmallInput(self.config, first, shuffle_seed, self.progress, self.progress_every)
        return (batches, states) | "CrossValidateSmallInput" >> choose

    def expand(self, batches):
        batches, checks = self._read(batches)
        return self._published(self._finished(batches), checks)

    def _finished(self, batches):
        """The model of the online passes, finished with L-BFGS when the config asks for it."""
        models = self._models(batches)
        passes, why = self.finishing
        if passes and self.in_memory:
            return models | "FinishInMemory" >> FinishInMemory(self._in_memory.gathered, self.config, passes, why)
        if passes:
            models = models | "FinishWithLbfgs" >> FinishWithLbfgs(batches, self.config, passes, why)
        return models

    def _first_pass(self, batches):
        return super()._first_pass(self._pass_input(batches, 1))

    def _later_pass(self, batches, states, number: int):
        start = beam.pvalue.AsSingleton(states)
        partial = self._pass_input(batches, number) | f"Learn{number}" >> beam.ParDo(self._learn_one_pass(), start)
        return partial | f"Pass{number}" >> self._merge(partial)

    def _pass_input(self, batches, number: int):
        """The batches pass ``number`` learns: through the shuffle buffer when there is one. The job's
        first pass also counts the order of their labels (``label_order``)."""
        if self.shuffle_buffer:
            shuffle = ShuffleExamples(self.shuffle_buffer, seed=self.shuffle_seed, salt=number)
            batches = batches | f"Shuffle{number}" >> shuffle
        if self.label_order is None:
            self.label_order = batches | "LabelOrder" >> LabelOrderOf()
        return batches


class TrainSharedPerKey(TrainGlobally):
    """Learn ONE shared per-key model (``--key-model shared``): every example is crossed with its key
    (:mod:`polybeam.learners.multitask`, :class:`~polybeam.transforms.shared_keys.CrossKeys`) and the model
    records the crossing and the keys it trained, so that it predicts each key with the shared weights
    plus the key's own. ``shared_keys``: a :class:`~polybeam.learners.multitask.SharedKeys`; the other
    settings are :class:`TrainGlobally`'s."""

    def __init__(self, shared_keys: SharedKeys, config: LearnerConfig | None = None, **options):
        super().__init__(config, **options)
        self.shared_keys = shared_keys

    def _fitted(self, config: LearnerConfig) -> LearnerConfig:
        return shared_config(config, True)

    def expand(self, batches):
        from polybeam.transforms.shared_keys import CrossKeys, RecordTrainedKeys  # (it builds on this module)

        batches, checks = self._read(batches)
        crossing = batches | "CrossKeys" >> CrossKeys(self.shared_keys, self.config)
        models = self._finished(crossing.crossed)
        models = models | "RecordTrainedKeys" >> RecordTrainedKeys(self.shared_keys, crossing.trained)
        return self._published(models, checks)


class TrainPerKey(_Training):
    """Learn one model per key: a PCollection of ``(key, Model)`` (per window).

    ``key(batch)`` returns one key per example (an array), or a single key for
    the whole batch (:mod:`polybeam.transforms.keys`). Takes the settings of
    :class:`_Training`, and:

    key_shards : int, default KEY_SHARDS
        How many shards the keys are hashed into. Each shard's examples go to
        one worker, whose DoFn trains the shard's keys one after the other,
        each with all its passes (:class:`~polybeam.transforms.train_shards.TrainKeyShards`:
        one learner per key, a state of the slots the key touches: memory and
        time follow the data, not the number of keys times ``2**bits``). With
        ``checkpoint_dir`` or when resuming, per-key learners go through the
        passes as one learner does, a key per element, each later pass joining
        a key's state to its examples (``CoGroupByKey``).
    keyed_output : {"pairs", "shards"}, default "pairs"
        Emit ``(key, Model)`` pairs, or (what ``WriteKeyedModels`` writes best)
        one :class:`~polybeam.transforms.key_shards.KeyShard` of many keys'
        models per shard. With ``checkpoint_dir`` or when resuming, always pairs.

    The L-BFGS finishing stage and the shuffle buffer train one model: they do not run per key.
    """

    keyed = True

    def __init__(
        self,
        key: KeyFn,
        config: LearnerConfig | None = None,
        *,
        key_shards: int = KEY_SHARDS,
        keyed_output: str = "pairs",
        **options,
    ):
        super().__init__(config, **options)
        if self.config.lbfgs_passes:
            raise ValueError(
                "the L-BFGS finishing stage (lbfgs_passes) trains one model, not one per key; "
                "leave lbfgs_passes at 0 with a key"
            )
        if key_shards < 1:
            raise ValueError(f"key_shards must be at least 1, got {key_shards}")
        if keyed_output not in ("pairs", "shards"):
            raise ValueError(f"keyed_output must be 'pairs' or 'shards', got {keyed_output!r}")
        self.key = key
        self.key_shards = key_shards
        self.keyed_output = keyed_output

    def expand(self, batches):
        batches, checks = self._read(batches)
        if self.checkpoint_dir is not None or self.first_pass > 1:  # pass by pass, a key per element
            return self._published(self._models(split_by_key(batches, self.key)), checks)
        shards = TrainKeyShards(self.key, self.config, self.metadata, self.key_shards, self.initial)
        shards = self._published(batches | "TrainKeyShards" >> shards, checks)
        return shards if self.keyed_output == "shards" else shards | "PerKey" >> beam.FlatMap(KeyShard.model_pairs)

    def _later_pass(self, batches, states, number: int):
        """Each key's state joined to its batches: a keyed join, not a broadcast of every key."""
        learn = LearnKeyPass(self.config, self.progress, self.progress_every)
        joined = {"state": states, "batches": batches} | f"Join{number}" >> beam.CoGroupByKey()
        return joined | f"Learn{number}" >> beam.ParDo(learn)


class Train:
    """Learn a model: ``Train(...)`` builds the training transform its arguments name.

    * ``Train(config, **options)``: :class:`TrainGlobally`, one Model;
    * ``Train(config, key=key_fn, **options)``: :class:`TrainPerKey`, ``(key, Model)`` pairs;
    * ``Train(config, shared_keys=SharedKeys(...), **options)``: :class:`TrainSharedPerKey`.

    The axes are also ``Train.Globally``, ``Train.PerKey`` and
    ``Train.SharedPerKey``, as Beam's ``Count.Globally`` and ``Count.PerKey``.
    ``config`` is a :class:`~polybeam.learners.config.LearnerConfig`, or its
    settings are keyword arguments (``Train(loss="logistic", passes=3)``); see
    :class:`_Training` for the options every axis takes.

    >>> type(Train(loss="logistic")).__name__, type(Train(key=lambda batch: "a")).__name__
    ('TrainGlobally', 'TrainPerKey')
    """

    Globally = TrainGlobally
    PerKey = TrainPerKey
    SharedPerKey = TrainSharedPerKey

    def __new__(cls, config: LearnerConfig | None = None, *, key=None, shared_keys=None, **options):
        # (options of another axis are dropped, as before the axes were split: a caller like the command
        # line names every option for whichever axis it gets; a shuffle that would mix keys is refused)
        if key is not None and shared_keys is not None:
            raise ValueError("a shared per-key model (shared_keys) takes no key function")
        if key is not None:
            if options.pop("shuffle_buffer", 0):
                raise ValueError(
                    "shuffle_buffer mixes the examples of one model; with a key (a model per key) leave it at 0"
                )
            options.pop("shuffle_seed", None)
            options.pop("lbfgs_after_averaging", None)  # (a key's passes have one learner each)
            return TrainPerKey(key, config, **options)
        options.pop("key_shards", None)
        options.pop("keyed_output", None)
        if shared_keys is not None:
            return TrainSharedPerKey(shared_keys, config, **options)
        return TrainGlobally(config, **options)


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
            examples, nonzero = element.figures()
        else:
            model = element[1] if self.keyed else element
            examples, nonzero = [int(model.metadata.get("examples", 0))], [model.nonzero]
        for count in nonzero:
            self.nonzero.update(int(count))
        self.examples.inc(int(sum(examples)))
        yield element


def _to_model(state, metadata: dict | None, keyed: bool):
    if keyed:
        key, learner = state
        return key, learner.to_model(metadata)
    return state.to_model(metadata)
