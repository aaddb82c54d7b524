"""Beam's local job service, but each job runs on several SDK workers (two by default).

Beam's ``local_job_service_main`` runs every job through an FnApiRunner built by
``BeamJob._invoke_runner`` with the runner's default of one worker: the job's
``direct_num_workers`` is never read, because only ``FnApiRunner.run_pipeline``
(the in-process entry point) copies it, and the job service calls
``run_via_runner_api`` instead. So a portable job never sees a second worker,
and nothing that depends on how work is split across workers (combiner merges,
side inputs, per-worker setup) is exercised.

The least invasive hook is the one ``LocalJobServicer`` offers for this:
its ``beam_job_type`` argument. ``MultiWorkerBeamJob`` is Beam's ``BeamJob``
with one change, the worker count of its runner; everything else (artifact
staging, state and message streams, metrics) is Beam's own code. With an
EXTERNAL environment each worker is a separate ``StartWorker`` call to the worker
pool, so a job really runs in that many SDK worker processes.

With ``--bundle-attempts N`` (N > 1) it also retries a bundle that failed, as
Dataflow retries a failed work item: ``RetryingFnApiRunner`` runs each bundle
first as a dry run, Beam's own replay mechanism (``FnApiRunner(bundle_repeat=)``:
the outputs are dropped and the runner's state is restored afterwards), up to N
times until one attempt succeeds, then for real. So a failed attempt leaves
nothing in the job but what it wrote to files, and every bundle also runs
twice, which a correct pipeline must not notice either.

Run it like Beam's service::

    python tests/portable/two_worker_job_service.py --port P [--workers 2] [--bundle-attempts 3] [--port_file F]

The count is the service's: a job's ``--direct_num_workers`` cannot be told
apart from its default of 1 once it reaches the service (every option is sent),
so it is ignored here as it is by Beam's service.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time

from apache_beam.portability.api import beam_job_api_pb2
from apache_beam.runners.portability import local_job_service
from apache_beam.runners.portability.fn_api_runner import fn_runner

DEFAULT_WORKERS = 2


class RetryingFnApiRunner(fn_runner.FnApiRunner):
    """An FnApiRunner that retries a failed bundle (see the module's docstring)."""

    def __init__(self, attempts: int, **settings):
        super().__init__(**settings)
        self._attempts = attempts

    def _run_bundle_multiple_times_for_testing(
        self, runner_execution_context, bundle_manager, data_input, data_output, fired_timers, expected_output_timers
    ):
        # Called by _run_bundle before the real run; Beam's own version replays the bundle bundle_repeat times.
        for attempt in range(1, self._attempts + 1):
            runner_execution_context.state_servicer.checkpoint()
            try:
                bundle_manager.process_bundle(
                    data_input, data_output, fired_timers, expected_output_timers, dry_run=True
                )
                return
            except Exception as error:  # the SDK worker's error, as the runner receives it
                if attempt == self._attempts:
                    raise
                first = next(
                    (line for line in str(error).splitlines() if "injected fault" in line),
                    str(error).splitlines()[0] if str(error) else repr(error),
                )
                logging.getLogger(__name__).warning("bundle attempt %d failed, retrying: %s", attempt, first)
            finally:
                runner_execution_context.state_servicer.restore()


def multi_worker_job_type(workers: int, bundle_attempts: int = 1) -> type:
    """A ``BeamJob`` subclass whose runner uses ``workers`` SDK workers (and retries failed bundles)."""

    class MultiWorkerBeamJob(local_job_service.BeamJob):
        def _invoke_runner(self):
            # Beam's BeamJob._invoke_runner, plus the worker count.
            self.set_state(beam_job_api_pb2.JobState.RUNNING)
            if bundle_attempts > 1:
                runner = RetryingFnApiRunner(bundle_attempts, provision_info=self._provision_info)
            else:
                runner = fn_runner.FnApiRunner(provision_info=self._provision_info)
            # FnApiRunner has no public setter for this: run_pipeline() assigns
            # the same attribute from DirectOptions before run_via_runner_api().
            runner._num_workers = workers
            logging.getLogger(__name__).info("running job %s on %d workers", self._job_id, workers)
            return runner.run_via_runner_api(self._pipeline_proto, self.pipeline_options())

    return MultiWorkerBeamJob


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="port of the job API (0: any free port)")
    parser.add_argument("--workers", type=int, default=DEFAULT_WORKERS, help="SDK workers per job (default 2)")
    parser.add_argument(
        "--bundle-attempts",
        type=int,
        default=1,
        help="attempts at each bundle before the job fails (default 1: no retry)",
    )
    parser.add_argument("--port_file", help="write the bound port here once the service listens")
    parser.add_argument("--staging_dir", help="where staged artifacts go (default: a fresh temporary folder)")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error("--workers must be at least 1")

    servicer = local_job_service.LocalJobServicer(
        args.staging_dir, beam_job_type=multi_worker_job_type(args.workers, args.bundle_attempts)
    )
    port = servicer.start_grpc_server(args.port)
    try:
        if args.port_file:
            # Written atomically so a reader never sees a half-written number.
            with open(args.port_file + ".tmp", "w") as handle:
                handle.write(str(port))
            os.replace(args.port_file + ".tmp", args.port_file)
        logging.getLogger(__name__).info("listening for beam jobs on port %d (%d workers per job)", port, args.workers)
        while True:
            time.sleep(3600)
    finally:
        servicer.stop()


if __name__ == "__main__":
    # SIGTERM (how the test fixture stops us) should run the finally clause above.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    logging.basicConfig(level=logging.INFO)
    main(sys.argv[1:])
