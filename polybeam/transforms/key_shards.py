"""Shards of keys: how per-key learners scale to millions of keys.

A per-key job hashes each example's key into one of ``shards`` shards
(:func:`polybeam.learners.model_shards.shard_of`, the same hash the model
folder's shard files use). Each shard's examples meet on one worker, which
trains its keys (``Train``: those of few rows together, as a table), and its
models leave as one element, a :class:`KeyShard`, which becomes one shard file
of the model folder (``WriteKeyedModels``): no Beam element, no file and no
dense state per key.

>>> from polybeam.learners.batch import ExampleBatch
>>> batch = ExampleBatch.from_rows([(1.0, {1: 1.0}), (0.0, {2: 1.0}), (1.0, {3: 1.0})])
>>> parts = list(SplitByShard(lambda b: np.array(["a", "b", "a"], dtype=object), 4).split(batch))
>>> [(shard, part.labels.tolist()) for shard, part in parts]
[(1, [0.0]), (3, [1.0, 1.0])]
>>> [(key, examples.labels.tolist()) for key, examples in key_segments([part for _, part in parts])]
[('b', [0.0]), ('a', [1.0, 1.0])]
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable

import apache_beam as beam
import numpy as np

from polybeam.learners.batch import ExampleBatch
from polybeam.learners.key_table import KeyTableModels
from polybeam.learners.model import Model
from polybeam.learners.model_shards import shards_of
from polybeam.transforms.keys import KeyFn, key_codes
from polybeam.transforms.windows import in_window

# Shards the keys of a per-key job are hashed into: enough for every worker of a large job to have
# several, few enough that each shard file of the model folder holds many keys.
KEY_SHARDS = 64


@dataclasses.dataclass
class KeyShard:
    """The models of one shard's keys: ``shard`` of ``shards``, ``models`` as ``(key, Model)`` pairs and
    ``table``, the models of keys learned as a table (:class:`~polybeam.learners.key_table.KeyTableModels`,
    or None), and what the models share without carrying it each: ``names`` (slot -> feature name) and
    ``shared`` metadata (``input``, ``provenance``; see :mod:`polybeam.learners.model_shards`)."""

    shard: int
    shards: int
    models: list[tuple[object, Model]]
    names: dict = dataclasses.field(default_factory=dict)
    shared: dict = dataclasses.field(default_factory=dict)
    table: KeyTableModels | None = None

    @property
    def config(self):
        """The models' learner settings (one per folder)."""
        return self.models[0][1].config if self.models else self.table.config

    @property
    def first_input(self) -> dict | None:
        """How the first model's input was read, as recorded in it (None: it does not say)."""
        return self.models[0][1].input if self.models else self.table.metadata.get("input")

    def model_pairs(self):
        """``(key, Model)`` pairs, each model with its own names and the shared metadata."""
        for key, model in self:
            names = {int(slot): self.names[slot] for slot in model.slots if int(slot) in self.names}
            yield (
                key,
                dataclasses.replace(model, names={**names, **model.names}, metadata={**model.metadata, **self.shared}),
            )

    def figures(self) -> tuple[np.ndarray, np.ndarray]:
        """``(examples, non-zero weights)`` of every model of the shard (the table's without making its models)."""
        examples = [int(model.metadata.get("examples", 0)) for _, model in self.models]
        nonzero = [model.nonzero for _, model in self.models]
        if self.table is not None:
            examples.extend(self.table.examples().tolist())
            nonzero.extend(self.table.nonzero_weights().tolist())
        return np.array(examples, dtype=np.int64), np.array(nonzero, dtype=np.int64)

    def with_metadata(self, stamped) -> KeyShard:
        """This shard with ``stamped(metadata)`` as every model's metadata (the table's too)."""
        models = [(key, dataclasses.replace(model, metadata=stamped(model.metadata))) for key, model in self.models]
        table = None if self.table is None else dataclasses.replace(self.table, metadata=stamped(self.table.metadata))
        return dataclasses.replace(self, models=models, table=table)

    def __iter__(self):
        yield from self.models
        if self.table is not None:
            yield from self.table

    def __len__(self) -> int:
        return len(self.models) + (len(self.table) if self.table is not None else 0)


# Rows of consecutive batches a worker gathers before splitting them by shard: a shard's part of one
# 4,096-row batch is ~64 rows at 64 shards, and the shuffle pays per element (pickling, grouping), so
# parts of blocks of many batches are ~16x fewer elements for the same bytes.
BLOCK_ROWS = 65_536


class SplitByShard(beam.DoFn):
    """Emits ``(shard, part)``: the examples whose keys hash to each shard, with their key codes (see
    :func:`polybeam.transforms.keys.key_codes`), of blocks of consecutive batches of one source (up to
    :data:`BLOCK_ROWS` rows, rows in read order; batches without row ids each on their own).
    :func:`gathered_by_key` puts the rows of one shard's parts back in read order."""

    def __init__(self, key: KeyFn, shards: int):
        self.key = key
        self.shards = shards

    def start_bundle(self):
        self._blocks: dict = {}  # (window, source) -> batches of a block
        self._rows = 0

    def process(self, batch: ExampleBatch, window=beam.DoFn.WindowParam):
        if batch.row_ids is None or not len(batch):
            yield from self._parts(batch, window)
            return
        place = (window, batch.source)
        block = self._blocks.setdefault(place, [])
        if block and batch.row_ids[0] <= block[-1].row_ids[-1]:  # (not after the block: a block of its own)
            yield from self._flushed(place)
            block = self._blocks.setdefault(place, [])
        block.append(batch)
        self._rows += len(batch)
        if self._rows >= BLOCK_ROWS:
            for place in list(self._blocks):
                yield from self._flushed(place)

    def finish_bundle(self):
        for place in list(self._blocks):
            yield from self._flushed(place)

    def _flushed(self, place):
        batches = self._blocks.pop(place)
        self._rows -= sum(len(batch) for batch in batches)
        if len(batches) == 1:
            yield from self._parts(batches[0], place[0])
            return
        # The block's keys: each batch's key names one after the other, a name perhaps more than once (a
        # part names each key it holds under one or more codes; gathered_by_key joins them by name), so
        # that joining batches costs no Python per key.
        coded = [key_codes(self.key, batch) for batch in batches]
        offsets = np.cumsum([0] + [len(keys) for _, keys in coded])
        block = ExampleBatch.concat([dataclasses.replace(batch, key_codes=None, key_names=()) for batch in batches])
        codes = np.concatenate([codes + offset for (codes, _), offset in zip(coded, offsets)])
        keys = tuple(itertools.chain.from_iterable(names for _, names in coded))
        yield from self._parts(block, place[0], (codes, keys))

    def _parts(self, batch: ExampleBatch, window, coded=None):
        for shard, part in self.split(batch, coded):
            yield in_window((shard, part), window)

    def split(self, batch: ExampleBatch, coded: tuple | None = None):
        """``(shard, part)`` of ``batch``'s examples, a part per shard its keys hash to (``coded``: the
        batch's ``(codes, keys)``, when :func:`~polybeam.transforms.keys.key_codes` would not give them)."""
        codes, keys = coded or key_codes(self.key, batch)
        shards = shards_of(keys, self.shards)[codes]
        keyed = dataclasses.replace(batch, key_codes=np.asarray(codes, dtype=np.int32), key_names=keys)
        if len(shards) and (shards == shards[0]).all():
            yield int(shards[0]), keyed
            return
        order = np.argsort(shards, kind="stable")
        # One gather; each shard's part is then a view of it, naming its own features.
        gathered = dataclasses.replace(keyed, names=None).take(order)
        names = keyed.names
        key_array = np.fromiter(keys, dtype=object, count=len(keys))  # (keys that are tuples stay whole)
        bounds = np.concatenate([[0], np.flatnonzero(np.diff(shards[order])) + 1, [len(order)]])
        for start, stop in zip(bounds[:-1], bounds[1:]):
            part = gathered.rows_between(int(start), int(stop))
            # The part names its own keys only (a batch of many keys would carry them all to every shard).
            present, codes_of_rows = np.unique(part.key_codes, return_inverse=True)
            yield (
                int(shards[order[start]]),
                dataclasses.replace(
                    part,
                    key_codes=codes_of_rows.astype(np.int32),
                    key_names=tuple(key_array[present].tolist()),
                    names=None if names is None else _names_of(part, names),
                ),
            )


def _names_of(batch: ExampleBatch, names: dict) -> dict:
    """The entries of ``names`` (slot -> feature name) of the slots ``batch`` holds."""
    return {int(slot): names[int(slot)] for slot in np.unique(batch.indices) if int(slot) in names}


def key_segments(batches: Iterable[ExampleBatch]):
    """``(key, examples)`` of every key of ``batches`` (the parts of one shard), keys in the order they
    first come, each key's examples in read order (see :func:`gathered_by_key`: a runner hands a group's
    values in any order). The examples carry no feature names (see :func:`feature_names`)."""
    keys, by_key, bounds = gathered_by_key(batches)
    for key, start, stop in zip(keys, bounds[:-1], bounds[1:]):
        yield key, by_key.rows_between(int(start), int(stop))


def gathered_by_key(batches: Iterable[ExampleBatch]) -> tuple[list, ExampleBatch | None, np.ndarray]:
    """``(keys, by_key, bounds)``: the examples of ``batches`` gathered key by key into one batch (in one
    gather), key ``keys[k]``'s rows ``bounds[k]:bounds[k + 1]``. Rows come in read order: by source, then
    row id when every batch has row ids (blocks of several batches may interleave in a file), else by the
    batches' first rows; keys in the order of their first rows."""
    batches = sorted(batches, key=ExampleBatch.read_place)
    if not batches:
        return [], None, np.zeros(1, dtype=np.int64)
    index: dict = {}
    codes = []
    for batch in batches:
        local = np.fromiter(
            (index.setdefault(key, len(index)) for key in batch.key_names), dtype=np.int64, count=len(batch.key_names)
        )
        codes.append(local[batch.key_codes])
    every = ExampleBatch.concat([dataclasses.replace(b, key_codes=None, key_names=(), names=None) for b in batches])
    codes = np.concatenate(codes)
    read_order = _read_order(batches)
    if read_order is not None:  # keys numbered again, in the order of their first rows read
        first = np.full(len(index), len(codes), dtype=np.int64)
        np.minimum.at(first, codes[read_order], np.arange(len(codes)))
        renumbered = np.empty(len(index), dtype=np.int64)
        renumbered[np.argsort(first, kind="stable")] = np.arange(len(index))
        names = list(index)
        index = dict.fromkeys(names[position] for position in np.argsort(first, kind="stable"))
        codes = renumbered[codes]
        order = read_order[np.argsort(codes[read_order], kind="stable")]
    else:
        order = np.argsort(codes, kind="stable")
    by_key, codes = every.take(order), codes[order]
    keys = list(index)
    bounds = np.concatenate([[0], np.flatnonzero(np.diff(codes)) + 1, [len(codes)]]) if len(codes) else np.zeros(1)
    return [keys[code] for code in codes[bounds[:-1]]], by_key, bounds.astype(np.int64)


def _read_order(batches: list[ExampleBatch]) -> np.ndarray | None:
    """The rows of ``batches`` (joined, sorted by :meth:`ExampleBatch.read_place`) in read order: by source, then row
    id; None when some batch has no row ids, or when the rows are in read order already."""
    if any(batch.row_ids is None for batch in batches):
        return None
    row_ids = np.concatenate([batch.row_ids for batch in batches])
    sources = np.repeat(
        np.unique([batch.source or "" for batch in batches], return_inverse=True)[1],
        [len(batch) for batch in batches],
    )
    in_order = (sources[1:] > sources[:-1]) | ((sources[1:] == sources[:-1]) & (row_ids[1:] > row_ids[:-1]))
    return None if in_order.all() else np.lexsort((row_ids, sources))


def feature_names(batches: Iterable[ExampleBatch]) -> dict:
    """The feature names (slot -> name) of ``batches``, the first name of a slot winning."""
    names: dict = {}
    for batch in batches:
        for slot, name in (batch.names or {}).items():
            names.setdefault(int(slot), name)
    return names
