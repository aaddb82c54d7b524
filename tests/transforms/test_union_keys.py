"""The trained keys of a shared per-key model: the union of each batch's key hashes, however the runner
groups and orders the batches (reference: ``np.unique`` of them all)."""

from __future__ import annotations

import pickle

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from polybeam.transforms import shared_keys
from polybeam.transforms.shared_keys import _UnionKeys

arrays = st.lists(st.lists(st.integers(-(2**62), 2**62), max_size=30), max_size=12)


@settings(max_examples=80, deadline=None)
@given(bundles=st.lists(arrays, min_size=1, max_size=4), fold_at=st.sampled_from([0, 5, shared_keys._FOLD_AT]))
def test_the_union_of_every_bundles_keys_is_every_key_once_in_order(bundles, fold_at):
    default, shared_keys._FOLD_AT = shared_keys._FOLD_AT, fold_at  # (folds after every batch, some, or none)
    try:
        _check_union(bundles)
    finally:
        shared_keys._FOLD_AT = default


def _check_union(bundles):
    union = _UnionKeys()
    partials = []
    for bundle in bundles:  # a lifted combine: an accumulator per bundle, compacted and shipped, then merged
        accumulator = union.create_accumulator()
        for keys in bundle:
            accumulator = union.add_input(accumulator, np.unique(np.array(keys, dtype=np.int64)))
        partials.append(pickle.loads(pickle.dumps(union.compact(accumulator))))
    got = union.extract_output(union.merge_accumulators(iter(partials)))
    every = [key for bundle in bundles for keys in bundle for key in keys]
    np.testing.assert_array_equal(got, np.unique(np.array(every, dtype=np.int64)))
    assert got.dtype == np.int64
