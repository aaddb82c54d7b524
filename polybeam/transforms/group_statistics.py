"""GroupStatistics: one pass over ExampleBatches into the Gram statistics of a group specification.

A CombineFn whose accumulator is a
:class:`~polybeam.selection.statistics.GramStatistics`: each bundle adds its
batches (X'X by a sparse product per batch), partial statistics are shipped
compact (no 2**bits slot lookup) and merged by summation. With
``default_group``, a first combine collects the slots the data has, so that
features no group names gather in that group instead of failing the job.

>>> import apache_beam as beam
>>> from polybeam.learners.batch import ExampleBatch
>>> from polybeam.selection.groups import GroupSpec
>>> spec = GroupSpec.from_json({"groups": [{"name": "a", "features": [1], "cost": 1.0}]}, bits=8)
>>> batch = ExampleBatch.from_rows([(1.0, {1: 2.0, 3: 1.0})] * 5, bits=8)
>>> with beam.Pipeline(runner="FnApiRunner") as p:
...     _ = (p | beam.Create([batch])
...            | GroupStatistics(spec, default_group="rest", default_cost=0.5)
...            | beam.Map(lambda result: print(result[0].groups[-1], result[1].xtx.tolist())))
FeatureGroup(name='rest', slots=(3,), cost=0.5) [[20.0, 10.0], [10.0, 5.0]]
"""

from __future__ import annotations

import apache_beam as beam
import numpy as np
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from polybeam.learners.batch import ExampleBatch
from polybeam.selection.groups import GroupSpec
from polybeam.selection.statistics import DEFAULT_MEMORY_LIMIT, GramStatistics
from polybeam.transforms.combining import MergeFn


class GramStatisticsFn(beam.CombineFn):
    """Accumulates :class:`GramStatistics` over a fixed spec's columns."""

    def __init__(self, spec: GroupSpec, memory_limit: int = DEFAULT_MEMORY_LIMIT):
        self.spec = spec
        self.memory_limit = memory_limit

    def create_accumulator(self) -> GramStatistics:
        return GramStatistics.for_columns(self.spec.slots, bits=self.spec.bits, memory_limit=self.memory_limit)

    def add_input(self, statistics: GramStatistics, batch: ExampleBatch) -> GramStatistics:
        return statistics.add(batch)

    def merge_accumulators(self, accumulators) -> GramStatistics:
        accumulators = iter(accumulators)
        first = next(accumulators)
        return first.merge(list(accumulators))

    def extract_output(self, statistics: GramStatistics) -> GramStatistics:
        return statistics


class _SlotsSeen(beam.CombineFn):
    def create_accumulator(self) -> set:
        return set()

    def add_input(self, seen: set, batch: ExampleBatch) -> set:
        seen.update(np.unique(batch.indices).tolist())
        return seen

    def merge_accumulators(self, accumulators) -> set:
        merged: set = set()
        for seen in accumulators:
            merged |= seen
        return merged

    def extract_output(self, seen: set) -> list[int]:
        return sorted(seen)


class _AddWithSpec(beam.DoFn):
    """Accumulates per bundle with the spec known only at run time (a side input), then emits partials."""

    def __init__(self, memory_limit: int):
        self.memory_limit = memory_limit

    def start_bundle(self):
        self._statistics = None

    def process(self, batch, spec):
        if self._statistics is None:
            self._spec = spec
            self._statistics = GramStatistics.for_columns(spec.slots, bits=spec.bits, memory_limit=self.memory_limit)
        self._statistics.add(batch)

    def finish_bundle(self):
        if self._statistics is not None:
            yield WindowedValue(self._statistics, MIN_TIMESTAMP, [GlobalWindow()])
        self._statistics = None


class GroupStatistics(beam.PTransform):
    """A PCollection of one ``(GroupSpec, GramStatistics)``: the (resolved) groups and their statistics.

    ``default_group`` (with ``default_cost``) gathers features no group names;
    without it they fail the job with a message listing them.
    """

    def __init__(
        self,
        spec: GroupSpec,
        *,
        default_group: str | None = None,
        default_cost: float = 1.0,
        memory_limit: int = DEFAULT_MEMORY_LIMIT,
    ):
        super().__init__()
        self.spec = spec
        self.default_group = default_group
        self.default_cost = default_cost
        self.memory_limit = memory_limit

    def expand(self, batches):
        if self.default_group is None:
            spec = self.spec
            return (
                batches
                | "Statistics" >> beam.CombineGlobally(GramStatisticsFn(spec, self.memory_limit))
                | "WithSpec" >> beam.Map(lambda statistics: (spec, statistics))
            )
        name, cost, base = self.default_group, self.default_cost, self.spec
        specs = (
            batches
            | "SlotsSeen" >> beam.CombineGlobally(_SlotsSeen())
            | "Resolve" >> beam.Map(lambda seen: base.with_default(seen, name=name, cost=cost))
        )
        spec_input = beam.pvalue.AsSingleton(specs)
        partial = batches | "Statistics" >> beam.ParDo(_AddWithSpec(self.memory_limit), spec_input)
        merged = partial | "Merge" >> beam.CombineGlobally(MergeFn())
        limit = self.memory_limit
        return merged | "WithSpec" >> beam.Map(
            lambda statistics, spec: (
                spec,
                statistics
                if statistics is not None
                else GramStatistics.for_columns(spec.slots, bits=spec.bits, memory_limit=limit),
            ),
            spec_input,
        )
