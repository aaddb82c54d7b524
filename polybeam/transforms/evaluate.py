"""Evaluate: held-out metrics of a model over ExampleBatches, as one dict per model.

Each bundle scores its batches into a partial :class:`Evaluation`; partials are
compacted and merged by a CombineFn, so metrics (the AUC in bounded memory) come
out of one pass over any amount of data.
"""

from __future__ import annotations

import apache_beam as beam

from polybeam.learners.evaluation import Evaluation
from polybeam.transforms.combining import MergeFn
from polybeam.transforms.keys import KeyFn, split_by_key
from polybeam.transforms.model_io import model_argument, model_for
from polybeam.transforms.windows import combine_globally

# The key under which Evaluate(..., overall=True) reports the metrics of all keys together
# (keys of examples are never None: the command line's keys are strings, "" when missing).
OVERALL = None


class _ScoreFn(beam.DoFn):
    def __init__(self, keyed: bool):
        self.keyed = keyed

    def process(self, element, models):
        key, batch, model = model_for(element, models, self.keyed)
        evaluation = Evaluation.for_model(model).add_batch(model, batch)
        yield (key, evaluation) if self.keyed else evaluation


class EvaluationFn(MergeFn):
    """Merges partial Evaluations into the metrics dict."""

    def compact(self, accumulator):
        return accumulator.compact() if accumulator is not None else None

    def extract_output(self, accumulator) -> dict:
        if accumulator is None:
            return {"examples": 0, "loss": None, "error": None, "auc": None, "mse": None}
        return accumulator.result()


class Evaluate(beam.PTransform):
    """Metrics of ``model`` on the input batches: examples, loss, error, auc, mse.

    ``model`` is a Model or a PCollection holding one; with ``key``, a PCollection
    of ``(key, Model)`` or a :class:`~polybeam.transforms.routing.ModelLibrary`,
    and the output holds ``(key, metrics)`` per key (with ``overall=True``, also
    ``(OVERALL, metrics)`` over all keys together). ``routed=True``: the input
    is ``(key, batch)`` pairs already.

    In event-time windows (see :mod:`polybeam.transforms.windows`), each window's
    examples are scored by the model of the same window (a model PCollection
    windowed alike, such as ``Train``'s output), with metrics per window.
    """

    def __init__(self, model, *, key: KeyFn | None = None, routed: bool = False, overall: bool = False):
        super().__init__()
        self.model = model
        self.key = key
        self.routed = routed
        self.overall = overall

    def expand(self, batches):
        keyed = self.key is not None or self.routed
        batches = batches if self.routed else split_by_key(batches, self.key)
        partial = batches | "Score" >> beam.ParDo(_ScoreFn(keyed), model_argument(self.model, keyed))
        if not keyed:
            return partial | "Metrics" >> combine_globally(EvaluationFn(), partial)
        per_key = partial | "Metrics" >> beam.CombinePerKey(EvaluationFn())
        if not self.overall:
            return per_key
        partials = partial | "Partials" >> beam.Values()
        overall = (
            partials
            | "Overall" >> combine_globally(EvaluationFn(), partials)
            | "AsOverall" >> beam.Map(lambda metrics: (OVERALL, metrics))
        )
        return (per_key, overall) | "PerKeyAndOverall" >> beam.Flatten()
