"""Per-key evaluation and prediction by shards of models: whole batches scored against many keys' models.

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

import itertools
import pickle
from typing import NamedTuple

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics

from polybeam.formats.records import DeadLetter
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.key_scoring import ScoringTable, row_values, scorable
from polybeam.learners.key_spec import all_text
from polybeam.learners.keyed_evaluation import KeyedEvaluation
from polybeam.learners.model import Model
from polybeam.learners.model_shards import shard_of
from polybeam.transforms.combining import MergeFn
from polybeam.transforms.evaluate import OVERALL
from polybeam.transforms.keyed_files import key_text
from polybeam.transforms.keys import KeyFn, key_codes
from polybeam.transforms.model_io import read_model
from polybeam.transforms.predict import ScoredBatch
from polybeam.transforms.routing import UNROUTED, ModelLibrary

# What a key's entry says when its model is not in the scoring table.
_OWN_MODEL = -2  # a model the table cannot hold: it scores its own rows
_NO_MODEL = -1
_UNKNOWN = -3  # (not looked up yet)
_PART_SHIFT = 32  # a key's place in the scoring tables: its table's number above these bits, its row below


class KeyScorer:
    """A worker's view of a sharded folder of per-key models for scoring: each shard's models loaded
    once (see the module docstring). ``where(name)`` is a key's place in :attr:`tables` (its table's
    number shifted by ``_PART_SHIFT``, and its row), or ``_OWN_MODEL`` (its Model in :attr:`own`), or
    ``_NO_MODEL``."""

    def __init__(self, library: ModelLibrary):
        self.library = library
        folder = library.keyed
        self.shards = folder.index["shards"]
        self.config = LearnerConfig.from_dict(folder.index["config"])
        self._folder = folder
        self._loaded: set[int] = set()
        self._where: dict[str, int] = {}
        self.own: dict[str, Model] = {}
        # One scoring table per part of a shard loaded (its keys learned as a table; its other records):
        # a key's place is PART << 32 | ROW, so that loading a shard never copies the tables loaded before.
        self.tables: list[ScoringTable] = []
        self.fallback: Model | None = None

    def places(self, names: list) -> np.ndarray:
        """:meth:`where` of every name: known names in one C-level pass, the others one by one (each
        loads its shard the first time)."""
        found = np.fromiter(map(self._where.get, names, itertools.repeat(_UNKNOWN)), dtype=np.int64, count=len(names))
        for position in np.flatnonzero(found == _UNKNOWN):
            found[position] = self.where(names[position])
        return found

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
        table = reader.table()
        if table is not None:
            part = len(self.tables) << _PART_SHIFT
            self.tables.append(ScoringTable.from_key_table(table))
            for row, name in enumerate(table.key_list):
                self._where[name] = part | row
        models = []
        for name in reader.record_keys():
            model = reader.model(name)
            if scorable(model):
                self._where[name] = (len(self.tables) << _PART_SHIFT) | len(models)
                models.append(model)
            else:
                self._where[name] = _OWN_MODEL
                self.own[name] = model
        if models:
            self.tables.append(ScoringTable.from_models(self.config, models))

    def margins(self, batch: ExampleBatch, places: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(margins, label_min, label_max)`` of each row of ``batch`` with the model at its place (from
        :meth:`where`; a negative place: 0)."""
        margins, label_min, label_max = np.zeros(len(batch)), np.zeros(len(batch)), np.zeros(len(batch))
        placed = np.flatnonzero(places >= 0)
        parts = places[placed] >> _PART_SHIFT
        order = np.argsort(parts, kind="stable")  # (each table scores its own rows, in one call)
        placed, parts = placed[order], parts[order]
        bounds = np.concatenate([[0], np.flatnonzero(np.diff(parts)) + 1, [len(parts)]])
        for start, stop in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            if start == stop:
                continue
            mine = placed[start:stop]
            table, rows = self.tables[int(parts[start])], places[mine] & ((1 << _PART_SHIFT) - 1)
            margins[mine] = table.margins(batch, rows, mine)
            label_min[mine] = table.label_min[rows]
            label_max[mine] = table.label_max[rows]
        return margins, label_min, label_max

    def fallback_model(self) -> Model | None:
        """The model of keys without one of their own (``--fallback-model``), read once; None without."""
        if self.fallback is None and self.library.fallback is not None:
            self.fallback = read_model(self.library.fallback)
        return self.fallback


class ScoredRows(NamedTuple):
    """A batch scored by its keys' models: example ``i`` has key ``keys[codes[i]]`` (text ``names[...]``),
    margin ``margins[i]`` and its model's label range; ``scored`` marks the examples whose key had a model
    (or the fallback), ``unrouted`` lists the others."""

    codes: np.ndarray
    keys: tuple
    names: list
    margins: np.ndarray
    label_min: np.ndarray
    label_max: np.ndarray
    scored: np.ndarray
    unrouted: np.ndarray


def score_rows(scorer: KeyScorer, key: KeyFn, batch: ExampleBatch) -> ScoredRows:
    """Each example of ``batch`` scored by its key's model (see the module docstring)."""
    codes, keys = key_codes(key, batch)
    names = list(keys) if all_text(keys) else [key_text(value) for value in keys]
    where = scorer.places(names)
    rows_where = where[codes] if len(batch) else np.zeros(0, np.int64)
    margins = np.zeros(len(batch))
    label_min, label_max = np.zeros(len(batch)), np.zeros(len(batch))
    scored = rows_where >= 0
    if scored.any():
        margins, label_min, label_max = scorer.margins(batch, rows_where)

    def score_own(model: Model, rows: np.ndarray) -> None:
        margins[rows] = model.margins(batch.take(rows))
        label_min[rows] = float(model.metadata.get("label_min", 0.0))
        label_max[rows] = float(model.metadata.get("label_max", 0.0))
        scored[rows] = True

    for code in np.flatnonzero(where == _OWN_MODEL):
        score_own(scorer.own[names[code]], np.flatnonzero(codes == code))
    unrouted = np.flatnonzero(~scored)
    fallback = scorer.fallback_model() if len(unrouted) else None
    if fallback is not None:
        score_own(fallback, unrouted)
        unrouted = unrouted[:0]
    return ScoredRows(codes, keys, names, margins, label_min, label_max, scored, unrouted)


class _KeyScoringFn(beam.DoFn):
    """What evaluating and predicting by shards of models share: a worker's :class:`KeyScorer`, and a dead
    letter for each example whose key has no model (and no fallback)."""

    def __init__(self, library: ModelLibrary, key: KeyFn):
        self.library = library
        self.key = key

    def setup(self):
        self._scorer = KeyScorer(self.library)
        self._unrouted = Metrics.counter("polybeam.route", "examples_without_model")

    def process(self, batch: ExampleBatch):
        scored = score_rows(self._scorer, self.key, batch)
        yield from self._dead_letters(batch, scored)
        rows = np.flatnonzero(scored.scored)
        if len(rows):
            yield self.output(batch, scored, rows)

    def output(self, batch: ExampleBatch, scored: ScoredRows, rows: np.ndarray):
        """What the examples ``rows`` of ``batch``, scored, become (one element)."""
        raise NotImplementedError

    def _dead_letters(self, batch: ExampleBatch, scored: ScoredRows):
        self._unrouted.inc(len(scored.unrouted))
        for row in scored.unrouted:
            reason = f"no model for key {scored.names[scored.codes[row]]!r} (and no --fallback-model)"
            row_id = int(batch.row_ids[row]) if batch.row_ids is not None else -1
            # Line number and text are filled in by the dead-letter path, which reads the file.
            yield beam.pvalue.TaggedOutput(UNROUTED, DeadLetter(batch.source or "", None, row_id, None, reason))


class _EvaluateKeysFn(_KeyScoringFn):
    """Emits a KeyedEvaluation per batch (and dead letters)."""

    def output(self, batch: ExampleBatch, scored: ScoredRows, rows: np.ndarray) -> KeyedEvaluation:
        config = self._scorer.config
        evaluation = KeyedEvaluation(config.loss, config.loss_parameter)
        # (a key whose rows are all dead letters has no metrics; counted, not sorted: codes are 0..len(keys))
        present = np.flatnonzero(np.bincount(scored.codes[rows], minlength=len(scored.keys)))
        ids = np.full(len(scored.keys), -1, dtype=np.int64)
        ids[present] = evaluation.key_ids(
            np.fromiter(scored.keys, dtype=object, count=len(scored.keys))[present].tolist()
        )
        return evaluation.add(
            ids[scored.codes[rows]],
            batch.labels[rows],
            scored.margins[rows],
            batch.weights[rows],
            scored.label_min[rows],
            scored.label_max[rows],
        )


class _PredictKeysFn(_KeyScoringFn):
    """Emits a ScoredBatch per batch, each example with its key (and dead letters)."""

    def __init__(self, library: ModelLibrary, key: KeyFn, kind: str | None):
        super().__init__(library, key)
        self.kind = kind

    def output(self, batch: ExampleBatch, scored: ScoredRows, rows: np.ndarray) -> ScoredBatch:
        config = self._scorer.config
        keys = np.empty(len(scored.keys), dtype=object)
        keys[:] = scored.keys
        return ScoredBatch(
            row_values(config, scored.margins[rows], self.kind, scored.label_min[rows], scored.label_max[rows]),
            batch.labels[rows],
            batch.source,
            None if batch.row_ids is None else batch.row_ids[rows],
            None if batch.tags is None else batch.tags[rows],
            keys[scored.codes[rows]],
            config.class_names,
            kind=self.kind or "",
        )


class KeyedMetricsFn(MergeFn):
    """Merges KeyedEvaluations into ``(key, metrics)`` pairs, and ``(OVERALL, metrics)``."""

    def compact(self, accumulator):
        return accumulator.compact() if accumulator is not None else None

    def extract_output(self, accumulator) -> bytes:
        """The pairs, pickled: ``CombineGlobally`` hands its output through a side input (for the default of
        an empty input), whose value a worker weighs object by object when caching it, and the pairs of
        100,000 keys are a million objects (a second) where one byte string is nothing."""
        if accumulator is None:
            pairs = [(OVERALL, {"examples": 0, "loss": None, "error": None, "auc": None, "mse": None})]
        else:
            pairs = [*accumulator.results().items(), (OVERALL, accumulator.overall())]
        return pickle.dumps(pairs)


class PredictKeys(beam.PTransform):
    """A :class:`~polybeam.transforms.predict.ScoredBatch` per input batch, each example scored by its key's
    model in ``library`` (``predictions``: the kind written, see :class:`~polybeam.transforms.predict.Predict`);
    ``.unrouted`` holds the dead letters of rows whose key has no model."""

    def __init__(self, library: ModelLibrary, key: KeyFn, predictions: str | None = None):
        super().__init__()
        self.library = library
        self.key = key
        self.predictions = predictions

    def expand(self, batches):
        scored = batches | "ScoreKeys" >> beam.ParDo(
            _PredictKeysFn(self.library, self.key, self.predictions)
        ).with_outputs(UNROUTED, main="scored")
        return scored.scored, scored[UNROUTED]


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
            | "EachKey" >> beam.FlatMap(pickle.loads)
        )
        return metrics, scored[UNROUTED]
