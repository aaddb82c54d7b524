"""Holdout and early stopping: every pass is judged on examples that training never learns.

More passes over the same data can make an online model worse: it fits the
noise of the training examples (softmax on short texts), or apple's products,
young in the first pass, win or lose only later. As VW does with ``--passes``,
a multi-pass learner holds one example in ``holdout_period`` out of training in
every pass, scores each pass's model on them and keeps the best pass's model
(VW: ``--holdout_period 10``). After ``early_terminate`` passes in a row
without a better holdout loss (VW: ``--early_terminate 3``), VW stops; here,
under the default ``restart`` pass schedule, learning starts again from the
beginning at half the learning rate, and stops once a restart does no better
than the passes before it. A rate that learns one pass fast overfits the
next ones where features are many and rare (short texts, noise): on the
suite's text task, 20 passes kept the first pass at 1.41 held-out log loss,
and with restarts reach 1.23 at a quarter of the rate, where scikit-learn's
LogisticRegression on the same features is at 1.233. Learning from the
beginning, not from the best pass, undoes what the higher rate fitted to noise.

Which examples are held out is a hash of where each example sits in its file
(the byte offset or row the readers record, the file's name without its
folder, and the hashing seed), so the same examples are held out in every pass, on every worker and
runner, however the input is split into bundles or batches; an example
without a position (a batch built in Python) is placed by its row in the
batch. A learner that learns per key holds out that key's examples of the
same rule, so each key's model is judged on its own data.

The record of the passes (:class:`PassSelection`) travels with the learner
state (checkpoints, warm starts), with a snapshot of the best pass's state, to
which :func:`record_pass` restores the learner when training stops early or
its last pass was not the best.

>>> from polybeam.learners.batch import ExampleBatch
>>> batch = ExampleBatch.from_rows([(1.0, {1: 1.0})] * 10_000)
>>> held = holdout_rows(batch, period=10)
>>> int(held.sum()), bool((held == holdout_rows(batch, period=10)).all())
(1002, True)
"""

from __future__ import annotations

import copy
import dataclasses
import math
import os
import re
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from polybeam.learners.batch import ExampleBatch
from polybeam.learners.choices import RATED_STEP_RULES, RESTART_RATE_FACTOR
from polybeam.learners.config import LearnerConfig
from polybeam.learners.evaluation import pointwise_loss
from polybeam.learners.model import Model, finalize_predictions

# SplitMix64's constants: a cheap mix in which every input bit moves every output bit, so that
# "hash % period == 0" holds out one example in ``period`` whatever the positions' pattern
# (byte offsets of lines of similar length are far from uniform modulo small numbers).
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)


def _mixed(values: np.ndarray) -> np.ndarray:
    x = values.astype(np.uint64) + _GOLDEN  # unsigned arrays wrap around silently, as the mix needs
    x = (x ^ (x >> np.uint64(30))) * _MIX_1
    x = (x ^ (x >> np.uint64(27))) * _MIX_2
    return x ^ (x >> np.uint64(31))


def holdout_rows(batch: ExampleBatch, period: int, seed: int = 0) -> np.ndarray:
    """Which examples of ``batch`` are held out: one in ``period`` on average (a boolean mask).

    Positions are ``batch.row_ids`` (with the file's name) when the reader
    recorded them, else the rows of the batch.

    >>> batch = ExampleBatch.from_rows([(0.0, {})] * 6)
    >>> holdout_rows(batch, period=0).tolist()
    [False, False, False, False, False, False]
    """
    if period <= 0 or len(batch) == 0:
        return np.zeros(len(batch), dtype=bool)
    return place_hashes(batch, seed) % np.uint64(period) == 0


def place_hashes(batch: ExampleBatch, seed: int = 0) -> np.ndarray:
    """A well-mixed 64-bit hash of where each example of ``batch`` sits (see :func:`holdout_rows`), with
    ``seed``: the holdout takes one in ``period`` of them, cross-validation's folds their remainders."""
    return _mixed(_places(batch) ^ np.uint64(int(seed) & 0xFFFFFFFF))


def _places(batch: ExampleBatch) -> np.ndarray:
    """Where each example of ``batch`` sits: its position (``row_ids``, else its row) folded with its
    file's name (as unsigned 64-bit numbers)."""
    positions = batch.row_ids if batch.row_ids is not None else np.arange(len(batch))
    salt = np.uint64(zlib.crc32(_file_name(batch.source).encode("utf-8")) << 32)  # (0 without a file)
    return np.asarray(positions, dtype=np.int64).view(np.uint64) ^ salt


def placed(batch: ExampleBatch) -> ExampleBatch:
    """``batch`` with each example's place (see :func:`holdout_rows`) in its ``row_ids`` and no ``source``:
    its examples keep their holdout wherever they go, to another position or into a batch with examples
    of other files (a shuffle buffer mixes them).

    >>> batch = ExampleBatch.from_rows([(1.0, {1: 1.0})] * 100)
    >>> batch = dataclasses.replace(batch, row_ids=np.arange(0, 2000, 20), source="gs://bucket/a.libsvm")
    >>> moved = placed(batch).take(np.arange(100)[::-1])
    >>> bool((holdout_rows(moved, period=10) == holdout_rows(batch, period=10)[::-1]).all())
    True
    """
    return dataclasses.replace(batch, row_ids=_places(batch).view(np.int64), source=None)


def _file_name(source: str | None) -> str:
    """The file's name without its folder: a copy of the data elsewhere (another machine, a bucket)
    holds out the same examples."""
    return re.split(r"[/\\]", source or "")[-1]


def judging_minimum(config: LearnerConfig) -> int:
    """The fewest held-out examples the passes are judged on (``holdout_min_examples``); 0 when the
    finishing stage follows, so that the held-out examples are never released to the passes (the stage
    judges its points against the online model on them, and needs them unseen)."""
    return 0 if config.lbfgs_passes else config.holdout_min_examples


def held_out_rows(batch: ExampleBatch, config: LearnerConfig, passes: int | None = None) -> np.ndarray | None:
    """The mask of ``batch``'s examples held out under ``config``'s holdout for training of ``passes``
    passes (default: the config's; one pass holds nothing out, unless the L-BFGS finishing stage follows:
    it judges its points against the online model on examples neither learned), or None when none is."""
    if ((config.passes if passes is None else passes) < 2 and not config.lbfgs_passes) or config.holdout_period <= 0:
        return None
    held = holdout_rows(batch, config.holdout_period, config.seed)
    return held if held.any() else None


def split_holdout(
    batch: ExampleBatch, config: LearnerConfig, passes: int | None = None
) -> tuple[ExampleBatch, ExampleBatch | None]:
    """``(examples to learn, held-out examples or None)`` of ``batch`` (see :func:`held_out_rows`)."""
    held = held_out_rows(batch, config, passes)
    return (batch, None) if held is None else (batch.take(~held), batch.take(held))


def training_count(batch: ExampleBatch, config: LearnerConfig) -> int:
    """How many examples of ``batch`` a learner with ``config`` learns (without copying any)."""
    held = held_out_rows(batch, config)
    return len(batch) if held is None else len(batch) - int(held.sum())


def training_part(batch: ExampleBatch, config: LearnerConfig) -> ExampleBatch:
    """The examples of ``batch`` a learner with ``config`` learns (all of them without a holdout)."""
    held = held_out_rows(batch, config)
    return batch if held is None else batch.take(~held)


def held_out_part(batch: ExampleBatch, config: LearnerConfig) -> ExampleBatch | None:
    """The examples of ``batch`` held out under ``config``, or None."""
    held = held_out_rows(batch, config)
    return None if held is None else batch.take(held)


# -- scoring ------------------------------------------------------------------------------------------


@dataclass
class HoldoutScore:
    """Loss sums of a learner's candidate models on held-out examples; adds up across batches and workers.

    ``candidates`` name the models a pass may keep: one (``"linear"``, or the
    expansion's name), or apple's ``("apple", "linear")`` when its guard learns
    the linear model alongside.
    """

    candidates: tuple[str, ...] = ()
    loss_sums: np.ndarray = field(default_factory=lambda: np.zeros(0))
    weight: float = 0.0
    examples: int = 0

    def add(self, models: Mapping[str, Model], batch: ExampleBatch) -> HoldoutScore:
        """Add the importance-weighted loss of every candidate model on ``batch``."""
        if not self.candidates:
            self.candidates = tuple(models)
            self.loss_sums = np.zeros(len(models))
        for position, name in enumerate(self.candidates):
            self.loss_sums[position] += model_loss_sum(models[name], batch)
        self.weight += float(batch.weights.sum())
        self.examples += len(batch)
        return self

    def merge(self, others: Iterable[HoldoutScore]) -> HoldoutScore:
        for other in others:
            if not other.candidates:
                continue
            if not self.candidates:
                self.candidates, self.loss_sums = other.candidates, np.zeros(len(other.candidates))
            if other.candidates != self.candidates:
                raise ValueError(f"cannot add holdout scores of {other.candidates} to scores of {self.candidates}")
            self.loss_sums = self.loss_sums + other.loss_sums
            self.weight += other.weight
            self.examples += other.examples
        return self

    def means(self) -> dict[str, float]:
        """Each candidate's mean loss per unit of importance weight (NaN without held-out examples)."""
        return {
            name: float(total / self.weight) if self.weight > 0 else math.nan
            for name, total in zip(self.candidates, self.loss_sums)
        }


def model_loss_sum(model: Model, batch: ExampleBatch) -> float:
    """The importance-weighted sum of ``model``'s training loss over ``batch`` (squared loss on its
    clamped predictions, as the learner counts it)."""
    if len(batch) == 0:
        return 0.0
    margins = model.margins(batch)
    low, high = float(model.metadata.get("label_min", 0.0)), float(model.metadata.get("label_max", 0.0))
    predictions = finalize_predictions(model.config.loss, margins, low, high)
    losses = pointwise_loss(model.config.loss, batch.labels, margins, predictions, model.config.loss_parameter)
    return float(np.dot(batch.weights, losses))


def score_holdout(learner, batches: Iterable[ExampleBatch]) -> HoldoutScore:
    """The holdout score of ``learner``'s candidate models on the held-out examples of ``batches``."""
    config = learner.config
    models = learner.candidate_models()
    score = HoldoutScore()
    for batch in batches:
        held = held_out_part(batch, config)
        if held is not None:
            score.add(models, held)
    return score


# -- choosing the pass ----------------------------------------------------------------------------------


class PassSelection:
    """What the holdout said of each pass, the best pass so far and a snapshot of its learner state.

    ``history`` has one entry per judged pass: ``pass``, ``holdout_loss`` (the
    kept candidate's), ``losses`` (every candidate's), ``examples`` held out
    and ``kept`` (the candidate with the lowest loss: ``"apple"`` or
    ``"linear"`` under apple's guard; ties go to the first, apple).

    Passes at one learning rate form a *run*. A run ends after ``patience``
    passes in a row without a lower holdout loss than the run's best. Under the
    ``restart`` schedule (``LearnerConfig.pass_schedule``) the learner then starts
    again from the beginning at half the rate (:func:`record_pass` does it;
    ``restart_due`` says one is due), and training stops once a run's best is no
    better than the best of the run before it. Under ``constant`` the end of the
    first run stops training, as VW's ``--early_terminate``. Either way the best
    pass of all is kept.

    A first pass that held out fewer than ``min_examples`` examples
    *releases* the holdout: so few cannot tell passes apart, and are worth
    more as training data, so the learner learns every example from then on,
    no pass is judged again and the last pass is kept (``released``).

    >>> selection = PassSelection(patience=2)
    >>> for number, loss in enumerate([0.5, 0.4, 0.45, 0.41], 1):
    ...     _ = selection.record(number, HoldoutScore(("linear",), np.array([loss * 10]), 10.0, 10))
    >>> selection.best_pass, selection.stopped
    (2, True)
    >>> rounds = PassSelection(patience=1, schedule="restart")
    >>> for number, loss in enumerate([0.5, 0.6, 0.45, 0.4, 0.42, 0.43, 0.44], 1):
    ...     _ = rounds.record(number, HoldoutScore(("linear",), np.array([loss * 10]), 10.0, 10))
    ...     if rounds.restart_due:
    ...         rounds.begin_run()
    >>> rounds.best_pass, rounds.restarts, rounds.stopped
    (4, 2, True)
    >>> few = PassSelection(patience=2, min_examples=100)
    >>> _ = few.record(1, HoldoutScore(("linear",), np.array([5.0]), 10.0, 10))
    >>> few.released, few.stopped
    (True, False)
    """

    def __init__(self, patience: int, min_examples: int = 0, schedule: str = "constant"):
        self.patience = int(patience)
        self.min_examples = int(min_examples)
        self.schedule = schedule
        self.history: list[dict] = []
        self.best_pass = 0
        self.best_loss = math.nan
        self.best_kept: str | None = None
        self.snapshot: dict | None = None
        self.stopped = False
        self.released = False
        # The current run of passes at one rate: its best pass and loss, and the best of the run before.
        self.run_best_pass = 0
        self.run_best_loss = math.nan
        self.previous_run_loss = math.nan
        self.restarts = 0
        self.restart_due = False
        # Set when the passes were chosen by cross-validation (polybeam.learners.fitting): what it chose.
        self.cross_validation: dict | None = None

    @classmethod
    def of(cls, config: LearnerConfig) -> PassSelection:
        """An empty record for a learner with ``config`` (a step rule without a rate: one rate throughout)."""
        schedule = config.pass_schedule if config.step in RATED_STEP_RULES else "constant"
        return cls(config.early_terminate, judging_minimum(config), schedule)

    @property
    def holding_out(self) -> bool:
        """Whether the holdout still judges passes (the learner then skips its held-out examples)."""
        return not self.released

    @property
    def judged(self) -> bool:
        """Whether any pass was scored on held-out examples."""
        return bool(self.history)

    @property
    def last_pass(self) -> int:
        return self.history[-1]["pass"] if self.history else 0

    def record(self, pass_number: int, score: HoldoutScore) -> bool:
        """Record pass ``pass_number``'s score; True when it is the best so far (the caller snapshots it)."""
        losses = score.means()
        kept = min(losses, key=lambda name: (not losses[name] <= math.inf, losses[name])) if losses else None
        loss = losses[kept] if kept is not None else math.nan
        self.history.append(
            {
                "pass": int(pass_number),
                "holdout_loss": loss,
                "losses": losses,
                "examples": int(score.examples),
                "kept": kept,
            }
        )
        if len(self.history) == 1 and score.examples < self.min_examples:
            self.released = True  # too few to judge by: no best pass, no apple verdict, nothing stops
            return False
        unjudged = not math.isfinite(loss)
        improved = unjudged or not math.isfinite(self.best_loss) or loss < self.best_loss
        if improved:
            self.best_pass, self.best_loss, self.best_kept = int(pass_number), loss, kept
        if unjudged or not math.isfinite(self.run_best_loss) or loss < self.run_best_loss:
            self.run_best_pass, self.run_best_loss = int(pass_number), loss
        elif pass_number - self.run_best_pass >= self.patience:  # the run at this rate is over
            better_than_before = (
                not math.isfinite(self.previous_run_loss) or self.run_best_loss < self.previous_run_loss
            )
            if self.schedule == "restart" and better_than_before:
                self.restart_due = True
            else:
                self.stopped = True
        return improved

    def begin_run(self) -> None:
        """Start a new run of passes (the learner has restarted at a lower rate)."""
        self.previous_run_loss = self.run_best_loss
        self.run_best_pass, self.run_best_loss = 0, math.nan
        self.restarts += 1
        self.restart_due = False

    def line_after(self, pass_number: int) -> str | None:
        """The holdout's progress line after pass ``pass_number`` of one learner's passes, if it has one
        (:func:`holdout_progress_line`): the pass's judgement, or cross-validation's choice before the
        passes it chose."""
        if self.cross_validation:  # (pass 0: announced before the passes it chose)
            return holdout_progress_line(self) if pass_number == 0 else None
        if self.history and self.history[-1]["pass"] == pass_number:
            return holdout_progress_line(self)
        return None

    def summary(self, period: int) -> dict:
        """What a model records of its passes' holdout (JSON-able)."""
        return {
            "period": int(period),
            "early_terminate": self.patience,
            "min_examples": self.min_examples,
            "schedule": self.schedule,
            "restarts": self.restarts,
            "passes": [dict(entry) for entry in self.history],
            "released": self.released,
            "best_pass": None if self.released else self.best_pass,
            "best_loss": self.best_loss if math.isfinite(self.best_loss) else None,
            "kept": self.best_kept,
            "stopped_after": self.last_pass if self.stopped else None,
            **({"cross_validation": dict(self.cross_validation)} if self.cross_validation else {}),
        }

    @classmethod
    def restored(cls, state: dict | None, config: LearnerConfig) -> PassSelection:
        """The record in a learner state (:meth:`to_state`) of a learner with ``config``; an empty one's
        settings where the state predates them."""
        empty = cls.of(config)
        return cls.from_state(state, empty.patience, empty.min_examples, empty.schedule)

    def copy(self) -> PassSelection:
        """An independent record (the snapshot, never changed in place, is shared)."""
        return PassSelection.from_state(self.to_state(), self.patience, self.min_examples, self.schedule)

    def to_state(self) -> dict:
        return {
            "patience": self.patience,
            "history": [dict(entry) for entry in self.history],
            "best_pass": self.best_pass,
            "best_loss": self.best_loss if math.isfinite(self.best_loss) else None,
            "best_kept": self.best_kept,
            "stopped": self.stopped,
            "released": self.released,
            "snapshot": self.snapshot,
            "schedule": self.schedule,
            "run": [self.run_best_pass, _finite_or_none(self.run_best_loss), _finite_or_none(self.previous_run_loss)],
            "restarts": self.restarts,
            "restart_due": self.restart_due,
            "cross_validation": self.cross_validation,
        }

    @classmethod
    def from_state(
        cls, state: dict | None, patience: int, min_examples: int = 0, schedule: str = "constant"
    ) -> PassSelection:
        """From :meth:`to_state`; a state saved before holdouts existed has judged no pass, and one saved
        before schedules went on at one rate."""
        selection = cls(patience, min_examples, schedule)
        if state:
            selection.history = [dict(entry) for entry in state["history"]]
            selection.best_pass = int(state["best_pass"])
            best = state.get("best_loss")
            selection.best_loss = math.nan if best is None else float(best)
            selection.best_kept = state.get("best_kept")
            selection.stopped = bool(state["stopped"])
            selection.released = bool(state.get("released", False))
            selection.snapshot = state.get("snapshot")
            selection.schedule = state.get("schedule", "constant")
            run_pass, run_loss, previous = state.get("run") or (selection.best_pass, best, None)
            selection.run_best_pass = int(run_pass)
            selection.run_best_loss = math.nan if run_loss is None else float(run_loss)
            selection.previous_run_loss = math.nan if previous is None else float(previous)
            selection.restarts = int(state.get("restarts", 0))
            selection.restart_due = bool(state.get("restart_due", False))
            selection.cross_validation = state.get("cross_validation")
        return selection


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def holdout_progress_line(selection) -> str:
    """The line a judged pass prints: its holdout loss, the best pass so far, and whether training
    stops (see polybeam.learners.holdout.PassSelection)."""
    entry = selection.history[-1]
    if selection.cross_validation:
        chosen = selection.cross_validation
        rate = f" at rate {chosen['rate']:.4g}" if chosen.get("rate") is not None else ""
        return (
            f"polybeam[{os.getpid()}] fewer than {selection.min_examples} examples to hold out: "
            f"{chosen['folds']}-fold cross-validation over {chosen['examples']} examples chose pass "
            f"{selection.best_pass} (loss {selection.best_loss:.6f}){rate}; learning its {chosen['passes']} "
            "pass(es) again from the beginning on every example"
        )
    if selection.released:
        return (
            f"polybeam[{os.getpid()}] pass {entry['pass']}: {entry['examples']} examples held out, fewer than "
            f"{selection.min_examples} to judge passes by: every later pass learns every example and the last "
            "pass is kept"
        )
    loss = entry["holdout_loss"]
    shown = f"{loss:.6f}" if loss == loss else "-"
    candidates = entry["losses"]
    among = ""
    if len(candidates) > 1:
        among = " (" + ", ".join(f"{name} {value:.6f}" for name, value in candidates.items()) + ")"
    rate = f" at rate {entry['rate']:.4g}" if entry.get("rate") is not None else ""
    line = (
        f"polybeam[{os.getpid()}] pass {entry['pass']} holdout loss {shown}{among}{rate} over {entry['examples']} "
        f"held-out examples; best: pass {selection.best_pass}"
    )
    if "restart_rate" in entry:
        line += (
            f"; no better loss in {selection.patience} passes at this rate: learning starts again from the "
            f"beginning at rate {entry['restart_rate']:.4g}"
        )
    if selection.stopped and selection.restarts:
        line += (
            f"; the passes at this rate did no better than those before: training stops and keeps pass "
            f"{selection.best_pass}"
        )
    elif selection.stopped:
        line += f"; no better loss in {selection.patience} passes: training stops and keeps pass {selection.best_pass}"
    return line


def _state_without_selection(learner) -> dict:
    # A deep copy: a learner's state shares arrays, lists and dicts with the learner, which learns on.
    state = learner.__getstate__()
    state.pop("selection", None)  # before the copy: it holds the previous snapshot
    return copy.deepcopy(state)


def record_pass(learner, score: HoldoutScore, pass_number: int, *, final: bool = False):
    """Record pass ``pass_number``'s holdout ``score`` in ``learner`` (in place; returns it).

    The best pass's state is kept as a snapshot; when this pass ends training
    (``final``, or the holdout stopped it) and was not the best, the learner
    goes back to the best pass's state, its record of every pass kept.
    """
    selection = learner.selection_
    if selection.released:
        return learner  # the holdout was released after the first pass: nothing is judged any more
    if selection.record(pass_number, score):
        # The last pass needs no snapshot: nothing comes after it to be worse.
        selection.snapshot = None if final else _state_without_selection(learner)
    if not selection.released:
        selection.history[-1]["rate"] = learner.config.learning_rate
    if selection.restart_due and not final:
        restart(learner)
    elif (final or selection.stopped) and selection.best_pass != pass_number:
        restore_best(learner)
    if final or selection.stopped:
        selection.snapshot = None  # the learner is the best pass's now: the snapshot is spent
    return learner


def restart(learner) -> None:
    """Make ``learner`` a fresh learner at ``RESTART_RATE_FACTOR`` times its rate, keeping its record of the
    passes (whose snapshot holds the best pass so far): the ``restart`` pass schedule."""
    selection = learner.selection_
    config = dataclasses.replace(learner.config, learning_rate=learner.config.learning_rate * RESTART_RATE_FACTOR)
    linear = getattr(learner, "linear", learner)
    renew(learner, config, passes_before=linear.passes_before_ + len(linear.passes_) + 1)  # (this pass not closed)
    selection.history[-1]["restart_rate"] = config.learning_rate
    selection.begin_run()
    learner.selection_ = selection


def renew(learner, config: LearnerConfig, passes_before: int = 0) -> None:
    """Make ``learner`` (in place) a fresh learner of its kind with ``config``, still reporting its learning
    curve where it did; ``passes_before``: the passes its curve numbers before its own."""
    progress = getattr(learner, "linear", learner).curve_.progress
    learner.__setstate__(learner.restarted(config).__getstate__())
    linear = getattr(learner, "linear", learner)
    linear.curve_.progress, linear.passes_before_ = progress, passes_before


def restore_best(learner) -> None:
    """Make ``learner`` the best pass's state again, keeping its record of the passes."""
    selection = learner.selection_
    if selection.snapshot is None:
        return
    learner.__setstate__(selection.snapshot)
    learner.selection_ = selection


def shuffled(batch: ExampleBatch, random: np.random.RandomState | np.random.Generator | None) -> ExampleBatch:
    """``batch``'s examples in a random order drawn from ``random`` (``batch`` itself without one).

    >>> batch = ExampleBatch.from_rows([(float(label), {label + 1: 1.0}) for label in range(5)])
    >>> shuffled(batch, np.random.RandomState(0)).labels.tolist()
    [2.0, 0.0, 1.0, 3.0, 4.0]
    """
    if random is None or len(batch) < 2:
        return batch
    return batch.take(random.permutation(len(batch)))
