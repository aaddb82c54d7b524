"""``polybeam train --learners N``: every pass learned as N workers would in one worker's memory, the
L-BFGS finishing stage after averages of more than two learners (``--lbfgs-after-averaging``), the
report saying what ran and why; the same model as the learners' own passes in plain Python."""

from __future__ import annotations

import numpy as np

from polybeam import datasets
from polybeam.formats.libsvm import LibsvmFormat
from polybeam.learners import lbfgs
from polybeam.learners.fitting import train_passes
from polybeam.learners.polynomial import make_learner
from polybeam.transforms.model_io import read_model
from tests.pipelines.commands import last_json, run


def _train(capsys, tmp_path, name, *options):
    train, _ = datasets.write_split("spam", str(tmp_path))
    model = tmp_path / f"{name}.model"
    code, stdout, stderr = run(capsys, "train", "--input", train, "--loss", "logistic", "--passes", "3",
                               "--model", model, *options)  # fmt: skip
    assert code == 0, stderr
    return read_model(str(model)), last_json(stdout), stdout


def test_many_learners_average_each_pass_then_the_finishing_stage_runs_and_says_why(tmp_path, capsys):
    one, one_report, _ = _train(capsys, tmp_path, "one")
    also_one, _, _ = _train(capsys, tmp_path, "also_one", "--learners", "1")
    np.testing.assert_array_equal(one.weights, also_one.weights)
    assert "lbfgs" not in one_report

    many, report, stdout = _train(capsys, tmp_path, "many", "--learners", "16")
    assert report["in_memory"] and report["learners_per_pass"] == 16
    assert many.metadata["learners_averaged"] == 16
    finishing = many.metadata["lbfgs"]
    assert finishing["why"] == "each pass averaged 16 learners"
    assert finishing["evaluations"] == lbfgs.AFTER_AVERAGING_PASSES and finishing["seconds"] >= 0
    assert many.config.lbfgs_passes == lbfgs.AFTER_AVERAGING_PASSES  # the model records what ran
    assert "L-BFGS finishing stage (each pass averaged 16 learners)" in stdout
    assert "every pass learned as 16 workers would" in stdout
    # never worse on the holdout than the average it started from
    assert finishing["holdout_loss"] <= finishing["online_holdout_loss"]

    averaged, plain_report, _ = _train(capsys, tmp_path, "averaged", "--learners", "16", "--lbfgs-after-averaging", "0")
    assert "lbfgs" not in plain_report and averaged.config.lbfgs_passes == 0
    assert not np.allclose(averaged.weights, one.weights[: len(averaged.weights)]) or len(averaged.weights) != len(
        one.weights
    )


def test_the_average_is_the_learners_own_mixed_passes(tmp_path, capsys):
    averaged, _, _ = _train(capsys, tmp_path, "averaged", "--learners", "8", "--lbfgs-after-averaging", "0")
    train, _ = datasets.write_split("spam", str(tmp_path))
    with open(train, "rb") as handle:
        batch = LibsvmFormat(bits=averaged.config.bits).parse(handle.read(), source=train).batch
    learner = train_passes(make_learner(averaged.config), [batch], 3, learners=8, expect=False)
    np.testing.assert_allclose(learner.to_model().weights, averaged.weights, rtol=1e-9, atol=1e-12)


def test_what_learners_cannot_do_is_refused_in_one_line(tmp_path, capsys):
    train, _ = datasets.write_split("spam", str(tmp_path))
    common = ("train", "--input", train, "--loss", "logistic", "--passes", "2", "--model", tmp_path / "m")
    for options, message in (
        (("--learners", "0"), "--learners must be at least 1"),
        (("--learners", "4", "--in-memory", "off"), "leave out --in-memory off"),
        (("--learners", "4", "--checkpoint-dir", tmp_path / "c"), "leave out --checkpoint-dir"),
        (("--lbfgs-after-averaging", "-1"), "--lbfgs-after-averaging must be 0"),
    ):
        code, _, stderr = run(capsys, *common, *options)
        assert code == 2 and message in stderr and "Traceback" not in stderr, (options, stderr)
