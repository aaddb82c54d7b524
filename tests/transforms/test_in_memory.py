"""Every pass in one worker's memory (``Train.Globally(in_memory=True)``) learns the model the streaming
passes learn on one bundle, bit for bit: linear and apple, with the holdout judging, a shared per-key model,
a warm start; and it refuses what it cannot do (checkpoints between passes, resuming, a merge tree)."""

from __future__ import annotations

import dataclasses

import apache_beam as beam
import numpy as np
import pytest

from polybeam import datasets
from polybeam.learners.multitask import SharedKeys
from polybeam.transforms.train import Train
from tests.transforms.test_train_axes import _trained_from

pytestmark = pytest.mark.slow

SMALL = datasets.load("spam", bits=14, binary=True).take(np.arange(700))


def _models(folder, **settings) -> list:
    models = _trained_from(lambda p: p | beam.Create([SMALL]) | Train(loss="logistic", bits=14, **settings), folder)
    return [model.to_bytes() for model in models]


@pytest.mark.parametrize(
    "settings",
    [
        {"passes": 1},
        {"passes": 4},
        {"passes": 3, "expand": "apple"},
        {"passes": 3, "holdout_min_examples": 0, "early_terminate": 1},  # judged passes, stopping early
    ],
)
def test_in_memory_passes_learn_the_streaming_model(tmp_path, settings):
    assert _models(tmp_path / "memory", in_memory=True, **settings) == _models(tmp_path / "streaming", **settings)


def test_a_shared_per_key_model_and_a_warm_start_learn_alike_in_memory(tmp_path):
    keyed = dataclasses.replace(
        SMALL, key_codes=(np.arange(len(SMALL)) % 3).astype(np.int32), key_names=("a", "b", "c")
    )

    def shared(folder, **options):
        transform = Train(loss="logistic", bits=14, passes=3, shared_keys=SharedKeys("column:k"), **options)
        return [model.to_bytes() for model in _trained_from(lambda p: p | beam.Create([keyed]) | transform, folder)]

    assert shared(tmp_path / "a", in_memory=True) == shared(tmp_path / "b")

    def warm(folder, **options):
        def build(p):
            start = p | "Start" >> beam.Create([SMALL]) | "First" >> Train(loss="logistic", bits=14, passes=2)
            learners = start | beam.Map(_learner_of)
            return (
                p
                | "Data" >> beam.Create([SMALL])
                | Train(loss="logistic", bits=14, passes=3, initial=learners, **options)
            )

        return [model.to_bytes() for model in _trained_from(build, folder)]

    assert warm(tmp_path / "c", in_memory=True) == warm(tmp_path / "d")


def _learner_of(model):
    from polybeam.learners.warm_start import learner_from_model

    return learner_from_model(model, model.config)


def test_in_memory_refuses_what_needs_a_stage_per_pass(tmp_path):
    for options in ({"checkpoint_dir": str(tmp_path)}, {"fanout": 2}):
        with pytest.raises(ValueError, match="in_memory runs every pass in one worker"):
            Train(loss="logistic", passes=3, in_memory=True, **options)
