"""A runner named by its dotted path brings its options: ``polybeam train --runner some.module.SomeRunner``
imports ``some.module`` before the arguments are checked, so the options its PipelineOptions classes
define are accepted, and a module that cannot be imported is a usage error naming it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from polybeam import datasets
from polybeam.pipelines.cli import main, runner_argument

ROOT = Path(__file__).parents[2]
FAKE = "tests.pipelines.fake_runner.FakeRunner"


@pytest.fixture(scope="module")
def satellite(tmp_path_factory):
    return datasets.write_split("satellite", str(tmp_path_factory.mktemp("satellite")))


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_runner_module_option_is_accepted_and_the_runner_runs_the_job(tmp_path, satellite):
    # A fresh process: in this one the module may be imported already (its option known without the fix).
    marker, model = tmp_path / "ran.json", tmp_path / "m.model"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "polybeam.pipelines.cli",
            "train",
            "--input",
            satellite[0],
            "--loss",
            "softmax",
            "--classes",
            "6",
            "--model",
            str(model),
            "--quiet",
            "--runner",
            FAKE,
            f"--fake_runner_flag={marker}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(marker.read_text()) == {"runner": "FakeRunner", "fake_runner_flag": str(marker)}
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["runner"] == FAKE and report["examples_trained"] == report["examples"] > 0
    assert model.exists()


@pytest.mark.parametrize(
    "spelling", [["--runner", "no_such_package.runners.Runner"], ["--runner=no_such_package.runners.Runner"]]
)
def test_a_runner_module_that_cannot_be_imported_is_a_usage_error(tmp_path, capsys, spelling):
    code = main(["train", "--input", str(tmp_path / "x"), "--model", str(tmp_path / "m"), *spelling])
    stderr = capsys.readouterr().err
    assert code == 2
    assert (
        "--runner no_such_package.runners.Runner: cannot import no_such_package.runners: "
        "ModuleNotFoundError: No module named 'no_such_package'"
    ) in stderr


def test_an_unknown_option_is_still_refused_with_a_runner_module(tmp_path, capsys):
    code = main(
        ["train", "--input", str(tmp_path / "x"), "--model", str(tmp_path / "m"), "--runner", FAKE, "--no_such_flag=1"]
    )
    assert code == 2
    assert "unrecognised arguments: --no_such_flag=1" in capsys.readouterr().err


def test_the_runner_is_the_last_runner_argument():
    assert runner_argument(["--input", "a"]) is None
    assert runner_argument(["--runner", "a.B", "--runner=c.D"]) == "c.D"
    assert runner_argument(["--runner=DirectRunner"]) == "DirectRunner"


def test_a_flex_template_launch_imports_the_runner_module_too(tmp_path, capsys):
    from polybeam.pipelines import template_main

    code = template_main.main(
        ["train", f"--input={tmp_path / 'x'}", f"--model={tmp_path / 'm'}", "--runner=no_such_package.runners.Runner"]
    )
    assert code == 2
    assert "--runner no_such_package.runners.Runner: cannot import no_such_package.runners" in capsys.readouterr().err
