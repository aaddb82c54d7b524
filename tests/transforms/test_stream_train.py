"""Streaming training on Beam's TestStream (the in-process runner): versions by time and by count, the
final model equal to one pass over the same examples in the same order, and a restarted job that
continues from the latest version without learning a row twice."""

from __future__ import annotations

import dataclasses

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
