"""Fault hooks: where each step's fault switch counts bundles and fails, attached from outside the package.

``STEPS`` names, for each step of ``POLYBEAM_FAULT`` (see :mod:`tests.faults.switch`), the production
classes whose copies count bundle attempts and check after their work, and at which methods:

- ``START``: the method begins a bundle attempt (``bundle_started()`` before it runs: a DoFn's
  ``start_bundle``, a CombineFn's ``create_accumulator``);
- ``AFTER``: the method is a piece of work (``after_work()`` once it returned; the outputs of a
  ``process`` that yields are held back until then, so an element that fails emits nothing);
- ``AROUND``: both (an average of learners: one attempt, one piece of work).

:func:`activate` replaces those methods on the classes themselves with wrappers that hold a switch per
instance. Beam pickles DoFns and CombineFns by reference to their classes, so every copy that a process
unpickles runs the wrapped methods of that process: the hooks must be active in the process that runs the
bundles. In the test's own process (the in-process runner), :func:`active` turns them on and off again;
in a worker pool or a command that a test starts, the variables of :func:`environment` put ``startup/``
on its ``PYTHONPATH``, whose ``sitecustomize`` activates them when the interpreter starts (a worker pool's
SDK workers inherit the variables).

>>> from polybeam.transforms.combining import MergeFn
>>> plain = MergeFn.add_input
>>> with active():
...     MergeFn.add_input is plain, MergeFn.add_input.__wrapped__ is plain
(False, True)
>>> MergeFn.add_input is plain
True
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import os
import threading
import weakref
from collections.abc import Iterator, Mapping
from pathlib import Path

from tests.faults.switch import DIR_ENV, ENV, FaultSwitch, InjectedFault

START, AFTER, AROUND = "start", "after", "around"
_COMBINE = {"create_accumulator": START, "add_input": AFTER}
_DOFN = {"start_bundle": START, "process": AFTER}
_PASSES = "polybeam.transforms.passes"
_STATISTICS = "polybeam.transforms.group_statistics"

# step -> ((module, class, {method: hook}), ...). A subclass of a listed class counts as its step, unless
# it is listed itself (MergeFn's subclasses for evaluations and L-BFGS sums are steps of their own).
STEPS: dict[str, tuple[tuple[str, str, dict[str, str]], ...]] = {
    "train": ((_PASSES, "TrainFn", _COMBINE),),  # first-pass learning
    "learn": (  # a later pass's learning, the first pass with a merge tree, per-key learning by shards
        (_PASSES, "LearnOnePass", _DOFN),
        (_PASSES, "LearnKeyPass", _DOFN),  # (after each key's batches: a key is its piece of work)
        (
            "polybeam.transforms.train_shards",
            "TrainShard",
            _DOFN,
        ),  # (after each shard's keys, before its KeyShard is emitted)
    ),
    "merge": ((_PASSES, "MergeLearnersFn", {"compact": AROUND, "extract_output": AROUND}),),  # averaging
    "merge-partials": (("polybeam.transforms.combining", "MergeFn", _COMBINE),),  # other partial results
    "evaluate": (("polybeam.transforms.evaluate", "EvaluationFn", _COMBINE),),  # merging evaluations
    "statistics": ((_STATISTICS, "GramStatisticsFn", _COMBINE), (_STATISTICS, "_AddWithSpec", _DOFN)),
    "lbfgs-sum": (
        ("polybeam.transforms.lbfgs_stage", "SumLossGradients", _COMBINE),
    ),  # the L-BFGS stage's losses and gradients
}

STARTUP = Path(__file__).resolve().parent / "startup"  # holds the sitecustomize that activates the hooks

# (step, class name) of every fault that fired in this process while the hooks were on (newest last).
FIRED: list[tuple[str, str]] = []

_MISSING = object()
_lock = threading.Lock()
_patched: list[tuple[type, str, object]] = []  # (class, method, what its own __dict__ held: to restore)
# One switch per DoFn or CombineFn copy, as the copies held one when they built it themselves; kept beside
# the copies, not in them, so that nothing of the tests is pickled with a production object.
_switches: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _switch(fn, step: str) -> FaultSwitch:
    with _lock:
        switch = _switches.get(fn)
        if switch is None:
            switch = _switches[fn] = FaultSwitch(step)
        return switch


def _after_work(fn, step: str) -> None:
    try:
        _switch(fn, step).after_work()
    except InjectedFault:
        FIRED.append((step, type(fn).__name__))
        raise


def _wrapped(method, step: str, hook: str):
    """``method`` with the switch's calls of ``hook`` around it (its signature stays visible to Beam, which
    reads a DoFn's ``process`` for parameters such as ``window=DoFn.WindowParam``)."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        if hook in (START, AROUND):
            _switch(self, step).bundle_started()
        result = method(self, *args, **kwargs)
        if hook in (AFTER, AROUND):
            if inspect.isgenerator(result):  # a process that yields: no output before the check
                result = list(result)
            _after_work(self, step)
        return result

    return wrapper


def is_active() -> bool:
    return bool(_patched)


def activate() -> None:
    """Wrap the methods ``STEPS`` lists on their classes (this process's; again: nothing more)."""
    with _lock:
        if _patched:
            return
        plan = []
        for step, entries in STEPS.items():  # every original first: a subclass wraps its parent's own method
            for module, name, hooks in entries:
                cls = getattr(importlib.import_module(module), name)
                for method, hook in hooks.items():
                    plan.append((cls, method, getattr(cls, method), step, hook))
        for cls, method, original, step, hook in plan:
            _patched.append((cls, method, cls.__dict__.get(method, _MISSING)))
            setattr(cls, method, _wrapped(original, step, hook))


def deactivate() -> None:
    """Give the classes back their own methods (inherited ones are inherited again)."""
    with _lock:
        while _patched:
            cls, method, own = _patched.pop()
            if own is _MISSING:
                delattr(cls, method)
            else:
                setattr(cls, method, own)


@contextlib.contextmanager
def active() -> Iterator[None]:
    """The hooks on in this process for the ``with`` block (the switch's counts start afresh)."""
    from tests.faults import switch

    switch.reset()
    activate()
    try:
        yield
    finally:
        deactivate()
        switch.reset()


def environment(plan: str, markers: Path | str | None = None, base: Mapping[str, str] | None = None) -> dict:
    """The variables a worker pool or command needs for its steps to fail as ``plan`` says (``STEP:N,...``):
    the plan, ``markers`` as POLYBEAM_FAULT_DIR, and ``startup/`` first on a PYTHONPATH that keeps
    ``base``'s (the launcher's environment by default)."""
    base = os.environ if base is None else base
    env = {ENV: plan, "PYTHONPATH": os.pathsep.join(filter(None, [str(STARTUP), base.get("PYTHONPATH")]))}
    if markers is not None:
        env[DIR_ENV] = str(markers)
    return env
