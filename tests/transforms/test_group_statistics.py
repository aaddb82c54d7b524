"""GroupStatistics on the local runner: equal to in-process statistics; default group; unnamed features fail."""

from __future__ import annotations

import apache_beam as beam
import numpy as np
import pytest

from polybeam import datasets
from polybeam.selection.groups import GroupSpec
from polybeam.selection.statistics import GramStatistics
from polybeam.transforms.group_statistics import GroupStatistics

RESULTS: list = []


def _keep(element):
    RESULTS.append(element)


@pytest.fixture(scope="module")
def spam_batches():
    batch = datasets.load("spam")
    return [batch.take(np.arange(start, min(start + 500, len(batch)))) for start in range(0, len(batch), 500)]


def run(batches, transform):
    RESULTS.clear()
    with beam.Pipeline(runner="FnApiRunner") as p:
        p | beam.Create(batches) | transform | beam.Map(_keep)
    (result,) = RESULTS
    return result


def spam_spec(last: int) -> GroupSpec:
    return GroupSpec.from_json(
        {
            "groups": [
                {"name": "words", "features": ["1-48"], "cost": 1.0},
                {"name": "chars", "features": [f"49-{last}"], "cost": 2.0},
            ]
        }
    )


def test_pipeline_statistics_equal_in_process_ones(spam_batches):
    spec = spam_spec(57)
    resolved, statistics = run(spam_batches, GroupStatistics(spec))
    expected = GramStatistics.for_columns(spec.slots, bits=spec.bits)
    for batch in spam_batches:
        expected.add(batch)
    assert resolved == spec and statistics.examples == 4601
    np.testing.assert_allclose(statistics.xtx, expected.xtx, rtol=1e-12)
    np.testing.assert_allclose(statistics.xty, expected.xty, rtol=1e-12)


def test_a_default_group_gathers_what_no_group_names(spam_batches):
    resolved, statistics = run(spam_batches, GroupStatistics(spam_spec(54), default_group="capitals", default_cost=0.5))
    assert resolved.groups[-1].name == "capitals" and resolved.groups[-1].slots == (55, 56, 57)
    assert statistics.columns == 57 and statistics.examples == 4601


def test_features_in_no_group_fail_the_job_with_their_slots(spam_batches):
    with pytest.raises(Exception, match="in no group"):
        run(spam_batches, GroupStatistics(spam_spec(54)))
