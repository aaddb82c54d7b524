"""Per-key evaluation by shards of models: whole batches scored against many keys' models in one pass.

Routing a batch to per-key models splits it by key into one element per key and
batch, each scored and evaluated on its own: tens of microseconds of Python per
key and batch, so that evaluating a folder of many keys of a few rows cost
several times training it. :class:`EvaluateKeys` keeps batches whole. A worker
loads a shard file of the folder the first time one of its keys comes, all of
its keys' models at once into a :class:`~polybeam.learners.key_scoring.ScoringTable`
(the keys learned as a table straight from their arrays, no model object per
key); each batch's rows are then scored with their own key's model in one
compiled call and added to a :class:`~polybeam.learners.keyed_evaluation.KeyedEvaluation`,
which a CombineFn merges into each key's metrics and the overall ones. Models
a table cannot hold (apple's, softmax, a missing value's indicator) score their
own rows; a key without a model is scored by the fallback model, or its rows
become dead letters, as :class:`~polybeam.transforms.routing.RouteByKey` does.
"""

from __future__ import annotations

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics

from polybeam.formats.records import DeadLetter
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.key_scoring import ScoringTable, scorable
from polybeam.learners.keyed_evaluation import KeyedEvaluation
from polybeam.learners.model import Model
from polybeam.learners.model_shards import shard_of
from polybeam.transforms.combining import MergeFn
from polybeam.transforms.evaluate import OVERALL
from polybeam.transforms.keyed_files import key_text
from polybeam.transforms.keys import KeyFn, key_codes
from polybeam.transforms.model_io import read_model
from polybeam.transforms.routing import UNROUTED, ModelLibrary

# What a key's entry says when its model is not in the scoring table.
_OWN_MODEL = -2  # a model the table cannot hold: it scores its own rows
_NO_MODEL = -1


class KeyScorer:
    """A worker's view of a sharded folder of per-key models for scoring: each shard's models loaded
    once (see the module docstring). ``where(name)`` is a key's row of :attr:`table`, or
    ``_OWN_MODEL`` (its Model in :attr:`own`), or ``_NO_MODEL``."""

    def __init__(self, library: ModelLibrary):
        self.library = library
        folder = library.keyed
        self.shards = folder.index["shards"]
        self.config = LearnerConfig.from_dict(folder.index["config"])
        self._folder = folder
        self._loaded: set[int] = set()
        self._where: dict[str, int] = {}
        self.own: dict[str, Model] = {}
        self._parts: list[ScoringTable] = []
        self.table: ScoringTable | None = None
        self.fallback: Model | None = None

    def where(self, name: str) -> int:
        found = self._where.get(name)
        if found is None:
            shard = shard_of(name, self.shards)
            if shard not in self._loaded:
                self._load(shard)
            found = self._where.setdefault(name, _NO_MODEL)
        return found

    def _load(self, shard: int) -> None:
        self._loaded.add(shard)
        reader = self._folder.shard_reader(shard)
        if reader is None:
            return
        first = len(self.table) if self.table is not None else 0
        parts = []
        table = reader.table()
        if table is not None:
            parts.append(ScoringTable.from_key_table(table))
            for row, name in enumerate(table.key_list):
                self._where[name] = first + row
            first += len(table)
        models = []
        for name in reader.record_keys():
            model = reader.model(name)
            if scorable(model):
                self._where[name] = first + len(models)
                models.append(model)
            else:
                self._where[name] = _OWN_MODEL
                self.own[name] = model
        if models:
            parts.append(ScoringTable.from_models(self.config, models))
        if parts:
            self._parts.extend(parts)
            self.table = ScoringTable.joined(self._parts)

    def fallback_model(self) -> Model | None:
        """The model of keys without one of their own (``--fallback-model``), read once; None without."""
        if self.fallback is None and self.library.fallback is not None:
            self.fallback = read_model(self.library.fallback)
        return self.fallback


class _EvaluateKeysFn(beam.DoFn):
    """Scores each batch's rows with their keys' models; emits a KeyedEvaluation per batch and a dead letter
    per row whose key has no model (and no fallback)."""

    def __init__(self, library: ModelLibrary, key: KeyFn):
        self.library = library
        self.key = key

    def setup(self):
        self._scorer = KeyScorer(self.library)
        self._unrouted = Metrics.counter("polybeam.route", "examples_without_model")

    def process(self, batch: ExampleBatch):
        scorer = self._scorer
        codes, keys = key_codes(self.key, batch)
        names = [key_text(key) for key in keys]
        where = np.fromiter((scorer.where(name) for name in names), dtype=np.int64, count=len(names))
        rows_where = where[codes] if len(batch) else np.zeros(0, np.int64)
        margins = np.zeros(len(batch))
        label_min, label_max = np.zeros(len(batch)), np.zeros(len(batch))
        tabled = rows_where >= 0
        if tabled.any():
            margins = scorer.table.margins(batch, np.where(tabled, rows_where, -1))
            label_min[tabled] = scorer.table.label_min[rows_where[tabled]]
            label_max[tabled] = scorer.table.label_max[rows_where[tabled]]
        scored = tabled.copy()
        for code in np.flatnonzero(where == _OWN_MODEL):
            rows = np.flatnonzero(codes == code)
            model = scorer.own[names[code]]
            self._score_own(model, batch, rows, margins, label_min, label_max)
            scored[rows] = True
        missing = ~scored
        if missing.any():
            fallback = scorer.fallback_model()
            rows = np.flatnonzero(missing)
            if fallback is not None:
                self._score_own(fallback, batch, rows, margins, label_min, label_max)
                scored[rows] = True
            else:
                yield from self._dead_letters(batch, rows, codes, names)
        if not scored.any():
            return
        evaluation = KeyedEvaluation(scorer.config.loss, scorer.config.loss_parameter)
        rows = np.flatnonzero(scored)
        present = np.unique(codes[rows])  # (a key whose rows are all dead letters has no metrics)
        ids = np.full(len(keys), -1, dtype=np.int64)
        ids[present] = evaluation.key_ids(keys[code] for code in present)
        yield evaluation.add(
            ids[codes[rows]], batch.labels[rows], margins[rows], batch.weights[rows], label_min[rows], label_max[rows]
        )

    @staticmethod
    def _score_own(model: Model, batch: ExampleBatch, rows, margins, label_min, label_max) -> None:
        margins[rows] = model.margins(batch.take(rows))
        label_min[rows] = float(model.metadata.get("label_min", 0.0))
        label_max[rows] = float(model.metadata.get("label_max", 0.0))

    def _dead_letters(self, batch: ExampleBatch, rows, codes, names):
        self._unrouted.inc(len(rows))
        for row in rows:
            reason = f"no model for key {names[codes[row]]!r} (and no --fallback-model)"
            row_id = int(batch.row_ids[row]) if batch.row_ids is not None else -1
            # Line number and text are filled in by the dead-letter path, which reads the file.
            yield beam.pvalue.TaggedOutput(UNROUTED, DeadLetter(batch.source or "", None, row_id, None, reason))


class KeyedMetricsFn(MergeFn):
    """Merges KeyedEvaluations into ``(key, metrics)`` pairs, and ``(OVERALL, metrics)``."""

    def compact(self, accumulator):
        return accumulator.compact() if accumulator is not None else None

    def extract_output(self, accumulator) -> list:
        if accumulator is None:
            return [(OVERALL, {"examples": 0, "loss": None, "error": None, "auc": None, "mse": None})]
        return [*accumulator.results().items(), (OVERALL, accumulator.overall())]


class EvaluateKeys(beam.PTransform):
    """``(key, metrics)`` of each key of the input batches against ``library``'s models, and
    ``(OVERALL, metrics)``; ``.unrouted`` holds the dead letters of rows whose key has no model (see the
    module docstring)."""

    def __init__(self, library: ModelLibrary, key: KeyFn):
        super().__init__()
        self.library = library
        self.key = key

    def expand(self, batches):
        scored = batches | "ScoreKeys" >> beam.ParDo(_EvaluateKeysFn(self.library, self.key)).with_outputs(
            UNROUTED, main="evaluations"
        )
        metrics = (
            scored.evaluations
            | "KeyedMetrics" >> beam.CombineGlobally(KeyedMetricsFn())
            | "EachKey" >> beam.FlatMap(lambda pairs: pairs)
        )
        return metrics, scored[UNROUTED]
