"""``polybeam train --lbfgs-passes P``: the finishing stage from the command line, recorded in the model."""

import pytest

from polybeam import datasets
from polybeam.learners.model import Model
from tests.pipelines.test_cli import last_json, run


@pytest.mark.slow
def test_the_finishing_stage_runs_from_the_command_line_and_is_recorded(tmp_path, capsys):
    train, _ = datasets.write_split("spam", str(tmp_path))
    model_path = tmp_path / "m.model"
    code, stdout, stderr = run(
        capsys,
        "train",
        "--input",
        train,
        "--loss",
        "logistic",
        "--lbfgs-passes",
        "4",
        "--lbfgs-l2",
        "3",
        "--model",
        model_path,
    )
    assert code == 0, stderr
    report = last_json(stdout)
    assert report["lbfgs"]["evaluations"] == 4 and report["lbfgs"]["l2"] == 3.0
    assert "L-BFGS finishing stage: 4 passes, objective" in stdout
    model = Model.load(str(model_path))
    assert model.config.lbfgs_passes == 4 and model.config.lbfgs_l2 == 3.0
    objective = model.metadata["lbfgs"]["objective"]
    assert objective[-1] < objective[0]


def test_hinge_loss_has_no_finishing_stage(tmp_path, capsys):
    train, _ = datasets.write_split("spam", str(tmp_path))
    code, _, stderr = run(
        capsys, "train", "--input", train, "--loss", "hinge", "--lbfgs-passes", "2", "--model", tmp_path / "m.model"
    )
    assert code != 0 and "differentiable" in stderr
