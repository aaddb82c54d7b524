"""``polybeam train --passes N``: every pass judged on held-out examples, from the command line."""

import json

import pytest

from polybeam import datasets
from tests.pipelines.test_cli import last_json, run


@pytest.fixture(scope="module")
def letter(tmp_path_factory):
    """Letter recognition as the apple paper's binary task (A-M against N-Z), its last fifth to test."""
    return datasets.write_split("letter", str(tmp_path_factory.mktemp("letter")), binary=True)


def held_out_error(capsys, model, test):
    code, stdout, _ = run(capsys, "evaluate", "--input", test, "--model", model)
    assert code == 0
    return last_json(stdout)["error"]


@pytest.mark.slow
def test_more_passes_of_apple_are_judged_on_a_holdout_and_do_not_make_it_worse(tmp_path, capsys, letter):
    train, test = letter
    errors = {}
    for name, options in (
        ("one pass", ()),
        ("three passes", ("--passes", "3")),
        ("three passes, no holdout", ("--passes", "3", "--holdout-off")),
    ):
        model = tmp_path / f"{name}.model"
        code, stdout, stderr = run(
            capsys, "train", "--input", train, "--loss", "logistic", "--expand", "apple", "--model", model, *options
        )
        assert code == 0, stderr
        errors[name] = held_out_error(capsys, model, test)
        if name == "three passes":
            summary, report = stdout, last_json(stdout)
            assert [line for line in stderr.splitlines() if " holdout loss " in line][-1].count("pass 3 holdout loss")
    # Measured: one pass 0.2198; three passes 0.204 (before the holdout, the guard decided on the first
    # pass and kept the linear model: 0.2915, what --holdout-off still gives).
    assert errors["three passes"] < errors["one pass"] - 0.01 < errors["three passes, no holdout"] - 0.05, errors
    assert "model: apple\n" in summary
    assert "apple guard: kept apple's products: holdout loss after pass" in summary
    assert "holdout (1 example in 10): loss " in summary and "after passes 1-3; kept pass" in summary
    holdout = report["holdout"]
    assert [entry["pass"] for entry in holdout["passes"]] == [1, 2, 3] and holdout["stopped_after"] is None
    assert report["examples_trained"] + report["examples_held_out"] == report["examples"] == 16000
    assert report["apple_guard"]["decided_on"] == "holdout" and report["model_kind"] == "apple"
    code, stdout, _ = run(capsys, "inspect", "--model", tmp_path / "three passes.model")
    assert stdout.startswith("polybeam apple model: loss=logistic") and "holdout (1 example in 10)" in stdout
    assert (
        json.loads(run(capsys, "inspect", "--model", tmp_path / "three passes.model", "--json")[1])["kind"] == "apple"
    )
    code, stdout, _ = run(capsys, "inspect", "--model", tmp_path / "three passes, no holdout.model")
    # The guard kept the linear model there: the header says so.
    assert stdout.startswith("polybeam linear model: loss=logistic") and "apple guard: kept the linear model" in stdout


@pytest.mark.slow
def test_training_stops_early_and_keeps_the_best_pass(tmp_path, capsys):
    train, _ = datasets.write_split("spam", str(tmp_path))
    model = tmp_path / "spam.model"
    # A high rate: the holdout loss soon stops improving (measured: best pass 3, stopped after pass 5). Spam
    # holds out ~370 examples, fewer than the default minimum to judge by: judged all the same here.
    code, stdout, stderr = run(
        capsys,
        "train",
        "--input",
        train,
        "--loss",
        "logistic",
        "--learning-rate",
        "5",
        "--passes",
        "20",
        "--early-terminate",
        "2",
        "--holdout-min-examples",
        "0",
        "--pass-schedule",
        "constant",
        "--model",
        model,
    )
    assert code == 0, stderr
    holdout = last_json(stdout)["holdout"]
    last = holdout["stopped_after"]
    assert last is not None and last == holdout["best_pass"] + 2 < 20
    assert f"training stops and keeps pass {holdout['best_pass']}" in stderr
    assert f"kept pass {holdout['best_pass']}; stopped after pass {last} (2 passes without improvement)" in stdout
    assert len(last_json(stdout)["passes"]) == holdout["best_pass"]  # the model is the best pass's

    # The default schedule: the same two passes end the run at rate 5, and learning starts again at 2.5.
    code, stdout, stderr = run(
        capsys, "train", "--input", train, "--loss", "logistic", "--learning-rate", "5", "--passes", "20",
        "--early-terminate", "2", "--holdout-min-examples", "0", "--model", model,
    )  # fmt: skip
    assert code == 0, stderr
    restarted = last_json(stdout)["holdout"]
    assert [entry["holdout_loss"] for entry in restarted["passes"][:last]] == [
        entry["holdout_loss"] for entry in holdout["passes"]
    ]  # (the first run is the constant schedule's, pass for pass)
    assert restarted["restarts"] >= 1 and restarted["passes"][last - 1]["restart_rate"] == 2.5
    assert f"pass {last} " in stderr and "learning starts again from the beginning at rate 2.5" in stderr
    assert restarted["best_loss"] <= holdout["best_loss"]
    best = restarted["passes"][restarted["best_pass"] - 1]
    kept_run = [entry for entry in restarted["passes"][: restarted["best_pass"]] if entry["rate"] == best["rate"]]
    assert len(last_json(stdout)["passes"]) == len(kept_run)  # the model: the best pass's learner's passes


@pytest.mark.slow
def test_a_small_holdout_is_released_after_the_first_pass(tmp_path, capsys):
    train, _ = datasets.write_split("spam", str(tmp_path))
    common = ("train", "--input", train, "--loss", "logistic", "--passes", "3", "--model", tmp_path / "m.model")
    code, stdout, stderr = run(capsys, *common, "--small-holdout", "release")
    assert code == 0, stderr
    report = last_json(stdout)
    held = report["examples_held_out"]
    assert report["holdout"]["released"] and 300 < held < 450
    assert f"pass 1: {held} examples held out, fewer than 1000 to judge passes by" in stderr
    assert f"{held} examples held out of pass 1, fewer than 1000 to judge passes by" in stdout
    # Pass 1 learned all but the held-out examples, passes 2 and 3 every one.
    assert [entry["examples"] for entry in report["passes"]] == [report["examples"] - held] + [report["examples"]] * 2

    # By default such passes are chosen by cross-validation over every example, then learned again on all.
    code, stdout, stderr = run(capsys, *common)
    assert code == 0, stderr
    report = last_json(stdout)
    chosen = report["holdout"]["cross_validation"]
    assert chosen["folds"] == 10 and chosen["examples"] == report["examples"] and not report["holdout"]["released"]
    assert len(report["passes"]) == chosen["passes"] and {e["examples"] for e in report["passes"]} == {
        chosen["examples"]
    }
    assert f"10-fold cross-validation over {chosen['examples']} examples chose pass" in stderr
    assert "cross-validation over" in stdout  # (the model's holdout line)


@pytest.mark.parametrize(
    "options,message",
    [
        (("--holdout-period", "1"), "holdout_period must be a whole number >= 2"),
        (("--early-terminate", "0"), "early_terminate must be a whole number >= 1"),
        (("--holdout-min-examples", "-1"), "holdout_min_examples must be a whole number >= 0"),
    ],
)
def test_bad_holdout_options_fail_fast(capsys, options, message):
    code, _, stderr = run(capsys, "train", "--input", "x", "--model", "m", *options)
    assert code == 2 and message in stderr
