"""The shared worker pool keeps workers of the same id apart (two TaskManagers number theirs alike)."""

from __future__ import annotations

import time

from apache_beam.portability.api import beam_fn_api_pb2, endpoints_pb2
from apache_beam.runners.worker import worker_pool_main

from polybeam.engines import worker_pool


class FakeWorker:
    """A worker process that is alive until it ends (``end``) or is killed."""

    def __init__(self, *args, **kwargs):
        self.returncode = None
        self.killed = False

    def poll(self):
        return self.returncode

    def end(self):
        self.returncode = 0


def start_request(worker_id: str, control: str) -> beam_fn_api_pb2.StartWorkerRequest:
    return beam_fn_api_pb2.StartWorkerRequest(
        worker_id=worker_id, control_endpoint=endpoints_pb2.ApiServiceDescriptor(url=control)
    )


def test_stopping_one_runners_worker_leaves_the_other_runners_worker_of_the_same_id(monkeypatch):
    monkeypatch.setattr(worker_pool_main.subprocess, "Popen", FakeWorker)
    monkeypatch.setattr(worker_pool, "EXIT_GRACE_SECONDS", 0.3)

    def kill(process):
        process.killed = True
        process.end()

    monkeypatch.setattr(worker_pool, "kill_process_gracefully", kill)
    pool = worker_pool.SharedWorkerPool(use_process=True)
    for control in ("localhost:1000", "localhost:2000"):  # two TaskManagers, both naming their worker 1-1
        assert not pool.StartWorker(start_request("1-1", control), None).error
    first, second = pool._workers["1-1"]
    assert first is not second

    # The first TaskManager is done with its worker (it ended when its control channel closed) and stops it:
    first.end()
    pool._stop("1-1")
    assert pool._workers["1-1"] == [second] and not second.killed  # Beam's pool would have killed `second`

    # A worker alone under its id that did not end with its runner is stopped after the grace period.
    started = time.monotonic()
    pool._stop("1-1")
    assert second.killed and time.monotonic() - started >= 0.3
    assert "1-1" not in pool._workers
    pool._stop("1-1")  # a stop for a worker already gone
    assert "1-1" not in pool._workers


def test_two_live_workers_of_one_id_are_both_left_running(monkeypatch):
    monkeypatch.setattr(worker_pool_main.subprocess, "Popen", FakeWorker)
    monkeypatch.setattr(worker_pool, "EXIT_GRACE_SECONDS", 0.2)
    monkeypatch.setattr(worker_pool, "kill_process_gracefully", lambda process: (_ for _ in ()).throw(AssertionError))
    pool = worker_pool.SharedWorkerPool(use_process=True)
    for control in ("localhost:1000", "localhost:2000"):
        pool.StartWorker(start_request("2-1", control), None)
    pool._stop("2-1")
    assert len(pool._workers["2-1"]) == 2
