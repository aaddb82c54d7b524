"""Comparisons of what a portable run and an in-process run produced.

What is compared exactly, and what within a tolerance:

* read counts (records, examples, dead letters, skipped, reconciles), pass
  example counts, non-zero weights, slots, model settings, feature names,
  apple's parents (as a set: see :func:`expansion_facts`) and monomials,
  prediction lines, prefix orders: exactly;
* floating-point results (weights, progressive losses, evaluation metrics,
  prefix weights, timeliness): to ``RTOL``/``ATOL``. Both runs execute the same
  code on the same bundles, so they agree to the last bit today; the tolerance
  only allows partial results to be merged in another order (with two
  workers, the order their bundles finish).
* per-key model folders: the index's facts, keys, files, example counts and
  non-zero weights exactly, its progressive losses as floats, and every key's
  model as a model file (:func:`assert_same_per_key_models`);
* learner-state files (checkpoints): every array and value of the state, as
  integers exactly and floats to the tolerance (:func:`assert_same_state`);
* dead-letter files: exactly, as sets of lines (they name the input file,
  which both runs read from the shared data folder);
* paths in reports: exactly, once each run's own output folder is replaced by
  a placeholder (each run writes to its own folder);
* the runner's name, the worker processes (``workers``: host, pid, peak
  memory), times and durations (``*seconds``, ``launched``, ``finished``):
  never;
* a model's ``provenance``: the versions, the input patterns, the command
  and the read's counts exactly; its options, runner and times are the job's
  own (models of different jobs are compared too: a resume, a warm start),
  so never (reports compare their options, with paths as above).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from polybeam.learners.state_file import read_learner_state
from polybeam.transforms.keyed_files import INDEX_NAME, KeyedFolder
from polybeam.transforms.model_io import read_model

RTOL = 1e-9
ATOL = 1e-12
# Report fields that differ by nature between two runs of the same job: on which
# runner and in which processes it ran (host, pid, peak memory), when, and for how long.
RUN_SPECIFIC = {"runner", "job_id", "launched", "finished", "started", "workers"}
OUT = "<run folder>"


def run_specific(key: str) -> bool:
    return key in RUN_SPECIFIC or key.endswith("seconds") or "rss" in key


def normalised(value, folder: str):
    """``value`` without run-specific fields, its run's folder written as OUT (so paths compare too)."""
    if isinstance(value, dict):
        return {k: normalised(v, folder) for k, v in value.items() if not run_specific(k)}
    if isinstance(value, list):
        return [normalised(v, folder) for v in value]
    if isinstance(value, str):
        return value.replace(folder, OUT)
    return value


def assert_close(portable, in_process, path: str = "report") -> None:
    """Nested JSON values equal: numbers to RTOL/ATOL, everything else exactly (dict keys included)."""
    if isinstance(in_process, dict):
        assert isinstance(portable, dict), f"{path}: {portable!r} is not an object"
        assert sorted(portable) == sorted(in_process), f"{path}: keys {sorted(portable)} != {sorted(in_process)}"
        for key in in_process:
            assert_close(portable[key], in_process[key], f"{path}.{key}")
    elif isinstance(in_process, (list, tuple)):
        assert isinstance(portable, (list, tuple)) and len(portable) == len(in_process), (
            f"{path}: {portable!r} != {in_process!r}"
        )
        for index, (left, right) in enumerate(zip(portable, in_process)):
            assert_close(left, right, f"{path}[{index}]")
    elif isinstance(in_process, float) and not isinstance(portable, bool) and isinstance(portable, (int, float)):
        assert math.isclose(portable, in_process, rel_tol=RTOL, abs_tol=ATOL), f"{path}: {portable!r} != {in_process!r}"
    else:
        assert portable == in_process, f"{path}: {portable!r} != {in_process!r}"


def assert_same_report(runs) -> None:
    """A side-by-side run's two JSON reports agree on all but run-specific fields; paths relative to each run's folder."""
    assert_close(
        normalised(runs.portable.report, str(runs.portable_dir)),
        normalised(runs.in_process.report, str(runs.in_process_dir)),
    )


def expansion_facts(model) -> dict:
    """A polynomial model's expansion, its parent monomials as a sorted list.

    Merged apple learners keep the union of their parents in the order the
    learners were merged, and with two workers that is the order their bundles
    finished: the same parents (and the same weights, slots and monomials)
    may be listed in another order.
    """
    facts = model.expansion.to_dict()
    facts["parents"] = sorted(facts["parents"])
    return facts


# What a model's provenance says of how it was learned, not of the job that ran (see the module docstring).
LEARNED_PROVENANCE = ("polybeam", "apache_beam", "numba", "python", "inputs", "command", "read")


def learned(model) -> dict:
    """A model's metadata, its provenance reduced to what makes the model (``LEARNED_PROVENANCE``)."""
    metadata = dict(model.metadata)
    if "provenance" in metadata:
        metadata["provenance"] = {
            name: value for name, value in metadata["provenance"].items() if name in LEARNED_PROVENANCE
        }
    return metadata


def run_folders(portable_path, in_process_path) -> tuple[str, str]:
    """The folders of two runs' files: the paths without the trailing parts they share
    (``.../portable/models/k1.model`` and ``.../in-process/models/k1.model``: ``.../portable``, ``.../in-process``)."""
    left, right = Path(portable_path).parts, Path(in_process_path).parts
    shared = 0
    while shared < min(len(left), len(right)) - 1 and left[-1 - shared] == right[-1 - shared]:
        shared += 1
    return str(Path(*left[: len(left) - shared])), str(Path(*right[: len(right) - shared]))


def assert_same_model(portable_path, in_process_path, models=None) -> None:
    """Two model files hold the same model: settings, slots, names, polynomial structure exactly; weights to RTOL;
    metadata by :func:`learned` without run-specific fields (the finishing stage's seconds), paths in their run
    folders. ``models``: the two models, when they were read
    already (from a per-key folder's shards: then the paths are the two folders)."""
    portable, in_process = models or (read_model(str(portable_path)), read_model(str(in_process_path)))
    folders = run_folders(portable_path, in_process_path)
    assert portable.config.to_dict() == in_process.config.to_dict()
    np.testing.assert_array_equal(portable.slots, in_process.slots)
    np.testing.assert_allclose(portable.weights, in_process.weights, rtol=RTOL, atol=ATOL)
    assert_close(normalised(learned(portable), folders[0]), normalised(learned(in_process), folders[1]), "metadata")
    assert dict(portable.names) == dict(in_process.names)
    assert (portable.expansion is None) == (in_process.expansion is None)
    if in_process.expansion is not None:
        assert_close(expansion_facts(portable), expansion_facts(in_process), "expansion")
    assert dict(portable.monomials) == dict(in_process.monomials)


def plain(value):
    """``value`` with numpy arrays and scalars as lists and numbers, so :func:`assert_close` can compare it."""
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    return value


def assert_same_state(portable_path, in_process_path) -> None:
    """Two learner-state files (checkpoints) hold the same state and the same facts (pass, settings)."""
    states = {}
    for kind, path in (("portable", portable_path), ("in-process", in_process_path)):
        learner, info = read_learner_state(open(path, "rb").read())
        states[kind] = {"kind": type(learner).__name__, "info": info, "state": plain(learner.__getstate__())}
    assert_close(states["portable"], states["in-process"], f"state {portable_path}")


def read_index(folder) -> dict:
    """The ``index.json`` of a per-key folder (written last: a job that finished has one)."""
    return json.loads((Path(folder) / INDEX_NAME).read_text())


def assert_same_per_key_models(portable_folder, in_process_folder) -> None:
    """Two per-key folders hold the same index and the same model for every key.

    The index's facts (kind, key specification, settings), its keys, each
    key's file name, examples and non-zero weights: exactly; progressive
    losses to RTOL/ATOL. Each key's model: :func:`assert_same_model`.
    """
    portable, in_process = KeyedFolder(str(portable_folder)), KeyedFolder(str(in_process_folder))
    summed = ("progressive_loss",)  # over every key: a float sum, so to RTOL
    facts = {
        kind: {key: value for key, value in folder.index.items() if key not in summed}
        for kind, folder in (("portable", portable), ("in-process", in_process))
    }
    assert facts["portable"] == facts["in-process"], f"index facts: {facts['portable']} != {facts['in-process']}"
    assert_close(
        {name: portable.index[name] for name in summed}, {name: in_process.index[name] for name in summed}, "index"
    )
    # Keys and each entry's fields exactly, its numbers by assert_close's rules (the losses are floats).
    entries = dict(in_process.entries())
    assert_close(dict(portable.entries()), entries, "index.entries")
    for key in entries:
        assert_same_model(portable_folder, in_process_folder, models=(portable.model(key), in_process.model(key)))


def assert_same_lines(portable_path, in_process_path) -> None:
    """Two text files (dead letters) have the same lines, in any order (workers may write them in any order)."""
    portable = sorted(Path(portable_path).read_text().splitlines())
    in_process = sorted(Path(in_process_path).read_text().splitlines())
    assert portable == in_process, f"{portable_path} and {in_process_path} differ"


def prediction_lines(report: dict) -> tuple[str, list[str]]:
    """The header and the sorted lines of a one-shard prediction run (the order of lines is the workers')."""
    (path,) = report["prediction_files"]
    header, *body = Path(path).read_text().splitlines()
    return header, sorted(body)


def assert_same_predictions(runs) -> None:
    """A side-by-side predict run wrote the same header and prediction lines, in any order."""
    assert prediction_lines(runs.portable.report) == prediction_lines(runs.in_process.report)
