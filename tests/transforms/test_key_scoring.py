"""Per-key evaluation by shards against each key's own Evaluation, through a folder of models.

Reference: for each key, ``Evaluation.for_model(its model)`` fed the key's rows (the fallback model's for
a key without one), as the routed path evaluates; keys without a model and no fallback are dead letters.
"""

from __future__ import annotations

import dataclasses
import tempfile

import apache_beam as beam
import numpy as np
import pytest

from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.evaluation import Evaluation
from polybeam.transforms.evaluate import OVERALL
from polybeam.transforms.key_scoring import EvaluateKeys, PredictKeys
from polybeam.transforms.keyed_files import KeyedFolder
from polybeam.transforms.keys import ParsedKeys
from polybeam.transforms.model_io import WriteModel
from polybeam.transforms.predict import Predict
from polybeam.transforms.routing import ModelLibrary, RouteByKey, WriteKeyedModels
from polybeam.transforms.train import Train


def _batches(seed: int, keys: int, loss: str):
    """Rows of ``keys`` keys (1 to 30 rows each, interleaved, a few values missing) in batches of 300."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 31, size=keys)
    order = rng.permutation(np.repeat(np.arange(keys), counts))
    x = rng.normal(size=(len(order), 5)) * [1, 5, 1, 20, 1] + [0, 3, 0, 40, 0]
    x[rng.random(x.shape) < 0.05] = np.nan
    signal = np.nan_to_num(x[:, 0]) - 0.2 * np.nan_to_num(x[:, 2]) + 0.3 * (order % 3)
    labels = np.where(signal > 0, 1.0, -1.0) if loss != "squared" else signal
    batch = ExampleBatch.from_rows([(y, {i + 1: v for i, v in enumerate(row)}) for y, row in zip(labels, x)], bits=10)
    tags = np.array([f"k{key}" for key in order], dtype=object)
    return [
        dataclasses.replace(
            batch.take(np.arange(start, min(start + 300, len(order)))),
            tags=tags[start : start + 300],
            row_ids=np.arange(start, min(start + 300, len(order))),
            source="rows.csv",
        )
        for start in range(0, len(order), 300)
    ]


def _folder(batches, config) -> str:
    folder = tempfile.mkdtemp()
    with beam.Pipeline(runner="FnApiRunner") as p:
        _ = p | beam.Create(batches) | Train(config, key=ParsedKeys("tag"), key_shards=3) | WriteKeyedModels(folder)
    return folder


def _reference(batches, library: ModelLibrary, keys):
    own = {}
    for batch in batches:
        for key in keys:
            rows = np.flatnonzero(batch.tags == key)
            model = library.model(key)
            if len(rows) and model is not None:
                own.setdefault(key, Evaluation.for_model(model)).add_batch(model, batch.take(rows))
    overall = Evaluation(next(iter(own.values())).loss, parameter=next(iter(own.values())).parameter)
    return {key: evaluation.result() for key, evaluation in own.items()}, overall.merge(list(own.values())).result()


def _close(got: dict, expected: dict) -> bool:
    if got.keys() != expected.keys():
        return False
    for name, value in expected.items():
        if value is None or (isinstance(value, float) and np.isnan(value)):
            if not (got[name] is None or np.isnan(got[name])):
                return False
        elif got[name] != pytest.approx(value, rel=1e-10, abs=1e-12):
            return False
    return True


_COLLECTED: list = []


def _collect(element, tag: str) -> None:
    # Module-level, so the pickled DoFn refers to this very list; the FnApiRunner runs bundles in this process.
    _COLLECTED.append((tag, element))


def _evaluated(batches, library):
    """``({key: metrics}, [dead letters])`` of EvaluateKeys over ``batches``."""
    _COLLECTED.clear()
    with beam.Pipeline(runner="FnApiRunner") as p:
        metrics, unrouted = p | beam.Create(batches) | EvaluateKeys(library, ParsedKeys("tag"))
        _ = metrics | "Metrics" >> beam.Map(_collect, "metrics")
        _ = unrouted | "Unrouted" >> beam.Map(_collect, "unrouted")
    found = list(_COLLECTED)
    _COLLECTED.clear()
    return dict(e for tag, e in found if tag == "metrics"), [e for tag, e in found if tag == "unrouted"]


@pytest.mark.parametrize(
    "settings_",
    [dict(loss="logistic"), dict(loss="squared"), dict(loss="logistic", expand="apple", expand_after=5)],
    ids=["logistic", "squared", "apple-keeps-own-models"],
)
def test_each_keys_metrics_are_its_own_models_evaluation(settings_):
    config = LearnerConfig(bits=10, **settings_)
    batches = _batches(1, 60, config.loss)
    folder = _folder(batches, config)
    library = ModelLibrary(folder)
    keys = sorted(key for key, _ in KeyedFolder(folder).entries())
    got, unrouted = _evaluated(batches, library)
    expected, overall = _reference(batches, library, keys)
    assert not unrouted and sorted(k for k in got if k is not OVERALL) == sorted(expected)
    for key in expected:
        assert _close(got[key], expected[key]), (key, got[key], expected[key])
    assert _close(got[OVERALL], overall)


def test_keys_without_a_model_are_dead_letters_or_the_fallbacks():
    config = LearnerConfig(bits=10, loss="logistic")
    batches = _batches(2, 40, "logistic")
    trained_on = [
        dataclasses.replace(b.take(np.flatnonzero(b.tags != "k3")), tags=b.tags[b.tags != "k3"]) for b in batches
    ]
    folder = _folder(trained_on, config)
    got, unrouted = _evaluated(batches, ModelLibrary(folder))
    missing = sum(int((b.tags == "k3").sum()) for b in batches)
    assert len(unrouted) == missing and all("no model for key 'k3'" in letter.reason for letter in unrouted)
    assert "k3" not in got and got[OVERALL]["examples"] == sum(len(b) for b in batches) - missing
    fallback = tempfile.mktemp(suffix=".model")
    with beam.Pipeline(runner="FnApiRunner") as p:
        _ = p | beam.Create(batches) | Train(config) | WriteModel(fallback)
    library = ModelLibrary(folder, fallback)
    got, unrouted = _evaluated(batches, library)
    expected, overall = _reference(batches, library, sorted({k for b in batches for k in b.tags}))
    assert not unrouted and _close(got["k3"], expected["k3"]) and _close(got[OVERALL], overall)


def _predicted(batches, build) -> dict:
    """``{(source, row): (prediction, key)}`` of the ScoredBatches ``build(batches PCollection)`` gives."""
    _COLLECTED.clear()
    with beam.Pipeline(runner="FnApiRunner") as p:
        _ = build(p | beam.Create(batches)) | beam.Map(_collect, "scored")
    found = [element for _, element in _COLLECTED]
    _COLLECTED.clear()
    out = {}
    for batch in found:
        keys = batch.key.tolist() if isinstance(batch.key, np.ndarray) else [batch.key] * len(batch.predictions)
        for prediction, row, key in zip(batch.predictions.tolist(), batch.row_ids.tolist(), keys):
            out[(batch.source, row)] = (prediction, key)
    return out


@pytest.mark.parametrize(
    "settings_, kinds",
    [
        (dict(loss="logistic"), [None, "label", "probability", "score"]),
        (dict(loss="squared"), [None, "label", "score"]),
        (dict(loss="logistic", expand="apple", expand_after=5), [None, "label"]),
    ],
    ids=["logistic", "squared", "apple-keeps-own-models"],
)
def test_each_rows_prediction_is_its_own_keys_models(settings_, kinds):
    config = LearnerConfig(bits=10, **settings_)
    batches = _batches(3, 50, config.loss)
    library = ModelLibrary(_folder(batches, config))
    for kind in kinds:

        def routed(pcoll, kind=kind):
            return RouteByKey(library, ParsedKeys("tag")).expand(pcoll).routed | Predict(
                library, routed=True, predictions=kind
            )

        expected = _predicted(batches, routed)
        got = _predicted(batches, lambda pcoll, kind=kind: (pcoll | PredictKeys(library, ParsedKeys("tag"), kind))[0])
        assert got.keys() == expected.keys() and len(got) == sum(len(b) for b in batches)
        for where, (prediction, key) in expected.items():
            if isinstance(prediction, str):
                assert got[where] == (prediction, key), (kind, where)
            else:
                assert got[where][0] == pytest.approx(prediction, rel=1e-12, abs=1e-15) and got[where][1] == key


@pytest.mark.parametrize("output", [None, "label", "score", "probability"])
def test_the_per_key_handler_scores_each_example_as_its_keys_model_does(output):
    from apache_beam.ml.inference.base import RunInference

    from polybeam.transforms.inference import PerKeyModelHandler, _model_outputs

    config = LearnerConfig(bits=10, loss="logistic")
    batches = _batches(4, 40, "logistic")
    library = ModelLibrary(_folder(batches, config))
    rng = np.random.default_rng(0)
    pairs = [
        (f"k{int(k)}", {int(s): float(v) for s, v in zip(rng.integers(1, 6, 3), rng.normal(size=3) * 5)})
        for k in rng.integers(0, 40, size=300)
    ]
    _COLLECTED.clear()
    with beam.Pipeline(runner="FnApiRunner") as p:
        _ = (
            p
            | beam.Create(pairs)
            | RunInference(PerKeyModelHandler(library.folder, output=output, max_batch_size=64))
            | beam.Map(_collect, "result")
        )
    found = [element for _, element in _COLLECTED]
    _COLLECTED.clear()
    assert len(found) == len(pairs)
    for key, result in found:
        model = library.model(key)
        expected = _model_outputs(model, ExampleBatch.from_rows([(0.0, result.example)], bits=10), output)
        expected = expected[0] if not isinstance(expected, list) else expected[0]
        assert result.model_id.endswith(f"#{key}")
        if isinstance(expected, (int, str)):
            assert result.inference == expected
        else:
            assert result.inference == pytest.approx(expected, rel=1e-12, abs=1e-15)
