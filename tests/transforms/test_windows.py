"""Training and evaluation per event-time window: the batch splitter, and every window's model equal to a
model trained in the global window on exactly that window's examples."""

from __future__ import annotations

import dataclasses

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.transforms import window as beam_window
from apache_beam.utils.timestamp import Timestamp
from hypothesis import given, settings
from hypothesis import strategies as st

from polybeam import datasets
from polybeam.learners.windows import WindowSpec, split_by_pane, to_micros, window_name
from polybeam.transforms.evaluate import Evaluate
from polybeam.transforms.train import Train
from polybeam.transforms.windows import WindowExamples, window_fn

DAY = 86400
START = 1793491200  # 2026-11-01T00:00:00Z
SPECS = {"fixed": WindowSpec(DAY, DAY), "sliding": WindowSpec(DAY, DAY / 2)}


@given(
    stamps=st.lists(st.integers(-(10**12), 10**12), min_size=1, max_size=60),
    size=st.integers(1, 10**7),
    periods=st.integers(1, 5),
    offset=st.integers(0, 10**7),
    fixed=st.booleans(),
)
@settings(max_examples=200, deadline=None)
def test_every_example_lands_in_exactly_the_windows_containing_its_time(stamps, size, periods, offset, fixed):
    """Each pane's start is put by Beam's own WindowFn in exactly the windows of every example of the pane."""
    size_seconds = size / 1e6
    period = size_seconds if fixed else max(1, size // periods) / 1e6
    spec = WindowSpec(size_seconds, period, offset / 1e6)
    micros = np.array(stamps, dtype=np.int64)
    panes = split_by_pane(micros, spec)
    assert sorted(np.concatenate([rows for _, rows in panes]).tolist()) == list(range(len(stamps)))
    beam_fn = window_fn(spec)
    for start, rows in panes:
        assigned = {
            (w.start.micros, w.end.micros)
            for w in beam_fn.assign(beam_window.WindowFn.AssignContext(Timestamp(micros=start)))
        }
        for row in rows:
            stamp = int(micros[row])
            assert start <= stamp
            containing = {(s, e) for s, e in spec.windows_of([stamp])[0]}
            brute = (
                {
                    (s, s + round(size_seconds * 1e6))
                    for s in range(stamp - round(size_seconds * 1e6) + 1, stamp + 1)
                    if (s - round(offset)) % round(period * 1e6) == 0
                }
                if size <= 1000
                else containing
            )
            assert assigned == containing == brute


@pytest.fixture(scope="module")
def timed():
    """Spam's first 1200 examples with times spread over 3 days (shuffled), as one batch."""
    batch = datasets.load("spam", bits=12).rows_between(0, 1200)
    rng = np.random.default_rng(3)
    times = START + rng.permutation(len(batch)) * (3 * DAY / len(batch))
    return dataclasses.replace(batch, timestamps=times)


def _rows_in(batch, start, end, spec=None):
    """The examples of ``batch`` in ``[start, end)``, in the order a window learns them: pane by pane (with
    ``spec``), each pane's in input order."""
    micros = to_micros(batch.timestamps)
    order = np.argsort(spec.pane_starts(micros), kind="stable") if spec is not None else np.arange(len(batch))
    return batch.take(order[(micros[order] >= start) & (micros[order] < end)])


# What a pipeline's last steps gathered (the in-process runner's DoFns share this module).
_GATHERED: list = []


def _keep(element) -> None:
    _GATHERED.append(element)


def _run(build):
    """Run ``build(pipeline, keep)`` and return what it gave ``keep``."""
    _GATHERED.clear()
    with beam.Pipeline(runner="FnApiRunner") as p:
        build(p, _keep)
    out = list(_GATHERED)
    _GATHERED.clear()
    return out


def _window_models(batch, spec, **settings):
    def build(p, keep):
        models = p | beam.Create([batch]) | WindowExamples(spec) | Train(**settings)
        _ = models | beam.Map(keep)

    return _run(build)


def _global_model(batch, **settings):
    return _run(lambda p, keep: p | beam.Create([batch]) | Train(**settings) | beam.Map(keep))[0]


def _same(model, other, exact=True):
    assert model.slots.tolist() == other.slots.tolist()
    if exact:
        np.testing.assert_array_equal(model.weights, other.weights)
    else:
        np.testing.assert_allclose(model.weights, other.weights, rtol=1e-9, atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["fixed", "sliding"])
def test_each_window_trains_the_model_of_its_own_examples(timed, kind):
    spec = SPECS[kind]
    models = _window_models(timed, spec, loss="logistic", bits=12)
    assert len(models) == (3 if kind == "fixed" else 7)
    for model in models:
        window = model.metadata["window"]
        own = _rows_in(timed, window["start_micros"], window["end_micros"], spec)
        assert model.metadata["examples"] == len(own) > 0
        _same(model, _global_model(own, loss="logistic", bits=12))
    if kind == "sliding":  # overlapping windows: an example counts in both of its windows
        assert sum(m.metadata["examples"] for m in models) == 2 * len(timed)


@pytest.mark.slow
def test_per_key_models_per_window(timed):
    def key(batch):
        return np.where(batch.row_ids % 2 == 0, "even", "odd").astype(object)

    def build(p, keep):
        pairs = p | beam.Create([timed]) | WindowExamples(SPECS["fixed"]) | Train(loss="logistic", bits=12, key=key)
        _ = pairs | beam.Map(keep)

    pairs = _run(build)
    assert len(pairs) == 6
    for name, model in pairs:
        window = model.metadata["window"]
        own = _rows_in(timed, window["start_micros"], window["end_micros"])
        own = own.take(key(own) == name)
        expected = _run(
            lambda p, keep, own=own: p | beam.Create([own]) | Train(loss="logistic", bits=12, key=key) | beam.Map(keep)
        )
        _same(model, dict(expected)[name])


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["fixed", "sliding"])
def test_two_passes_with_a_holdout_per_window(timed, kind):
    settings = dict(loss="logistic", bits=12, passes=2, holdout_min_examples=10)
    models = _window_models(timed, SPECS[kind], **settings)
    for model in models:
        window = model.metadata["window"]
        own = _rows_in(timed, window["start_micros"], window["end_micros"], SPECS[kind])
        expected = _global_model(own, **settings)
        ours, theirs = model.metadata["holdout"], expected.metadata["holdout"]
        assert [(p["pass"], p["examples"]) for p in ours["passes"]] == [
            (p["pass"], p["examples"]) for p in theirs["passes"]
        ]
        assert [p["holdout_loss"] for p in ours["passes"]] == pytest.approx(
            [p["holdout_loss"] for p in theirs["passes"]]
        )
        _same(model, expected, exact=False)


@pytest.mark.slow
def test_evaluate_per_window_scores_each_window_with_its_model(timed):
    spec = SPECS["sliding"]

    def build(p, keep):
        windowed = p | beam.Create([timed]) | WindowExamples(spec)
        models = windowed | Train(loss="logistic", bits=12)
        metrics = windowed | Evaluate(models)
        _ = models | "Models" >> beam.Map(lambda m: ("model", m)) | "KeepModels" >> beam.Map(keep)
        _ = metrics | "Metrics" >> beam.ParDo(_WithWindow()) | "KeepMetrics" >> beam.Map(keep)

    out = _run(build)
    models = {m.metadata["window"]["start_micros"]: m for kind, m in out if kind == "model"}
    metrics = {start: m for kind, (start, m) in ((k, v) for k, v in out if k != "model")}
    assert set(models) == set(metrics)
    for start, model in models.items():
        own = _rows_in(timed, start, model.metadata["window"]["end_micros"], spec)
        expected = _run(
            lambda p, keep, own=own, model=model: p | beam.Create([own]) | Evaluate(model) | beam.Map(keep)
        )[0]
        assert metrics[start] == pytest.approx(expected)


class _WithWindow(beam.DoFn):
    def process(self, metrics, window=beam.DoFn.WindowParam):
        yield "metrics", (window.start.micros, metrics)


def test_a_pcollection_the_user_windowed_trains_per_window(timed):
    """Batches with Beam timestamps, windowed by the user: each batch stays in its window."""
    parts = [_rows_in(timed, (START + day * DAY) * 10**6, (START + (day + 1) * DAY) * 10**6) for day in range(3)]

    def build(p, keep):
        stamped = (
            p
            | beam.Create([(day, part) for day, part in enumerate(parts)])
            | beam.MapTuple(lambda day, part: beam_window.TimestampedValue(part, START + day * DAY + 1))
        )
        models = stamped | beam.WindowInto(beam_window.FixedWindows(DAY)) | Train(loss="logistic", bits=12)
        _ = models | beam.Map(keep)

    models = sorted(_run(build), key=lambda m: m.metadata["window"]["start_micros"])
    for part, model in zip(parts, models):
        _same(model, _global_model(part, loss="logistic", bits=12))


def test_window_names_are_utc_bounds():
    assert window_name(START * 10**6, (START + DAY) * 10**6) == "window-20261101T000000Z-20261102T000000Z"


def test_batches_without_times_are_refused():
    with pytest.raises(Exception, match="timestamp column"):
        with beam.Pipeline(runner="FnApiRunner") as p:
            _ = p | beam.Create([datasets.load("spam", bits=12).rows_between(0, 5)]) | WindowExamples("fixed:1d")


@pytest.mark.slow
@pytest.mark.parametrize(
    "settings",
    [
        dict(loss="logistic", lbfgs_passes=2),
        dict(loss="logistic", expand="apple", passes=2, holdout_min_examples=5),
        dict(loss="logistic", fanout=2, passes=2),
        dict(loss="softmax", classes=6, passes=2, holdout_min_examples=5),
    ],
    ids=["lbfgs", "apple", "merge-tree", "softmax"],
)
def test_every_way_of_training_works_per_sliding_window(settings):
    name = "satellite" if settings["loss"] == "softmax" else "spam"
    batch = datasets.load(name, bits=12).rows_between(0, 900)
    times = START + np.random.default_rng(4).permutation(len(batch)) * (3 * DAY / len(batch))
    timed = dataclasses.replace(batch, timestamps=times)
    spec = SPECS["sliding"]
    models = _window_models(timed, spec, bits=12, **settings)
    assert len(models) == 7
    for model in models:
        window = model.metadata["window"]
        own = _rows_in(timed, window["start_micros"], window["end_micros"], spec)
        _same(model, _global_model(own, bits=12, **settings), exact=False)
