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
from tests.streaming_files import vw_rows

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not prism.fetched(), reason="Prism is not built: polybeam engines fetch prism"),
]

CONFIG = LearnerConfig(loss="logistic", bits=12)


def vw_lines(seed: int, rows: int = 300) -> bytes:
    return vw_rows(seed, rows).encode()


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
    assert [entry["version"] for entry in index] == list(range(1, len(index) + 1))
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


class KeepResults(beam.DoFn):
    """Each RunInference result as a line of ``folder/results-<n>.txt`` (the test's own record, in its
    temporary folder: the workers of Prism's default loopback environment share this machine's disk)."""

    def __init__(self, folder):
        self.folder = folder

    def process(self, result):
        name = os.path.join(self.folder, f"result-{time.time_ns()}-{os.getpid()}-{id(result)}.txt")
        with open(name, "w") as handle:
            handle.write(f"{result.model_id}\t{float(result.inference)}\t{result.example}\n")


def test_one_pipeline_learns_and_serves_each_new_version(tmp_path):
    from apache_beam.ml.inference.base import RunInference

    from polybeam.inference import PolybeamModelHandler
    from polybeam.transforms.watch import WatchFiles

    train, score, models, results = (tmp_path / name for name in ("train", "score", "models", "results"))
    for folder in (train, score, results):
        folder.mkdir()
    (train / "part-0.vw").write_bytes(vw_lines(0))
    stop = tmp_path / "stop"
    first = os.path.join(str(models), "versions", "000001.model")

    def wait_until(done, what: str, timeout: float = 120.0) -> None:
        deadline = time.time() + timeout
        while not done():
            assert time.time() < deadline, f"no {what} within {timeout} s"
            time.sleep(0.2)

    def scenario():  # (each step waits for the one before: the machine may be slow)
        wait_until(lambda: os.path.exists(first), "version 1")
        (score / "a.vw").write_text("1 | a:0.5 b:-0.5 c:1\n-1 | a:-1 b:1 c:-1\n")
        wait_until(lambda: len(list(results.iterdir())) == 2, "scores of a.vw")
        (train / "part-1.vw").write_bytes(vw_lines(1))
        wait_until(lambda: version_folder.latest_number(str(models)) == 2, "version 2")
        time.sleep(2.0)  # (the handler looks at latest at most once a second)
        (score / "b.vw").write_text("1 | a:0.5 b:-0.5 c:1\n")
        wait_until(lambda: len(list(results.iterdir())) == 3, "scores of b.vw")
        stop.write_text("stop")

    threading.Thread(target=scenario, daemon=True).start()
    options = PipelineOptions(["--streaming", *prism.polybeam_options()])
    with beam.Pipeline(options=options) as pipeline:
        read = pipeline | "Train" >> ReadWatched(
            str(train / "*.vw"), "vw", labels="binary", bits=CONFIG.bits, interval=0.3, stop_file=str(stop)
        )
        _ = read.examples | TrainStream(CONFIG, str(models), every_seconds=1.0)
        lines = (
            pipeline
            | "Score" >> WatchFiles(str(score / "*.vw"), interval=0.3, stop_file=str(stop))
            | "Lines" >> beam.FlatMap(lambda path: open(path).read().splitlines())
        )
        # The handler follows the folder's latest version (Prism cannot refresh a triggered side input in
        # the global window, as model_metadata_pcoll needs: Beam issue 31438).
        scored = lines | RunInference(PolybeamModelHandler(str(models), input_format="vw"))
        _ = scored | beam.ParDo(KeepResults(str(results)))
    got = sorted(line.split("\t") for path in results.iterdir() for line in path.read_text().splitlines())
    by_model = {}
    for model_id, _, example in got:
        by_model.setdefault(os.path.basename(model_id), []).append(example)
    assert sorted(by_model) == ["000001.model", "000002.model"], by_model
    assert len(by_model["000001.model"]) == 2 and len(by_model["000002.model"]) == 1
    # each score is what that version's model file answers
    from polybeam.transforms.model_io import read_model

    for model_id, score_value, example in got:
        model = read_model(model_id)
        expected = model.predict(make_format("vw", bits=CONFIG.bits).parse((example + "\n").encode()).batch)[0]
        assert float(score_value) == pytest.approx(expected, abs=1e-12)
