"""Per-key folders (safe names for hostile keys, the index, the model library) and checkpoints in Beam."""

from __future__ import annotations

import dataclasses
import os

import apache_beam as beam
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.holdout import training_count
from polybeam.learners.model import Model
from polybeam.learners.state_file import read_learner_state
from polybeam.transforms.checkpoints import ReadLearners, last_complete_pass, state_path
from polybeam.transforms.keyed_files import MAX_STEM, KeyedFolder, key_file_stem, read_index
from polybeam.transforms.keys import ParsedKeys
from polybeam.transforms.model_io import WriteModel, read_model
from polybeam.transforms.routing import ModelLibrary, WriteKeyedModels
from polybeam.transforms.train import Train

HOSTILE_KEYS = ["../x", "/abs", "", "z" * 1000, "é☃ 日本", ".", "..", "a/b\\c", "k", "%41", "CON", "nul\x00byte"]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200), st.text(max_size=200))
def test_key_file_stems_are_safe_and_distinct(a, b):
    for key in (a, b):
        stem = key_file_stem(key)
        assert 1 <= len(stem) <= MAX_STEM and stem.startswith("k")
        assert all(c.isascii() and (c.isalnum() or c in "_-%~") for c in stem)
    if a != b:
        assert key_file_stem(a) != key_file_stem(b)


def test_hostile_keys_stay_inside_the_folder_and_round_trip(tmp_path):
    folder = str(tmp_path / "models")
    config = LearnerConfig(loss="logistic", bits=8)
    models = [(key, Model(config, np.array([i + 1]), np.array([float(i)]))) for i, key in enumerate(HOSTILE_KEYS)]
    with beam.Pipeline(runner="FnApiRunner") as p:
        _ = p | beam.Create(models) | WriteKeyedModels(folder, key="tag")
    written = [
        os.path.relpath(os.path.join(root, name), tmp_path) for root, _, names in os.walk(tmp_path) for name in names
    ]
    assert all(path.startswith("models" + os.sep) for path in written)
    index = read_index(folder)
    assert len(written) == len(index["files"]) + 1 == 2  # a shard of models (few keys: one), and the index
    assert sorted(key for key, _ in KeyedFolder(folder).entries()) == sorted(HOSTILE_KEYS) and index["key"] == "tag"
    assert index["keys"] == len(HOSTILE_KEYS)
    library = ModelLibrary(folder)
    for i, key in enumerate(HOSTILE_KEYS):
        assert library.model(key).weights.tolist() == [float(i)]
    assert library.model("missing") is None and not library.has("missing")


def batches(seed: int, keys=None):
    rng = np.random.default_rng(seed)
    out = []
    for _part in range(4):
        x = rng.normal(size=(300, 4))
        labels = np.where(x @ np.array([1.0, -2.0, 0.5, 0.0]) > 0, 1.0, -1.0)
        batch = ExampleBatch.from_rows(
            [(y, {i + 1: v for i, v in enumerate(row)}) for y, row in zip(labels, x)], bits=8
        )
        if keys:
            batch = dataclasses.replace(
                batch, tags=np.array([keys[i % len(keys)] for i in range(len(batch))], dtype=object)
            )
        out.append(batch)
    return out


def train(data, config, folder, *, key=None, initial_path=None, keyed_initial=False, **options):
    """The trained model, or {key: model}; models go through files (pipeline elements are pickled)."""
    with beam.Pipeline(runner="FnApiRunner") as p:
        initial = None if initial_path is None else p | ReadLearners(initial_path, config, keyed=keyed_initial)
        models = p | beam.Create(data) | Train(config, key=key, initial=initial, **options)
        if key is None:
            _ = models | WriteModel(os.path.join(folder, "model"))
        else:
            _ = models | WriteKeyedModels(os.path.join(folder, "keyed"))
    if key is None:
        return read_model(os.path.join(folder, "model"))
    library = ModelLibrary(os.path.join(folder, "keyed"))
    return {key: library.model(key) for key, _ in library.keyed.entries()}


@pytest.mark.slow
def test_train_checkpoints_every_pass_and_resumes_to_the_same_model(tmp_path):
    config = LearnerConfig(loss="logistic", bits=8, passes=3, step="adaptive", learning_rate=0.5)
    data = batches(1)
    whole = train(data, config, str(tmp_path / "a"), checkpoint_dir=str(tmp_path / "ck"))
    assert last_complete_pass(str(tmp_path / "ck"), keyed=False) == (3, state_path(str(tmp_path / "ck"), 3))
    learner, info = read_learner_state(open(state_path(str(tmp_path / "ck"), 1), "rb").read())
    # One example in ten is held out of every pass (by its row in a batch built in Python); pass 1 is judged.
    assert info["pass"] == 1 and learner.examples_seen == sum(training_count(batch, config) for batch in data) < 1200
    assert [entry["pass"] for entry in learner.selection_.history] == [1]

    resumed = train(data, config, str(tmp_path / "b"), initial_path=state_path(str(tmp_path / "ck"), 1), first_pass=2)
    assert np.array_equal(resumed.weights, whole.weights) and resumed.metadata == whole.metadata


@pytest.mark.slow
def test_keyed_checkpoints_hold_every_key_and_resume(tmp_path):
    config = LearnerConfig(loss="logistic", bits=8, passes=2)
    data = batches(2, keys=["a", "../b", ""])
    whole = train(data, config, str(tmp_path / "a"), key=ParsedKeys("tag"), checkpoint_dir=str(tmp_path / "ck"))
    done, folder = last_complete_pass(str(tmp_path / "ck"), keyed=True)
    assert done == 2 and sorted(read_index(folder)["entries"]) == ["", "../b", "a"]
    one = os.path.join(str(tmp_path / "ck"), "pass-0001")
    resumed = train(
        data, config, str(tmp_path / "b"), key=ParsedKeys("tag"), initial_path=one, keyed_initial=True, first_pass=2
    )
    assert sorted(resumed) == sorted(whole) == ["", "../b", "a"]
    for key in whole:
        assert np.array_equal(resumed[key].weights, whole[key].weights)


def test_reading_a_source_that_does_not_fit_fails_the_job(tmp_path):
    config = LearnerConfig(loss="logistic", bits=8, passes=2)
    train(batches(3), config, str(tmp_path), checkpoint_dir=str(tmp_path / "ck"))
    with pytest.raises(Exception, match="does not fit this run: loss is logistic there, squared here"):
        with beam.Pipeline(runner="FnApiRunner") as p:
            _ = p | ReadLearners(state_path(str(tmp_path / "ck"), 1), config.replace(loss="squared"))


@pytest.mark.slow
def test_a_merge_tree_averages_like_one_merge(tmp_path):
    """Averages of averages, each learner weighed by the importance it saw: the same model up to rounding."""
    from polybeam.learners.linear import LinearLearner

    config = LearnerConfig(loss="logistic", bits=8, step="adaptive", learning_rate=0.5)
    parts = [LinearLearner(config).learn(batch) for batch in batches(4)]
    copies = [[part.copy() for part in parts] for _ in range(2)]
    flat = copies[0][0].merge(copies[0][1:])
    tree = copies[1][0].merge([copies[1][1]]).merge([copies[1][2].merge([copies[1][3]])])
    assert np.allclose(flat.weights, tree.weights, rtol=1e-12, atol=1e-15)
    assert np.allclose(flat.sum_sq_grad_, tree.sum_sq_grad_) and flat.examples_seen == tree.examples_seen

    config = config.replace(passes=2)
    plain = train(batches(5), config, str(tmp_path / "plain"))
    fanned = train(batches(5), config, str(tmp_path / "fanned"), fanout=2)
    assert np.array_equal(plain.slots, fanned.slots) and np.allclose(plain.weights, fanned.weights, rtol=1e-12)
