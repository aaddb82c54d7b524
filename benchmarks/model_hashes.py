"""Hashes of the models ``Train`` learns in eleven settings, to tell whether a change of code changed a model.

Run it on two checkouts and compare the lines: a refactoring that keeps every
model bit for bit prints the same hashes::

    git worktree add /tmp/before HEAD~1
    PYTHONPATH=/tmp/before python benchmarks/model_hashes.py > before.txt
    python benchmarks/model_hashes.py > after.txt
    diff before.txt after.txt && echo identical

The settings cover the axes and options of training: one model with one and
several passes, apple, a merge tree, a shuffle buffer, the L-BFGS stage,
squared loss with gravity; a model per key by shards and pass by pass (with
checkpoints, with a merge tree); one shared per-key model. The data is the
bundled spam set in 300-row batches (per key: three keys by row number).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import pickle
import sys
import tempfile
import uuid
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if not os.environ.get("PYTHONPATH"):  # (with it, the checkout it names is the one measured)
    sys.path.insert(0, str(ROOT))

import apache_beam as beam  # noqa: E402
import numpy as np  # noqa: E402

from polybeam import datasets  # noqa: E402
from polybeam.learners.multitask import SharedKeys  # noqa: E402
from polybeam.transforms.train import Train  # noqa: E402

ROWS = 300


def batches() -> tuple[list, list]:
    """The spam set in batches, and the same batches with three keys by row number."""
    whole = datasets.load("spam", bits=14, binary=True)
    parts = [whole.take(np.arange(start, min(len(whole), start + ROWS))) for start in range(0, len(whole), ROWS)]
    keyed = [
        replace(part, key_codes=(np.arange(number * ROWS, number * ROWS + len(part)) % 3).astype(np.int32),
                key_names=("a", "b", "c"))
        for number, part in enumerate(parts)
    ]  # fmt: skip
    return parts, keyed


def by_key(batch):
    return np.array(batch.key_names)[batch.key_codes]


def trained(transform, data) -> list:
    """What ``transform`` emits on ``data`` (written by the workers, read back here)."""
    folder = tempfile.mkdtemp()

    def save(element, folder=folder):
        with open(os.path.join(folder, uuid.uuid4().hex), "wb") as file:
            pickle.dump(element, file)

    with beam.Pipeline(runner="FnApiRunner") as p:
        _ = p | beam.Create(data) | transform | beam.Map(save)
    return [pickle.loads(Path(folder, name).read_bytes()) for name in os.listdir(folder)]


def without_run_facts(model):
    """``model`` without what differs from run to run whatever the code: the seconds the L-BFGS stage took
    (and, from older checkouts, summaries without them hash alike)."""
    finishing = model.metadata.get("lbfgs")
    if not finishing or "seconds" not in finishing:
        return model
    metadata = {**model.metadata, "lbfgs": {k: v for k, v in finishing.items() if k not in ("seconds", "why")}}
    return dataclasses.replace(model, metadata=metadata)


def digest(elements) -> str:
    """One hash of models (or ``(key, model)`` pairs, in key order) as their files' bytes (but for the
    run's own facts, :func:`without_run_facts`)."""
    pairs = sorted(
        (str(element[0]), element[1]) if isinstance(element, tuple) else ("", element) for element in elements
    )
    return hashlib.sha256(
        b"".join(key.encode() + without_run_facts(model).to_bytes() for key, model in pairs)
    ).hexdigest()[:16]


def settings(checkpoints: str) -> dict:
    base = {"loss": "logistic", "bits": 14}
    return {
        "one pass": (lambda: Train(**base), False),
        "three passes": (lambda: Train(**base, passes=3), False),
        "apple, three passes": (lambda: Train(**base, passes=3, expand="apple"), False),
        "merge tree": (lambda: Train(**base, passes=2, fanout=2), False),
        "shuffle buffer": (lambda: Train(**base, passes=2, shuffle_buffer=500, shuffle_seed=3), False),
        "L-BFGS stage": (lambda: Train(**base, lbfgs_passes=3), False),
        "squared, gravity": (lambda: Train(loss="squared", bits=14, passes=3, gravity=1e-6), False),
        "per key, shards": (lambda: Train(**base, passes=2, key=by_key), True),
        "per key, checkpoints": (lambda: Train(**base, passes=2, key=by_key, checkpoint_dir=checkpoints + "/a"), True),
        "per key, merge tree": (
            lambda: Train(**base, passes=2, key=by_key, fanout=2, checkpoint_dir=checkpoints + "/b"),
            True,
        ),
        "shared per key": (lambda: Train(**base, passes=2, shared_keys=SharedKeys("column:k")), True),
    }


def main() -> None:
    parts, keyed = batches()
    with tempfile.TemporaryDirectory() as checkpoints:
        for name, (make, per_key) in settings(checkpoints).items():
            elements = trained(make(), keyed if per_key else parts)
            print(f"{name}: {len(elements)} model(s) {digest(elements)}", flush=True)


if __name__ == "__main__":
    main()
