"""One learner's passes over an input in memory (``fit``): judged by the holdout, or chosen by cross-validation.

:func:`train_passes` learns every pass with one learner, the holdout judging
each (:mod:`polybeam.learners.holdout`: its runs, restarts and best pass), as
Beam's ``Train`` does pass by pass. On a small input it chooses them by
cross-validation instead (``small_holdout``, :func:`cross_validated_passes`).

A holdout that held out fewer than ``holdout_min_examples`` examples cannot
tell passes apart (a few dozen examples' mean loss moves more by chance than
passes move it). Learning every example at one rate for every pass instead
overfits: on the suite's small classification tasks, 20 such passes had a
higher test log loss than one pass on 16 of 43.

Cross-validation uses every example to judge, each by a learner that never
learned it. The examples fall into ``folds`` folds by where they sit (the
holdout's hash of their place, :func:`polybeam.learners.holdout.holdout_rows`:
the same folds on every worker, in every pass and whatever the batches). A
learner per fold learns the other folds, all of them pass by pass together;
after each pass their losses on their own folds add up to one loss over
every example, which the holdout's rule judges (:class:`PassSelection`: runs
of passes at one rate, restarts at half the rate, the best pass). The best
pass's rate and its place in its run are then learned again from the
beginning by one learner on every example: more data than any fold's learner
had, for as many passes. On the suite's small tasks (10 folds, 3 seeds) this
was lower than the 20 passes it replaces on 22 of 43 tasks, higher on 4 (by
0.004 at most), and lower than one pass on all but one
(``benchmarks/results/pass_schedule.md``).

The fold learners keep a state of the slots they touch (as a learner per key
does), the same weights as dense arrays, so ten of them cost what the data
costs; on an input with at least as many values as ``2**bits`` slots, dense
arrays are faster, and they keep them when ten fit in :data:`FOLD_DENSE_BYTES`
(see :func:`fold_state_is_sparse`).

>>> from polybeam.learners.batch import ExampleBatch
>>> from polybeam.learners.config import LearnerConfig
>>> from polybeam.learners.linear import LinearLearner
>>> rows = [(1.0, {1: 1.0, 3: 0.5}), (-1.0, {2: 1.0, 3: 0.5})] * 100
>>> learner = LinearLearner(LearnerConfig(loss="logistic", passes=10)).fit([ExampleBatch.from_rows(rows)])
>>> chosen = learner.selection_.cross_validation
>>> chosen["folds"], chosen["examples"], chosen["passes"] == len(learner.passes_) + 1
(10, 200, True)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from polybeam.learners.batch import ExampleBatch
from polybeam.learners.choices import CROSS_VALIDATION_FOLDS, RESTART_RATE_FACTOR
from polybeam.learners.config import LearnerConfig
from polybeam.learners.holdout import (
    HoldoutScore,
    PassSelection,
    judging_minimum,
    place_hashes,
    record_pass,
    renew,
    shuffled,
    split_holdout,
)
from polybeam.learners.mixing import learner_total, mixed_pass, shares

# Fewer examples per fold than this leave most folds' losses to one or two examples: the passes are then
# released as before (every example learned, the last pass kept).
MIN_FOLD_EXAMPLES = 2
# The most the fold learners may hold as dense arrays (see fold_state_is_sparse).
FOLD_DENSE_BYTES = 512 << 20


def fold_state_is_sparse(config: LearnerConfig, values: int, folds: int = CROSS_VALIDATION_FOLDS) -> bool:
    """Whether ``folds`` fold learners of an input of ``values`` feature values keep a state of the slots
    they touch rather than dense arrays. Dense arrays pay a scan of every slot a pass (a model to judge),
    a sparse state a lookup per value; measured on the suite's small tasks, dense learners ran ticdata
    with 1,000 added noise columns (5M values) in 5.9 s instead of 12.4 s, and BreastCancer (6,000
    values) in 0.45 s instead of 0.13 s. So: dense when the input has at least ``2**bits`` values and the
    dense arrays (a weight and an adaptive sum per slot and output, a scale and a mass per slot, twice
    for centring's race) fit in :data:`FOLD_DENSE_BYTES` (a softmax over 19 classes does not).

    >>> wide = 1 << 20
    >>> fold_state_is_sparse(LearnerConfig(loss="logistic"), wide), fold_state_is_sparse(LearnerConfig(loss="logistic"), 6000)
    (False, True)
    >>> fold_state_is_sparse(LearnerConfig(loss="softmax", classes=19), wide)
    True
    """
    per_slot = 2 * (2 * config.outputs + 2) * 8
    return values < (1 << config.bits) or folds * per_slot * (1 << config.bits) > FOLD_DENSE_BYTES


def fold_of(batch: ExampleBatch, folds: int, seed: int = 0) -> np.ndarray:
    """The fold (0 .. ``folds`` - 1) of each example of ``batch``: the holdout's hash of its place.

    >>> batch = ExampleBatch.from_rows([(0.0, {})] * 1000)
    >>> counts = np.bincount(fold_of(batch, 10), minlength=10)
    >>> bool(counts.min() > 60), bool((fold_of(batch, 10) == fold_of(batch.take(np.arange(1000)), 10)).all())
    (True, True)
    """
    return (place_hashes(batch, seed) % np.uint64(folds)).astype(np.int64)


def can_cross_validate(examples: int, folds: int = CROSS_VALIDATION_FOLDS) -> bool:
    """Whether ``examples`` examples are enough to choose passes by ``folds``-fold cross-validation."""
    return examples >= folds * MIN_FOLD_EXAMPLES


@dataclasses.dataclass
class PassChoice:
    """What cross-validation chose: learn ``passes`` passes at ``rate`` from the beginning; ``selection``
    holds the judged passes (their losses over every example, each scored by a learner that never learned
    it), ``examples`` how many examples judged them."""

    rate: float | None
    passes: int
    selection: PassSelection
    folds: int
    examples: int

    def summary(self) -> dict:
        """What a model records of the choice (JSON-able)."""
        return {"folds": self.folds, "examples": self.examples, "rate": self.rate, "passes": self.passes}


def choose_passes(
    learner,
    batches: Sequence[ExampleBatch],
    passes: int,
    *,
    folds: int = CROSS_VALIDATION_FOLDS,
    expect: bool = True,
    shuffle: np.random.RandomState | np.random.Generator | None = None,
) -> PassChoice:
    """Cross-validate ``passes`` passes of a fresh learner like ``learner`` (its kind and config) over
    ``batches``: the pass with the lowest loss over every example, and its rate and place in its run."""
    config = learner.config
    assigned = [fold_of(batch, folds, config.seed) for batch in batches]
    parts = [
        [(batch.take(fold != f), batch.take(fold == f)) for batch, fold in zip(batches, assigned)] for f in range(folds)
    ]
    # (every example judges: the record's minimum, which would release a holdout this small, is set after)
    selection = PassSelection(config.early_terminate, 0, learner.selection_.schedule)

    sparse = fold_state_is_sparse(config, sum(len(batch.indices) for batch in batches), folds)

    def fresh(rate_config):
        fold_learners = [learner.restarted(rate_config, sparse=sparse) for _ in range(folds)]
        if expect:  # (apple spaces its epochs over what each learner will learn, as the learner would)
            for fold_learner, part in zip(fold_learners, parts):
                fold_learner.expect(sum(len(learned) for learned, _ in part) * passes)
        return fold_learners

    current = config
    fold_learners = fresh(current)
    for number in range(1, passes + 1):
        score = HoldoutScore()
        for fold_learner, part in zip(fold_learners, parts):
            if fold_learner.examples_seen:
                fold_learner.start_pass()
            for learned, _ in part:
                fold_learner.learn(shuffled(learned, shuffle))
            models = fold_learner.candidate_models()
            for _, held in part:
                score.add(models, held)
        selection.record(number, score)
        selection.history[-1]["rate"] = current.learning_rate
        if selection.restart_due and number < passes:
            current = dataclasses.replace(current, learning_rate=current.learning_rate * RESTART_RATE_FACTOR)
            selection.history[-1]["restart_rate"] = current.learning_rate
            selection.begin_run()
            fold_learners = fresh(current)
        if selection.stopped:
            break
    selection.min_examples = learner.selection_.min_examples
    best = selection.best_pass
    rate = selection.history[best - 1]["rate"]
    place = best - max((n for n in range(1, best) if "restart_rate" in selection.history[n - 1]), default=0)
    examples = sum(len(batch) for batch in batches)
    return PassChoice(rate, place, selection, folds, examples)


def cross_validated_passes(
    learner,
    batches: Sequence[ExampleBatch],
    passes: int,
    *,
    folds: int = CROSS_VALIDATION_FOLDS,
    expect: bool = True,
    shuffle: np.random.RandomState | np.random.Generator | None = None,
    after_pass: Callable[[object, int, dict], None] | None = None,
):
    """Choose the rate and passes by cross-validation (:func:`choose_passes`), then make ``learner`` (in
    place; fresh) learn them from the beginning on every example of ``batches``; its record of the passes
    is the cross-validation's, with ``cross_validation`` (:meth:`PassChoice.summary`)."""
    choice = choose_passes(learner, batches, passes, folds=folds, expect=expect, shuffle=shuffle)
    renew(learner, dataclasses.replace(learner.config, learning_rate=choice.rate))
    if expect:
        learner.expect(choice.examples * choice.passes)
    selection = choice.selection
    selection.cross_validation = choice.summary()
    learner.selection_ = selection
    if after_pass is not None:  # (pass 0: the choice is made, before the passes it chose)
        after_pass(learner, 0, {"examples": 0, "progressive_loss": float("nan")})
    for number in range(1, choice.passes + 1):
        if number > 1:
            learner.start_pass()
        for batch in batches:
            learner.learn(shuffled(batch, shuffle))
        weights = getattr(learner, "linear", learner)
        if after_pass is not None:
            after_pass(
                learner, number, {"examples": weights.examples_seen, "progressive_loss": weights.progressive_loss}
            )
    return learner


def train_passes(
    learner,
    batches: Iterable[ExampleBatch],
    passes: int,
    *,
    expect: bool = True,
    shuffle: np.random.RandomState | np.random.Generator | None = None,
    after_pass: Callable[[object, int, dict], None] | None = None,
    cross_validate: bool = True,
    learners: int = 1,
):
    """Learn ``batches`` for ``passes`` passes with one learner (``fit``): with a holdout (see
    :class:`~polybeam.learners.config.LearnerConfig`), each batch's held-out examples score every
    pass instead of being learned, and training keeps the best pass and stops early as Beam's
    ``Train`` does. ``expect``: tell the learner how many examples it will learn (apple spaces its
    epochs over them).

    ``shuffle``: a random generator; every pass then learns each batch's examples in a new random
    order drawn from it (a permutation of the batch's rows: no Python per example). The held-out
    examples are set apart first, by where they sit, so the same examples are held out in every
    pass whatever the order. ``after_pass(learner, number, learned)`` is called after each pass,
    once it is judged (the learner may then be the best pass's); ``learned`` holds the pass's
    ``examples`` and ``progressive_loss``; with cross-validation, also once with ``number`` 0 when it
    has chosen, before the passes it chose.

    A fresh learner whose holdout is too small to judge by (``holdout_min_examples``) has its rate and
    passes chosen by cross-validation (``small_holdout``, :func:`cross_validated_passes`);
    ``cross_validate=False`` releases the holdout instead (a learner per key does, as its streamed passes).

    ``learners`` > 1: every pass is learned as that many workers would learn it, each its contiguous share
    of the examples with its own copy of the learner, their average going on
    (:func:`polybeam.learners.mixing.mixed_pass`); apple's learners then space their epochs over their
    share of one pass, as known workers do; the holdout judges the average, and there is no
    cross-validation (workers never do it).

    >>> from polybeam.learners.config import LearnerConfig
    >>> from polybeam.learners.holdout import holdout_rows
    >>> from polybeam.learners.linear import LinearLearner
    >>> batch = ExampleBatch.from_rows([(1.0, {1: 1.0})] * 50 + [(-1.0, {2: 1.0})] * 50)
    >>> config = LearnerConfig(loss="logistic", passes=3, holdout_min_examples=0)
    >>> held = [train_passes(LinearLearner(config), [batch], 3, shuffle=np.random.RandomState(seed))
    ...         .selection_.history[0]["examples"] for seed in (0, 1)]
    >>> held == [int(holdout_rows(batch, config.holdout_period).sum())] * 2
    True
    """
    config = learner.config
    batches = list(batches)
    holding = passes > 1 and config.holdout_period > 0
    split = [split_holdout(batch, config, passes) for batch in batches]
    held = [part for _, part in split if part is not None]
    if (
        holding
        and cross_validate
        and learners == 1
        and cross_validates(learner, sum(len(part) for part in held), sum(len(batch) for batch in batches))
    ):
        return cross_validated_passes(learner, batches, passes, expect=expect, shuffle=shuffle, after_pass=after_pass)
    if expect:  # apple spreads its epochs over what it will learn, as Train does when it counts the examples
        learner.expect(learner_total(sum(len(part) for part, _ in split), passes, learners))
    for number in range(1, passes + 1):
        if number > 1 and learner.examples_seen:  # (a learner the holdout restarted starts afresh)
            learner.start_pass()
        if learners > 1:
            mixed_pass(learner, shares([part for part, _ in split], learners), prepare=lambda b: shuffled(b, shuffle))
        else:
            for part, _ in split:
                learner.learn(shuffled(part, shuffle))
        weights = getattr(learner, "linear", learner)  # (a polynomial learner's linear part counts the pass)
        learned = {"examples": weights.examples_seen, "progressive_loss": weights.progressive_loss}
        if holding:
            models = learner.candidate_models()
            score = HoldoutScore()
            for part in held:
                score.add(models, part)
            record_pass(learner, score, number, final=number == passes)
            if learner.selection_.released:  # too few held out to judge by: learn them too from now on
                holding, split = False, [(batch, None) for batch in batches]
        if after_pass is not None:
            after_pass(learner, number, learned)
        if learner.selection_.stopped:
            break
    return learner


def cross_validates(learner, held_out: int, examples: int) -> bool:
    """Whether ``learner``'s passes over ``examples`` examples, ``held_out`` of them held out, are chosen by
    cross-validation (``small_holdout``, :func:`cross_validated_passes`): a fresh learner (a warm start
    goes on from what it learned) of an input :func:`small_input_cross_validates` chooses for."""
    return (
        getattr(learner, "linear", learner).fresh
        and not learner.selection_.judged
        and small_input_cross_validates(learner.config, held_out, examples)
    )


def small_input_cross_validates(config: LearnerConfig, held_out: int, examples: int) -> bool:
    """Whether a fresh learner with ``config`` chooses its passes over ``examples`` examples, ``held_out`` of
    them held out, by cross-validation: too few held out to judge by, and enough examples for the folds."""
    return (
        config.small_holdout == "cross-validate" and held_out < judging_minimum(config) and can_cross_validate(examples)
    )
