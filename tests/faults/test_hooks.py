"""The fault hooks and switch in this process: every class that ``STEPS`` lists fails where its step's switch
says, the wrapped methods keep what Beam reads of them and give the classes back their own when the hooks
go off, a fault fires once per job with a marker folder, and a job with the hooks on and no fault due
gives the same model as without them. (Retried bundles giving the fault-free model, in worker processes
the hooks reach through their startup, is ``tests/portable/test_worker_faults.py``.)"""

from __future__ import annotations

import dataclasses
import inspect

import apache_beam as beam
import numpy as np
import pytest

from polybeam import datasets
from polybeam.learners.config import LearnerConfig
from polybeam.learners.polynomial import make_learner
from polybeam.selection.groups import GroupSpec
from polybeam.transforms.evaluate import Evaluate
from polybeam.transforms.group_statistics import GroupStatistics
from polybeam.transforms.keys import ParsedKeys
from polybeam.transforms.train import Train
from tests.faults import hooks, switch
from tests.learners.test_linear import random_batch

BITS = 8
_COLLECTED: list = []


@pytest.fixture
def faults(monkeypatch):
    """The hooks on for the test (off afterwards); ``faults("STEP:N,...")`` sets the plan."""

    def plan(value: str) -> None:
        monkeypatch.setenv(switch.ENV, value)
        switch.reset()
        hooks.FIRED.clear()

    monkeypatch.delenv(switch.ENV, raising=False)
    monkeypatch.delenv(switch.DIR_ENV, raising=False)
    with hooks.active():
        yield plan
    hooks.FIRED.clear()


def _own_methods() -> dict:
    found = {}
    for entries in hooks.STEPS.values():
        for module, name, methods in entries:
            cls = getattr(__import__(module, fromlist=[name]), name)
            found[cls] = {method: cls.__dict__.get(method) for method in methods}
    return found


def test_the_hooks_wrap_every_listed_method_and_give_the_classes_their_own_back():
    before = _own_methods()
    assert len(before) == 10  # (a class renamed or gone fails here, not silently in a worker)
    with hooks.active():
        for cls, methods in before.items():
            for method in methods:
                assert hasattr(getattr(cls, method), "__wrapped__"), f"{cls.__name__}.{method}"
                assert method in cls.__dict__
        # A listed subclass wraps its parent's own method, not the parent's wrapper: one step counts.
        from polybeam.transforms.combining import MergeFn
        from polybeam.transforms.evaluate import EvaluationFn

        assert EvaluationFn.add_input.__wrapped__ is MergeFn.add_input.__wrapped__
        hooks.activate()  # again (a sitecustomize and a test, say): nothing is wrapped twice
        assert not hasattr(EvaluationFn.add_input.__wrapped__, "__wrapped__")
    assert not hooks.is_active()
    assert _own_methods() == before


def test_a_wrapped_process_keeps_the_parameters_beam_reads():
    from polybeam.transforms.passes import LearnOnePass

    plain = inspect.signature(LearnOnePass.process)
    with hooks.active():
        wrapped = inspect.signature(LearnOnePass.process)
    assert wrapped == plain and wrapped.parameters["window"].default is beam.DoFn.WindowParam


def test_the_environment_puts_the_startup_folder_first_and_keeps_the_path():
    env = hooks.environment("train:1", "/m", base={"PYTHONPATH": "/a:/b"})
    assert env == {"POLYBEAM_FAULT": "train:1", "POLYBEAM_FAULT_DIR": "/m", "PYTHONPATH": f"{hooks.STARTUP}:/a:/b"}
    assert (hooks.STARTUP / "sitecustomize.py").is_file()
    assert hooks.environment("learn:2", base={}) == {"POLYBEAM_FAULT": "learn:2", "PYTHONPATH": str(hooks.STARTUP)}


def test_a_fault_fires_once_per_job_with_a_marker_folder(monkeypatch, tmp_path):
    monkeypatch.setenv(switch.ENV, "demo:1")
    monkeypatch.setenv(switch.DIR_ENV, str(tmp_path))
    try:
        for process in ("the first worker", "another worker, or a re-run of the job"):
            switch.reset()  # a process of its own: nothing counted yet
            bundle = switch.FaultSwitch("demo")
            bundle.bundle_started()
            if process == "the first worker":
                with pytest.raises(switch.InjectedFault):
                    bundle.after_work()
            else:
                bundle.after_work()  # the marker says it fired: this bundle runs clean
        assert [path.name for path in tmp_path.iterdir()] == ["fired-demo"]
    finally:
        monkeypatch.delenv(switch.ENV)
        switch.reset()


def _collect(element):
    _COLLECTED.append(element)


def _run(build):
    _COLLECTED.clear()
    with beam.Pipeline(runner="FnApiRunner") as p:
        build(p) | beam.Map(_collect)
    found, _COLLECTED[:] = list(_COLLECTED), []
    return found


def _batches(tags: bool = False):
    rng = np.random.default_rng(3)
    batches = [random_batch(rng, loss="logistic", n=120, bits=BITS, scales=(1.0,)) for _ in range(3)]
    if tags:
        batches = [
            dataclasses.replace(batch, tags=np.array([f"k{row % 3}" for row in range(len(batch))], dtype=object))
            for batch in batches
        ]
    return batches


def _model():
    learner = make_learner(LearnerConfig(loss="logistic", bits=BITS))
    for batch in _batches():
        learner = learner.learn(batch)
    return learner.to_model()


def _spam(default_group: bool):
    batch = datasets.load("spam")
    batches = [batch.take(np.arange(start, min(start + 1000, len(batch)))) for start in range(0, len(batch), 1000)]
    groups = [{"name": "words", "features": ["1-48"], "cost": 1.0}]
    if not default_group:  # (else the characters' features gather in the default group)
        groups.append({"name": "chars", "features": ["49-57"], "cost": 2.0})
    spec = GroupSpec.from_json({"groups": groups})
    extra = {"default_group": "rest"} if default_group else {}
    return lambda p: p | beam.Create(batches) | GroupStatistics(spec, **extra)


TRAIN = dict(loss="logistic", bits=BITS, passes=2)
CASES = {  # step, the class whose fault fires, the job
    "train": ("train", "TrainFn", lambda p: p | beam.Create(_batches()) | Train(**TRAIN)),
    "learn": ("learn", "LearnOnePass", lambda p: p | beam.Create(_batches()) | Train(**TRAIN)),
    "merge": ("merge", "MergeLearnersFn", lambda p: p | beam.Create(_batches()) | Train(**TRAIN)),
    "learn-shards": (
        "learn",
        "TrainShard",
        lambda p: p | beam.Create(_batches(tags=True)) | Train(**TRAIN, key=ParsedKeys("tag")),
    ),
    "lbfgs-sum": (
        "lbfgs-sum",
        "SumLossGradients",
        lambda p: p | beam.Create(_batches()) | Train(loss="logistic", bits=BITS, lbfgs_passes=2),
    ),
    "evaluate": ("evaluate", "EvaluationFn", lambda p: p | beam.Create(_batches()) | Evaluate(_model())),
    "statistics": ("statistics", "GramStatisticsFn", _spam(default_group=False)),
    "statistics-spec-at-run-time": ("statistics", "_AddWithSpec", _spam(default_group=True)),
    "merge-partials": ("merge-partials", "MergeFn", _spam(default_group=True)),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_each_step_fails_its_first_bundle_where_its_switch_says(faults, case):
    step, name, build = CASES[case]
    faults(f"{step}:1")
    with pytest.raises(Exception, match=rf"injected fault \(POLYBEAM_FAULT={step}:1\)"):
        _run(build)
    assert hooks.FIRED == [(step, name)]


@pytest.mark.slow
def test_the_learn_step_of_a_later_pass_per_key(faults, tmp_path):
    faults("learn:1")
    train = Train(**TRAIN, key=ParsedKeys("tag"), checkpoint_dir=str(tmp_path))
    with pytest.raises(Exception, match=r"injected fault \(POLYBEAM_FAULT=learn:1\)"):
        _run(lambda p: p | beam.Create(_batches(tags=True)) | train)
    assert hooks.FIRED == [("learn", "LearnKeyPass")]


@pytest.mark.slow
def test_with_no_fault_due_the_hooks_count_bundles_and_change_no_model(faults):
    (plain,) = _run(lambda p: p | beam.Create(_batches()) | Train(**TRAIN))
    faults("train:1000,learn:1000,merge:1000")
    (hooked,) = _run(lambda p: p | beam.Create(_batches()) | Train(**TRAIN))
    assert {step: switch._started[step] > 0 for step in ("train", "learn", "merge")} == dict.fromkeys(
        ("train", "learn", "merge"), True
    )
    assert hooks.FIRED == []
    np.testing.assert_array_equal(hooked.dense_weights, plain.dense_weights)
