"""The option schema is the one source of every option: the command reference's table (docs/cli.md), --help (grouped, without Beam or
numba), the PipelineOptions classes, LearnerConfig's defaults, every spelling, and the job settings read once."""

from __future__ import annotations

import dataclasses
import json
import pathlib
import subprocess
import sys

import pytest

from polybeam.learners.config import LearnerConfig
from polybeam.pipelines import option_specs as specs
from polybeam.pipelines.commands import COMMANDS
from polybeam.pipelines.errors import OptionError

REFERENCE = pathlib.Path(__file__).parents[2] / "docs" / "cli.md"
JOB_COMMANDS = [name for name, command in COMMANDS.items() if command.runner]


def readme_option_table() -> str:
    text = REFERENCE.read_text()
    start = text.index("| option | meaning |")
    return text[start : text.index("\n\n", start)]


def test_the_readmes_option_table_is_the_schemas():
    assert readme_option_table() == specs.readme_table(), (
        "docs/cli.md's option table differs from the schema's: paste `python -m polybeam.pipelines.option_specs`"
    )


def test_the_readmes_table_shows_every_option_of_train_evaluate_and_predict():
    shown = {name for option in specs.TABLE if option.readme for name in (option.name, *option.readme_with)}
    for command in specs.README_COMMANDS:
        missing = {option.name for option in specs.command_options(command)} - shown - set(specs.README_ELSEWHERE)
        assert not missing, f"{command}: {sorted(missing)} have no row in docs/cli.md's table"
    table = readme_option_table()
    for option in specs.TABLE:
        if option.readme:
            assert f"`{option.flags[0]}" in table


def test_learner_defaults_are_learner_configs_own():
    fields = LearnerConfig.defaults()
    filled = [option for option in specs.TABLE if option.config and option.sets is None and option.name != "alpha"]
    assert len(filled) > 25
    for option in filled:
        assert option.default == fields[option.config], option.name
    # A flag that sets a field when given names a real field, and changes it from its default.
    for option in specs.TABLE:
        if option.sets is not None:
            field, value = option.sets
            assert field in fields and fields[field] != value, option.name


def test_every_schema_group_is_a_pipeline_options_class_beam_knows():
    from apache_beam.options.pipeline_options import PipelineOptions

    from polybeam.pipelines import options

    assert set(options.OPTIONS_CLASSES) == set(specs.GROUPS)
    assert set(options.OPTIONS_CLASSES.values()) <= set(PipelineOptions.__subclasses__())
    every = PipelineOptions([]).get_all_options()
    assert {option.attribute for option in specs.TABLE} <= set(every)


@pytest.mark.parametrize("spelling", ["--learning-rate", "--learning_rate"])
def test_both_spellings_fill_the_same_attribute_from_python_and_the_command_parser(spelling):
    from apache_beam.options.pipeline_options import PipelineOptions

    from polybeam.pipelines.options import LearnerOptions, learner_config

    assert PipelineOptions([spelling, "0.25"]).view_as(LearnerOptions).learning_rate == 0.25
    assert learner_config(PipelineOptions([spelling, "0.25", "--loss", "logistic"])).learning_rate == 0.25
    assert specs.command_parser("train").parse_args([spelling, "0.25"]).learning_rate == 0.25


def test_negated_flags_and_holdout_off_set_their_learner_fields():
    from apache_beam.options.pipeline_options import PipelineOptions

    from polybeam.pipelines.options import learner_config

    plain = learner_config(PipelineOptions([]))
    assert (plain.bias, plain.center, plain.normalized, plain.safe_updates, plain.repeat_factors) == (True,) * 5
    assert plain.scale_labels is True and plain.apple_guard and plain.holdout_period == 10
    flags = [
        "--no-bias",
        "--no_center",
        "--no-normalize",
        "--plain-updates",
        "--no-repeat-factors",
        "--no-scale-labels",
        "--holdout-period",
        "5",
        "--holdout-off",
        "--gsa-exact",
    ]
    config = learner_config(PipelineOptions(flags))
    assert (config.bias, config.center, config.normalized, config.safe_updates, config.repeat_factors) == (False,) * 5
    assert config.scale_labels is False and config.holdout_period == 0 and config.gsa_exact
    assert learner_config(PipelineOptions(["--holdout-period", "5"])).holdout_period == 5


def test_job_settings_are_read_once_frozen_with_absolute_paths(tmp_path, monkeypatch):
    from apache_beam.options.pipeline_options import PipelineOptions

    from polybeam.pipelines.options import InputOptions, job_settings

    monkeypatch.chdir(tmp_path)
    options = PipelineOptions(["--input", "data.csv", "--model", "gs://bucket/m", "--format", "csv"])
    settings = job_settings(options, "train")
    assert settings.input == str(tmp_path / "data.csv") and settings.model == "gs://bucket/m"
    assert options.view_as(InputOptions).input == settings.input  # the job's record of its options agrees
    assert settings.given == {"input", "model", "format"} and settings.bits == 18
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.input = "other"
    # predict --groups names groups, not a file: left as given.
    settings = job_settings(
        PipelineOptions(["--input", "x", "--output", "o", "--prefixes", "p.jsonl", "--groups", "a,b"]), "predict"
    )
    assert settings.groups == "a,b" and settings.prefixes == (str(tmp_path / "p.jsonl"),)


@pytest.mark.parametrize("command", JOB_COMMANDS)
def test_a_missing_required_option_fails_naming_it(command):
    from apache_beam.options.pipeline_options import PipelineOptions

    from polybeam.pipelines.options import job_settings

    for missing in specs.required_options(command):
        given = [arg for name in specs.required_options(command) if name != missing for arg in (f"--{name}", "x")]
        with pytest.raises(OptionError, match=f"polybeam {command} needs --{missing}"):
            job_settings(PipelineOptions(given), command)


@pytest.mark.subprocess
def test_help_is_grouped_under_the_schemas_headings_without_beam_or_numba():
    code = (
        "import contextlib, io, json, sys\nfrom polybeam.pipelines.cli import main\nout = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n    status = main(['train', '--help'])\n"
        "heavy = sorted(m for m in ('apache_beam', 'numba', 'scipy') if m in sys.modules)\n"
        "print(json.dumps([status, out.getvalue(), heavy]))\n"
    )
    status, text, heavy = json.loads(
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    )
    assert status == 0 and heavy == []
    listed = [line[:-1] for line in text.splitlines() if line.endswith(":") and line[:-1] in specs.SECTIONS]
    assert listed == [
        "input",
        "per-key",
        "windows",
        "learning",
        "passes",
        "expansion",
        "sparsity",
        "model",
        "checkpoints",
        "stream",
        "runner",
    ]
    learning = text.index("\nlearning:")
    assert learning < text.index("\n  --learning-rate") < text.index("\npasses:") < text.index("\n  --holdout-period")
    assert text.index("\nexpansion:") < text.index("\n  --max-degree") < text.index("\nsparsity:")


def test_each_commands_help_lists_its_options_under_its_own_headings(capsys):
    from polybeam.pipelines.cli import main

    assert main(["timeliness", "--help"]) == 0
    text = capsys.readouterr().out
    assert "alpha-stopping cost" in text and text.index("\nanytime:") < text.index("\n  --alpha")
    assert "\n  --loss" not in text
    assert main(["predict", "--help"]) == 0
    text = capsys.readouterr().out
    assert text.index("\nanytime:") < text.index("\n  --prefixes PATH") < text.index("\n  --groups a,b,c")
