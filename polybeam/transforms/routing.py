"""Per-key models in evaluation and prediction: a folder of models, and routing examples to them.

``polybeam train --key ...`` writes one model per key into a folder with an
``index.json`` (see :class:`WriteKeyedModels`). :class:`ModelLibrary` is that
folder as seen by a worker: it reads the index on first use and loads each
key's model when an example of that key first arrives, keeping the most
recently used ones in memory. :class:`RouteByKey` sends each ``(key, batch)``
to its key's model; examples whose key has no model go to the fallback model
when there is one, else become dead letters that say so.
"""

from __future__ import annotations

import dataclasses
import json
from collections import OrderedDict
from typing import NamedTuple

import apache_beam as beam
from apache_beam.metrics import Metrics

from polybeam.formats.records import DeadLetter
from polybeam.learners.model import Model
from polybeam.learners.model_shards import add_summaries, encode_shard, shard_name, shard_of, summarise
from polybeam.transforms.files import write_atomically, write_json
from polybeam.transforms.key_shards import KeyShard
from polybeam.transforms.keyed_files import INDEX_NAME, KeyedFolder, join, key_text
from polybeam.transforms.keys import KeyFn, split_by_key
from polybeam.transforms.model_io import read_model
from polybeam.transforms.windows import combine_globally, window_facts, window_folder

KEYED_MODELS = "polybeam-keyed-models"
UNROUTED = "unrouted"
# Memory of the cached models a worker keeps at most.
CACHE_BYTES = 256 << 20


def _model_bytes(model: Model) -> int:
    """What a cached model costs: its rows (a per-key model predicts from them), or 2**bits weights per class."""
    rows = len(model.slots) + 2 if model.few_slots else 1 << model.config.bits
    return 8 * (model.config.outputs + 2) * rows + 1024


class ModelLibrary:
    """The models of a per-key folder (and an optional fallback model), loaded lazily on a worker.

    Parameters
    ----------
    folder : str
        A folder written by :class:`WriteKeyedModels` (any Beam file system).
    fallback : str, optional
        A model file for keys that have no model of their own.
    """

    def __init__(self, folder: str, fallback: str | None = None):
        self.folder = folder
        self.fallback = fallback
        self._folder: KeyedFolder | None = None
        self._cache: OrderedDict[str, Model] = OrderedDict()
        self._cached_bytes = 0
        self._fallback_model: Model | None = None

    @property
    def keyed(self) -> KeyedFolder:
        """The folder (its index read on first use)."""
        if self._folder is None:
            self._folder = KeyedFolder(self.folder)
        return self._folder

    @property
    def index(self) -> dict:
        return self.keyed.index

    @property
    def key_spec(self) -> str | None:
        """How the models' keys were taken from the examples (``--key``)."""
        return self.index.get("key")

    def has(self, key) -> bool:
        """Whether examples of ``key`` can be scored (by their own model or the fallback)."""
        return self.fallback is not None or self.keyed.has(key)

    def model(self, key) -> Model | None:
        """The model of ``key``, else the fallback model, else None."""
        name = key_text(key)
        model = self._cache.pop(name, None)
        if model is None:
            model = self.keyed.model(name)
            if model is None:
                if self.fallback is None:
                    return None
                if self._fallback_model is None:
                    self._fallback_model = read_model(self.fallback)
                return self._fallback_model
            self._cached_bytes += _model_bytes(model)
        self._cache[name] = model
        while self._cached_bytes > CACHE_BYTES and len(self._cache) > 1:
            _, dropped = self._cache.popitem(last=False)
            self._cached_bytes -= _model_bytes(dropped)
        return model

    def __getstate__(self) -> dict:  # a worker reads the index and models itself
        return {"folder": self.folder, "fallback": self.fallback}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["folder"], state["fallback"])


class _RouteFn(beam.DoFn):
    def __init__(self, library: ModelLibrary):
        self.library = library
        self.unrouted = Metrics.counter("polybeam.route", "examples_without_model")

    def process(self, element):
        key, batch = element
        if self.library.has(key):
            yield key, batch
            return
        self.unrouted.inc(len(batch))
        reason = f"no model for key {key_text(key)!r}" + ("" if self.library.fallback else " (and no --fallback-model)")
        rows = batch.row_ids.tolist() if batch.row_ids is not None else [-1] * len(batch)
        for row in rows:
            # Line number and text are filled in by the dead-letter path, which reads the file.
            yield beam.pvalue.TaggedOutput(UNROUTED, DeadLetter(batch.source or "", None, int(row), None, reason))


class RouteResult(NamedTuple):
    """``routed``: ``(key, batch)`` pairs that have a model; ``unrouted``: DeadLetters of the rest."""

    routed: beam.PCollection
    unrouted: beam.PCollection


class RouteByKey(beam.PTransform):
    """Split batches by ``key`` and keep the parts whose key has a model in ``library``."""

    def __init__(self, library: ModelLibrary, key: KeyFn):
        super().__init__()
        self.library = library
        self.key = key

    # No return annotation: Beam takes it for the output's type hint and warns that a RouteResult is none.
    def expand(self, batches):
        routed = split_by_key(batches, self.key) | "Route" >> beam.ParDo(_RouteFn(self.library)).with_outputs(
            UNROUTED, main="routed"
        )
        return RouteResult(routed.routed, routed[UNROUTED])


# Keys per shard file a folder of per-key models aims at (a few files, each of many keys).
KEYS_PER_SHARD = 20_000
MAX_SHARDS = 256


def shard_count(keys: int) -> int:
    """How many shard files ``keys`` keys' models go into.

    >>> shard_count(10), shard_count(20_000), shard_count(1_000_000)
    (1, 1, 50)
    """
    return max(1, min(MAX_SHARDS, -(-keys // KEYS_PER_SHARD)))


def _write_shard(shard: KeyShard, folder: str, window=beam.DoFn.WindowParam) -> dict:
    folder = window_folder(folder, window)
    file = shard_name(shard.shard, shard.shards)
    table = shard.table
    if table is not None:  # (a folder names keys by their text)
        table = dataclasses.replace(table, key_list=[key_text(key) for key in table.key_list])
    data, entries = encode_shard(
        ((key_text(key), model) for key, model in shard.models), names=shard.names, shared=shard.shared, table=table
    )
    write_atomically(join(folder, file), data)
    # How the models' input was read (RecordOrigin stamps it on each model, or once on a shard), for an
    # index whose writer did not say (WriteKeyedModels from Python).
    recorded = shard.shared.get("input", shard.first_input)
    return {
        "shard": shard.shard,
        "shards": shard.shards,
        "file": file,
        "summary": summarise(entries),
        "config": shard.config.to_dict(),
        "input": recorded,
    }


def _as_shard(element, shards: int) -> KeyShard:
    number, pairs = element
    return KeyShard(number, shards, list(pairs))


def _write_sharded_index(written: list, folder: str, facts: dict, window=beam.DoFn.WindowParam) -> str:
    folder, facts = window_folder(folder, window), {**facts, **window_facts(window)}
    counts = {part["shards"] for part in written}
    if len(counts) > 1:
        raise ValueError(f"shards of different counts in one folder: {sorted(counts)}")
    summary = add_summaries([part["summary"] for part in written]) if written else add_summaries([summarise([])])
    configs = {json.dumps(part["config"], sort_keys=True) for part in written}
    if len(configs) > 1:
        raise ValueError("the models of one folder share one config; these differ")
    recorded = {"config": json.loads(configs.pop())} if configs else {}
    inputs = {json.dumps(part.get("input"), sort_keys=True) for part in written}
    if "input" not in facts and len(inputs) == 1 and written[0].get("input") is not None:
        recorded["input"] = written[0]["input"]
    path = join(folder, INDEX_NAME)
    write_json(
        path,
        {
            **recorded,
            **facts,
            "kind": KEYED_MODELS,
            "layout": "shards",
            "shards": counts.pop() if counts else 1,
            "files": {str(part["shard"]): part["file"] for part in sorted(written, key=lambda p: p["shard"])},
            **summary,
        },
    )
    return path


class WriteKeyedModels(beam.PTransform):
    """Writes ``(key, Model)`` pairs into ``folder``: shard files of many keys' models each
    (``shard-00000-of-00004.keys``; see :mod:`polybeam.learners.model_shards`), then ``index.json``.

    The index (the shards, the keys, examples, the example-weighted progressive
    loss, non-zero weights and the holdout's counts over all keys, plus ``facts``
    such as the key specification, ``key="column:store"``, which ``polybeam
    evaluate`` and ``predict`` read the keys by) is written last and atomically, so a reader
    that finds it finds every shard it lists. Each key's entry (examples, loss,
    non-zero weights, holdout) is in its shard's own index. Emits the index's path.
    In event-time windows, each window's models go to a folder of their own in
    ``folder`` (:func:`~polybeam.transforms.windows.window_folder`), whose index
    records the window. Without an ``input`` fact, the index records how the models'
    input was read when they all say the same (models stamped by
    :class:`~polybeam.transforms.provenance.RecordOrigin`).
    """

    def __init__(self, folder: str, **facts):
        super().__init__()
        self.folder = folder
        self.facts = facts

    def expand(self, models):
        """``models``: ``(key, Model)`` pairs, or :class:`KeyShard` elements (``Train(keyed_output="shards")``,
        each written as it is)."""
        folder, facts = self.folder, self.facts
        shards = models | "ToShards" >> _ToShards()
        written = shards | "WriteShards" >> beam.Map(_write_shard, folder)
        return (
            written
            | "Gather" >> combine_globally(beam.combiners.ToListCombineFn(), written)
            | "WriteIndex" >> beam.Map(_write_sharded_index, folder, facts)
        )


class _ToShards(beam.PTransform):
    """KeyShard elements as they are; ``(key, Model)`` pairs grouped into :func:`shard_count` shards."""

    def expand(self, models):
        split = models | "KindOfElement" >> beam.Partition(lambda element, _: int(isinstance(element, KeyShard)), 2)
        pairs = split[0]
        count = beam.pvalue.AsSingleton(
            pairs
            | "CountKeys" >> combine_globally(beam.combiners.CountCombineFn(), pairs)
            | "Shards" >> beam.Map(shard_count)
        )
        grouped = (
            pairs
            | "ShardOfKey" >> beam.Map(lambda pair, shards: (shard_of(key_text(pair[0]), shards), pair), count)
            | "GroupShards" >> beam.GroupByKey()
            | "AsShards" >> beam.Map(_as_shard, count)
        )
        return (grouped, split[1]) | "AllShards" >> beam.Flatten()
