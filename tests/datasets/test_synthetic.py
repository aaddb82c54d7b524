"""The synthetic planted-polynomial data: seeded, parseable, balanced, and really nonlinear."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polybeam.datasets.synthetic import BLOCK_ROWS, FORMATS, PlantedPolynomial, write_dataset
from polybeam.formats.libsvm import LibsvmFormat
from polybeam.formats.vw import VWFormat
from polybeam.learners.config import LearnerConfig
from polybeam.learners.evaluation import Evaluation
from polybeam.learners.hashing import namespace_seed, slot_mask
from polybeam.learners.linear import LinearLearner


def same_examples(left, right) -> bool:
    return all(
        np.array_equal(getattr(left, name), getattr(right, name)) for name in ("labels", "indptr", "indices", "scores")
    )


# -- determinism ---------------------------------------------------------------


def test_same_seed_same_examples_and_targets():
    first, second = PlantedPolynomial(seed=7), PlantedPolynomial(seed=7)
    assert same_examples(first.generate(3000), second.generate(3000))
    assert first.planted.monomials == second.planted.monomials
    np.testing.assert_array_equal(first.planted.linear_weights, second.planted.linear_weights)


def test_other_seed_other_examples_and_targets():
    first, second = PlantedPolynomial(seed=7).generate(500), PlantedPolynomial(seed=8).generate(500)
    assert not np.array_equal(first.indices[:200], second.indices[:200])
    assert PlantedPolynomial(seed=7).planted.monomials != PlantedPolynomial(seed=8).planted.monomials


def test_first_examples_do_not_depend_on_how_many_are_asked_for():
    task = PlantedPolynomial(features=5000, nonzeros=10)
    many = task.generate(BLOCK_ROWS + 100)
    assert same_examples(task.generate(100), many.slice(0, 100))
    assert same_examples(task.generate(BLOCK_ROWS + 10), many.slice(0, BLOCK_ROWS + 10))


def test_written_files_are_identical_for_the_same_seed(tmp_path):
    task = PlantedPolynomial(features=5000, nonzeros=10, seed=4)
    first = write_dataset(str(tmp_path / "a"), 2000, task)
    second = write_dataset(str(tmp_path / "b"), 2000, task)
    for format in FORMATS:
        with open(first[format], "rb") as a, open(second[format], "rb") as b:
            assert a.read() == b.read()


# -- formats -------------------------------------------------------------------


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """Examples spanning two generation blocks, and their LIBSVM and VW files."""
    task = PlantedPolynomial(features=20000, nonzeros=12, seed=5)
    n = BLOCK_ROWS + 1000
    paths = write_dataset(str(tmp_path_factory.mktemp("synthetic")), n, task)
    return task.generate(n), paths


def read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def test_libsvm_file_parses_back_to_the_same_examples(written):
    examples, paths = written
    parsed = LibsvmFormat(bits=18, labels="binary").parse(read(paths["libsvm"]))
    assert parsed.records == len(examples) and not parsed.dead_letters
    expected = examples.to_batch(bits=18)
    for name in ("labels", "indptr", "indices", "values"):
        np.testing.assert_array_equal(getattr(parsed.batch, name), getattr(expected, name), err_msg=name)


def test_vw_file_parses_back_to_the_same_examples(written):
    examples, paths = written
    parsed = VWFormat(bits=18, labels="binary", feature_names=True).parse(read(paths["vw"]))
    assert parsed.records == len(examples) and not parsed.dead_letters
    batch = parsed.batch
    np.testing.assert_array_equal(batch.labels, examples.labels)
    np.testing.assert_array_equal(batch.indptr, examples.indptr)
    np.testing.assert_array_equal(batch.values, np.ones(examples.nnz))
    # VW hashes a digit-only name in namespace f to the number plus f's seed.
    np.testing.assert_array_equal(batch.indices, (examples.indices + namespace_seed("f")) & slot_mask(18))
    assert all(batch.names[slot] == f"f^{index}" for slot, index in zip(batch.indices[:500], examples.indices[:500]))


def test_block_writer_matches_formatting_everything_at_once(written):
    examples, paths = written
    assert read(paths["libsvm"]) == examples.to_libsvm()
    assert read(paths["vw"]) == examples.to_vw()


@settings(max_examples=15, deadline=None)
@given(
    features=st.integers(1, 3000),
    nonzeros=st.integers(1, 30),
    n=st.integers(0, 40),
    seed=st.integers(0, 2**16),
)
def test_any_small_task_round_trips_through_libsvm(features, nonzeros, n, seed):
    task = PlantedPolynomial(features=features, nonzeros=nonzeros, frequent=1, pairs=0, seed=seed)
    examples = task.generate(n)
    parsed = LibsvmFormat(bits=18, labels="binary").parse(examples.to_libsvm())
    assert parsed.records == n and not parsed.dead_letters
    np.testing.assert_array_equal(parsed.batch.indices, examples.indices)
    np.testing.assert_array_equal(parsed.batch.labels, examples.labels)
    assert np.all(np.diff(examples.indptr) >= 1) and np.all(np.diff(examples.indptr) <= nonzeros)


# -- the distribution ----------------------------------------------------------


@pytest.fixture(scope="module")
def sample():
    task = PlantedPolynomial(seed=11)
    return task, task.generate(40000)


def test_labels_are_balanced(sample):
    for seed in (0, 1, 2):
        labels = PlantedPolynomial(seed=seed).generate(20000).labels
        assert 0.4 < (labels > 0).mean() < 0.6
    task, examples = sample
    assert set(np.unique(examples.labels)) == {-1.0, 1.0}


def test_about_nonzeros_features_per_example(sample):
    _, examples = sample
    per_row = np.diff(examples.indptr)
    assert 46 < per_row.mean() <= 50 and per_row.max() <= 50


def test_feature_frequencies_follow_the_planted_skew(sample):
    task, examples = sample
    seen = np.bincount(examples.indices, minlength=task.features + 1) / len(examples)
    head = np.arange(1, 17)
    np.testing.assert_allclose(seen[head], task.presence[head], atol=0.015)
    assert seen[1] > seen[10] > seen[100:200].mean() > seen[10000:20000].mean() > 0


def test_planted_pairs_co_occur_often(sample):
    task, examples = sample
    assert len(task.planted.monomials) == task.pairs
    assert all(max(monomial) <= task.frequent for monomial in task.planted.monomials)
    co_occurrence = examples.monomial_values(task.planted.monomials).mean(axis=0)
    assert co_occurrence.min() > 0.02


def test_noise_flips_some_labels_but_not_most(sample):
    _, examples = sample
    bayes_error = np.mean(np.sign(examples.scores) != examples.labels)
    assert 0.05 < bayes_error < 0.2
    noiseless = PlantedPolynomial(seed=11, noise=0.0).generate(2000)
    assert np.array_equal(np.sign(noiseless.scores), noiseless.labels)


def test_triples_are_planted_when_asked_for():
    task = PlantedPolynomial(features=1000, pairs=3, triples=2)
    degrees = [len(monomial) for monomial in task.planted.monomials]
    assert degrees == [2, 2, 2, 3, 3]


def held_out_error(train, test, monomials=()) -> float:
    learner = LinearLearner(LearnerConfig(loss="logistic"))
    batch = train.to_batch(monomials=monomials)
    for pass_number in range(2):
        if pass_number:
            learner.start_pass()
        for start in range(0, len(batch), 4096):
            learner.learn(batch.take(np.arange(start, min(start + 4096, len(batch)))))
    return Evaluation.of(learner.to_model(), [test.to_batch(monomials=monomials)]).result()["error"]


def test_planted_products_beat_a_linear_model_on_held_out_data():
    task = PlantedPolynomial(features=2000, seed=1)
    examples = task.generate(40000)
    train, test = examples.slice(0, 30000), examples.slice(30000, 40000)
    linear = held_out_error(train, test)
    with_products = held_out_error(train, test, task.planted.monomials)
    bayes = np.mean(np.sign(test.scores) != test.labels)
    assert with_products < linear - 0.03, (linear, with_products)
    assert bayes <= with_products


# -- validation ----------------------------------------------------------------


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"features": 0}, "features must be a whole number >= 1"),
        ({"nonzeros": 2.5}, "nonzeros must be a whole number >= 1"),
        ({"frequent": 4, "pairs": 7}, "pairs must be a whole number between 0 and 6"),
        ({"frequent": 20, "features": 10}, "frequent (20) cannot exceed features (10)"),
        ({"noise": -1.0}, "noise must be a finite number >= 0"),
        ({"zipf_offset": 0.0}, "zipf_offset must be a finite number > 0"),
        ({"seed": -1}, "seed must be a whole number >= 0"),
    ],
)
def test_bad_settings_say_what_to_fix(settings, message):
    with pytest.raises(ValueError) as error:
        PlantedPolynomial(**settings)
    assert message in str(error.value)


def test_unknown_format_is_refused(tmp_path):
    with pytest.raises(ValueError, match="format must be one of libsvm, vw"):
        PlantedPolynomial(features=10, frequent=2, pairs=1).write(str(tmp_path / "x"), 3, format="csv")
    assert not os.path.exists(tmp_path / "x")
