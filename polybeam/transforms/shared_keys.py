"""Beam side of the shared per-key model (``--key-model shared``; see :mod:`polybeam.learners.multitask`).

:class:`CrossKeys` crosses every batch with its keys and gathers the keys that
training learns; :class:`RecordTrainedKeys` writes the crossing and those keys
into the model, which then crosses its own input when it predicts. ``Train``
uses both when given ``shared_keys``.

>>> import apache_beam as beam
>>> import numpy as np
>>> from dataclasses import replace
>>> from polybeam.learners.batch import ExampleBatch
>>> from polybeam.learners.multitask import SharedKeys
>>> from polybeam.transforms.train import Train
>>> batch = ExampleBatch.from_rows([(1.0, {1: 1.0}), (-1.0, {1: 1.0})] * 20, bits=12)
>>> batch = replace(batch, key_codes=np.array([0, 1] * 20, dtype=np.int32), key_names=("up", "down"))
>>> with beam.Pipeline(runner="FnApiRunner") as p:
...     _ = (p | beam.Create([batch]) | Train(loss="logistic", bits=12, shared_keys=SharedKeys("column:k"))
...          | beam.Map(lambda model: print(len(model.shared_keys.trained), model.predict(batch)[:2].round(2))))
2 [0.96 0.04]
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import apache_beam as beam
import numpy as np

from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.holdout import training_part
from polybeam.learners.model import Model
from polybeam.learners.multitask import SharedKeys, batch_key_hashes
from polybeam.transforms.windows import combine_globally


class CrossedBatches(NamedTuple):
    crossed: beam.PCollection  # the crossed batches
    trained: beam.PCollection  # one sorted int64 array: the hashes of the keys that training learns


# Waiting key hashes folded into the sorted union at once, at least.
_FOLD_AT = 1 << 22


class _UnionKeys(beam.CombineFn):
    """The distinct key hashes of many arrays, as one sorted array. The accumulator is a list whose first
    array is sorted and distinct and the rest wait: they are folded in when they outgrow it, so adding a
    million keys a batch at a time costs O(n log n), not a sort of every key so far per batch (and a few
    million waiting keys, tens of megabytes, are folded at once: each key comes in every batch it has rows in)."""

    def create_accumulator(self):
        return [np.zeros(0, dtype=np.int64)]

    def add_input(self, keys, more):
        keys.append(np.asarray(more, dtype=np.int64))
        if sum(len(part) for part in keys[1:]) > max(len(keys[0]), _FOLD_AT):
            keys[:] = [np.unique(np.concatenate(keys))]
        return keys

    def merge_accumulators(self, accumulators):
        return [np.unique(np.concatenate([part for keys in accumulators for part in keys]))]

    def compact(self, keys):
        return [np.unique(np.concatenate(keys))] if len(keys) > 1 else keys

    def extract_output(self, keys):
        return self.compact(keys)[0]


def _learned_keys(batch: ExampleBatch, shared: SharedKeys, config: LearnerConfig) -> np.ndarray:
    """The hashes of the keys a learner learns from ``batch``: a key seen only in held-out examples has no
    offsets, so the model must not cross it."""
    learned = training_part(batch, config) if config.holds_out else batch
    return np.unique(batch_key_hashes(learned, shared.key, shared.seed))


class CrossKeys(beam.PTransform):
    """ExampleBatches -> :class:`CrossedBatches` (every key crossed, as training needs)."""

    def __init__(self, shared: SharedKeys, config: LearnerConfig):
        super().__init__()
        self.shared = shared
        self.config = config

    def expand(self, batches):
        shared, config = self.shared, self.config
        learned = batches | "KeysLearned" >> beam.Map(_learned_keys, shared, config)
        trained = learned | "UnionKeys" >> combine_globally(_UnionKeys(), learned)
        crossed = batches | "Cross" >> beam.Map(lambda batch: shared.cross(batch, config.bits))
        return CrossedBatches(crossed, trained)


def with_trained_keys(model: Model, shared: SharedKeys, trained: np.ndarray) -> Model:
    """``model`` recorded as a shared per-key model whose keys with offsets are ``trained``."""
    record = dataclasses.replace(shared, trained=trained).to_metadata()
    return dataclasses.replace(model, metadata={**model.metadata, **record})


class RecordTrainedKeys(beam.PTransform):
    """Models -> the same models recorded as shared per-key models (see :func:`with_trained_keys`)."""

    def __init__(self, shared: SharedKeys, trained):
        super().__init__()
        self.shared = shared
        self.trained = trained

    def expand(self, models):
        return models | "WithKeys" >> beam.Map(with_trained_keys, self.shared, beam.pvalue.AsSingleton(self.trained))


class SharedModel:
    """A shared per-key model file as a per-key model source (``has``/``model``, as
    :class:`~polybeam.transforms.routing.ModelLibrary`): every key's model is the one shared model, which
    crosses each example with its key itself (a key it never trained gets the shared part). A worker
    reads the file itself.
    """

    def __init__(self, path: str):
        self.path = path
        self._model: Model | None = None

    def has(self, key) -> bool:
        return True

    def model(self, key=None) -> Model:
        if self._model is None:
            from polybeam.transforms.model_io import read_model

            self._model = read_model(self.path)
        return self._model

    def __getstate__(self) -> dict:
        return {"path": self.path}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["path"])
