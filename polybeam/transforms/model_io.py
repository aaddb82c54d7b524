"""Reading and writing model files on any Beam file system (local, gs://, s3://, ...).

>>> import tempfile, os, numpy as np
>>> from polybeam.learners.config import LearnerConfig
>>> from polybeam.learners.model import Model
>>> path = os.path.join(tempfile.mkdtemp(), "m.model")
>>> write_model(Model(LearnerConfig(), np.array([1]), np.array([2.0])), path)
>>> read_model(path).weights.tolist()
[2.0]
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from polybeam.learners.model import Model, ModelFileError
from polybeam.transforms.files import write_atomically


def write_model(model: Model, path: str) -> None:
    """Write ``model`` to ``path`` in one piece: a reader sees the old file or the new one, never half."""
    write_atomically(path, model.to_bytes())


def read_model(path: str) -> Model:
    """Read a model file, refusing a missing, corrupt, truncated or newer-version file clearly."""
    try:
        with FileSystems.open(path) as handle:
            data = handle.read()
    except Exception as error:  # Beam wraps file-system errors in its own types
        raise ModelFileError(f"{path}: cannot read the model file ({error})") from None
    try:
        return Model.from_bytes(data)
    except ModelFileError as error:
        raise ModelFileError(f"{path}: {error}") from None


def keyed_model_path(path: str, key) -> str:
    """Where the model of ``key`` goes: ``path`` with ``{key}`` filled in, or ``path-key``."""
    return path.format(key=key) if "{key}" in path else f"{path}-{key}"


class WriteModel(beam.PTransform):
    """Writes each Model (or ``(key, Model)``, see :func:`keyed_model_path`) and emits the paths."""

    def __init__(self, path: str, keyed: bool = False):
        super().__init__()
        self.path = path
        self.keyed = keyed

    def expand(self, models):
        path, keyed = self.path, self.keyed

        def write(element):
            target = keyed_model_path(path, element[0]) if keyed else path
            write_model(element[1] if keyed else element, target)
            return target

        return models | "WriteModelFile" >> beam.Map(write)


class ReadModel(beam.PTransform):
    """A PCollection holding the model stored at ``path`` (read by a worker, not the launcher)."""

    def __init__(self, path: str):
        super().__init__()
        self.path = path

    def expand(self, pbegin):
        return pbegin | "ModelPath" >> beam.Create([self.path]) | "ReadModelFile" >> beam.Map(read_model)


def model_argument(model, keyed: bool = False):
    """What a DoFn needs to receive ``model``: the Model itself (or a per-key
    :class:`~polybeam.transforms.routing.ModelLibrary`), or a side input of a PCollection."""
    if hasattr(model, "model") and hasattr(model, "has"):  # a ModelLibrary: it loads models on the worker
        return model
    if isinstance(model, Model):
        if keyed:
            raise ValueError("per-key prediction needs a PCollection of (key, Model), not one Model")
        return model
    if isinstance(model, dict):
        return model
    return beam.pvalue.AsDict(model) if keyed else beam.pvalue.AsSingleton(model)


def model_for(element, models, keyed: bool):
    """``(key, batch, model)`` for an element: keyed elements pick their key's model."""
    key, batch = element if keyed else (None, element)
    if hasattr(models, "has"):
        model = models.model(key)
    else:
        model = models.get(key) if keyed else models
    if model is None:
        raise KeyError(f"no model was trained for key {key!r}")
    return key, batch, model
