"""Centring's race block by block: the blocks against a plain reference, and the rule's standard error."""

import math
import statistics

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from polybeam.learners import kernels
from polybeam.learners.race import GROWTH, RaceBlocks, gain_shown

losses = st.lists(st.floats(0.0, 10.0), min_size=1, max_size=80)


def reference_blocks(example_losses, block, growth=GROWTH):
    """Per-block loss sums and counts of a sequence of unit-weight examples: ``block`` examples a block, or
    a ``growth``-th of the examples before it when longer (the last block may be short)."""
    sums, counts, start = [], [], 0
    while start < len(example_losses):
        length = max(block, start // growth)
        sums.append(sum(example_losses[start : start + length]))
        counts.append(len(example_losses[start : start + length]))
        start += length
    return sums, counts


def record(example_losses, block, chunks):
    """A race record fed ``example_losses`` in chunks no longer than ``chunks`` allows, as a learner splits
    its batches at the curve's points and the race's blocks."""
    race, stats = RaceBlocks.start(block=block), np.zeros(kernels.N_STATS)
    position = 0
    while position < len(example_losses):
        size = min(race.room(), chunks[position % len(chunks)], len(example_losses) - position)
        stats[kernels.LOSS_SUM] += sum(example_losses[position : position + size])
        stats[kernels.WEIGHT_SUM] += size
        race.advance(size, stats)
        position += size
    return race, stats


@settings(max_examples=200, deadline=None)
@given(losses, st.integers(1, 20), st.lists(st.integers(1, 30), min_size=1, max_size=5))
def test_blocks_are_the_sums_of_their_examples_however_the_batches_split(example_losses, block, chunks):
    race, stats = record(example_losses, block, chunks)
    sums, counts = race.closed(stats)
    expected_sums, expected_counts = reference_blocks(example_losses, block)
    np.testing.assert_allclose(sums, expected_sums, atol=1e-9)
    np.testing.assert_array_equal(counts, expected_counts)


@settings(max_examples=200, deadline=None)
@given(st.lists(losses, min_size=1, max_size=4), st.integers(1, 20))
def test_merged_workers_keep_every_block_with_their_open_ones_closed(workers, block):
    records = [record(example_losses, block, [7]) for example_losses in workers]
    merged_stats = sum(stats for _, stats in records)
    merged = RaceBlocks.merged(records, merged_stats)
    sums, counts = merged.closed(merged_stats)
    expected = [reference_blocks(example_losses, block) for example_losses in workers]
    np.testing.assert_allclose(sums, [s for worker, _ in expected for s in worker], atol=1e-9)
    np.testing.assert_array_equal(counts, [c for _, worker in expected for c in worker])
    assert RaceBlocks.from_state(merged.to_state()) == merged


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0.0, 5.0), st.floats(0.0, 5.0)), min_size=2, max_size=60))
def test_blocks_of_one_example_give_the_paired_standard_error(pairs):
    # One example a block: the standard error of the mean of paired differences, as a textbook has it.
    centred = np.array([c for c, _ in pairs])
    uncentred = np.array([u for _, u in pairs])
    shown, gain, error = gain_shown(centred, uncentred, np.ones(len(pairs)), standard_errors=1.0)
    differences = [u - c for c, u in pairs]
    assert math.isclose(gain, statistics.fmean(differences), rel_tol=1e-9, abs_tol=1e-12)
    assert math.isclose(error, statistics.stdev(differences) / math.sqrt(len(pairs)), rel_tol=1e-6, abs_tol=1e-9)
    assert shown == (gain > error)


def test_long_races_grow_their_blocks():
    example_losses = [1.0] * (40 * GROWTH)
    race, stats = record(example_losses, 16, [1000])
    sums, counts = race.closed(stats)
    assert counts.tolist() == reference_blocks(example_losses, 16)[1]
    assert counts[0] == 16 and counts[-1] > 16 and len(counts) < len(example_losses) // 16


def test_a_race_without_two_blocks_or_a_finite_loss_shows_nothing():
    assert gain_shown(np.array([1.0]), np.array([5.0]), np.array([16.0]))[0] is False  # one block: no error
    assert gain_shown(np.array([]), np.array([]), np.array([]))[0] is False
    diverged = gain_shown(np.array([1.0, np.inf]), np.array([2.0, 3.0]), np.ones(2))
    assert diverged[0] is False
    # Blocks without importance (weight 0) neither count nor divide by zero.
    assert gain_shown(np.array([0.0, 1.0, 1.0]), np.array([0.0, 3.0, 3.0]), np.array([0.0, 1.0, 1.0]))[0]
