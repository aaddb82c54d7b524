"""Worker faults: a bundle that fails and is retried does not change the result.

A second worker pool runs with the fault switch on (``POLYBEAM_FAULT``, see
:mod:`tests.faults.switch`; the pool's processes start with the hooks of
:mod:`tests.faults.hooks`, which attach it to polybeam's steps, on their
``PYTHONPATH``): in every job, the first attempt of the
first bundle of each polybeam step (first-pass learning, a later pass's
learning, the averaging of learners, the merging of evaluations, the Gram
statistics of ``sequence``) learns or adds a batch and then raises. Its jobs
go to a job service that retries a failed bundle (``two_worker_job_service.py
--bundle-attempts 3``: Beam's replay of a bundle with its outputs dropped and
the runner's state restored), on two SDK worker processes. Each test checks
that the faults fired (their marker files, the service's log) and that the
job's model, metrics or prefixes equal those of the same command on the
fault-free two-worker service.

The local runner does not retry; there a failed job is re-run as a runner
re-runs a failed stage, from the last complete pass (``--resume``), and the
model again equals the fault-free one.
"""

from __future__ import annotations

import json
import shutil

import pytest

from polybeam import datasets
from polybeam.engines import processes
from polybeam.engines.pools import start_worker_pool
from tests.faults import hooks
from tests.portable.commands import IN_PROCESS_OPTIONS, polybeam
from tests.portable.compare import assert_close, assert_same_model
from tests.portable.services import start_job_service

pytestmark = pytest.mark.portable

STEPS = ("train", "learn", "merge", "evaluate", "statistics")


@pytest.fixture(scope="module")
def faulty(portable_cluster):
    """A worker pool with the fault switch on, and a retrying two-worker job service; stopped at the end."""
    root = portable_cluster.root / "faulty"
    markers = root / "markers"
    markers.mkdir(parents=True)
    env = hooks.environment(",".join(f"{step}:1" for step in STEPS), markers)
    service = start_job_service(root, workers=2, bundle_attempts=3, wait=False)
    pool = None
    try:
        pool, _ = start_worker_pool(root, env=env, name="faulty-worker-pool", shared=False, private_tmp=True)
        processes.wait_until_listening(service)
        yield {"service": service, "pool": pool, "markers": markers}
    finally:
        processes.stop(service)
        processes.stop(pool)


def run_both(cluster, faulty, args, name: str):
    """The command on the fault-free two-worker service and on the faulty retrying one: both reports,
    the folders they wrote to, and the steps whose fault fired in the faulty run."""
    shutil.rmtree(faulty["markers"])
    faulty["markers"].mkdir()
    outcome = {}
    for kind, endpoint, pool in (
        ("clean", cluster.job_services[2].address, cluster.pool.address),
        ("faulty", faulty["service"].address, faulty["pool"].address),
    ):
        folder = cluster.job_dir(f"faults-{name}-{kind}")
        argv = [str(part).replace("{out}", str(folder)) for part in args]
        options = [
            "--runner",
            "PortableRunner",
            "--job_endpoint",
            endpoint,
            "--environment_type",
            "EXTERNAL",
            "--environment_config",
            pool,
            "--direct_num_workers",
            "2",
        ]
        run = polybeam(argv, options, cwd=cluster.launcher_dir, env=cluster.launcher_env)
        outcome[kind] = (run.report, folder)
    fired = sorted(path.name.removeprefix("fired-") for path in faulty["markers"].iterdir())
    return outcome["clean"], outcome["faulty"], fired


def retried_attempts(faulty) -> int:
    return faulty["service"].log.read_text().count("failed, retrying: ")


def test_retried_training_bundles_give_the_fault_free_model(portable_cluster, portable_data, faulty):
    train = portable_data["spam"].train
    before = retried_attempts(faulty)
    (clean, clean_dir), (report, faulty_dir), fired = run_both(
        portable_cluster,
        faulty,
        ["train", "--input", train, "--loss", "logistic", "--passes", "3", "--model", "{out}/m.model"],
        "train",
    )
    assert fired == ["learn", "merge", "train"]  # pass 1's learning, pass 2's learning, an average
    assert retried_attempts(faulty) - before >= 3
    assert report["examples"] == clean["examples"] == 3681 and report["passes_run"] == 3
    assert_same_model(faulty_dir / "m.model", clean_dir / "m.model")
    assert_close(report["passes"], clean["passes"], "passes")


def test_retried_apple_bundles_give_the_fault_free_model(portable_cluster, portable_data, faulty):
    train = portable_data["spam"].train
    (clean, clean_dir), (report, faulty_dir), fired = run_both(
        portable_cluster,
        faulty,
        [
            "train",
            "--input",
            train,
            "--loss",
            "logistic",
            "--expand",
            "apple",
            "--passes",
            "2",
            "--model",
            "{out}/m.model",
        ],
        "apple",
    )
    assert "train" in fired and "learn" in fired
    assert_same_model(faulty_dir / "m.model", clean_dir / "m.model")


def test_retried_evaluation_and_statistics_bundles_give_the_fault_free_results(portable_cluster, portable_data, faulty):
    split = portable_data["spam"]
    model = portable_cluster.job_dir("faults-model") / "m.model"
    assert (
        polybeam(
            ["train", "--input", split.train, "--loss", "logistic", "--model", model],
            IN_PROCESS_OPTIONS[1],
            cwd=portable_cluster.launcher_dir,
            env=portable_cluster.launcher_env,
        ).returncode
        == 0
    )
    (clean, _), (report, _), fired = run_both(
        portable_cluster,
        faulty,
        [
            "evaluate",
            "--input",
            split.test,
            "--model",
            model,
            "--report",
            "{out}/evaluation.json",
            "--dead-letters",
            "{out}/dead.jsonl",
        ],
        "evaluate",
    )
    assert fired == ["evaluate"]
    metrics = ("examples", "loss", "error", "auc", "mse")
    assert_close({k: report[k] for k in metrics}, {k: clean[k] for k in metrics}, "metrics")

    (clean, clean_dir), (report, faulty_dir), fired = run_both(
        portable_cluster,
        faulty,
        [
            "sequence",
            "--input",
            split.train,
            "--groups",
            datasets.group_spec_path("spam"),
            "--output",
            "{out}/prefixes.jsonl",
        ],
        "sequence",
    )
    assert fired == ["statistics"]
    read = lambda folder: [json.loads(line) for line in open(folder / "prefixes.jsonl")]  # noqa: E731
    assert_close(read(faulty_dir), read(clean_dir), "prefixes")


def test_a_failed_local_job_rerun_from_its_last_pass_gives_the_fault_free_model(
    portable_cluster, portable_data, tmp_path
):
    """The local runner does not retry: the job fails in pass 2, and its re-run resumes after pass 1."""
    train = portable_data["spam"].train
    markers = tmp_path / "markers"
    markers.mkdir()
    launcher = portable_cluster.launcher_env
    env = {**launcher, **hooks.environment("learn:1", markers, base=launcher)}
    # (--in-memory off: the streaming passes, whose state after each pass the re-run resumes from)
    args = ["train", "--input", train, "--loss", "logistic", "--passes", "3", "--quiet", "--in-memory", "off"]
    failed = polybeam([*args, "--model", tmp_path / "m.model"], [], cwd=tmp_path, env=env)
    assert failed.returncode != 0 and "injected fault (POLYBEAM_FAULT=learn:1)" in failed.stderr
    assert not (tmp_path / "m.model").exists()
    assert sorted(p.name for p in (tmp_path / "m.model.checkpoints").iterdir()) == ["pass-0001.state"]
    resumed = polybeam([*args, "--model", tmp_path / "m.model", "--resume"], [], cwd=tmp_path, env=env)
    assert resumed.report["resumed_from_pass"] == 1
    clean = polybeam([*args, "--model", tmp_path / "clean.model"], [], cwd=tmp_path, env=portable_cluster.launcher_env)
    assert clean.returncode == 0
    assert_same_model(tmp_path / "m.model", tmp_path / "clean.model")
