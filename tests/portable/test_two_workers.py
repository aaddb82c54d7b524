"""The portable services themselves, and train/evaluate through the job service with TWO SDK workers per job.

What two workers are compared with: an in-process run with two workers
(``--direct_num_workers 2 --direct_running_mode multi_threading``, see
``commands.IN_PROCESS_OPTIONS`` for why threads), not the one-worker run.
polybeam averages the learners of the bundles it trains, so the model depends
on how the input is split among workers; Beam's runner splits a stage's input
the same way whether its workers are reached through the job service or run
in process, so the two agree to the same standard as one worker
(``compare.py``: counts and slots exactly, floats to 1e-9 relative, apple's
parents as a set since their order is the order learners were merged; bit for
bit today but for that order). The input is sharded so each worker gets a
share, and a one-worker control run on the same shards shows the averaging
really happened (its model differs).
"""

from __future__ import annotations

import numpy as np
import pytest

from polybeam.transforms.model_io import read_model
from tests.portable.compare import assert_same_model, assert_same_report
from tests.portable.probe_job import ELEMENTS
from tests.portable.variants import TRAIN_VARIANTS

pytestmark = pytest.mark.portable


def test_the_two_worker_service_runs_each_job_on_two_worker_processes(portable_cluster):
    """The probe job's DoFn reports its process id: two distinct ones through the wrapper, one through Beam's."""
    one, two = portable_cluster.probes[1], portable_cluster.probes[2]
    assert one["records"] == two["records"] == ELEMENTS
    assert len(one["pids"]) == 1, one
    assert len(two["pids"]) == 2, two
    # Each job starts its own workers: none is the other job's.
    assert not set(one["pids"]) & set(two["pids"])
    # Workers run in the pool's own working directory, not the launcher's.
    assert one["cwds"] == two["cwds"] == [str(portable_cluster.pool.log.parent)]


def test_the_workers_cannot_see_the_launchers_tmp(portable_cluster):
    """A file the launcher made in /tmp is invisible to both jobs' workers (skipped where no private /tmp is allowed)."""
    if portable_cluster.no_private_tmp_reason:
        pytest.skip(portable_cluster.isolation_note())
    assert portable_cluster.workers_isolated, portable_cluster.isolation_note()


@pytest.mark.parametrize("variant", list(TRAIN_VARIANTS))
def test_train_on_two_workers(portable_plan, variant):
    runs = portable_plan[f"train/{variant}/2w"]
    noted = runs.portable.report.get("workers")
    if noted is not None:
        # The job's input is split in two parts, one per worker handler, but Beam's runner picks each
        # part's handler by a counter shared by every job the service runs at once (the suite runs
        # several), so now and then both parts run in one worker process: the split, and so the model,
        # is the same. That the service does use two processes is the probe's job (test_two_workers.py).
        assert 1 <= len({(worker["host"], worker["pid"]) for worker in noted}) <= 2, noted
    in_process = runs.in_process.report
    spec = TRAIN_VARIANTS[variant]
    assert (in_process["examples"], in_process["records"], in_process["reconciles"]) == (spec.examples,) * 2 + (True,)
    assert_same_report(runs)
    assert_same_model(runs.portable_dir / "model", runs.in_process_dir / "model")
    spec.check(read_model(str(runs.in_process_dir / "model")), in_process)


def test_two_workers_really_average_their_learners(portable_plan):
    """The two-worker model of the shards is not the one-worker model of the same shards."""
    two = read_model(str(portable_plan["train/one-pass/2w"].portable_dir / "model"))
    control = portable_plan["train/one-pass-shards/1w"]
    assert control.in_process.report["examples"] == two.metadata["examples"]
    one = read_model(str(control.in_process_dir / "model"))
    assert np.array_equal(one.slots, two.slots)
    assert not np.allclose(one.weights, two.weights, rtol=1e-3, atol=1e-6)


def test_evaluate_on_two_workers(portable_plan):
    """Held-out metrics of one model file over two test shards, read by two workers."""
    runs = portable_plan["evaluate/one-pass/2w"]
    in_process = runs.in_process.report
    assert in_process["examples"] == 920 and in_process["reconciles"]
    assert_same_report(runs)
