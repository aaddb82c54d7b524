"""LabelOrder: sorted, grouped or drifting labels are told from a random order, batch by batch, with no false
alarm on real data in its own order or shuffled; counts add up across batches and workers in any split."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polybeam import datasets
from polybeam.learners.label_order import MAX_VALUES, LabelOrder

sklearn_datasets = pytest.importorskip("sklearn.datasets", reason="scikit-learn's bundled data sets")

BATCH = 4096  # the readers' batches (DEFAULT_BLOCK_LINES)


def order_of(labels, batch: int = BATCH) -> LabelOrder:
    order = LabelOrder()
    for start in range(0, len(labels), batch):
        order.add(labels[start : start + batch])
    return order


def scikit_learn_labels():
    loaders = ("load_breast_cancer", "load_digits", "load_wine", "load_iris", "load_diabetes")
    return {name: getattr(sklearn_datasets, name)(return_X_y=True)[1].astype(float) for name in loaders}


# -- no false alarm on real data ---------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", ["spam", "dna", "letter", "satellite"])
def test_the_bundled_data_in_its_file_order_is_not_sorted(name):
    order = order_of(datasets.load(name).labels)
    # Measured: change ratio 0.996-1.006, drift at most 0.037 (chance 0.035), trend within 0.005.
    assert not order.sorted and 0.95 < order.change_ratio < 1.05, order.to_dict()


@pytest.mark.parametrize("batch", [256, 1000, BATCH])
def test_shuffled_scikit_learn_data_is_not_sorted_and_sorted_is(batch):
    for name, labels in scikit_learn_labels().items():
        for seed in range(5):
            shuffled = order_of(np.random.default_rng(seed).permutation(labels), batch)
            assert not shuffled.sorted, (name, seed, shuffled.to_dict())
        ascending = order_of(np.sort(labels), batch)
        assert ascending.sorted, (name, ascending.to_dict())
        assert order_of(np.sort(labels)[::-1].copy(), batch).sorted, name


def test_the_order_scikit_learn_ships_iris_and_wine_in_is_sorted():
    # (grouped by class: an online learner given them so learns the last class mostly)
    labels = scikit_learn_labels()
    assert order_of(labels["load_iris"]).runs and order_of(labels["load_wine"]).runs
    assert not order_of(labels["load_breast_cancer"]).sorted and not order_of(labels["load_digits"]).sorted


# -- what each test catches ----------------------------------------------------------------------------------------


def test_runs_of_one_label_in_any_order_of_the_runs():
    rng = np.random.default_rng(0)
    grouped = np.concatenate([np.full(300, label) for label in rng.permutation(10)]).astype(float)
    order = order_of(grouped)
    assert order.runs and order.sorted and not order.monotone
    assert "the labels come in long runs: 9 label changes" in order.warning("shuffle them")
    assert order.warning("shuffle them").endswith(": shuffle them")
    assert order_of(rng.permutation(grouped)).warning("shuffle them") is None


def test_classes_that_cycle_are_not_sorted():
    cycling = np.tile(np.arange(1.0, 27.0), 600)  # 1, 2, ..., 26, 1, 2, ...: every neighbour differs
    order = order_of(cycling)
    assert order.trend > 0.9 and not order.sorted


def test_sorted_regression_targets_rise_or_fall():
    values = np.random.default_rng(1).normal(size=2000)
    order = order_of(np.sort(values))
    # Every neighbour differs, as in a random order: only the rises tell.
    assert order.change_ratio > 0.99 and not order.runs
    assert order.monotone and order.trend == 1.0
    assert "the labels come sorted: 100% of neighbouring examples rise" in order.warning("shuffle them")
    assert order_of(np.sort(values)[::-1].copy()).trend == -1.0
    assert not order_of(values).sorted
    many = order_of(np.arange(5000.0))  # more distinct values than are counted
    assert many.values is None and len(np.arange(5000.0)) > MAX_VALUES and many.monotone


def test_shares_that_drift_from_batch_to_batch_are_caught_where_neighbours_look_mixed():
    # Labels mixed within windows of 2,000 examples of a stream sorted by label (what a small shuffle buffer
    # gives): neighbours change label nearly as often as at random, but each batch holds a few labels.
    rng = np.random.default_rng(2)
    stream = np.repeat(np.arange(1.0, 27.0), 600)
    mixed = np.concatenate([rng.permutation(stream[start : start + 2000]) for start in range(0, len(stream), 2000)])
    order = order_of(mixed)
    assert order.change_ratio > 0.7 and not order.runs
    # Each batch of 4,096 holds about 7 of the 26 labels: a drift of about 26 / 7 - 1.
    assert 2 < order.drift < 3.5 and order.drifting and order.sorted
    assert "the labels' shares drift through the input: its batches hold about 28% of its mix" in order.warning("")
    shuffled = order_of(rng.permutation(stream))
    assert shuffled.drift < 0.01 and not shuffled.drifting
    # Small batches differ by chance; that much is not drift.
    assert order_of(rng.permutation(stream), batch=50).drift < 0.05


def test_small_inputs_are_not_judged():
    assert not order_of(np.array([1.0] * 10 + [2.0] * 10)).sorted  # about 10 changes expected: too few
    assert LabelOrder().to_dict()["change_ratio"] is None and not LabelOrder().sorted
    assert not LabelOrder().add(np.zeros(0)).sorted


# -- counts add up ----------------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    labels=st.lists(st.sampled_from([-1.0, 1.0, 2.0, 3.5]), min_size=1, max_size=300),
    cuts=st.lists(st.integers(min_value=0, max_value=300), max_size=8),
    workers=st.integers(min_value=1, max_value=4),
)
def test_merging_workers_counts_is_counting_their_batches_together(labels, cuts, workers):
    labels = np.array(labels)
    bounds = sorted({0, len(labels), *(cut for cut in cuts if cut < len(labels))})
    batches = [labels[start:stop] for start, stop in zip(bounds[:-1], bounds[1:])]
    together = LabelOrder()
    for batch in batches:
        together.add(batch)
    parts = [LabelOrder() for _ in range(workers)]
    for position, batch in enumerate(batches):
        parts[position % workers].add(batch)
    merged = parts[0].merge(parts[1:])
    assert merged.to_dict() == together.to_dict()
    assert merged.values == together.values and merged.squares == pytest.approx(together.squares)
    # Neighbours are counted within batches only, each pair once.
    assert together.pairs == len(labels) - len(batches)
    assert together.changes == sum(int(np.count_nonzero(np.diff(batch))) for batch in batches)


def reference_counts(labels: np.ndarray) -> tuple[int, int, dict, dict]:
    """Rises, falls, counts and squares of one batch, in plain numpy (as the counts were first taken)."""
    rises = int(np.count_nonzero(labels[1:] > labels[:-1]))
    falls = int(np.count_nonzero(labels[1:] < labels[:-1]))
    distinct, counts = np.unique(labels, return_counts=True)
    squares = dict(zip(distinct.tolist(), (counts**2 / len(labels)).tolist()))
    return rises, falls, dict(zip(distinct.tolist(), counts.tolist())), squares


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(-3, 200), min_size=1, max_size=300).map(lambda values: np.array(values, dtype=float)),
)
def test_the_compiled_count_of_a_batch_is_the_sorted_one(labels):
    """Few values (counted in one pass) or many (by sorting): the same counts, in the same order."""
    order = LabelOrder().add(labels)
    rises, falls, counts, squares = reference_counts(labels)
    assert (order.rises, order.falls) == (rises, falls)
    assert list(order.values.items()) == list(counts.items())
    assert order.squares == pytest.approx(squares, rel=1e-12)
