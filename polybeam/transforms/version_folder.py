"""A model folder of streaming training: numbered model versions, an index, and a ``latest`` pointer.

Layout (any Beam file system: local, ``gs://``, ...)::

    OUT/versions/000017.model   the model of version 17 (a model file, as `polybeam train --model` writes)
    OUT/versions/000017.state   the learner's whole state then (what a restarted job continues from);
                                only the last STATES_KEPT are kept
    OUT/index.json              every version's number, examples, watermark, progressive loss, time
    OUT/latest                  {"version": 17, "model": "versions/000017.model", ...}, written last

Every file is written whole (a reader sees the old file or the new one), the model and state before the
index, the index before ``latest``: a reader that follows ``latest`` always finds a complete version,
and a job killed between two writes leaves ``latest`` on the last complete one.

>>> import tempfile, os, numpy as np
>>> from polybeam.learners.config import LearnerConfig
>>> from polybeam.learners.model_stream import StreamLearner
>>> from polybeam.learners.batch import ExampleBatch
>>> folder = tempfile.mkdtemp()
>>> stream = StreamLearner(LearnerConfig(loss="logistic", bits=10))
>>> _ = stream.learn([(1.0, ExampleBatch.from_rows([(1.0, {1: 1.0}), (-1.0, {2: 1.0})] * 5, bits=10))])
>>> write_version(folder, stream.version(), stream.to_bytes())
'versions/000001.model'
>>> latest_number(folder), [entry["examples"] for entry in read_index(folder)]
(1, [10])
>>> read_version_model(folder).config.loss, is_version_folder(folder), is_version_folder(folder + "/nothing")
('logistic', True, False)
"""

from __future__ import annotations

import json

from apache_beam.io.filesystems import FileSystems

from polybeam.learners.model import Model, ModelFileError
from polybeam.learners.model_stream import ModelVersion
from polybeam.transforms.files import read_bytes, write_atomically, write_json
from polybeam.transforms.model_io import read_model, write_model

LATEST = "latest"
INDEX = "index.json"
VERSIONS = "versions"
# Learner states kept: the latest (what a restart continues from) and the one before it (a reader of
# ``latest`` may be one version behind while the next is written).
STATES_KEPT = 2


def join(folder: str, *parts: str) -> str:
    return FileSystems.join(folder, *parts)


def model_name(number: int) -> str:
    return f"{VERSIONS}/{number:06d}.model"


def state_name(number: int) -> str:
    return f"{VERSIONS}/{number:06d}.state"


def is_version_folder(path: str) -> bool:
    """Whether ``path`` is a model folder of streaming training (it has a ``latest`` pointer)."""
    try:
        return FileSystems.exists(join(path, LATEST))
    except Exception:  # Beam's file systems raise their own errors for odd paths
        return False


def read_latest(folder: str) -> dict | None:
    """The ``latest`` pointer's contents, None when no version was written."""
    path = join(folder, LATEST)
    if not FileSystems.exists(path):
        return None
    try:
        return json.loads(read_bytes(path))
    except ValueError as error:
        raise ModelFileError(f"{path}: not a version pointer ({error})") from None


def latest_number(folder: str) -> int | None:
    latest = read_latest(folder)
    return int(latest["version"]) if latest is not None else None


def read_index(folder: str) -> list[dict]:
    """Every version's entry (see :meth:`ModelVersion.summary`), oldest first."""
    path = join(folder, INDEX)
    if not FileSystems.exists(path):
        return []
    return json.loads(read_bytes(path))["versions"]


def write_version(folder: str, version: ModelVersion, state: bytes | None = None) -> str:
    """Write ``version`` (and the learner ``state`` that continues from it) into ``folder``; returns the
    model's name in the folder."""
    name = model_name(version.number)
    write_model(version.model, join(folder, name))
    if state is not None:
        write_atomically(join(folder, state_name(version.number)), state)
    entries = [entry for entry in read_index(folder) if entry["version"] < version.number]
    entry = {**version.summary(), "model": name}
    write_json(join(folder, INDEX), {"versions": [*entries, entry]}, indent=None)
    write_json(join(folder, LATEST), {**entry, "state": state_name(version.number) if state is not None else None})
    stale = join(folder, state_name(version.number - STATES_KEPT))
    if version.number > STATES_KEPT and FileSystems.exists(stale):
        FileSystems.delete([stale])
    return name


def read_latest_state(folder: str) -> bytes | None:
    """The learner state of the latest version (what a restarted job continues from), None when none."""
    latest = read_latest(folder)
    if latest is None or not latest.get("state"):
        return None
    return read_bytes(join(folder, latest["state"]))


def version_model_path(folder: str, number: int | None = None) -> str:
    """The model file of version ``number`` (None: the latest) of a model folder; a clear error when absent."""
    if number is None:
        number = latest_number(folder)
        if number is None:
            raise ModelFileError(f"{folder}: no model version written yet (no {LATEST} pointer)")
    path = join(folder, model_name(number))
    if not FileSystems.exists(path):
        known = [entry["version"] for entry in read_index(folder)]
        span = f"versions {known[0]}-{known[-1]}" if known else "no versions"
        raise ModelFileError(f"{folder}: no version {number} ({span})")
    return path


def read_version_model(folder: str, number: int | None = None) -> Model:
    """The model of version ``number`` (None: the latest) of a model folder; a clear error when absent."""
    return read_model(version_model_path(folder, number))
