"""The holdout's judgement of every pass on Beam (see :mod:`polybeam.learners.holdout`).

A tenth of the examples is held out (:func:`held_out`); after each pass the
learner of the pass scores them (:class:`ScoreHoldout` with the learner as a
side input; per key, each key's state joined to its held-out examples), and
:class:`JudgePass` records the score in the learner, which goes back to its
best pass and learns no more once its holdout stops improving.
"""

from __future__ import annotations

import sys

import apache_beam as beam
from apache_beam.metrics import Metrics

from polybeam.learners.config import LearnerConfig
from polybeam.learners.holdout import HoldoutScore, PassSelection, held_out_part, record_pass
from polybeam.learners.polynomial import linear_part
from polybeam.transforms.progress import holdout_progress_line
from polybeam.transforms.windows import in_window


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


def without_record(element, keyed: bool):
    """A learner (or ``(key, learner)``) without the record of its passes' holdout (a copy)."""
    key, learner = element if keyed else (None, element)
    learner = learner.copy()
    learner.selection_ = PassSelection.of(learner.config)
    return (key, learner) if keyed else learner


def held_out(element, config: LearnerConfig, keyed: bool):
    """The held-out examples of a batch (or ``(key, batch)``), if it has any."""
    key, batch = element if keyed else (None, element)
    held = held_out_part(batch, config)
    if held is not None:
        yield (key, held) if keyed else held


class ScoreHoldout(beam.DoFn):
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


def holdout_metric(number: int):
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
        holdout_metric(number).update(int(round(loss * 1e6)))
    if selection.stopped:
        Metrics.counter("polybeam.train", "learners_stopped_early").inc()
    if progress:
        print(holdout_progress_line(selection), file=sys.stderr, flush=True)
    yield key, judged


class JudgePass(beam.PTransform):
    """The learners after pass ``number`` (the input: one learner, or ``(key, learner)`` pairs when
    ``keyed``), judged on the held-out examples ``held``: each pass's holdout loss joins the record of
    the passes before (``previous``, None after the first), and a learner whose holdout stopped
    improving goes back to its best pass and learns no more."""

    def __init__(self, held, previous, number: int, *, final: bool, keyed: bool, progress: bool):
        super().__init__()
        self.held, self.previous, self.number = held, previous, number
        self.final, self.keyed, self.progress = final, keyed, progress

    def expand(self, merged):
        keyed = self.keyed
        if keyed:  # each key's state joined to its held-out examples
            scores = {"state": merged, "held": self.held} | "JoinHeldOut" >> beam.CoGroupByKey()
            scores = scores | "ScoreHoldout" >> beam.FlatMap(_score_key)
        else:
            scores = (
                self.held
                | "ScoreHoldout" >> beam.ParDo(ScoreHoldout(), beam.pvalue.AsSingleton(merged))
                | "SumHoldout" >> beam.CombinePerKey(_SumHoldoutScores())
            )
        joined = {"state": merged if keyed else merged | "KeyState" >> beam.Map(_keyed_none), "score": scores}
        if self.previous is not None:
            joined["previous"] = self.previous if keyed else self.previous | "KeyPrevious" >> beam.Map(_keyed_none)
        judged = (
            joined
            | "JoinHoldout" >> beam.CoGroupByKey()
            | "Judge" >> beam.FlatMap(_judge, self.number, self.final, self.progress and not keyed)
        )
        return judged if keyed else judged | "Unkey" >> beam.Values()


def _keyed_none(state):
    return None, state


def report_selection(selection: PassSelection, stopped) -> None:
    """Publish the holdout losses of a learner's judged passes (and whether it stopped early) as metrics."""
    if not selection.judged or selection.released:
        return
    for record in selection.history:
        loss = record["holdout_loss"]
        if loss == loss:  # not NaN
            holdout_metric(record["pass"]).update(int(round(loss * 1e6)))
    if selection.stopped:
        stopped.inc()
