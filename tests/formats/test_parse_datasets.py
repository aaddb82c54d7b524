"""The bundled real datasets parse completely, in one block or many."""

from __future__ import annotations

import numpy as np
import pytest
from parsing_reference import assert_matches, ref_libsvm, split_lines

from polybeam.formats import LibsvmFormat
from polybeam.learners.batch import ExampleBatch

# Row counts from the datasets' provenance notes: every row must parse.
DATASETS = {"spam": 4601, "letter": 20000, "satellite": 6435, "dna": 3186}


@pytest.mark.parametrize("name, rows", sorted(DATASETS.items()))
def test_every_row_parses(dataset_bytes, name, rows):
    data = dataset_bytes(name)
    parsed = LibsvmFormat(labels="real").parse(data, source=f"{name}.libsvm")
    assert parsed.dead_letters == []
    assert parsed.skipped == 0
    assert len(parsed.batch) == rows == parsed.records
    assert parsed.batch.row_ids[0] == 0 and (np.diff(parsed.batch.row_ids) > 0).all()


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_spot_checks_against_the_reference(dataset_bytes, name):
    data = dataset_bytes(name)
    lines = split_lines(data)
    parsed = LibsvmFormat().parse(data)
    for i in range(0, len(lines), 97):
        offset, raw = lines[i]
        (expected,) = ref_libsvm(raw + b"\n")
        slots, values = parsed.batch.row(i)
        assert parsed.batch.row_ids[i] == offset
        assert parsed.batch.labels[i] == expected.label
        assert slots.tolist() == expected.slots
        assert values.tolist() == expected.values  # short decimals: exact


def test_dna_matches_the_reference_everywhere(dataset_bytes):
    data = dataset_bytes("dna")
    parsed = LibsvmFormat(labels="multiclass").parse(data, source="dna")
    assert_matches(parsed, ref_libsvm(data), labels="multiclass", source="dna", offset=0, first_line=1)


def test_blocks_at_line_boundaries_give_the_same_examples(dataset_bytes):
    data = dataset_bytes("spam")
    whole = LibsvmFormat().parse(data).batch
    parts, start, line = [], 0, 1
    while start < len(data):
        stop = data.find(b"\n", start + 50_000)
        stop = len(data) if stop < 0 else stop + 1
        block = data[start:stop]
        parts.append(LibsvmFormat().parse(block, source="spam", offset=start, first_line=line).batch)
        line += block.count(b"\n")
        start = stop
    joined = ExampleBatch.concat(parts)
    assert len(parts) > 5
    for attribute in ("labels", "indptr", "indices", "values", "row_ids"):
        assert getattr(joined, attribute).tolist() == getattr(whole, attribute).tolist()
