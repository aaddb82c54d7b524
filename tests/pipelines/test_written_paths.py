"""Where commands write: into folders that exist, under names Beam's file systems can write, checked before
anything runs; and what a failed job's file sinks left behind is removed."""

from __future__ import annotations

import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from polybeam.pipelines.errors import OptionError
from polybeam.pipelines.launch import remove_sink_temporaries
from polybeam.pipelines.options import job_settings
from polybeam.pipelines.written_paths import check_outputs, written_options


def test_what_each_command_writes():
    assert [option.name for option in written_options("train")] == ["dead-letters", "model", "checkpoint-dir", "report"]
    assert [option.name for option in written_options("evaluate")] == ["dead-letters", "report"]  # (reads --model)
    assert "output" in [option.name for option in written_options("predict")]
    assert [option.name for option in written_options("demo")] == ["output-dir"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--model", "{tmp}/runs/m.model"], "--model {tmp}/runs/m.model: the folder {tmp}/runs does not exist"),
        (["--model", "{tmp}/m.model", "--checkpoint-dir", "{tmp}/a/b"], "--checkpoint-dir {tmp}/a/b: the folder"),
        (["--model", "{tmp}/m.model", "--report", "{tmp}/r?.json"], "--report {tmp}/r?.json: Beam's file systems"),
        (["--model", "{tmp}/day[0]"], "--model {tmp}/day[0]: Beam's file systems read *, ?, [ and ]"),
    ],
)
def test_train_refuses_an_output_in_a_missing_folder_or_with_pattern_characters(tmp_path, argv, message):
    options = PipelineOptions(["--input", "x", *(arg.format(tmp=tmp_path) for arg in argv)])
    with pytest.raises(OptionError) as refused:
        job_settings(options, "train")
    assert str(refused.value).startswith(message.format(tmp=tmp_path))


def test_a_folder_the_command_writes_is_created_but_not_its_parent(tmp_path):
    settings = job_settings(PipelineOptions(["--input", "x", "--model", str(tmp_path / "per-key")]), "train")
    assert settings.model == str(tmp_path / "per-key")  # (train --key writes it: its parent exists)
    assert job_settings(PipelineOptions(["--input", "x", "--model", "gs://bucket/no/such/m.model"]), "train")


def test_paths_named_after_the_model_are_checked_at_launch():
    with pytest.raises(OptionError, match=r"^the dead letters /m\[1\].model.evaluate.dead_letters.jsonl: .*give "):
        check_outputs({"dead_letters": "/m[1].model.evaluate.dead_letters.jsonl"})
    check_outputs({"predictions": "/out/p*", "model": None})  # (a prefix and its shards' pattern)


def test_a_failed_jobs_sink_temporaries_are_removed(tmp_path):
    left = [tmp_path / "beam-temp-m.model.dead_letters.jsonl-1f2e", tmp_path / "beam-temp-p-3a"]
    others = [tmp_path / "beam-temp-other-9", tmp_path / "m.model"]
    for folder in left + others[:1]:
        folder.mkdir()
        (folder / "shard").write_text("x")
    others[1].write_text("model")
    outputs = {"dead_letters": str(tmp_path / "m.model.dead_letters.jsonl"), "predictions": str(tmp_path / "p") + "*"}
    assert sorted(remove_sink_temporaries(outputs)) == sorted(map(str, left))
    assert not any(folder.exists() for folder in left) and all(path.exists() for path in others)
