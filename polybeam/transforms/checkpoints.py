"""Checkpoints: the learner state after every pass, written by workers, read back to resume.

After pass ``n`` a multi-pass job writes the averaged learner state (not just
the sparse model: AdaGrad sums, feature scales, apple's parents, the pass
statistics; see :mod:`polybeam.learners.state_file`) to its checkpoint
folder, on any Beam file system:

* one model: ``pass-000n.state``, written atomically;
* one model per key: ``pass-000n/`` holding a state file per key and an
  ``index.json`` written last (see :mod:`polybeam.transforms.keyed_files`);
* in event-time windows, each window's in a folder of its own,
  ``window-START-END/`` (see :func:`polybeam.transforms.windows.window_folder`).

A pass counts as complete only when its state file, or its index, exists.
:func:`last_complete_pass` finds the newest one, and :class:`ReadLearners`
reads a state (or model) file, or a per-key folder, back into learners in
the pipeline, on a worker.
"""

from __future__ import annotations

import re

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from polybeam.learners.config import LearnerConfig
from polybeam.learners.state_file import learner_to_bytes
from polybeam.learners.warm_start import check_compatible, initial_learner, learner_from_model
from polybeam.transforms.files import read_bytes, write_atomically
from polybeam.transforms.keyed_files import (
    INDEX_NAME,
    KeyedFolder,
    join,
    key_file_stem,
    key_text,
    write_index,
)
from polybeam.transforms.windows import combine_globally, window_folder

_PASS = re.compile(r"pass-(\d+)(?:\.state|[/\\]" + re.escape(INDEX_NAME) + ")$")


def state_path(directory: str, number: int) -> str:
    """Where the state after pass ``number`` goes (one model)."""
    return join(directory, f"pass-{number:04d}.state")


def keyed_folder(directory: str, number: int) -> str:
    """Where the per-key states after pass ``number`` go."""
    return join(directory, f"pass-{number:04d}")


def last_complete_pass(directory: str, keyed: bool) -> tuple[int, str | None]:
    """``(n, path)`` of the newest complete checkpoint in ``directory``, or ``(0, None)``."""
    pattern = join(directory, "pass-*", INDEX_NAME) if keyed else join(directory, "pass-*.state")
    try:
        found = FileSystems.match([pattern])[0].metadata_list
    except Exception:  # Beam raises for a folder that does not exist yet
        return 0, None
    best = (0, None)
    for metadata in found:
        match = _PASS.search(metadata.path)
        if match and int(match.group(1)) > best[0]:
            number = int(match.group(1))
            best = (number, keyed_folder(directory, number) if keyed else metadata.path)
    return best


def _write_state(learner, path: str, info: dict) -> str:
    write_atomically(path, learner_to_bytes(learner, info))
    return path


def _write_window_state(learner, directory: str, number: int, info: dict, window=beam.DoFn.WindowParam) -> str:
    return _write_state(learner, state_path(window_folder(directory, window), number), info)


def _write_keyed_state(element, directory: str, number: int, info: dict, window=beam.DoFn.WindowParam):
    key, learner = element
    name = f"{key_file_stem(key)}.state"
    folder = keyed_folder(window_folder(directory, window), number)
    _write_state(learner, join(folder, "keys", name), {**info, "key": key_text(key)})
    return key_text(key), {"file": f"keys/{name}", "examples": int(_examples(learner))}


def _examples(learner) -> int:
    linear = getattr(learner, "linear", learner)
    return linear.examples_seen


def _write_keyed_index(entries: list, directory: str, number: int, info: dict, window=beam.DoFn.WindowParam) -> str:
    folder = keyed_folder(window_folder(directory, window), number)
    return write_index(folder, dict(entries), kind="polybeam-checkpoint", **info)


class WriteCheckpoint(beam.PTransform):
    """Writes the learner state(s) after pass ``number`` into ``directory``; emits what it wrote.

    ``states`` holds one learner, or ``(key, learner)`` pairs when ``keyed``.
    """

    def __init__(self, directory: str, number: int, *, keyed: bool = False, config: LearnerConfig | None = None):
        super().__init__()
        self.directory = directory
        self.number = number
        self.keyed = keyed
        self.info = {"pass": number, "config": config.to_dict() if config is not None else None}

    def expand(self, states):
        directory, number, info = self.directory, self.number, self.info
        if not self.keyed:
            return states | "WriteState" >> beam.Map(_write_window_state, directory, number, info)
        entries = states | "WriteKeyStates" >> beam.Map(_write_keyed_state, directory, number, info)
        return (
            entries
            | "Gather" >> combine_globally(beam.combiners.ToListCombineFn(), entries)
            | "WriteIndex" >> beam.Map(_write_keyed_index, directory, number, info)
        )


def _read_one(path: str, config: LearnerConfig):
    return initial_learner(read_bytes(path), config, path)


def _read_keyed(folder: str, config: LearnerConfig):
    keyed = KeyedFolder(folder)
    if keyed.sharded:  # shards of per-key models
        check_compatible(LearnerConfig.from_dict(keyed.index["config"]), config, folder)
        for key, _ in keyed.entries():
            yield key, learner_from_model(keyed.model(key), config, sparse=True)
    else:
        for key, entry in keyed.index["entries"].items():
            path = join(folder, entry["file"])
            yield key, initial_learner(read_bytes(path), config, path, sparse=True)


class ReadLearners(beam.PTransform):
    """The learners a job starts from, read by a worker: from a learner-state or model file, or,
    when ``keyed``, from a folder with an index (a checkpoint or a folder of per-key models).

    Every source must fit ``config`` (see :mod:`polybeam.learners.warm_start`).
    """

    def __init__(self, path: str, config: LearnerConfig, *, keyed: bool = False):
        super().__init__()
        self.path = path
        self.config = config
        self.keyed = keyed

    def expand(self, pbegin):
        paths = pbegin | "Path" >> beam.Create([self.path])
        if self.keyed:
            return paths | "ReadKeyed" >> beam.FlatMap(_read_keyed, self.config)
        return paths | "ReadOne" >> beam.Map(_read_one, self.config)
