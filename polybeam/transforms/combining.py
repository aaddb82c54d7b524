"""MergeFn: combine partial results that know how to merge themselves.

Partial results built per bundle (evaluations, Gram statistics, ...) have a
``merge(others)`` that adds the others into the first; this CombineFn folds a
PCollection of them into one, and gives None for an empty input. The first
partial of an accumulator is copied before anything is merged into it: an
input element must not change, since another transform may consume it too.
"""

from __future__ import annotations

import copy

import apache_beam as beam


class MergeFn(beam.CombineFn):
    """Folds partial results with ``first.merge([other])``; subclasses shape the output."""

    def create_accumulator(self):
        return None

    def add_input(self, merged, partial):
        return copy.deepcopy(partial) if merged is None else merged.merge([partial])

    def merge_accumulators(self, accumulators):
        merged = None
        for accumulator in accumulators:  # accumulators are this CombineFn's own: the first may change
            if accumulator is not None:
                merged = accumulator if merged is None else merged.merge([accumulator])
        return merged

    def extract_output(self, merged):
        return merged
