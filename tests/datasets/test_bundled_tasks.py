"""The issue's accuracy targets on bundled real data, measured over several splits."""

import numpy as np
import pytest

from polybeam import datasets
from polybeam.formats.libsvm import LibsvmFormat
from polybeam.learners.config import LearnerConfig
from polybeam.learners.evaluation import Evaluation
from polybeam.learners.linear import LinearLearner


def split_errors(name, tmp_path, *, binary, seeds=10, **settings):
    parser = LibsvmFormat()
    errors = []
    for seed in seeds if isinstance(seeds, list) else range(seeds):
        train, test = datasets.write_split(name, str(tmp_path / f"{name}{seed}"), seed=seed, binary=binary)
        with open(train, "rb") as a, open(test, "rb") as b:
            train_batch, test_batch = parser.parse(a.read()).batch, parser.parse(b.read()).batch
        model = LinearLearner(LearnerConfig(**settings)).fit(train_batch).to_model()
        errors.append(Evaluation.of(model, [test_batch]).result()["error"])
    return np.array(errors)


def test_spam_one_pass_adaptive_logistic_held_out_error(tmp_path):
    # Measured: 0.0947 mean over seeds 0-9 (0.079-0.111); one split moves by about 0.01.
    errors = split_errors("spam", tmp_path, binary=False, loss="logistic", step="adaptive", passes=1)
    assert errors.mean() <= 0.10
    assert errors.max() <= 0.12


def test_letter_binary_linear_held_out_error(tmp_path):
    # Measured: 0.293 mean over seeds 0-9; VW 9.11 linear gets 0.304 on the same splits.
    errors = split_errors("letter", tmp_path, binary=True, seeds=3, loss="logistic", step="adaptive")
    assert errors.mean() == pytest.approx(0.293, abs=0.02)


def test_positional_split_is_the_last_fifth(tmp_path):
    train, test = datasets.write_split("spam", str(tmp_path))
    rows = datasets.lines("spam")
    assert open(test, "rb").read() == b"".join(rows[-920:])
    assert open(train, "rb").read() == b"".join(rows[:-920])
