"""Training's axes: ``Train.Globally``, ``Train.PerKey`` and ``Train.SharedPerKey`` are what ``Train(...)``
builds from its arguments, and train the same models as the door that names them; each refuses the
options of another axis that would change what it trains."""

from __future__ import annotations

import dataclasses
import os
import pickle
import uuid

import apache_beam as beam
import numpy as np
import pytest

from polybeam.learners.batch import ExampleBatch
from polybeam.learners.multitask import SharedKeys
from polybeam.transforms.train import Train, TrainGlobally, TrainPerKey, TrainSharedPerKey


def _batches():
    rng = np.random.default_rng(4)
    out = []
    for _ in range(3):
        x = rng.normal(size=(200, 4))
        labels = np.where(x @ np.array([1.0, -2.0, 0.5, 1.0]) > 0, 1.0, -1.0)
        batch = ExampleBatch.from_rows(
            [(y, {i + 1: v for i, v in enumerate(row)}) for y, row in zip(labels, x)], bits=12
        )
        codes = rng.integers(0, 3, size=len(batch)).astype(np.int32)
        out.append(dataclasses.replace(batch, key_codes=codes, key_names=("a", "b", "c")))
    return out


def _by_key(batch):
    return np.array(batch.key_names, dtype=object)[batch.key_codes]


def _trained(transform, folder) -> list:
    """The elements ``transform`` emits, as bytes (sorted: per key, their order is the runner's)."""
    elements = _trained_from(lambda p: p | beam.Create(_batches()) | transform, folder)
    return sorted(
        str(element[0]).encode() + element[1].to_bytes() if isinstance(element, tuple) else element.to_bytes()
        for element in elements
    )


@pytest.mark.parametrize(
    ("door", "axis", "named"),
    [
        ({}, TrainGlobally, lambda **s: Train.Globally(**s)),
        ({"key": _by_key}, TrainPerKey, lambda **s: Train.PerKey(_by_key, **s)),
        (
            {"shared_keys": SharedKeys("column:k")},
            TrainSharedPerKey,
            lambda **s: TrainSharedPerKey(SharedKeys("column:k"), **s),
        ),
    ],
)
def test_each_axis_is_what_train_builds_and_trains_the_same_models(tmp_path, door, axis, named):
    settings = {"loss": "logistic", "bits": 12, "passes": 2}
    built = Train(**door, **settings)
    assert type(built) is axis
    assert getattr(Train, axis.__name__.removeprefix("Train")) is axis
    models = _trained(built, tmp_path / "door")
    assert len(models) == (3 if "key" in door else 1)
    assert models == _trained(named(**settings), tmp_path / "axis")


def test_each_axis_refuses_what_belongs_to_another():
    with pytest.raises(ValueError, match="takes no key function"):
        Train(key=_by_key, shared_keys=SharedKeys("column:k"))
    with pytest.raises(ValueError, match="shuffle_buffer mixes the examples of one model"):
        Train(key=_by_key, shuffle_buffer=100)
    with pytest.raises(ValueError, match="trains one model, not one per key"):
        Train.PerKey(_by_key, lbfgs_passes=3)
    with pytest.raises(TypeError, match="shuffle_buffer"):
        Train.PerKey(_by_key, shuffle_buffer=100)
    with pytest.raises(ValueError, match="a shared per-key model is linear"):
        Train.SharedPerKey(SharedKeys("column:k"), expand="apple")
    with pytest.raises(ValueError, match="offset_prior applies to a shared per-key model"):
        Train.Globally(offset_prior=1.0)
    # The command line names every option for whichever axis it gets: another axis's are dropped.
    assert type(Train(keyed_output="shards", key_shards=8, shuffle_seed=2)) is TrainGlobally


def test_the_hashing_is_given_once_to_the_read(tmp_path):
    from polybeam import datasets
    from polybeam.learners.config import LearnerConfig
    from polybeam.transforms.read import ReadExamples

    data = tmp_path / "spam.libsvm"
    data.write_bytes(b"".join(datasets.lines("spam")[:300]))
    models = _trained_from(
        lambda p: (
            p | ReadExamples(str(data), format="libsvm", labels="binary", bits=12, seed=3) | Train(loss="logistic")
        ),
        tmp_path / "adopted",
    )
    assert [(model.config.bits, model.config.seed, model.metadata["input"]["bits"]) for model in models] == [
        (12, 3, 12)
    ]
    for given in ({"bits": 14}, {"seed": 1}):
        with pytest.raises(
            ValueError, match=f"the learner was given {next(iter(given))}=.*give .* once, to ReadExamples"
        ):
            with beam.Pipeline(runner="FnApiRunner") as p:
                _ = (
                    p
                    | ReadExamples(str(data), format="libsvm", labels="binary", bits=12, seed=3)
                    | Train(loss="logistic", **given)
                )
    with pytest.raises(ValueError, match="hashes features with bits=12 but the learner was given bits=18"):
        with beam.Pipeline(runner="FnApiRunner") as p:
            _ = (
                p
                | ReadExamples(str(data), format="libsvm", labels="binary", bits=12)
                | Train(LearnerConfig(loss="logistic"))
            )


def _trained_from(build, folder) -> list:
    """What ``build(pipeline)`` emits (written by the workers, read back here)."""

    def save(element, folder=str(folder)):
        with open(os.path.join(folder, uuid.uuid4().hex), "wb") as file:
            pickle.dump(element, file)

    folder.mkdir()
    with beam.Pipeline(runner="FnApiRunner") as p:
        _ = build(p) | beam.Map(save)
    return [pickle.loads((folder / name).read_bytes()) for name in os.listdir(folder)]


def test_per_key_pass_by_pass_takes_a_key_function_of_python_objects(tmp_path):
    # (with checkpoints, each pass splits batches by key: an object array of str once failed there)
    models = _trained(
        Train.PerKey(_by_key, loss="logistic", bits=12, checkpoint_dir=str(tmp_path / "c")), tmp_path / "m"
    )
    assert [model[:1] for model in models] == [b"a", b"b", b"c"]
