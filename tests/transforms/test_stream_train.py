"""Streaming training on Beam's TestStream (the in-process runner): versions by time and by count, the
final model equal to one pass over the same examples in the same order, and a restarted job that
continues from the latest version without learning a row twice."""

from __future__ import annotations

import dataclasses
import time

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_stream import TestStream as BeamTestStream
from apache_beam.transforms.window import TimestampedValue

from polybeam.learners.arrays import batch_from_arrays
from polybeam.learners.config import LearnerConfig
from polybeam.learners.model_stream import StreamLearner, in_ranges
from polybeam.learners.polynomial import make_learner
from polybeam.transforms import version_folder
from polybeam.transforms.stream_train import TrainStream

CONFIG = LearnerConfig(loss="logistic", bits=12)
ROWS = 400


def batches(count: int, seed: int = 0, source: str = "stream-0.vw"):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(count * ROWS, 5))
    y = np.where(x @ np.array([1.0, -2.0, 0.5, 0.0, 1.5]) + rng.logistic(size=len(x)) > 0, 1.0, -1.0)
    whole = batch_from_arrays(x, y, bits=CONFIG.bits)
    parts = []
    for i in range(count):
        part = whole.take(np.arange(i * ROWS, (i + 1) * ROWS))
        parts.append(dataclasses.replace(part, source=source, row_ids=np.arange(i * ROWS, (i + 1) * ROWS) * 40))
    return parts


def run_stream(events, folder, **settings):
    """``events``: ("at", seconds, [batches]) adds batches stamped at those seconds, ("watermark", seconds)."""
    stream = BeamTestStream().advance_watermark_to(0)
    for event in events:
        if event[0] == "at":
            stream = stream.add_elements([TimestampedValue(b, event[1]) for b in event[2]])
        else:
            stream = stream.advance_watermark_to(event[1])
    stream = stream.advance_watermark_to_infinity()
    options = PipelineOptions(["--streaming", "--runner=BundleBasedDirectRunner"])
    with beam.Pipeline(options=options) as pipeline:
        _ = pipeline | stream | TrainStream(CONFIG, str(folder), **settings)


def one_pass(parts):
    learner = make_learner(CONFIG)
    for part in parts:
        learner.learn(part)
    return learner.to_model()


def test_versions_come_by_time_and_by_count_and_the_last_is_one_pass_over_the_stream(tmp_path):
    parts = batches(6)
    events = [
        ("at", 1, parts[0:2]),
        ("watermark", 10),  # 5 s after the first waiting example: version 1 (800 examples)
        ("at", 11, parts[2:5]),  # 1,200 waiting: version 2 at once
        ("watermark", 20),
        ("at", 21, parts[5:6]),  # the end of the input: version 3
    ]
    run_stream(events, tmp_path, every_seconds=5, every_examples=1200)
    index = version_folder.read_index(str(tmp_path))
    assert [e["version"] for e in index] == [1, 2, 3]
    assert [e["learned"] for e in index] == [800, 1200, 400] and [e["examples"] for e in index] == [800, 2000, 2400]
    assert [e["watermark"] for e in index] == [1.0, 11.0, 21.0]
    assert all(0 < e["progressive_loss"] < 0.69 for e in index)
    final = version_folder.read_version_model(str(tmp_path))
    expected = one_pass(parts)
    np.testing.assert_array_equal(final.dense_weights, expected.dense_weights)
    first = version_folder.read_version_model(str(tmp_path), 1)
    np.testing.assert_array_equal(first.dense_weights, one_pass(parts[:2]).dense_weights)
    assert version_folder.read_latest(str(tmp_path))["version"] == 3


def test_a_restarted_job_continues_from_the_latest_version_and_learns_no_row_twice(tmp_path):
    parts = batches(6)
    run_stream([("at", 1, parts[0:3])], tmp_path, every_seconds=5)
    # the job starts again and its source reads the whole file again, with two more batches
    run_stream([("at", 30, parts[0:2]), ("watermark", 40), ("at", 41, parts[2:6])], tmp_path, every_seconds=5)
    index = version_folder.read_index(str(tmp_path))
    assert [e["version"] for e in index] == [1, 2]  # (the re-read rows alone made no version)
    assert [e["learned"] for e in index] == [1200, 1200] and index[-1]["examples"] == 2400
    final = version_folder.read_version_model(str(tmp_path))
    np.testing.assert_array_equal(final.dense_weights, one_pass(parts).dense_weights)
    state = StreamLearner.from_bytes(version_folder.read_latest_state(str(tmp_path)))
    assert list(state.ranges) == ["stream-0.vw"]  # (a range per batch: row ids are line offsets, not counts)
    assert in_ranges(np.arange(6 * ROWS) * 40, state.ranges["stream-0.vw"]).all()
    assert not in_ranges(np.arange(6 * ROWS) * 40 + 6 * ROWS * 40, state.ranges["stream-0.vw"]).any()  # (later rows)


def test_batches_waiting_in_any_order_are_learned_in_arrival_order(tmp_path):
    parts = batches(4)
    run_stream([("at", 2, parts[2:4]), ("at", 1, parts[0:2])], tmp_path, every_seconds=100)
    final = version_folder.read_version_model(str(tmp_path))
    np.testing.assert_array_equal(final.dense_weights, one_pass(parts).dense_weights)


def test_train_stream_refuses_settings_that_never_make_a_version():
    with pytest.raises(ValueError, match="every_seconds"):
        TrainStream(CONFIG, every_seconds=0)
    with pytest.raises(ValueError, match="every_examples"):
        TrainStream(CONFIG, every_examples=0)


SEEN: list = []  # (what the in-process runner's last step saw: it runs in this process)


def keep(element) -> None:
    SEEN.append(element)  # (a module-level function: pickled by name, so it appends to this list)


def test_versions_become_runinference_model_metadata_naming_their_files(tmp_path):
    from polybeam.transforms.stream_train import VersionsAsModelMetadata

    parts = batches(4)
    SEEN.clear()
    stream = BeamTestStream().advance_watermark_to(0).add_elements([TimestampedValue(b, 1) for b in parts])
    options = PipelineOptions(["--streaming", "--runner=BundleBasedDirectRunner"])
    with beam.Pipeline(options=options) as pipeline:
        versions = (
            pipeline | stream.advance_watermark_to_infinity() | TrainStream(CONFIG, str(tmp_path), every_examples=800)
        )
        _ = versions | VersionsAsModelMetadata(str(tmp_path)) | beam.Map(keep)
    assert [(m.model_name, m.model_id) for m in SEEN] == [
        ("v1", str(tmp_path / "versions" / "000001.model")),
        ("v2", str(tmp_path / "versions" / "000002.model")),
    ]


def test_a_handler_given_the_folder_scores_with_its_newest_version_and_waits_for_the_first(tmp_path, monkeypatch):
    import threading

    from polybeam.transforms import inference

    monkeypatch.setattr(inference, "FOLLOW_SECONDS", 0.05)
    parts = batches(2)
    stream = StreamLearner(CONFIG)

    def write_versions():
        for part in parts:
            time.sleep(0.3)
            stream.learn([(1.0, part)])
            version_folder.write_version(str(tmp_path), stream.version(), stream.to_bytes())

    handler = inference.PolybeamModelHandler(str(tmp_path), input_format="batch", output="score", follow=True)
    writer = threading.Thread(target=write_versions)
    writer.start()
    model = handler.load_model()  # (waits for version 1)
    first = list(handler.run_inference([parts[0]], model))
    assert first[0].model_id.endswith("000001.model")
    writer.join()
    time.sleep(0.1)
    second = list(handler.run_inference([parts[0]], model))
    assert second[0].model_id.endswith("000002.model")
    expected = version_folder.read_version_model(str(tmp_path), 2).margins(parts[0])
    np.testing.assert_allclose(second[0].inference, expected, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="follow"):
        inference.PolybeamModelHandler(str(tmp_path), follow=True, key="a")


def test_one_model_per_key_each_learned_from_its_own_rows_in_its_own_folder(tmp_path):
    from polybeam.transforms.stream_train import key_folder

    rng = np.random.default_rng(5)
    x = rng.normal(size=(1200, 3))
    y = np.where(x @ np.array([1.0, -2.0, 0.5]) > 0, 1.0, -1.0)
    users = np.array(["ann", "bob/7", ""])[rng.integers(0, 3, size=1200)]
    whole = batch_from_arrays(x, y, bits=CONFIG.bits)
    whole = dataclasses.replace(whole, tags=users.astype(object), source="s.vw", row_ids=np.arange(1200) * 10)
    parts = [whole.take(np.arange(i, i + 400)) for i in (0, 400, 800)]
    run_stream([("at", 1, parts[:2]), ("watermark", 10), ("at", 11, parts[2:])], tmp_path, every_seconds=5, key="tag")
    for user in ("ann", "bob/7", ""):
        folder = key_folder(str(tmp_path), user)
        index = version_folder.read_index(folder)
        rows = np.flatnonzero(users == user)
        assert [e["version"] for e in index] == [1, 2] and index[-1]["examples"] == len(rows)
        assert index[0]["examples"] == np.count_nonzero(rows < 800)
        learner = make_learner(CONFIG, sparse=True)
        for part in (whole.take(rows[rows < 800]), whole.take(rows[rows >= 800])):
            learner.learn(part)
        np.testing.assert_array_equal(
            version_folder.read_version_model(folder).dense_weights, learner.to_model().dense_weights
        )
    assert not version_folder.is_version_folder(str(tmp_path))  # (no one model beside them)


def test_lines_from_a_stream_as_pubsub_or_kafka_hand_them_are_parsed_and_learned(tmp_path):
    from polybeam.formats.formats import make_format
    from polybeam.transforms.lines import ParseLines
    from tests.streaming_files import vw_rows

    first, second = vw_rows(0, 300).splitlines(), vw_rows(1, 200).splitlines()
    stream = (
        BeamTestStream()
        .advance_watermark_to(0)
        .add_elements([TimestampedValue(line.encode(), 1) for line in first])  # (messages' payloads are bytes)
        .advance_watermark_to(10)
        .add_elements([TimestampedValue(line.encode(), 11) for line in second])
        .advance_watermark_to_infinity()
    )
    options = PipelineOptions(["--streaming", "--runner=BundleBasedDirectRunner"])
    with beam.Pipeline(options=options) as pipeline:
        read = pipeline | stream | ParseLines("vw", labels="binary", bits=CONFIG.bits, check_input=False)
        _ = read.examples | TrainStream(CONFIG, str(tmp_path), every_seconds=5)
    index = version_folder.read_index(str(tmp_path))
    assert [e["learned"] for e in index] == [300, 200]
    fmt = make_format("vw", labels="binary", bits=CONFIG.bits)
    expected = one_pass([fmt.parse(("\n".join(lines) + "\n").encode()).batch for lines in (first, second)])
    np.testing.assert_array_equal(
        version_folder.read_version_model(str(tmp_path)).dense_weights, expected.dense_weights
    )
