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

from collections import OrderedDict
from typing import NamedTuple

import apache_beam as beam
from apache_beam.metrics import Metrics

from polybeam.learners.model import Model
from polybeam.formats.records import DeadLetter
from polybeam.transforms.keyed_files import join, key_file_stem, key_text, read_index, write_index
from polybeam.transforms.keys import KeyFn, split_by_key
from polybeam.transforms.model_io import read_model, write_model

KEYED_MODELS = "polybeam-keyed-models"
UNROUTED = "unrouted"
# Dense weights of cached models a worker keeps at most (each model caches 2**bits weights per class).
CACHE_BYTES = 256 << 20


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
        self._index: dict | None = None
        self._cache: OrderedDict[str, Model] = OrderedDict()
        self._fallback_model: Model | None = None

    @property
    def index(self) -> dict:
        if self._index is None:
            self._index = read_index(self.folder)
        return self._index

    @property
    def key_spec(self) -> str | None:
        """How the models' keys were taken from the examples (``--key``)."""
        return self.index.get("key")

    def has(self, key) -> bool:
        """Whether examples of ``key`` can be scored (by their own model or the fallback)."""
        return self.fallback is not None or key_text(key) in self.index["entries"]

    def model(self, key) -> Model | None:
        """The model of ``key``, else the fallback model, else None."""
        name = key_text(key)
        entry = self.index["entries"].get(name)
        if entry is None:
            if self.fallback is None:
                return None
            if self._fallback_model is None:
                self._fallback_model = read_model(self.fallback)
            return self._fallback_model
        model = self._cache.pop(name, None)
        if model is None:
            model = read_model(join(self.folder, entry["file"]))
        self._cache[name] = model
        per_model = 8 * model.config.outputs << model.config.bits
        while len(self._cache) > max(1, CACHE_BYTES // per_model):
            self._cache.popitem(last=False)
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

    def expand(self, batches) -> RouteResult:
        routed = (
            split_by_key(batches, self.key)
            | "Route" >> beam.ParDo(_RouteFn(self.library)).with_outputs(UNROUTED, main="routed")
        )
        return RouteResult(routed.routed, routed[UNROUTED])


def _write_keyed_model(element, folder: str) -> tuple[str, dict]:
    key, model = element
    file = f"models/{key_file_stem(key)}.model"
    write_model(model, join(folder, file))
    meta = model.metadata
    entry = {
        "file": file,
        "kind": model.kind,
        "examples": meta.get("examples"),
        "progressive_loss": meta.get("progressive_loss"),
        "nonzero_weights": model.nonzero,
    }
    holdout = meta.get("holdout")
    if holdout:  # each key's learner was judged on its own held-out examples
        entry.update(holdout_loss=holdout["best_loss"], best_pass=holdout["best_pass"],
                     stopped_after=holdout["stopped_after"])  # fmt: skip
    return key_text(key), entry


def _write_keyed_index(entries: list, folder: str, facts: dict) -> str:
    return write_index(folder, dict(entries), kind=KEYED_MODELS, **facts)


class WriteKeyedModels(beam.PTransform):
    """Writes ``(key, Model)`` pairs as ``folder/models/<safe key>.model`` and then ``folder/index.json``.

    The index (key -> file, examples, progressive loss, non-zero weights,
    plus ``facts`` such as the key specification) is written last and
    atomically, so a reader that finds it finds every model it lists. Emits
    the index's path.
    """

    def __init__(self, folder: str, **facts):
        super().__init__()
        self.folder = folder
        self.facts = facts

    def expand(self, models):
        return (
            models
            | "WriteModels" >> beam.Map(_write_keyed_model, self.folder)
            | "Gather" >> beam.combiners.ToList()
            | "WriteIndex" >> beam.Map(_write_keyed_index, self.folder, self.facts)
        )
