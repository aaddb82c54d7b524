"""An external SDK worker pool that several runner processes on one host can share.

Beam's worker pool (``apache_beam.runners.worker.worker_pool_main``) keeps
its workers by the id the runner gives them, and ids are unique only within
one runner process: each Flink TaskManager or Spark executor numbers its
workers ``1-1``, ``2-1``, ... So two TaskManagers sharing one pool, as they
do when both run on this machine, ask for two workers with the same id, and
the first ``StopWorker`` kills the other TaskManager's live worker (its job
then fails with "SDK harness closed connection"). On a real cluster each
TaskManager has its own pool beside it and the ids never meet.

This pool keeps every worker under its id, however many share it. A worker
ends by itself when its runner closes its control channel, so ``StopWorker``
waits a few seconds for one worker of that id to end and forgets it; if none
does, it stops the worker only when it is the only one of that id (stuck),
and otherwise leaves them all to their own runners' stops. Run it as ``python -m polybeam.engines.worker_pool --service_port P``;
everything else is Beam's pool.
"""

from __future__ import annotations

import argparse
import logging
import subprocess
import threading
import time
from collections import defaultdict

from apache_beam.portability.api import beam_fn_api_pb2
from apache_beam.runners.worker.worker_pool_main import BeamFnExternalWorkerPoolServicer, kill_process_gracefully

_LOGGER = logging.getLogger(__name__)
EXIT_GRACE_SECONDS = 10.0


class SharedWorkerPool(BeamFnExternalWorkerPoolServicer):
    """Beam's process worker pool, keeping workers that share an id apart (see the module's text)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._lock = threading.Lock()
        self._workers: dict[str, list[subprocess.Popen]] = defaultdict(list)

    def StartWorker(self, request, context):
        with self._lock:
            response = super().StartWorker(request, context)
            started = self._worker_processes.pop(request.worker_id, None)  # Beam's map: one per id
            if started is not None:
                self._workers[request.worker_id].append(started)
        return response

    def StopWorker(self, request, context):
        threading.Thread(target=self._stop, args=(request.worker_id,), daemon=True).start()
        return beam_fn_api_pb2.StopWorkerResponse()

    def _stop(self, worker_id: str) -> None:
        deadline = time.monotonic() + EXIT_GRACE_SECONDS
        while True:
            with self._lock:
                workers = self._workers.get(worker_id, [])
                ended = [worker for worker in workers if worker.poll() is not None]
                if ended or not workers:
                    # The stop is for a worker that ended with its runner: forget it, and no other.
                    if ended:
                        workers.remove(ended[0])
                    if not workers:
                        self._workers.pop(worker_id, None)
                    return
                if time.monotonic() >= deadline:
                    if len(workers) == 1:  # nobody else's: a worker that did not end with its runner
                        _LOGGER.info("Stopping worker %s", worker_id)
                        kill_process_gracefully(workers.pop())
                        self._workers.pop(worker_id, None)
                    return  # several alive: whose is unknown; each runner's own stop comes when it ends
            time.sleep(0.2)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--service_port", type=int, required=True, help="port to serve the pool on")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    address, server = SharedWorkerPool.start(use_process=True, port=args.service_port)
    _LOGGER.info("Started a shared worker pool at %s", address)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
