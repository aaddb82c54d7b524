"""Batches pickle compactly (a runner's shuffle moves them as pickles) and come back equal, field by field."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from polybeam.learners.batch import ExampleBatch


def _assert_same_batch(left: ExampleBatch, right: ExampleBatch) -> None:
    for item in dataclasses.fields(ExampleBatch):
        a, b = getattr(left, item.name), getattr(right, item.name)
        if isinstance(a, np.ndarray):
            assert isinstance(b, np.ndarray) and a.dtype == b.dtype, item.name
            np.testing.assert_array_equal(a, b, err_msg=item.name)
        else:
            assert a == b, item.name


@settings(max_examples=150, deadline=None)
@given(
    rows=st.integers(0, 12),
    width=st.integers(0, 4),
    same_slots=st.booleans(),
    unit_weights=st.booleans(),
    keyed=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_a_pickled_batch_comes_back_equal(rows, width, same_slots, unit_weights, keyed, seed):
    # Rows with the same slots (a CSV's columns) or their own, unit weights or not, keys and row ids or not.
    rng = np.random.default_rng(seed)
    pattern = {int(slot): 0.0 for slot in rng.choice(50, size=width, replace=False)}
    data = []
    for _ in range(rows):
        slots = pattern if same_slots else {int(s): 0.0 for s in rng.choice(50, size=rng.integers(0, 4), replace=False)}
        data.append((float(rng.integers(0, 2)), {slot: float(rng.normal()) for slot in slots}))
    weights = None if unit_weights else rng.uniform(0.5, 2.0, size=rows)
    batch = ExampleBatch.from_rows(data, bits=8, weights=weights)
    if keyed:
        batch = dataclasses.replace(
            batch,
            row_ids=np.arange(rows, dtype=np.int64) * 7,
            source="part-0.csv",
            key_codes=np.zeros(rows, dtype=np.int32),
            key_names=("a",),
            names={1: "x"},
        )
    again = pickle.loads(pickle.dumps(batch))
    _assert_same_batch(batch, again)


def test_a_table_of_numbers_pickles_in_two_thirds_of_its_bytes():
    rng = np.random.default_rng(0)
    batch = ExampleBatch.from_rows(
        [(1.0, {i + 1: float(v) for i, v in enumerate(rng.normal(size=20))}) for _ in range(1000)]
    )
    plain = pickle.dumps({item.name: getattr(batch, item.name) for item in dataclasses.fields(ExampleBatch)})
    assert len(pickle.dumps(batch)) < 0.75 * len(plain)
