"""Streaming training from a watched folder on Prism (Beam's portable reference runner, in streaming mode):
files that appear are read once, in arrival order, learned, and handed out as versions; the watch ends on
its stop file or after an idle spell, with a last version. Skipped unless Prism is built (`polybeam engines
fetch prism`)."""

from __future__ import annotations

import os
import threading
import time

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from polybeam.engines import prism
from polybeam.formats.formats import make_format
from polybeam.learners.config import LearnerConfig
from polybeam.learners.polynomial import make_learner
from polybeam.transforms import version_folder
from polybeam.transforms.stream_train import TrainStream
from polybeam.transforms.watch import ReadWatched

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not prism.fetched(), reason="Prism is not built: polybeam engines fetch prism"),
]

CONFIG = LearnerConfig(loss="logistic", bits=12)


def vw_lines(seed: int, rows: int = 300) -> bytes:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, 3))
    y = np.where(x @ np.array([1.0, -1.0, 2.0]) + rng.logistic(size=rows) > 0, 1, -1)
    return "".join(f"{label} | a:{r[0]:.5f} b:{r[1]:.5f} c:{r[2]:.5f}\n" for label, r in zip(y, x)).encode()


def drop_files(folder, contents, pause):
    """Write each file as a producer would (under a temporary name, then renamed), ``pause`` s apart."""
    for i, data in enumerate(contents):
        time.sleep(pause)
        temporary = os.path.join(folder, f".part-{i}")
        with open(temporary, "wb") as handle:
            handle.write(data)
        os.rename(temporary, os.path.join(folder, f"part-{i}.vw"))


def run_watch(pattern, models, **watch):
    options = PipelineOptions(["--streaming", *prism.polybeam_options()])
    with beam.Pipeline(options=options) as pipeline:
        read = pipeline | ReadWatched(pattern, "vw", labels="binary", bits=CONFIG.bits, interval=0.3, **watch)
        _ = read.examples | TrainStream(CONFIG, models, every_seconds=1.0)


def test_files_that_appear_are_learned_once_in_arrival_order_until_the_watch_is_idle(tmp_path):
    incoming, models = tmp_path / "in", str(tmp_path / "models")
    incoming.mkdir()
    contents = [vw_lines(seed) for seed in range(3)]
    producer = threading.Thread(target=drop_files, args=(incoming, contents, 2.0))
    producer.start()
    started = time.time()
    run_watch(str(incoming / "*.vw"), models, stop_after_idle=4.0, started=started)
    producer.join()
    index = version_folder.read_index(models)
    assert index[-1]["examples"] == 900 and sum(e["learned"] for e in index) == 900
    assert len(index) >= 3  # (a version a file at least: they came 2 s apart, a version 1 s after one arrives)
    fmt = make_format("vw", labels="binary", bits=CONFIG.bits)
    learner = make_learner(CONFIG)
    for data in contents:
        learner.learn(fmt.parse(data).batch)
    final = version_folder.read_version_model(models)
    np.testing.assert_allclose(final.dense_weights, learner.to_model().dense_weights, rtol=0, atol=0)


def test_the_stop_file_ends_the_watch_with_a_last_version(tmp_path):
    incoming, models = tmp_path / "in", str(tmp_path / "models")
    incoming.mkdir()
    (incoming / "part-0.vw").write_bytes(vw_lines(0))
    stop = tmp_path / "stop"
    threading.Timer(3.0, stop.write_text, args=("stop",)).start()
    began = time.time()
    run_watch(str(incoming / "*.vw"), models, stop_file=str(stop))
    assert time.time() - began < 60
    assert version_folder.read_index(models)[-1]["examples"] == 300
