"""Shards of keys: how per-key learners scale to millions of keys.

A per-key job hashes each example's key into one of ``shards`` shards
(:func:`polybeam.learners.model_shards.shard_of`, the same hash the model
folder's shard files use). Each shard's examples meet on one worker, which
trains its keys one after the other (``Train``), and its models leave as one
element, a :class:`KeyShard`, which becomes one shard file of the model folder
(``WriteKeyedModels``): no Beam element, no file and no dense state per key.

>>> from polybeam.learners.batch import ExampleBatch
>>> batch = ExampleBatch.from_rows([(1.0, {1: 1.0}), (0.0, {2: 1.0}), (1.0, {3: 1.0})])
>>> parts = list(SplitByShard(lambda b: np.array(["a", "b", "a"], dtype=object), 4).process(batch))
>>> [(shard, part.labels.tolist()) for shard, part in parts]
[(1, [0.0]), (3, [1.0, 1.0])]
>>> [(key, examples.labels.tolist()) for key, examples in key_segments([part for _, part in parts])]
[('b', [0.0]), ('a', [1.0, 1.0])]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import apache_beam as beam
import numpy as np

from polybeam.learners.batch import ExampleBatch
from polybeam.learners.model import Model
from polybeam.learners.model_shards import shard_of
from polybeam.transforms.keyed_files import key_text
from polybeam.transforms.keys import KeyFn, key_codes

# Shards the keys of a per-key job are hashed into: enough for every worker of a large job to have
# several, few enough that each shard file of the model folder holds many keys.
KEY_SHARDS = 64


@dataclasses.dataclass
class KeyShard:
    """The models of one shard's keys: ``shard`` of ``shards``, ``models`` as ``(key, Model)`` pairs, and
    what the models share without carrying it each: ``names`` (slot -> feature name) and ``shared``
    metadata (``input``, ``provenance``; see :mod:`polybeam.learners.model_shards`)."""

    shard: int
    shards: int
    models: list[tuple[object, Model]]
    names: dict = dataclasses.field(default_factory=dict)
    shared: dict = dataclasses.field(default_factory=dict)

    def model_pairs(self):
        """``(key, Model)`` pairs, each model with its own names and the shared metadata."""
        for key, model in self.models:
            names = {int(slot): self.names[slot] for slot in model.slots if int(slot) in self.names}
            yield (
                key,
                dataclasses.replace(model, names={**names, **model.names}, metadata={**model.metadata, **self.shared}),
            )

    def __iter__(self):
        return iter(self.models)

    def __len__(self) -> int:
        return len(self.models)


class SplitByShard(beam.DoFn):
    """Emits ``(shard, part)``: the examples of a batch whose keys hash to each shard, with their key
    codes (see :func:`polybeam.transforms.keys.key_codes`)."""

    def __init__(self, key: KeyFn, shards: int):
        self.key = key
        self.shards = shards

    def process(self, batch: ExampleBatch):
        codes, keys = key_codes(self.key, batch)
        shard_of_key = np.fromiter(
            (shard_of(key_text(key), self.shards) for key in keys), dtype=np.int64, count=len(keys)
        )
        shards = shard_of_key[codes]
        keyed = dataclasses.replace(batch, key_codes=np.asarray(codes, dtype=np.int32), key_names=keys)
        if len(shards) and (shards == shards[0]).all():
            yield int(shards[0]), keyed
            return
        order = np.argsort(shards, kind="stable")
        for rows in np.split(order, np.flatnonzero(np.diff(shards[order])) + 1):
            # The part names its own keys only (a batch of many keys would carry them all to every shard).
            present, codes_of_rows = np.unique(keyed.key_codes[rows], return_inverse=True)
            part = dataclasses.replace(
                keyed.take(rows),
                key_codes=codes_of_rows.astype(np.int32),
                key_names=tuple(keys[code] for code in present),
            )
            yield int(shards[rows[0]]), part


def _batch_order(batch: ExampleBatch) -> tuple:
    return batch.source or "", int(batch.row_ids[0]) if batch.row_ids is not None and len(batch) else 0


def key_segments(batches: Iterable[ExampleBatch]):
    """``(key, examples)`` of every key of ``batches`` (the parts of one shard), keys in the order they
    first come, each key's examples in the order of the batches sorted by source and first row (a
    runner hands a group's values in any order). The examples carry no feature names (see
    :func:`feature_names`)."""
    batches = sorted(batches, key=_batch_order)
    index: dict = {}
    codes = []
    for batch in batches:
        local = np.fromiter(
            (index.setdefault(key, len(index)) for key in batch.key_names), dtype=np.int64, count=len(batch.key_names)
        )
        codes.append(local[batch.key_codes])
    if not batches:
        return
    every = ExampleBatch.concat([dataclasses.replace(b, key_codes=None, key_names=(), names=None) for b in batches])
    codes = np.concatenate(codes)
    order = np.argsort(codes, kind="stable")
    by_key, codes = every.take(order), codes[order]  # one gather; each key's examples are then a view
    keys = list(index)
    bounds = np.concatenate([[0], np.flatnonzero(np.diff(codes)) + 1, [len(codes)]]) if len(codes) else ()
    for start, stop in zip(bounds[:-1], bounds[1:]):
        yield keys[codes[start]], by_key.rows_between(int(start), int(stop))


def feature_names(batches: Iterable[ExampleBatch]) -> dict:
    """The feature names (slot -> name) of ``batches``, the first name of a slot winning."""
    names: dict = {}
    for batch in batches:
        for slot, name in (batch.names or {}).items():
            names.setdefault(int(slot), name)
    return names
