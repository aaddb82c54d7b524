"""Per-key learners by shards of keys, the shard files of per-key models, and reading them per key.

References: each key's model from Train is the model of one learner that
``fit``s that key's examples alone (what the pure learner API does, in plain
Python terms: one learner per key, every pass, the holdout per key); a shard
file gives back exactly the models written into it, for any keys.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.ml.inference.base import RunInference
from apache_beam.testing.util import assert_that, equal_to
from hypothesis import given, settings
from hypothesis import strategies as st

from polybeam.learners import kernels
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.fitting import train_passes
from polybeam.learners.key_spec import key_text
from polybeam.learners.key_table import train_table
from polybeam.learners.model import Model, ModelFileError
from polybeam.learners.model_shards import (
    ShardReader,
    add_summaries,
    entry_of,
    shard_bytes,
    shard_of,
    shards_of,
    summarise,
)
from polybeam.learners.polynomial import make_learner
from polybeam.learners.warm_start import learner_from_model
from polybeam.pipelines.cli import main
from polybeam.transforms.checkpoints import ReadLearners
from polybeam.transforms.inference import InferenceError, PerKeyModelHandler
from polybeam.transforms.key_shards import SplitByShard, key_segments
from polybeam.transforms.keyed_files import KeyedFolder
from polybeam.transforms.keys import ParsedKeys
from polybeam.transforms.routing import WriteKeyedModels, shard_count
from polybeam.transforms.train import Train
from tests.learners.model_equality import assert_same_model

KEYS = ["a", "../b", "", "café", "k" * 300]


def _batches(seed: int, rows: int = 240, parts: int = 4, loss: str = "logistic", bits: int = 10, missing: float = 0.0):
    """Batches whose examples carry tags (the key) in an interleaved order (a share ``missing`` of their
    values missing: NaN)."""
    rng = np.random.default_rng(seed)
    out = []
    for part in range(parts):
        x = rng.normal(size=(rows, 5))
        if loss == "softmax":
            labels = 1.0 + (x[:, 0] > 0) + (x[:, 1] > 0.5)
        else:
            labels = np.where(x @ np.array([1.0, -2.0, 0.5, 0.0, 1.0]) > 0, 1.0, -1.0)
        x[rng.random(x.shape) < missing] = np.nan
        batch = ExampleBatch.from_rows(
            [(y, {i + 1: v for i, v in enumerate(row)}) for y, row in zip(labels, x)], bits=bits
        )
        tags = np.array([KEYS[int(k)] for k in rng.integers(0, len(KEYS), size=rows)], dtype=object)
        out.append(dataclasses.replace(batch, tags=tags, row_ids=np.arange(part * rows, (part + 1) * rows)))
    return out


def _reference(batches, config):
    """Each key's model: one learner fitting the key's examples, in order, alone."""
    models = {}
    for key in KEYS:
        parts = [b.take(np.flatnonzero(b.tags == key)) for b in batches]
        examples = ExampleBatch.concat([dataclasses.replace(p, tags=None) for p in parts if len(p)])
        # (a key's small holdout is released, not cross-validated: see polybeam.learners.fitting)
        learner = make_learner(config, per_key=True)
        models[key] = train_passes(learner, [examples], config.passes, cross_validate=False).to_model()
    return models


def _train(batches, config, initial_folder=None, **options):
    """Each key's model (through a folder: a pipeline's elements are pickled copies)."""
    folder = tempfile.mkdtemp()
    with beam.Pipeline(runner="FnApiRunner") as p:
        initial = None if initial_folder is None else p | ReadLearners(initial_folder, config, keyed=True)
        models = p | beam.Create(batches) | Train(config, key=ParsedKeys("tag"), initial=initial, **options)
        _ = models | WriteKeyedModels(folder)
    keyed = KeyedFolder(folder)
    return {key: keyed.model(key) for key, _ in keyed.entries()}


@pytest.mark.parametrize(
    "settings_",
    [
        dict(loss="logistic"),
        dict(loss="logistic", passes=3, holdout_min_examples=10),
        dict(loss="squared", learning_rate=0.5, sparsity="truncate", gravity=1e-3),
        dict(loss="softmax", classes=3),
        dict(loss="logistic", expand="apple", passes=2),
    ],
    ids=["logistic", "passes-holdout", "squared-truncate", "softmax", "apple"],
)
def test_each_keys_model_is_one_learner_fitting_that_keys_examples(settings_):
    config = LearnerConfig(bits=10, **settings_)
    batches = _batches(1, loss=config.loss)
    got, expected = _train(batches, config, key_shards=3), _reference(batches, config)
    assert sorted(got) == sorted(expected) == sorted(KEYS)
    for key in KEYS:
        assert_same_model(got[key], expected[key])


@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_keys_of_few_rows_learn_as_a_table_and_each_model_is_its_own_learners(loss):
    # 300 keys of 1 to 14 rows in a random order: those of at most 10 rows learn as one table per shard.
    rng = np.random.default_rng(5)
    counts = rng.integers(1, 15, size=300)
    order = rng.permutation(np.repeat(np.arange(300), counts))
    x = rng.normal(size=(len(order), 6)) * [1, 10, 100, 1, 1, 1] + [0, 50, 0, 0, 0, 3]
    x[rng.random(x.shape) < 0.05] = np.nan
    labels = np.where(np.nan_to_num(x[:, 0]) + 0.1 * (order % 7) > 0.3, 1.0, -1.0)
    rows = [(y, {i + 1: v for i, v in enumerate(row) if v != 0}) for y, row in zip(labels, x)]
    whole = ExampleBatch.from_rows(rows, bits=10)
    tags = np.array([f"k{key}" for key in order], dtype=object)
    batches = [
        dataclasses.replace(
            whole.take(np.arange(start, min(start + 500, len(order)))),
            tags=tags[start : start + 500],
            row_ids=np.arange(start, min(start + 500, len(order))),
        )
        for start in range(0, len(order), 500)
    ]
    config = LearnerConfig(bits=10, loss=loss)
    got = _train(batches, config, key_shards=3)
    assert len(got) == 300
    for key in range(300):
        mine = np.flatnonzero(order == key)
        alone = make_learner(config, per_key=True)
        expected = train_passes(alone, [whole.take(mine)], 1, cross_validate=False).to_model()
        assert_same_model(got[f"k{key}"], expected)


def test_per_key_models_fill_missing_values_with_their_keys_means_after_a_shard_file():
    # A shard record once dropped the fills: a key's missing value then scored as 0, not as its mean.
    config = LearnerConfig(bits=10, loss="logistic")
    batches = _batches(2, missing=0.1)
    got, expected = _train(batches, config, key_shards=3), _reference(batches, config)
    probe = ExampleBatch.from_rows([(1.0, {1: np.nan, 2: 0.5}), (1.0, {1: 0.2, 2: np.nan})], bits=10)
    for key in KEYS:
        assert expected[key].fill_slots is not None and len(expected[key].fill_slots)
        assert_same_model(got[key], expected[key])
        np.testing.assert_allclose(got[key].predict(probe), expected[key].predict(probe), rtol=1e-12)


def test_key_segments_gather_each_keys_rows_in_order_whatever_order_the_parts_come_in():
    batches = _batches(2, rows=50, parts=3)

    parts = [part for batch in batches for _, part in SplitByShard(ParsedKeys("tag"), 1).split(batch)]
    forward = {key: examples.labels.tolist() for key, examples in key_segments(parts)}
    backward = {key: examples.labels.tolist() for key, examples in key_segments(parts[::-1])}
    assert forward == backward
    for key in KEYS:
        assert forward[key] == np.concatenate([b.labels[b.tags == key] for b in batches]).tolist()


def test_blocks_of_batches_that_interleave_in_a_file_give_each_key_its_rows_in_read_order():
    # Two bundles' blocks: batches 0 and 2 in one, 1 in the other (a block's first row says nothing of the
    # rows after it), through the shards of a SplitByShard in a pipeline and straight from the batches.
    batches = _batches(3, rows=50, parts=3)
    split = SplitByShard(ParsedKeys("tag"), 3)
    blocks = [ExampleBatch.concat([batches[0], batches[2]]), batches[1]]
    by_shard: dict = {}
    for shard, part in (pair for block in blocks for pair in split.split(block)):
        by_shard.setdefault(shard, []).append(part)
    for parts in by_shard.values():
        segments = list(key_segments(parts))
        present = {key for part in parts for key in part.key_names}
        first_read = [key for key in dict.fromkeys(np.concatenate([b.tags for b in batches])) if key in present]
        assert [key for key, _ in segments] == first_read
        for key, examples in segments:
            assert examples.labels.tolist() == np.concatenate([b.labels[b.tags == key] for b in batches]).tolist()
    with beam.Pipeline() as pipeline:
        counted = (
            pipeline
            | beam.Create(batches, reshuffle=False)
            | beam.ParDo(SplitByShard(ParsedKeys("tag"), 3))
            | beam.GroupByKey()
            | beam.MapTuple(lambda shard, parts: sorted((key, len(rows)) for key, rows in key_segments(parts)))
            | beam.FlatMap(lambda pairs: pairs)
        )
        expected = [(key, int(sum((b.tags == key).sum() for b in batches))) for key in KEYS]
        assert_that(counted, equal_to(expected))


@pytest.mark.slow
def test_a_warm_start_goes_on_from_each_keys_model(tmp_path):
    config = LearnerConfig(loss="logistic", bits=10)
    first, second = _batches(3), _batches(4)
    folder = str(tmp_path / "first")
    with beam.Pipeline(runner="FnApiRunner") as p:
        _ = (
            p
            | beam.Create(first)
            | Train(config, key=ParsedKeys("tag"), keyed_output="shards")
            | WriteKeyedModels(folder)
        )
    warm, cold = _train(second, config, initial_folder=folder), _train(second, config)
    first_models = KeyedFolder(folder)
    assert sorted(warm) == sorted(KEYS)
    for key in KEYS:  # each key's learner starts from its own first model: the reference, one learner per key
        part = ExampleBatch.concat(
            [dataclasses.replace(b.take(np.flatnonzero(b.tags == key)), tags=None) for b in second]
        )
        reference = learner_from_model(first_models.model(key), config).learn(part).to_model()
        np.testing.assert_allclose(warm[key].weights, reference.weights, rtol=1e-12, atol=1e-12)
        assert warm[key].metadata["progressive_loss"] < cold[key].metadata["progressive_loss"]


def _model(rng, config: LearnerConfig) -> Model:
    slots = np.unique(rng.integers(0, 1 << config.bits, size=rng.integers(0, 30)))
    shape = (len(slots),) if config.outputs == 1 else (len(slots), config.outputs)
    clipped = bool(rng.integers(0, 2))
    low = -rng.random(len(slots)) if clipped else None
    filled = slots[rng.random(len(slots)) < 0.5] if rng.integers(0, 2) else None
    return Model(
        config,
        slots,
        rng.normal(size=shape),
        metadata={
            "examples": int(rng.integers(1, 99)),
            "progressive_loss": float(rng.random()),
            "passes": [{"examples": 3}],
        },
        names={int(s): f"f{s}" for s in slots[:3]},
        clip_low=low,
        clip_high=None if low is None else -low,
        fill_slots=filled,
        fill_values=None if filled is None else rng.normal(size=len(filled)),
        fill_indicated=None if filled is None else rng.random(len(filled)) < 0.3,
    )


@settings(max_examples=40, deadline=None)
@given(keys=st.sets(st.text(max_size=40), min_size=1, max_size=12), seed=st.integers(0, 10_000), softmax=st.booleans())
def test_a_shard_gives_back_every_model_written_into_it(keys, seed, softmax):
    rng = np.random.default_rng(seed)
    config = LearnerConfig(loss="softmax", classes=3, bits=12) if softmax else LearnerConfig(loss="logistic", bits=12)
    models = {key: _model(rng, config) for key in keys}
    reader = ShardReader.of_bytes(shard_bytes(models.items()))
    union = {}
    for key in sorted(keys):
        for slot, name in models[key].names.items():
            union.setdefault(slot, name)
    assert reader.keys() == sorted(keys) and len(reader) == len(keys)
    for key, model in models.items():
        back = reader.model(key)
        np.testing.assert_array_equal(back.slots, model.slots)
        np.testing.assert_array_equal(back.weights, model.weights)
        # Names are the shard's (a slot's feature name is the same for every key): the model's slots' names.
        assert (
            back.names == {s: n for s, n in union.items() if s in set(model.slots.tolist())}
            and back.config == model.config
        )
        assert back.metadata == model.metadata
        assert_same_model(back, model)
        assert reader.entry(key)["examples"] == model.metadata["examples"]
    assert reader.model("\x00 not a key") is None or "\x00 not a key" in keys


@settings(max_examples=25, deadline=None)
@given(
    record_keys=st.sets(st.text(max_size=12), max_size=6),
    table_rows=st.lists(st.integers(1, 10), min_size=1, max_size=8),
    seed=st.integers(0, 10_000),
)
def test_a_shard_gives_back_the_models_of_a_table_beside_its_records(record_keys, table_rows, seed):
    rng = np.random.default_rng(seed)
    config = LearnerConfig(loss="logistic", bits=12)
    table_keys = [f"t{k}" for k in range(len(table_rows))]
    rows = [
        (float(rng.choice([-1.0, 1.0])), {int(s): float(v) for s, v in zip(rng.integers(0, 40, 4), rng.normal(size=4))})
        for _ in range(sum(table_rows))
    ]
    batch = ExampleBatch.from_rows(rows, bits=12)
    batch.values[rng.random(len(batch.values)) < 0.1] = np.nan
    table = train_table(config, batch, np.concatenate([[0], np.cumsum(table_rows)]), table_keys, {"input_format": "vw"})
    records = {key: _model(rng, config) for key in record_keys - set(table_keys)}
    # (what a shard's keys share, such as how their input was read, is written once)
    records = {key: dataclasses.replace(m, metadata={**m.metadata, "input_format": "vw"}) for key, m in records.items()}
    reader = ShardReader.of_bytes(shard_bytes(records.items(), table=table))
    expected = {**records, **dict(table)}
    assert reader.keys() == sorted(expected)
    for key, model in expected.items():
        back = reader.model(key)
        assert_same_model(back, model)
        assert reader.entry(key) == json.loads(json.dumps(entry_of(model)))


@settings(max_examples=30, deadline=None)
@given(parts=st.lists(st.lists(st.tuples(st.integers(0, 50), st.floats(0, 5)), max_size=6), min_size=1, max_size=5))
def test_summaries_add_up_in_any_grouping(parts):
    entries = [[{"examples": n, "progressive_loss": loss, "nonzero_weights": 1} for n, loss in part] for part in parts]
    whole = summarise([entry for part in entries for entry in part])
    grouped = add_summaries([summarise(part) for part in entries])
    assert grouped["keys"] == whole["keys"] and grouped["examples"] == whole["examples"]
    if whole["progressive_loss"] is None:
        assert grouped["progressive_loss"] is None
    else:
        assert grouped["progressive_loss"] == pytest.approx(whole["progressive_loss"])


def test_a_damaged_shard_is_refused_clearly():
    config = LearnerConfig(loss="logistic", bits=8)
    data = shard_bytes([("a", Model(config, np.array([1]), np.array([2.0])))])
    with pytest.raises(ModelFileError, match="not a polybeam shard"):
        ShardReader.of_bytes(data[:-3])
    flipped = bytearray(data)
    flipped[len(b"POLYBEAM-KEYS\n") + 40] ^= 0xFF
    with pytest.raises(ModelFileError, match="checksum|corrupt"):
        ShardReader.of_bytes(bytes(flipped)).model("a")


@settings(max_examples=200, deadline=None)
@given(
    keys=st.lists(st.one_of(st.text(), st.binary(max_size=8), st.integers()), max_size=40),
    shards=st.integers(1, 100),
)
def test_a_batch_of_keys_hashes_to_the_shards_one_key_at_a_time_does(keys, shards):
    # (texts with line breaks, lone surrogates, bytes and numbers included: the compiled CRC-32 of the
    # joined UTF-8 bytes must be zlib's of each key's text, or a key's model would be looked for in another shard)
    assert shards_of(keys, shards).tolist() == [shard_of(key_text(key), shards) for key in keys]


def test_shards_keep_keys_by_their_hash_and_the_folder_sums_them(tmp_path):
    config = LearnerConfig(loss="logistic", bits=8)
    keys = [f"key{i}" for i in range(50)]
    folder = str(tmp_path / "m")
    with beam.Pipeline(runner="FnApiRunner") as p:
        pairs = [
            (k, Model(config, np.array([i + 1]), np.array([float(i)]), metadata={"examples": i}))
            for i, k in enumerate(keys)
        ]
        _ = p | beam.Create(pairs) | WriteKeyedModels(folder, key="tag")
    keyed = KeyedFolder(folder)
    assert keyed.keys == 50 and keyed.index["examples"] == sum(range(50)) and shard_count(50) == keyed.index["shards"]
    for i, key in enumerate(keys):
        assert keyed.model(key).weights.tolist() == [float(i)] and keyed.has(key)
        assert shard_of(key, keyed.index["shards"]) == 0
    assert not keyed.has("nope") and keyed.model("nope") is None


def test_inspect_sums_up_a_folder_and_shows_one_key(tmp_path, capsys):
    config = LearnerConfig(loss="logistic", bits=10)
    folder = str(tmp_path / "m")
    with beam.Pipeline(runner="FnApiRunner") as p:
        _ = (
            p
            | beam.Create(_batches(5))
            | Train(config, key=ParsedKeys("tag"), keyed_output="shards")
            | WriteKeyedModels(folder, key="tag", config=config.to_dict())
        )
    assert main(["inspect", "--model", folder, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["keys"] == len(KEYS) and summary["examples"] == 960 and summary["layout"] == "shards"
    assert main(["inspect", "--model", folder]) == 0
    assert f"{len(KEYS)} keys (tag)" in capsys.readouterr().out
    assert main(["inspect", "--model", folder, "--key", "café"]) == 0
    assert "polybeam linear model" in capsys.readouterr().out
    assert main(["inspect", "--model", folder, "--key", "nope"]) == 2


def test_the_per_key_handler_scores_each_key_with_its_model_or_the_fallback(tmp_path):
    config = LearnerConfig(loss="logistic", bits=10)
    folder = str(tmp_path / "m")
    batches = _batches(6)
    with beam.Pipeline(runner="FnApiRunner") as p:
        _ = (
            p
            | beam.Create(batches)
            | Train(config, key=ParsedKeys("tag"), keyed_output="shards")
            | WriteKeyedModels(folder, key="tag")
        )
    keyed = KeyedFolder(folder)
    examples = [(key, {1: 0.5, 2: -1.0}) for key in KEYS]
    expected = {
        key: float(keyed.model(key).predict(ExampleBatch.from_rows([(0.0, {1: 0.5, 2: -1.0})], bits=10))[0])
        for key in KEYS
    }
    out = str(tmp_path / "scores")
    with beam.Pipeline(runner="FnApiRunner") as p:
        _ = (
            p
            | beam.Create(examples)
            | RunInference(PerKeyModelHandler(folder))
            | beam.MapTuple(lambda key, result: json.dumps([key, float(result.inference)]))
            | beam.io.WriteToText(out, shard_name_template="")
        )
    found = dict(json.loads(line) for line in open(out))
    assert found == pytest.approx(expected)
    fallback = os.path.join(str(tmp_path), "fallback.model")
    Model(config, np.array([1]), np.array([3.0])).save(fallback)
    handler = PerKeyModelHandler(folder, fallback_model_uri=fallback)
    library = handler.load_model()
    ((key, result),) = handler.run_inference([("unknown", {1: 1.0})], library)
    assert key == "unknown" and result.model_id == fallback and float(result.inference) > 0.9
    with pytest.raises(InferenceError, match="no model for key 'unknown'"):
        PerKeyModelHandler(folder).run_inference([("unknown", {1: 1.0})], PerKeyModelHandler(folder).load_model())


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_a_model_of_few_slots_predicts_from_its_rows_as_from_every_slot(seed):
    rng = np.random.default_rng(seed)
    config = LearnerConfig(loss="logistic", bits=14)
    model = _model(rng, config)
    assert model.few_slots
    batch = ExampleBatch.from_rows(
        [
            (0.0, {int(s): float(v) for s, v in zip(rng.integers(0, 1 << 14, size=4), rng.normal(size=4) * 3)})
            for _ in range(20)
        ],
        bits=14,
    )
    every = model.within_ranges(batch)  # the reference: every slot's weight and range
    expected = np.empty(len(batch))
    kernels.predict_batch(every.indptr, every.indices, every.values, model.dense_weights, config.bias, expected)
    np.testing.assert_allclose(model.margins(batch), expected, rtol=1e-12)
