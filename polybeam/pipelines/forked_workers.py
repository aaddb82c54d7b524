"""Local multi-process runs whose workers start warm: forked from the launcher, not started afresh.

Beam's local runner in ``multi_processing`` mode starts every worker as a new
``python -m apache_beam.runners.worker.sdk_worker_main``: each one imports
Beam (~0.5 s on this machine) and polybeam, and loads every numba kernel it
calls from the cache (~0.4 s), before it reads a record. On a 1M-example job
that is more than the work itself, so two workers were slower than one.

Here the launcher, which has imported all of it already, first loads the
kernels the job needs (:func:`polybeam.pipelines.preload.preload`), then forks
the workers *before* the runner starts its gRPC servers (a process must not
fork while gRPC threads run). Each forked child waits on a pipe; when the
runner asks for a worker, the child receives the runner's control, logging
and options descriptors and runs Beam's own SDK harness
(``sdk_worker_main.main``), exactly as a worker Beam would start, over the
same Fn API. Workers are separate processes with their own GIL, as in
Beam's ``multi_processing`` mode; only their start is shared.

This is a local runner's start-up optimisation: remote runners (Dataflow,
Flink, Spark, the portable job service) start their workers themselves, and
there polybeam's part is that the kernels come from a warm cache.
"""

from __future__ import annotations

import io
import json
import logging
import os
import sys
import threading
import uuid

from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions
from apache_beam.portability.api import endpoints_pb2
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.runners.portability.fn_api_runner.fn_runner import BundleManager, ParallelBundleManager
from apache_beam.runners.portability.fn_api_runner.worker_handlers import GrpcWorkerHandler, WorkerHandler
from apache_beam.transforms import environments
from google.protobuf import json_format, text_format

URN = "polybeam:env:forked_python:v1"
# Forking is safe only in a process that has not used gRPC yet (a child cannot use
# gRPC state copied mid-flight): the ``polybeam`` command, a fresh process, turns
# this on; a long-lived Python process that calls the pipelines gets Beam's own
# freshly started workers instead.
ENABLED = False
# POLYBEAM_FORK_WORKERS=0 asks for Beam's own freshly started workers (for comparison, or debugging).
SWITCH = "POLYBEAM_FORK_WORKERS"
# Pools of waiting workers by id (the environment's payload names its pool).
_POOLS: dict[str, ForkedWorkers] = {}


def _serve(read_fd: int) -> None:
    """A forked worker: wait for the runner's addresses, then run Beam's SDK harness; never returns."""
    code = 0
    try:
        chunks = []
        while True:
            chunk = os.read(read_fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(read_fd)
        if chunks:
            os.environ.update(json.loads(b"".join(chunks)))
            from apache_beam.runners.worker import sdk_worker_main

            # The harness sends its log to the runner, which logs it in the launcher; the stderr
            # handler this process inherited from the launcher would print it all a second time.
            for handler in logging.getLogger().handlers:
                handler.setLevel(logging.CRITICAL + 1)
            sys.stderr = _WithoutRejections(sys.stderr)
            sdk_worker_main.main([])
    except BaseException:  # the harness logs its own failures to the runner
        code = 1
    finally:
        os._exit(code)  # never run the launcher's exit handlers in a worker


class _WithoutRejections(io.TextIOBase):
    """The worker's stderr, without the traceback of a refused input: the harness prints every failed
    bundle's traceback there as well as sending it to the runner, and the launcher, which shares this
    stderr, says a refused input once, as its error message."""

    def __init__(self, stream):
        self.stream = stream
        self._dropped = False

    def write(self, text: str) -> int:
        # print() writes its text, then the line's end on its own: drop both.
        dropped, self._dropped = self._dropped, "polybeam.formats.acceptance.InputRejected: " in text
        if self._dropped or (dropped and text == "\n"):
            return len(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()


class ForkedWorkers:
    """``count`` worker processes forked now, each waiting to be told where the runner is."""

    def __init__(self, count: int):
        self.id = uuid.uuid4().hex
        self._waiting: list[tuple[int, int]] = []
        self._started: list[int] = []
        self._lock = threading.Lock()
        for _ in range(count):
            read_fd, write_fd = os.pipe()
            pid = os.fork()
            if pid == 0:
                # Only the parent may hold a pipe's write end, or a worker would wait for EOF forever.
                for _, other in self._waiting + [(0, write_fd)]:
                    os.close(other)
                _serve(read_fd)
            os.close(read_fd)
            self._waiting.append((pid, write_fd))
        _POOLS[self.id] = self

    def start(self, environment: dict) -> int:
        """Hand ``environment`` (the SDK harness's variables) to a waiting worker; its pid."""
        with self._lock:
            if not self._waiting:
                raise RuntimeError("all forked workers are in use: the runner asked for more than were forked")
            pid, write_fd = self._waiting.pop(0)
            self._started.append(pid)
        os.write(write_fd, json.dumps(environment).encode())
        os.close(write_fd)
        return pid

    def close(self) -> None:
        """Release the workers never asked for and reap every child."""
        _POOLS.pop(self.id, None)
        with self._lock:
            waiting, self._waiting = self._waiting, []
        for pid, write_fd in waiting:
            os.close(write_fd)  # an empty message: the child exits
            self._started.append(pid)
        for pid in self._started:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        self._started = []


@environments.Environment.register_urn(URN, bytes)
class ForkedWorkerEnvironment(environments.Environment):
    """The environment of workers forked from the launcher (payload: the pool's id)."""

    def __init__(self, pool_id: str, capabilities=(), artifacts=(), resource_hints=None):
        super().__init__(capabilities, artifacts, resource_hints)
        self.pool_id = pool_id

    def __eq__(self, other):
        return super().__eq__(other) and self.pool_id == other.pool_id

    def __hash__(self):
        return hash((super().__hash__(), self.pool_id))

    def to_runner_api_parameter(self, context):
        return URN, self.pool_id.encode("utf-8")

    @staticmethod
    def from_runner_api_parameter(payload, capabilities, artifacts, resource_hints, context):
        return ForkedWorkerEnvironment(payload.decode("utf-8"), capabilities, artifacts, resource_hints)


@WorkerHandler.register_environment(URN, bytes)
class ForkedWorkerHandler(GrpcWorkerHandler):
    """Starts a worker by handing the runner's descriptors to a forked child of the launcher."""

    def __init__(self, payload: bytes, state, provision_info, grpc_server):
        super().__init__(state, provision_info, grpc_server)
        self._pool = _POOLS[payload.decode("utf-8")]
        self._pid: int | None = None

    def start_worker(self) -> None:
        descriptor = endpoints_pb2.ApiServiceDescriptor(url=self.control_address)
        self._pid = self._pool.start(
            {
                "CONTROL_API_SERVICE_DESCRIPTOR": text_format.MessageToString(descriptor),
                "LOGGING_API_SERVICE_DESCRIPTOR": text_format.MessageToString(self.logging_api_service_descriptor()),
                "PIPELINE_OPTIONS": json_format.MessageToJson(self.provision_info.provision_info.pipeline_options),
                "WORKER_ID": self.worker_id,
            }
        )

    def stop_worker(self) -> None:
        if self._pid is not None:
            try:
                os.waitpid(self._pid, 0)
            except ChildProcessError:
                pass


def _workers_with_input(inputs, workers: int) -> int:
    """How many of ``workers`` the runner's round-robin partition of ``inputs`` gives any data."""
    busy = set()
    for buffer in inputs.values():
        for index, part in enumerate(buffer.partition(workers)):
            if any(len(chunk) for chunk in part):
                busy.add(index)
    return len(busy)


class _InputWorkersBundleManager(ParallelBundleManager):
    """Runs a bundle on one worker when only one would get input.

    Beam's local runner splits every stage's input round-robin over its
    workers and sends each worker its part, empty or not. Of a polybeam job's
    stages only those reading the input carry data; the others (the model's
    merge, its file, the dead letters, the input check, the report) hold one
    to a few elements, so the second worker would get an empty bundle: a
    round trip and a bundle set-up for nothing, per stage. Such a stage runs
    whole on one worker, as Beam runs stateful stages; how a runner bundles
    the elements is its own choice.
    """

    def process_bundle(self, inputs, expected_outputs, fired_timers, expected_output_timers, dry_run=False):
        if not fired_timers and _workers_with_input(inputs, self._num_workers) <= 1:
            single = BundleManager(
                self.bundle_context_manager, self._progress_frequency, cache_token_generator=self._cache_token_generator
            )
            return single.process_bundle(inputs, expected_outputs, fired_timers, expected_output_timers, dry_run)
        return super().process_bundle(inputs, expected_outputs, fired_timers, expected_output_timers, dry_run)


class _ForkedRunner(FnApiRunner):
    """The local runner, with bundles sent only to workers that get input (see _InputWorkersBundleManager)."""

    def _get_bundle_manager(self, bundle_context_manager):
        manager = super()._get_bundle_manager(bundle_context_manager)
        if type(manager) is ParallelBundleManager:
            return _InputWorkersBundleManager(
                bundle_context_manager, self._progress_frequency, cache_token_generator=manager._cache_token_generator
            )
        return manager


def safe_to_fork() -> bool:
    """Whether this process may fork workers: no thread runs but the main one and polybeam's own
    helpers (which forked children replace); a gRPC or other library thread could hold a lock
    that the child would wait on forever."""
    main = threading.main_thread()
    return all(thread is main or thread.name.startswith("polybeam-") for thread in threading.enumerate())


def wants_forked_workers(options: PipelineOptions) -> int:
    """How many workers to fork: ``--direct_num_workers N --direct_running_mode multi_processing``
    on the local runner (0: not such a run)."""
    direct = options.view_as(DirectOptions)
    if not ENABLED or os.environ.get(SWITCH) == "0" or not hasattr(os, "fork"):
        return 0
    if direct.direct_running_mode != "multi_processing":
        return 0
    workers = direct.direct_num_workers or os.cpu_count() or 1
    return workers if workers > 1 else 0


def forked_runner(options: PipelineOptions, workers: int) -> tuple[FnApiRunner, ForkedWorkers]:
    """A local runner whose ``workers`` workers are forked from this process, and their pool (close it)."""
    pool = ForkedWorkers(workers)
    direct = options.view_as(DirectOptions)
    # The runner would replace a multi_processing run's environment with fresh subprocesses.
    direct.direct_running_mode = "in_memory"
    direct.direct_num_workers = workers
    return _ForkedRunner(default_environment=ForkedWorkerEnvironment(pool.id)), pool
