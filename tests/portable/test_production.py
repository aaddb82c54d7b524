"""Production features through Beam's portable runner: per-key models, checkpoints, resume and warm starts.

As in ``test_one_worker.py``, each run (``runs.py``) is the same command on the
portable runner and in process, compared by the rules of ``compare.py``; the
per-key task's data is tiny (40 keys, 60 training examples each: ``data.py``).

* ``train --key`` (VW tags, a CSV column; the VW one also on two workers)
  writes the same folder: index, and every key's model;
* ``evaluate`` / ``predict`` on that folder route each example to its key's
  model: the same metrics per key and overall, the same prediction lines;
  the example whose key has no model is the same dead letter (evaluate), or
  is scored by ``--fallback-model`` (predict);
* a three-pass job's checkpoints are written by the SDK workers into the
  shared folder (the launcher only submits the job), equal to the in-process
  ones; ``--resume`` from them after losing pass 3 and the model, and
  ``--initial-model`` from a model or a state file, give the same models.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from polybeam.transforms.model_io import read_model
from tests.portable.compare import (
    ATOL,
    RTOL,
    assert_close,
    assert_same_lines,
    assert_same_model,
    assert_same_per_key_models,
    assert_same_predictions,
    assert_same_report,
    assert_same_state,
    learned,
    prediction_lines,
    read_index,
)
from tests.portable.data import UNKNOWN_KEY
from tests.portable.runs import CHECKPOINTED, CHECKPOINTS, LOST_PASS, WARM_STARTS
from tests.portable.variants import PER_KEY_VARIANTS, TRAIN_VARIANTS, check_per_key_index

pytestmark = pytest.mark.portable


def assert_same_per_key_training(runs, split, key: str) -> None:
    """A side-by-side ``train --key`` run: reports, index and every key's model agree; the index is complete."""
    in_process = runs.in_process.report
    assert in_process["keys"] == split.keys and in_process["examples_trained"] == split.keys * split.train_per_key
    assert in_process["reconciles"] and in_process["dead_letters"] == 0
    assert_same_report(runs)
    check_per_key_index(read_index(runs.in_process_dir / "models"), split, key, str(runs.in_process_dir / "models"))
    assert_same_per_key_models(runs.portable_dir / "models", runs.in_process_dir / "models")


@pytest.mark.parametrize("variant", list(PER_KEY_VARIANTS))
def test_train_per_key(portable_plan, portable_data, variant):
    """``train --key tag`` (VW) and ``--key column:key`` (CSV): the same folder of per-key models."""
    runs = portable_plan[f"train/{variant}/1w"]
    assert_same_per_key_training(runs, portable_data["per-key"], PER_KEY_VARIANTS[variant].key)


def test_train_per_key_on_two_workers(portable_plan, portable_data):
    """``train --key tag`` on four shards read by two SDK workers: every key's partial learners are merged
    as with two in-process workers (see ``test_two_workers.py`` for why that is the reference)."""
    runs = portable_plan["train/per-key-vw/2w"]
    noted = runs.portable.report.get("workers")
    if noted is not None:
        # The job's input is split in two parts, one per worker handler, but Beam's runner picks each
        # part's handler by a counter shared by every job the service runs at once (the suite runs
        # several), so now and then both parts run in one worker process: the split, and so the model,
        # is the same. That the service does use two processes is the probe's job (test_two_workers.py).
        assert 1 <= len({(worker["host"], worker["pid"]) for worker in noted}) <= 2, noted
    assert_same_per_key_training(runs, portable_data["per-key"], PER_KEY_VARIANTS["per-key-vw"].key)


def test_evaluate_per_key(portable_plan, portable_data):
    """Metrics per key (``keys``) and over all keys; the unknown key's example is the same dead letter."""
    split = portable_data["per-key"]
    runs = portable_plan["evaluate/per-key/1w"]
    in_process = runs.in_process.report
    assert in_process["examples"] == split.test_records - 1 and in_process["records"] == split.test_records
    assert in_process["dead_letters"] == in_process["examples_without_model"] == 1 and in_process["reconciles"]
    assert sorted(in_process["keys"]) == sorted(f"key{number}" for number in range(split.keys))
    assert sum(metrics["examples"] for metrics in in_process["keys"].values()) == in_process["examples"]
    assert_same_report(runs)
    assert_the_unknown_key_is_the_same_dead_letter(runs, split)


def assert_the_unknown_key_is_the_same_dead_letter(runs, split) -> None:
    """Both sides wrote one dead letter: the test file's last line, whose key has no model."""
    (letter,) = [json.loads(line) for line in open(runs.in_process.report["dead_letter_file"])]
    assert letter["line"] == split.test_records and letter["raw"].startswith(f"1 '{UNKNOWN_KEY} ")
    assert f"no model for key {UNKNOWN_KEY!r}" in letter["reason"], letter
    assert_same_lines(runs.portable.report["dead_letter_file"], runs.in_process.report["dead_letter_file"])


def test_predict_per_key_with_a_fallback_model(portable_plan, portable_data):
    """The same prediction lines, with their ``key`` column; the unknown key's example is predicted by the
    fallback model instead of becoming a dead letter."""
    split = portable_data["per-key"]
    runs = portable_plan["predict/per-key-fallback/1w"]
    assert_same_report(runs)
    assert_same_predictions(runs)
    header, lines = prediction_lines(runs.in_process.report)
    assert header.endswith("\tkey") and len(lines) == split.test_records
    assert len([line for line in lines if line.endswith(f"\t{UNKNOWN_KEY}")]) == 1
    assert runs.in_process.report["dead_letters"] == 0


def test_checkpoints_are_written_by_the_workers_on_the_shared_folder(portable_plan):
    """``train --passes 3`` saves the learner state after every pass as ``MODEL.checkpoints/pass-000k.state``.

    On the portable runner only the SDK workers run the pipeline (the launcher
    submits it, and the workers' /tmp is not the launcher's), so the files
    there were written by the workers; they hold the in-process run's states.
    """
    runs = portable_plan[CHECKPOINTED]
    assert runs.portable.report["checkpoint_dir"] == str(runs.portable_dir / CHECKPOINTS)
    written = {
        kind: sorted(path.name for path in (folder / CHECKPOINTS).iterdir()) for kind, folder in runs.folders.items()
    }
    # Nothing else: no temporary file of the atomic writes is left behind.
    assert written["portable"] == written["in-process"] == [f"pass-{number:04d}.state" for number in (1, 2, 3)]
    for name in written["portable"]:
        assert_same_state(runs.portable_dir / CHECKPOINTS / name, runs.in_process_dir / CHECKPOINTS / name)


def test_resume_after_losing_the_last_pass_recreates_the_uninterrupted_model(portable_plan):
    """The portable checkpoints without pass 3 and without the model (as a job killed in pass 3 leaves
    them): ``--resume`` through the portable runner runs pass 3 only, and ends with the model and the
    pass-3 state of the uninterrupted in-process run."""
    resumed = portable_plan["train/resume/1w"]
    report = resumed.portable.report
    assert (report["resumed_from_pass"], report["first_pass"], report["passes_run"]) == (2, 3, 1)
    whole = portable_plan[CHECKPOINTED].in_process_dir
    assert_same_model(resumed.portable_dir / "model", whole / "model")
    assert_same_state(resumed.portable_dir / CHECKPOINTS / LOST_PASS, whole / CHECKPOINTS / LOST_PASS)


def test_warm_start_from_a_model_file(portable_plan):
    """``--initial-model`` from the three-pass run's model: the same model on both runners, and its first
    pass starts warm (a lower progressive loss than a cold pass)."""
    runs = portable_plan["train/warm-from-model/1w"]
    in_process = runs.in_process.report
    assert in_process["initial_model"] == str(portable_plan.folder(CHECKPOINTED) / WARM_STARTS["model"])
    assert in_process["examples"] == TRAIN_VARIANTS["one-pass"].examples
    assert_same_report(runs)
    assert_same_model(runs.portable_dir / "model", runs.in_process_dir / "model")
    assert in_process["progressive_loss"] < portable_plan["train/one-pass/1w"].in_process.report["progressive_loss"]


def test_warm_start_from_a_state_file_continues_exactly(portable_plan):
    """``--initial-model`` from the state after pass 2, for one pass, through the portable runner: it is
    pass 3 of the uninterrupted in-process run (the same model and pass history)."""
    warm = portable_plan["train/warm-from-state/1w"]
    report = warm.portable.report
    assert report["initial_model"] == str(portable_plan.folder(CHECKPOINTED) / WARM_STARTS["state"])
    uninterrupted = portable_plan[CHECKPOINTED].in_process.report
    assert_close(report["passes"], uninterrupted["passes"], "passes")
    assert_close(report["progressive_loss"], uninterrupted["passes"][-1]["loss"], "progressive_loss")
    assert_continues_exactly(warm.portable_dir / "model", portable_plan.folder(CHECKPOINTED) / "model")


def assert_continues_exactly(warm_path, uninterrupted_path) -> None:
    """A one-pass warm start from the state after pass 2 is the three-pass model: the same slots, weights and
    history (``metadata``), by the rules of ``compare.py``; only the settings' pass count differs (1, not 3), and
    with it the holdout period (the uninterrupted run's is off, a one-pass run holds nothing out anyway)."""
    warm, uninterrupted = read_model(str(warm_path)), read_model(str(uninterrupted_path))
    same_passes = {"passes": uninterrupted.config.passes, "holdout_period": uninterrupted.config.holdout_period}
    assert warm.config.replace(**same_passes) == uninterrupted.config
    np.testing.assert_array_equal(warm.slots, uninterrupted.slots)
    np.testing.assert_allclose(warm.weights, uninterrupted.weights, rtol=RTOL, atol=ATOL)
    assert_close(learned(warm), learned(uninterrupted), "metadata")
