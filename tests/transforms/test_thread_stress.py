"""The two-thread local runner under load: races between the threads of one worker process.

``--direct_running_mode multi_threading`` runs the bundles of a stage on threads of one process: each
bundle has its own copies of the DoFns and CombineFns, but module globals, class attributes, numba's
dispatchers and polybeam's helper threads (the learners' lane, the parser's and the expansion's) are
shared. Jobs ran out of memory there (16-22 GB, against 380 MiB normally) on a loaded machine: Beam's
threaded workers flushed a learner's window header and its bytes as two chunks, which the runner read as
two elements, the second with 1.9 billion windows (``polybeam.pipelines.launch.threaded_runner``).

The stress test runs softmax training on four shards of the satellite data with two worker threads,
several times in one fresh process, with GIL switches forced every 10 microseconds and a thread spinning
in Python meanwhile (``thread_stress_job.py``), and checks what a race would break: each run's peak
memory and what the process keeps between runs stay bounded, every run reads, counts and learns every
record, the models are the same run after run, and no numba kernel compiles new signatures run after
run. The other tests each show one race that was fixed, failing without its fix.
"""

from __future__ import annotations

import gzip
import itertools
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tests.concurrency import all_at_once
from tests.faults import switch as faults

SATELLITE = Path(__file__).parents[2] / "polybeam" / "datasets" / "data" / "satellite.libsvm.gz"
SATELLITE_ROWS = 6435
RUNS = 4  # (4: three intervals, so a leak of 50 MB a run shows past the 128 MB bound)
MIB = 1024  # /proc/self/status counts KiB


@pytest.fixture(scope="module")
def stress(tmp_path_factory):
    """The stress job's per-run figures (one fresh process, RUNS runs)."""
    folder = tmp_path_factory.mktemp("thread-stress")
    lines = gzip.decompress(SATELLITE.read_bytes()).splitlines(keepends=True)
    shard_rows = -(-len(lines) // 4)
    for shard in range(4):
        (folder / f"part-{shard}.libsvm").write_bytes(b"".join(lines[shard * shard_rows : (shard + 1) * shard_rows]))
    spec = {
        "argv": [
            "--input",
            str(folder / "part-*.libsvm"),
            "--loss",
            "softmax",
            "--classes",
            "6",
            "--direct_num_workers",
            "2",
            "--direct_running_mode",
            "multi_threading",
            "--quiet",
        ],
        "model_dir": str(folder),
        "runs": RUNS,
        "hammers": 1,
        "switch_interval": 1e-5,
        "out": str(folder / "stress.json"),
    }
    (folder / "spec.json").write_text(json.dumps(spec))
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "tests.transforms.thread_stress_job", str(folder / "spec.json")],
        cwd=Path(__file__).parents[2],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    runs = json.loads((folder / "stress.json").read_text())["runs"]
    print(
        f"thread stress: {RUNS} runs in {time.perf_counter() - started:.1f} s; per run: "
        + ", ".join(
            f"{run['seconds']:.1f} s peak {run['peak_kib'] // MIB} MiB kept {run['rss_after_kib'] // MIB} MiB"
            for run in runs
        )
    )
    return runs


@pytest.mark.slow
@pytest.mark.subprocess
def test_every_run_succeeds_and_counts_reconcile(stress):
    for run in stress:
        assert run["code"] == 0, run["stderr"]
        assert run["records"] == run["examples"] == SATELLITE_ROWS
        assert run["dead_letters"] == run["skipped"] == 0 and run["reconciles"]
        assert run["examples_trained"] == run["learned"] == SATELLITE_ROWS


@pytest.mark.subprocess
def test_memory_stays_bounded_run_after_run(stress):
    peaks = [run["peak_kib"] // MIB for run in stress]
    kept = [run["rss_after_kib"] // MIB for run in stress]
    # A run peaks at ~400-500 MiB here (the process's Beam, numba and two learners of 2**18 x 6 weights).
    assert max(peaks) < 1024, peaks
    if all(run["peak_reset"] for run in stress):  # each run's own peak: no run needs much more than the first
        assert max(peaks[1:]) < peaks[0] + 256, peaks
    # What the process keeps between runs does not grow by a job's leftovers each time (it did, by
    # 35-50 MB a run, while the command froze them for good: see polybeam.pipelines.cli.main).
    assert [run["frozen"] for run in stress[1:]] == [stress[0]["frozen"]] * (len(stress) - 1)
    assert kept[-1] - kept[0] < 128, kept


@pytest.mark.subprocess
def test_models_are_the_same_run_after_run(stress):
    first = stress[0]
    for run in stress[1:]:
        assert run["slots"] == first["slots"]
        np.testing.assert_allclose(run["weights"], first["weights"], rtol=1e-9, atol=1e-12)


@pytest.mark.subprocess
def test_kernels_compile_no_new_signatures_run_after_run(stress):
    first, last = stress[0]["signatures"], stress[-1]["signatures"]
    assert last == first
    assert max(last.values()) <= 2, {name: count for name, count in last.items() if count > 2}


def test_concurrent_bundle_attempts_count_and_arm_the_fault_switch_once(monkeypatch):
    """Bundles of one step started on two threads at once: counting an attempt was read, add, write,
    so two attempts could count as one (the Nth never came, or came twice: the fault fired twice)."""

    class SlowCounter(Counter):
        def __getitem__(self, key):
            value = super().__getitem__(key)
            time.sleep(0.001)  # the thread switch a loaded machine makes between the read and the write
            return value

    monkeypatch.setenv(faults.ENV, "race:5")
    monkeypatch.setattr(faults, "_started", SlowCounter())
    faults.reset()
    try:
        switches = [faults.FaultSwitch("race") for _ in range(8)]  # one per bundle's copy of the DoFn
        turns = itertools.count()

        def start_bundle() -> bool:
            switch = switches[next(turns)]
            switch.bundle_started()
            return switch._armed

        armed = all_at_once(start_bundle, threads=len(switches))
        assert faults._started["race"] == 8
        assert armed.count(True) == 1
    finally:
        monkeypatch.delenv(faults.ENV)
        faults.reset()
