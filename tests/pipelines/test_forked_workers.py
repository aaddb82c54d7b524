"""Local multi-process runs with workers forked from the launcher: real separate processes, same results."""

from __future__ import annotations

import json
import os

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from polybeam import datasets
from polybeam.pipelines import forked_workers
from polybeam.pipelines.cli import main
from polybeam.pipelines.forked_workers import forked_runner, wants_forked_workers
from polybeam.transforms.model_io import read_model


class _WritePid(beam.DoFn):
    def __init__(self, folder):
        self.folder = folder

    def process(self, element):
        with open(os.path.join(self.folder, f"{os.getpid()}-{element}"), "w"):
            pass
        yield element


def test_forked_workers_are_other_processes_and_each_does_part_of_the_work(tmp_path, monkeypatch):
    options = PipelineOptions(["--direct_num_workers", "2", "--direct_running_mode", "multi_processing"])
    assert wants_forked_workers(options) == 0  # only the command (a fresh process) forks
    monkeypatch.setattr(forked_workers, "ENABLED", True)
    assert wants_forked_workers(options) == 2
    runner, pool = forked_runner(options, 2)
    try:
        with beam.Pipeline(runner=runner, options=options) as p:
            _ = p | beam.Create(range(40)) | beam.Reshuffle() | beam.ParDo(_WritePid(str(tmp_path)))
    finally:
        pool.close()
    pids = {int(name.split("-")[0]) for name in os.listdir(tmp_path)}
    assert len(os.listdir(tmp_path)) == 40 and len(pids) == 2 and os.getpid() not in pids


@pytest.mark.slow
def test_two_forked_workers_train_like_two_threads(tmp_path, capsys):
    train, _ = datasets.write_split("spam", str(tmp_path))
    reports = {}
    for mode in ("multi_processing", "multi_threading"):
        model = tmp_path / f"{mode}.model"
        code = main(
            [
                "train",
                "--input",
                train,
                "--loss",
                "logistic",
                "--model",
                str(model),
                "--direct_num_workers",
                "2",
                "--direct_running_mode",
                mode,
            ]
        )
        assert code == 0
        reports[mode] = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    processes, threads = (read_model(str(tmp_path / f"{mode}.model")) for mode in reports)
    assert reports["multi_processing"]["examples"] == reports["multi_threading"]["examples"] == 3681
    assert np.array_equal(processes.slots, threads.slots) and np.allclose(processes.weights, threads.weights)
