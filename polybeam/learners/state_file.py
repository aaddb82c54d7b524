"""Learner-state files: everything a learner needs to continue exactly where it stopped.

A model file keeps only the non-zero weights a predictor needs. Continuing to
train needs more: AdaGrad sums, feature scales, truncation clocks, the
greedy-step average, apple's parents and schedule, per-pass statistics. A
learner-state file holds all of it (the learner's ``__getstate__``), in the
self-checking layout of :mod:`polybeam.learners.container`: arrays as arrays,
everything else as JSON, so reading one never runs code (no pickle).

``polybeam train`` writes one after every pass (a checkpoint); ``--resume``
and ``--initial-model`` read them.

>>> from polybeam.learners.batch import ExampleBatch
>>> from polybeam.learners.config import LearnerConfig
>>> from polybeam.learners.linear import LinearLearner
>>> batch = ExampleBatch.from_rows([(1.0, {1: 1.0}), (-1.0, {2: 1.0})] * 20, bits=10)
>>> learner = LinearLearner(LearnerConfig(loss="logistic", bits=10)).learn(batch)
>>> again = learner_from_bytes(learner_to_bytes(learner))
>>> bool((again.weights == learner.weights).all()), again.examples_seen
(True, 40)
>>> is_learner_state(learner_to_bytes(learner)), is_learner_state(b"POLYBEAM-MODEL\\n...")
(True, False)
"""

from __future__ import annotations

import numpy as np

from polybeam.learners import container
from polybeam.learners.config import LearnerConfig
from polybeam.learners.linear import LinearLearner
from polybeam.learners.polynomial import PolynomialLearner

MAGIC = b"POLYBEAM-STATE\n"
FORMAT_VERSION = 1
_KINDS = {"linear": LinearLearner, "polynomial": PolynomialLearner}


def is_learner_state(data: bytes) -> bool:
    """Whether ``data`` starts like a learner-state file (not, say, a model file)."""
    return data.startswith(MAGIC)


def learner_to_bytes(learner: LinearLearner | PolynomialLearner, info: dict | None = None) -> bytes:
    """The learner's whole state as a file; ``info`` (JSON-able) is stored alongside (e.g. the pass)."""
    kind = next(name for name, cls in _KINDS.items() if type(learner) is cls)
    arrays: dict[str, np.ndarray] = {}
    tree = _encode(learner.__getstate__(), arrays, "")
    return container.pack(MAGIC, FORMAT_VERSION, {"kind": kind, "state": tree, "info": info or {}}, arrays)


def read_learner_state(data: bytes) -> tuple[LinearLearner | PolynomialLearner, dict]:
    """``(learner, info)`` from a learner-state file; refuses damaged files clearly."""
    _, header, arrays = container.unpack(data, MAGIC, newest=FORMAT_VERSION, what="learner state file")
    try:
        cls = _KINDS[header["kind"]]
        state = _decode(header["state"], arrays)
        LearnerConfig.from_dict(state["config"])  # a clear error for a bad configuration, before any array work
        learner = cls.__new__(cls)
        learner.__setstate__(state)
    except (KeyError, TypeError, IndexError) as error:
        raise container.FormatError(f"learner state file is corrupt: incomplete state ({error!r})") from None
    return learner, header.get("info", {})


def learner_from_bytes(data: bytes) -> LinearLearner | PolynomialLearner:
    """The learner of a learner-state file."""
    return read_learner_state(data)[0]


# -- a state tree as JSON plus named arrays -------------------------------------------------------


def _encode(value, arrays: dict, path: str):
    """JSON-able form of ``value``; numpy arrays move to ``arrays`` under their path."""
    if isinstance(value, np.ndarray):
        arrays[path] = value
        return {"__array__": path}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        if all(isinstance(key, str) for key in value):
            return {key: _encode(item, arrays, f"{path}.{key}") for key, item in value.items()}
        # Keys that JSON would turn into strings (slot -> name maps): kept as pairs.
        return {
            "__items__": [
                [_encode(key, arrays, ""), _encode(item, arrays, f"{path}.{i}")]
                for i, (key, item) in enumerate(value.items())
            ]
        }
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(item, arrays, f"{path}.{i}") for i, item in enumerate(value)]}
    if isinstance(value, list):
        return [_encode(item, arrays, f"{path}.{i}") for i, item in enumerate(value)]
    return value


def _decode(value, arrays: dict):
    if isinstance(value, dict):
        if "__array__" in value:
            return np.array(arrays[value["__array__"]])  # a writable copy
        if "__items__" in value:
            return {_decode(key, arrays): _decode(item, arrays) for key, item in value["__items__"]}
        if "__tuple__" in value:
            return tuple(_decode(item, arrays) for item in value["__tuple__"])
        return {key: _decode(item, arrays) for key, item in value.items()}
    if isinstance(value, list):
        return [_decode(item, arrays) for item in value]
    return value
