"""Evaluate: held-out metrics of a model over ExampleBatches, as one dict per model.

Each bundle scores its batches into a partial :class:`Evaluation`; partials are
compacted and merged by a CombineFn, so metrics (including the exact AUC) come
out of one pass over any amount of data.
"""

from __future__ import annotations

import apache_beam as beam

from polybeam.learners.evaluation import Evaluation
from polybeam.transforms.combining import MergeFn
from polybeam.transforms.keys import KeyFn, split_by_key
from polybeam.transforms.model_io import model_argument, model_for


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
    of ``(key, Model)`` and the output holds ``(key, metrics)`` per key.
    """

    def __init__(self, model, *, key: KeyFn | None = None):
        super().__init__()
        self.model = model
        self.key = key

    def expand(self, batches):
        keyed = self.key is not None
        batches = split_by_key(batches, self.key)
        partial = batches | "Score" >> beam.ParDo(_ScoreFn(keyed), model_argument(self.model, keyed))
        if keyed:
            return partial | "Metrics" >> beam.CombinePerKey(EvaluationFn())
        return partial | "Metrics" >> beam.CombineGlobally(EvaluationFn())
