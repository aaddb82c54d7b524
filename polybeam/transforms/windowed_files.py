"""A folder of models per event-time window: writing it, and reading a window's model back.

``polybeam train --window ...`` writes into ``MODEL/``:

* one model: ``window-20261101T000000Z-20261102T000000Z.model`` per window
  (its metadata's ``window`` is ``{"start", "end"}`` in UTC ISO form);
* per key: a folder of per-key models per window, ``window-.../`` (with its
  own ``index.json``, see :class:`~polybeam.transforms.routing.WriteKeyedModels`);
* ``index.json`` last, of kind ``polybeam-windowed-models``: the windows
  (``--window`` spelling), the timestamp column, the key, the learner config,
  how the input was read, and per window its bounds, file or folder, examples,
  progressive loss and non-zero weights (keys, with a key).
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.transforms import window as beam_window

from polybeam.learners.model import Model
from polybeam.learners.windows import window_name
from polybeam.transforms.keyed_files import join, read_index, write_index
from polybeam.transforms.model_io import read_model, write_model
from polybeam.transforms.routing import ModelLibrary
from polybeam.transforms.windows import bounds, window_facts

WINDOWED_MODELS = "polybeam-windowed-models"


def _entry(window, **figures) -> tuple[str, dict]:
    """``(window name, index entry)`` of ``window``, with its figures."""
    return window_name(*bounds(window)), {**window_facts(window)["window"], **figures}


def _write_window_model(model: Model, folder: str, window=beam.DoFn.WindowParam) -> tuple[str, dict]:
    name = window_name(*bounds(window))
    write_model(model, join(folder, f"{name}.model"))
    meta = model.metadata
    return _entry(
        window,
        file=f"{name}.model",
        examples=meta.get("examples"),
        progressive_loss=meta.get("progressive_loss"),
        nonzero_weights=model.nonzero,
        holdout=meta.get("holdout"),
    )


def _window_folder_entry(index_path: str, window=beam.DoFn.WindowParam) -> tuple[str, dict]:
    folder = index_path.rsplit("/", 1)[0]
    written = read_index(folder)
    name = window_name(*bounds(window))
    return _entry(
        window,
        folder=name,
        keys=written.get("keys", 0),
        examples=written.get("examples", 0),
        progressive_loss=written.get("progressive_loss"),
        nonzero_weights=written.get("nonzero_weights", 0),
    )


class WriteWindowedModels(beam.PTransform):
    """Writes the models of every window (``written``: ``Train``'s models in windows, or with ``keyed`` the
    index paths ``WriteKeyedModels`` wrote per window) and then the folder's ``index.json``; emits the
    index's path, in the global window. ``facts`` go into the index (the windows, the key, ...)."""

    def __init__(self, folder: str, *, keyed: bool = False, **facts):
        super().__init__()
        self.folder = folder
        self.keyed = keyed
        self.facts = facts

    def expand(self, written):
        folder = self.folder
        if self.keyed:
            entries = written | "WindowEntry" >> beam.Map(_window_folder_entry)
        else:
            entries = written | "WriteWindowModels" >> beam.Map(_write_window_model, folder)
        return (
            entries
            | "Everywhere" >> beam.WindowInto(beam_window.GlobalWindows())
            | "Gather" >> beam.combiners.ToList()
            | "WriteIndex"
            >> beam.Map(lambda gathered: write_index(folder, dict(gathered), kind=WINDOWED_MODELS, **self.facts))
        )


class WindowedFolder:
    """A folder of models per window, read back: its index, and each window's model.

    ``model(name)`` is the model of window ``name``; per key, ``model((name, key))`` the model of ``key`` in
    window ``name`` (see :class:`~polybeam.transforms.routing.ModelLibrary`). Models load once per process."""

    def __init__(self, folder: str):
        self.folder = folder
        self.index = read_index(folder)
        if self.index.get("kind") != WINDOWED_MODELS:
            raise ValueError(
                f"{folder} is not a folder of models per window (its index.json is a {self.index.get('kind')})"
            )
        self._models: dict = {}

    @property
    def windows(self) -> dict:
        return self.index["entries"]

    def _source(self, name: str):
        if name not in self._models:
            entry = self.windows[name]
            if "folder" in entry:
                self._models[name] = ModelLibrary(join(self.folder, entry["folder"]))
            else:
                self._models[name] = read_model(join(self.folder, entry["file"]))
        return self._models[name]

    def has(self, key) -> bool:
        name, key = key if isinstance(key, tuple) else (key, None)
        return name in self.windows and (key is None or self._source(name).has(key))

    def model(self, key) -> Model | None:
        name, key = key if isinstance(key, tuple) else (key, None)
        if name not in self.windows:
            return None
        source = self._source(name)
        return source if key is None else source.model(key)

    def __getstate__(self):
        return {"folder": self.folder, "index": self.index, "_models": {}}
