"""``polybeam train --in-memory``: auto keeps a small input in one worker's memory when the job has
passes to save and learns the model the streaming passes learn from the same single bundle; the report
says which and why; ``on`` refuses what needs the streaming passes."""

from __future__ import annotations

import numpy as np

from polybeam import datasets
from polybeam.transforms.model_io import read_model
from tests.pipelines.commands import last_json, run


def test_auto_keeps_a_small_input_in_memory_and_learns_the_streaming_model(tmp_path, capsys):
    train, _ = datasets.write_split("dna", str(tmp_path))
    common = ("train", "--input", train, "--loss", "softmax", "--classes", "3", "--passes", "3")
    models = {}
    for mode in ("auto", "off"):
        model = tmp_path / f"{mode}.model"
        code, stdout, stderr = run(capsys, *common, "--model", model, "--in-memory", mode)
        assert code == 0, stderr
        report = last_json(stdout)
        assert report["in_memory"] is (mode == "auto")
        assert (report["checkpoint_dir"] is None) is (mode == "auto")
        assert ("passes in one worker's memory: 3 passes over" in stdout) is (mode == "auto")
        models[mode] = (read_model(str(model)), report)
    (memory, memory_report), (streaming, streaming_report) = models["auto"], models["off"]
    assert streaming_report["in_memory_reason"] == "--in-memory off"
    np.testing.assert_array_equal(memory.slots, streaming.slots)
    np.testing.assert_allclose(memory.weights, streaming.weights, rtol=1e-9, atol=1e-12)
    assert memory_report["holdout"]["passes"] == streaming_report["holdout"]["passes"]
    assert memory_report["examples"] == streaming_report["examples"] and memory_report["reconciles"]


def test_one_pass_streams_and_on_refuses_what_needs_the_streaming_passes(tmp_path, capsys):
    train, _ = datasets.write_split("dna", str(tmp_path))
    common = ("train", "--input", train, "--loss", "softmax", "--classes", "3", "--model", tmp_path / "m")
    code, stdout, _ = run(capsys, *common)
    assert code == 0 and last_json(stdout)["in_memory_reason"] == "streaming: one pass has no passes to save"
    code, _, stderr = run(capsys, *common, "--passes", "2", "--in-memory", "on", "--checkpoint-dir", tmp_path / "c")
    assert code == 2 and "leave out --checkpoint-dir" in stderr and "Traceback" not in stderr
