"""Run commands side by side (portable and in process), several at once, each at most once per session.

A portable job spends much of its few seconds waiting (worker start-up, gRPC
round trips, the job service's polling), so the suite overlaps jobs: a
:class:`Plan` runs up to ``parallel`` commands at a time on a thread pool, and
tests wait only for the runs they check. A run may name runs it needs (e.g. an
evaluation needs a trained model); it waits for them and does not start if one
failed. A run may also prepare its folder once its needs are done (e.g. copy
what a needed run wrote, as a resumed job finds its checkpoints). A run is
always submitted after the runs it needs, so it only ever waits for runs
already queued or running before it: the pool cannot deadlock.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tests.portable.commands import IN_PROCESS_OPTIONS, CommandRun, polybeam

ArgsFor = Callable[[Path], Sequence]
# prepare(kind, folder): called before a side's command runs, once the runs it needs succeeded.
Prepare = Callable[[str, Path], None]
DEFAULT_PARALLEL = 3


@dataclass
class SideBySide:
    """One command run on the portable runner and in process, each writing to its own folder."""

    name: str
    futures: dict[str, Future]
    folders: dict[str, Path]

    @property
    def portable(self) -> CommandRun:
        return self.futures["portable"].result()

    @property
    def in_process(self) -> CommandRun:
        return self.futures["in-process"].result()

    @property
    def portable_dir(self) -> Path:
        return self.folders["portable"]

    @property
    def in_process_dir(self) -> Path:
        return self.folders["in-process"]


@dataclass
class _Definition:
    args_for: ArgsFor
    workers: int
    needs: Sequence[str]
    kinds: Sequence[str]
    prepare: Prepare | None = None


class Plan:
    """Named side-by-side runs on a cluster, run ``parallel`` commands at a time.

    Runs are defined first (:meth:`side_by_side`) and submitted when a test
    asks for one (``plan[name]``, which submits what it needs first) or all at
    once (:meth:`submit_all`), so that they overlap.
    """

    def __init__(self, cluster, parallel: int | None = None):
        self.cluster = cluster
        parallel = parallel or int(os.environ.get("POLYBEAM_PORTABLE_PARALLEL", DEFAULT_PARALLEL))
        self.executor = ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="portable-run")
        self.definitions: dict[str, _Definition] = {}
        self.runs: dict[str, SideBySide] = {}

    def side_by_side(
        self,
        name: str,
        args_for: ArgsFor,
        *,
        workers: int = 1,
        needs: Sequence[str] = (),
        kinds: Sequence[str] = ("portable", "in-process"),
        prepare: Prepare | None = None,
    ) -> None:
        """Define ``polybeam *args_for(folder)`` on the portable runner and in process (``workers`` in both).

        ``args_for`` gets the run's own output folder, on the disk the workers
        share, so two runs never write the same files. ``needs`` names runs
        whose in-process command (or only command) must succeed first. ``kinds`` can drop one side.
        ``prepare(kind, folder)`` runs just before each side's command, after
        the needs succeeded; it may wait for either side of a run it needs
        (``plan[need].portable``), since needs are always submitted first.
        """
        if name in self.definitions:
            raise ValueError(f"run {name!r} is defined twice")
        unknown = [need for need in needs if need not in self.definitions]
        if unknown:
            raise ValueError(f"run {name!r} needs runs defined before it: {unknown}")
        self.definitions[name] = _Definition(args_for, workers, tuple(needs), tuple(kinds), prepare)

    def folder(self, name: str, kind: str = "in-process") -> Path:
        """Where run ``name``'s ``kind`` side writes (known before it runs)."""
        return self.cluster.job_dir(f"{name}/{kind}", create=False)

    def __getitem__(self, name: str) -> SideBySide:
        """Run ``name`` (submitted now if it was not yet, after the runs it needs)."""
        if name not in self.runs:
            definition = self.definitions[name]
            needs = [self[need] for need in definition.needs]
            options = {
                "portable": self.cluster.portable_options(definition.workers),
                "in-process": IN_PROCESS_OPTIONS[definition.workers],
            }
            futures, folders = {}, {}
            for kind in definition.kinds:
                folders[kind] = self.folder(name, kind)
                folders[kind].mkdir(parents=True)
                args = definition.args_for(folders[kind])
                if args and args[0] == "train" and "--learners" not in args:
                    # Both sides run the streaming passes (auto would keep a small input in memory on
                    # the local runner only), and say so alike. (--learners learns in memory on both.)
                    args = [*args, "--in-memory", "off"]
                prepare = functools.partial(definition.prepare, kind, folders[kind]) if definition.prepare else None
                futures[kind] = self.executor.submit(self._run, args, options[kind], needs, prepare)
            self.runs[name] = SideBySide(name, futures, folders)
        return self.runs[name]

    def submit_all(self) -> None:
        """Submit every defined run, in the order defined."""
        for name in self.definitions:
            self[name]

    def _run(
        self, args: Sequence, options: Sequence[str], needs: list[SideBySide], prepare: Callable[[], None] | None = None
    ) -> CommandRun:
        for need in needs:
            # What a run needs is the in-process side of the runs it names, or their only side.
            needed = need.futures.get("in-process") or next(iter(need.futures.values()))
            if needed.result().returncode != 0:
                return _not_run(args, f"{need.name} failed\n{needed.result().failure()}")
        if prepare is not None:
            try:
                prepare()
            except Exception as error:  # reported by the test that reads this run, like a failed command
                return _not_run(args, f"preparing its folder failed: {error!r}")
        return polybeam(args, options, cwd=self.cluster.launcher_dir, env=self.cluster.launcher_env)

    def shutdown(self) -> None:
        """Drop runs not started yet and wait for the running ones (before the services stop)."""
        self.executor.shutdown(wait=True, cancel_futures=True)

    def timings(self, slowest: int = 8) -> str:
        """One line on what the finished commands cost (the suite's share of a CI run): their count, the
        sum of their wall times, and the slowest ones."""
        done = [
            (future.result().seconds, f"{run.name} ({kind})")
            for run in self.runs.values()
            for kind, future in run.futures.items()
            if future.done() and not future.cancelled() and future.exception() is None
        ]
        done.sort(reverse=True)
        listed = ", ".join(f"{name} {seconds:.0f} s" for seconds, name in done[:slowest])
        return (
            f"{len(done)} commands, {sum(seconds for seconds, _ in done):.0f} s of wall time in all; slowest: {listed}"
        )


def _not_run(args: Sequence, why: str) -> CommandRun:
    """The record of a command that was not started, saying why (its test fails with that)."""
    return CommandRun([str(arg) for arg in args], -2, "", f"not run: {why}", 0.0)
