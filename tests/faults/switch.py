"""A fault switch for tests: make the first attempt of the Nth bundle of a polybeam step fail.

Runners retry a bundle that failed (Dataflow up to four times in batch, Flink
and Spark by restarting the task or region), and a retried bundle must not
change the result: a failed attempt's partial learner or statistics must
never be merged. To show that, a test sets::

    POLYBEAM_FAULT="train:1,merge:1"   # STEP:N, comma-separated
    POLYBEAM_FAULT_DIR=/mnt/faults  # optional: fire once per job, not once per worker process

and the steps count the bundle attempts they start in each worker process;
the Nth one does its first piece of work (learns a batch, merges, adds
statistics) and then raises :class:`InjectedFault`, once. With
``POLYBEAM_FAULT_DIR`` the attempt that fires leaves a marker file there, so
that no other process (another worker, a re-run of the job) fires again.

The production classes know nothing of this: :mod:`tests.faults.hooks` wraps
their methods with a switch each (its ``STEPS`` table names the steps and
where each one counts a bundle and checks after its work), in the test's own
process or, through ``tests/faults/startup/sitecustomize.py``, in the worker
processes a test starts.

Production code pays nothing for this; with the hooks on and no variable set,
the switch costs one check per bundle and per input.

>>> import os
>>> os.environ[ENV] = "demo:2"; reset()
>>> switch = FaultSwitch("demo")
>>> switch.bundle_started(); switch.after_work()    # bundle 1: nothing happens
>>> switch.bundle_started()
>>> try:
...     switch.after_work()
... except InjectedFault as error:
...     print(error)
injected fault (POLYBEAM_FAULT=demo:2): the first attempt of bundle 2 of demo fails
>>> switch.bundle_started(); switch.after_work()    # the retry, and every later bundle, run clean
>>> del os.environ[ENV]; reset()
"""

from __future__ import annotations

import os
import threading
from collections import Counter

ENV = "POLYBEAM_FAULT"
DIR_ENV = "POLYBEAM_FAULT_DIR"

_plan: dict[str, int] | None = None
_started: Counter = Counter()
_fired: set[str] = set()
# The local runner's multi_threading workers start bundles of one step on several threads at once:
# counting an attempt (read, add, compare) and claiming the fault (test, add) must each be one step,
# or two attempts count as the same Nth (both armed, the fault fires twice) or none does.
_lock = threading.Lock()


class InjectedFault(RuntimeError):
    """The failure the fault switch injects (only ever raised with POLYBEAM_FAULT set)."""


def reset() -> None:
    """Read the variables afresh and forget the bundles counted (tests that change them)."""
    global _plan
    with _lock:
        _plan = None
        _started.clear()
        _fired.clear()


def _parsed() -> dict[str, int]:
    global _plan
    if _plan is None:
        plan = {}
        for item in filter(None, (part.strip() for part in os.environ.get(ENV, "").split(","))):
            step, _, number = item.partition(":")
            if not number.isdigit() or int(number) < 1:
                raise ValueError(f"{ENV}: each item must be STEP:N with N >= 1, got {item!r}")
            plan[step] = int(number)
        _plan = plan
    return _plan


def _marker(step: str) -> str | None:
    folder = os.environ.get(DIR_ENV)
    return os.path.join(folder, f"fired-{step}") if folder else None


def _claim(step: str) -> bool:
    """Whether this attempt is the one that fires (the first to claim ``step``, per process or per job)."""
    with _lock:
        if step in _fired:
            return False
        _fired.add(step)
    marker = _marker(step)
    if marker is None:
        return True
    try:  # exclusive creation: of all processes, one fires
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        return False


class FaultSwitch:
    """One per DoFn or CombineFn copy (:mod:`tests.faults.hooks` attaches it): ``bundle_started()`` when a
    bundle attempt begins (a DoFn's ``start_bundle``, a CombineFn's ``create_accumulator``), ``after_work()``
    after each piece of work.

    One bundle runs at a time on each deserialised copy of a DoFn or CombineFn, so
    the copy that started the Nth bundle is the one that fails it.
    """

    def __init__(self, step: str):
        self.step = step
        self._armed = False

    def bundle_started(self) -> None:
        plan = _parsed()
        if plan and self.step in plan:
            with _lock:
                _started[self.step] += 1
                self._armed = _started[self.step] == plan[self.step]

    def after_work(self) -> None:
        if self._armed:
            self._armed = False
            if _claim(self.step):
                number = _parsed()[self.step]
                raise InjectedFault(
                    f"injected fault ({ENV}={self.step}:{number}): "
                    f"the first attempt of bundle {number} of {self.step} fails"
                )

    def __getstate__(self):
        return {"step": self.step, "_armed": False}
