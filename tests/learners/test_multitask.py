"""The key crossing of shared per-key models, against a plain-Python reference of its rules."""

from __future__ import annotations

import dataclasses
import struct

import mmh3
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polybeam.learners.arrays import batch_from_arrays
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.linear import LinearLearner
from polybeam.learners.model import _ARRAYS, Model, ModelFileError
from polybeam.learners.multitask import (
    KEY_SEED,
    SharedKeys,
    cross_batch,
    crossed_entries,
    crossed_slot,
    key_hash,
    key_hashes,
    seed_offset_sums,
)


def reference_key_hash(key: str, seed: int = 0) -> int:
    # hashing.hash_string: VW trims bytes <= 32 at both ends; digit-only names are their value plus the seed
    # (VW's rule), others MurmurHash3 of their UTF-8 bytes.
    raw = key.encode("utf-8").strip(bytes(range(33)))
    seed = KEY_SEED ^ seed
    if raw and len(raw) <= 18 and raw.isdigit():
        return (int(raw) + seed) & 0xFFFFFFFF
    return mmh3.hash(raw, seed, signed=False)


def reference_crossed(rows, keys, bits, scale=1.0, known=None):
    """Plain Python: each row's features, then (for a crossed key) each feature's copy and the bias copy."""
    mask = (1 << bits) - 1
    out = []
    for (_label, features), key in zip(rows, keys):
        entries = [(slot, value) for slot, value in features]
        k = reference_key_hash(key)
        if known is None or k in known:
            entries += [
                (mmh3.hash(struct.pack("<I", slot), k, signed=False) & mask, scale * value) for slot, value in features
            ]
            entries.append((mmh3.hash(struct.pack("<I", 0), k, signed=False) & mask, scale))
        out.append(entries)
    return out


def as_entries(batch: ExampleBatch):
    return [list(zip(batch.row(i)[0].tolist(), batch.row(i)[1].tolist())) for i in range(len(batch))]


key_names = st.text(alphabet="ab01 é", max_size=6)
rows = st.lists(
    st.tuples(
        st.sampled_from([-1.0, 1.0]),
        st.lists(st.tuples(st.integers(1, 5000), st.floats(-5, 5, allow_nan=False)), max_size=5),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=60, deadline=None)
@given(rows=rows, data=st.data(), bits=st.integers(4, 22), scale=st.sampled_from([1.0, 0.25]))
def test_crossing_matches_the_plain_python_reference(rows, data, bits, scale):
    keys = data.draw(st.lists(key_names, min_size=len(rows), max_size=len(rows)))
    batch = ExampleBatch(
        labels=np.array([label for label, _ in rows]),
        weights=np.ones(len(rows)),
        indptr=np.cumsum([0] + [len(f) for _, f in rows]).astype(np.int64),
        indices=np.array([s & ((1 << bits) - 1) for _, f in rows for s, _ in f], dtype=np.int32),
        values=np.array([v for _, f in rows for _, v in f]),
        bits=bits,
    )
    masked = [(label, [(s & ((1 << bits) - 1), v) for s, v in f]) for label, f in rows]
    crossed = cross_batch(batch, key_hashes(np.array(keys, dtype=object)), offset_scale=scale)
    assert as_entries(crossed) == reference_crossed(masked, keys, bits, scale)
    # Only the keys in `known` are crossed: the others keep their plain features exactly.
    known = sorted({reference_key_hash(k) for k in keys[::2]})
    partly = cross_batch(batch, key_hashes(np.array(keys, dtype=object)), offset_scale=scale, known=np.array(known))
    assert as_entries(partly) == reference_crossed(masked, keys, bits, scale, set(known))
    assert np.array_equal(crossed.labels, batch.labels) and len(crossed) == len(batch)


@given(st.lists(key_names, min_size=1, max_size=20))
def test_key_hashes_are_the_reference_hash_of_each_key(keys):
    assert key_hashes(np.array(keys, dtype=object)).tolist() == [reference_key_hash(k) for k in keys]
    assert [key_hash(k) for k in keys] == [reference_key_hash(k) for k in keys]


def test_a_crossed_slot_depends_on_the_key_and_the_slot():
    a, b = key_hash("store-1"), key_hash("store-2")
    slots = {crossed_slot(s, h, 18) for s in range(50) for h in (a, b)}
    assert len(slots) > 95  # 100 copies, a collision or two at most in 2**18 slots


def keyed_batch(rows, keys, bits=12):
    names = tuple(sorted(set(keys)))
    batch = ExampleBatch.from_rows(rows, bits=bits)
    import dataclasses

    return dataclasses.replace(
        batch, key_codes=np.array([names.index(k) for k in keys], dtype=np.int32), key_names=names
    )


def trained_shared_model(bits=12):
    # Feature 1 means +1 for key "up" and -1 for key "down": only the offsets can tell them apart.
    rows = [(1.0, {1: 1.0}), (-1.0, {1: 1.0})] * 200
    keys = ["up", "down"] * 200
    batch = keyed_batch(rows, keys, bits)
    shared = SharedKeys("column:store")
    model = LinearLearner(LearnerConfig(loss="logistic", bits=bits)).learn(shared.cross(batch)).to_model()
    import dataclasses

    record = dataclasses.replace(shared, trained=np.unique(key_hashes(np.array(keys, dtype=object)))).to_metadata()
    return dataclasses.replace(model, metadata={**model.metadata, **record}), batch


def test_a_shared_model_crosses_its_input_and_an_unseen_key_gets_exactly_the_shared_part():
    model, batch = trained_shared_model()
    up, down = model.predict(batch)[:2]
    assert up > 0.9 and down < 0.1
    # A key training never saw, by the batch's own keys or given: the shared weights alone, exactly.
    plain = Model(model.config, model.slots, model.weights)  # the same weights, no crossing
    unseen = keyed_batch([(1.0, {1: 1.0})], ["never-seen"])
    assert model.predict(unseen)[0] == plain.predict(unseen)[0]
    assert model.predict(batch.take([0]), keys=["never-seen"])[0] == plain.predict(unseen)[0]
    assert model.predict(batch.take([0]), keys=["up"])[0] == up
    # A batch without keys (a matrix) is scored by the shared part too.
    assert model.predict(np.array([[1.0]]))[0] == pytest.approx(plain.predict(unseen)[0])


def test_a_shared_model_file_keeps_its_crossing_and_older_readers_refuse_it():
    model, batch = trained_shared_model()
    data = model.to_bytes()
    again = Model.from_bytes(data)
    assert again.shared_keys.key == "column:store" and len(again.shared_keys.trained) == 2
    assert np.array_equal(again.predict(batch), model.predict(batch))

    # Version 8 (its trained keys an array after the header), with fills or without; plain models stay
    # version 5, and a plain model that fills missing values is version 7.
    def version(model):
        return int.from_bytes(model.to_bytes()[len(b"POLYBEAM-MODEL\n") :][:4], "little")

    unfilled = dataclasses.replace(model, fill_slots=None, fill_values=None)
    assert (version(model), version(unfilled)) == (8, 8)
    plain = Model(model.config, model.slots, model.weights)
    assert version(plain) == 5
    assert version(dataclasses.replace(plain, fill_slots=model.fill_slots, fill_values=model.fill_values)) == 7
    from polybeam.learners import container

    _, header, arrays = container.unpack(data, b"POLYBEAM-MODEL\n", newest=8, what="model file", names=_ARRAYS)
    assert "trained_keys" not in header["metadata"]
    assert arrays["trained_keys"].tolist() == model.shared_keys.trained.tolist()
    # A file of version 7 (trained keys a list in the metadata) reads as it did.
    old_header = {**header, "metadata": {**header["metadata"], "trained_keys": arrays["trained_keys"].tolist()}}
    old_arrays = {name: array for name, array in arrays.items() if name != "trained_keys"}
    older = Model.from_bytes(container.pack(b"POLYBEAM-MODEL\n", 7, old_header, old_arrays))
    assert older.shared_keys.trained.tolist() == model.shared_keys.trained.tolist()
    assert np.array_equal(older.predict(batch), model.predict(batch))

    with pytest.raises(ModelFileError, match="newer"):
        container.unpack(data, b"POLYBEAM-MODEL\n", newest=5, what="model file", names=("slots", "weights"))


# -- the offsets' prior ------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(rows=rows)
def test_crossed_entries_are_each_rows_copies_and_bias_copy(rows):
    batch = ExampleBatch.from_rows([(label, dict(features)) for label, features in rows], bits=16)
    crossed = cross_batch(batch, key_hashes(np.array(["k"] * len(batch), dtype=object)))
    expected = []
    for i in range(len(batch)):
        plain = len(batch.row(i)[0])
        expected += [False] * plain + [True] * (plain + 1)
    assert crossed_entries(crossed).tolist() == expected


def test_the_prior_seeds_only_fresh_key_crossed_slots_in_the_features_units():
    batch = ExampleBatch.from_rows([(1.0, {3: 0.5, 4: -4.0}), (1.0, {3: 2.0})], bits=12)
    crossed = cross_batch(batch, key_hashes(np.array(["a", "b"], dtype=object)))
    sums = np.zeros((1 << 12, 1))
    already = crossed.indices[crossed_entries(crossed)][0]  # a's copy of feature 3 has a sum of its own
    sums[already] = 7.0
    scale = np.zeros(1 << 12)
    scale[4] = 10.0  # feature 4 was seen up to 10 before this batch
    seed_offset_sums(sums, crossed, 0.5, scale)
    a3, a4, a_bias, b3, b_bias = crossed.indices[crossed_entries(crossed)].tolist()
    assert sums[a3, 0] == 7.0  # not fresh: untouched
    assert sums[a4, 0] == 0.5 * 10.0**2  # the feature's largest magnitude so far
    assert sums[b3, 0] == 0.5 * 2.0**2  # feature 3's largest in this batch (no scale before it)
    assert sums[a_bias, 0] == sums[b_bias, 0] == 0.5  # the bias: value 1
    assert not sums[[3, 4, 0], 0].any()  # plain slots: untouched


def offsets_norm(prior: float) -> float:
    from polybeam.datasets.shared_keys import SharedKeysTask

    train, _ = SharedKeysTask(keys=300, features=5).generate(rows_per_key=3, test_rows_per_key=1)
    batch = batch_from_arrays(train.values, train.labels, bits=18)
    hashes = key_hashes(train.keys)
    learner = LinearLearner(LearnerConfig(loss="logistic", bits=18, offset_prior=prior))
    model = learner.learn(cross_batch(batch, hashes)).to_model()
    crossed = cross_batch(batch, hashes)
    copies = np.unique(crossed.indices[crossed_entries(crossed)])
    return float(np.linalg.norm(model.dense_weights[copies]))


def test_the_prior_pulls_the_offsets_of_keys_with_few_rows_toward_zero():
    assert offsets_norm(0.3) < 0.8 * offsets_norm(0.0)


def test_only_shared_models_take_an_offset_prior_and_plain_configs_do_not_record_one():
    from polybeam.learners.choices import DEFAULT_OFFSET_PRIOR
    from polybeam.learners.multitask import shared_config

    assert "offset_prior" not in LearnerConfig().to_dict()  # plain model files read as before
    assert shared_config(LearnerConfig(), True).offset_prior == DEFAULT_OFFSET_PRIOR
    assert shared_config(LearnerConfig(offset_prior=0.0), True).offset_prior == 0.0
    with pytest.raises(ValueError, match="shared per-key model"):
        shared_config(LearnerConfig(offset_prior=0.1), False)
    with pytest.raises(ValueError, match="no expansion"):
        shared_config(LearnerConfig(expand="quadratic"), True)
    with pytest.raises(ValueError, match="offset_prior must be >= 0"):
        LearnerConfig(offset_prior=-1.0)


@settings(max_examples=60, deadline=None)
@given(names=st.lists(st.text(max_size=12), max_size=20), seed=st.integers(0, 2**31))
def test_many_key_names_hash_in_one_pass_as_each_alone(names, seed):
    from polybeam.learners.hashing import hash_string, hash_strings

    assert hash_strings(names, seed).tolist() == [hash_string(name, seed) for name in names]
