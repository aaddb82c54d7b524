"""Beam transforms of anytime prediction: sequence feature groups, apply and evaluate the prefixes.

``SequenceGroups`` is one pass over the examples (the Gram statistics of
:class:`~polybeam.transforms.group_statistics.GroupStatistics`, merged by
summation) followed by the sequencing on the merged statistics, which never
touches a row again. Its ``prefixes`` output holds one dict per chosen group
(see :mod:`polybeam.selection.anytime`), its ``skipped`` output one per group
left out with the reason. ``WritePrefixes`` writes them in rank order as JSON
lines; ``ApplyAnytime`` scores batches with an :class:`AnytimeModel` for a
budget or a set of available groups; ``EvaluateAnytime`` measures every
prefix of several models on held-out batches in one pass.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

import apache_beam as beam

from polybeam.selection.anytime import AnytimeModel, records_of, sequence_statistics, skipped_records
from polybeam.selection.groups import GroupSpec
from polybeam.selection.statistics import DEFAULT_MEMORY_LIMIT
from polybeam.selection.timeliness import HeldOutCurve
from polybeam.transforms.combining import MergeFn
from polybeam.transforms.files import write_atomically
from polybeam.transforms.group_statistics import GroupStatistics
from polybeam.transforms.predict import ScoredBatch

SKIPPED = "skipped"


class _SequenceFn(beam.DoFn):
    def __init__(self, options: dict, seed: int):
        self.options = options
        self.seed = seed

    def process(self, element):
        spec, statistics = element
        if statistics.examples == 0:
            raise ValueError("no examples to sequence: the input is empty (or every record was a dead letter)")
        problem, result = sequence_statistics(spec, statistics, **self.options)
        beam.metrics.Metrics.counter("polybeam", "groups_sequenced").inc(len(result.steps))
        beam.metrics.Metrics.counter("polybeam", "groups_skipped").inc(len(result.skipped))
        for record in records_of(spec, problem, result, examples=statistics.examples):
            yield {**record, "seed": self.seed}
        for record in skipped_records(spec, result.skipped):
            yield beam.pvalue.TaggedOutput(SKIPPED, record)


class SequenceGroups(beam.PTransform):
    """Anytime prefixes of ``spec``'s groups over the input ExampleBatches.

    Outputs ``prefixes`` (the main output) and ``skipped``. ``method``,
    ``ridge``, ``whiten`` and ``standardize`` are those of
    :func:`polybeam.selection.anytime.sequence_statistics`; ``default_group``
    gathers features no group names (else they fail the job); ``seed`` is
    the hashing seed the input was read with (recorded with the prefixes).
    """

    def __init__(
        self,
        spec: GroupSpec,
        *,
        method: str = "cs-g-omp",
        ridge: float = 0.0,
        whiten: bool | None = None,
        standardize: bool = True,
        default_group: str | None = None,
        default_cost: float = 1.0,
        memory_limit: int = DEFAULT_MEMORY_LIMIT,
        seed: int = 0,
        **options,
    ):
        super().__init__()
        self.spec = spec
        self.options = dict(method=method, ridge=ridge, whiten=whiten, standardize=standardize, **options)
        self.statistics = dict(default_group=default_group, default_cost=default_cost, memory_limit=memory_limit)
        self.seed = seed

    def expand(self, batches):
        return (
            batches
            | "Statistics" >> GroupStatistics(self.spec, **self.statistics)
            | "Sequence" >> beam.ParDo(_SequenceFn(self.options, self.seed)).with_outputs(SKIPPED, main="prefixes")
        )


def _in_rank_order(records: list[dict]) -> str:
    """JSON lines by rank (prefixes), or by group name (skipped groups have no rank)."""
    ordered = sorted(records, key=lambda record: (record.get("rank", 0), str(record.get("group", ""))))
    return "\n".join(json.dumps(record, allow_nan=False) for record in ordered)


class WritePrefixes(beam.PTransform):
    """Writes prefix dicts (or skipped-group dicts) to one file ``path`` as JSON lines in rank order
    (atomically; emits the path)."""

    def __init__(self, path: str):
        super().__init__()
        self.path = path

    def expand(self, prefixes):
        return (
            prefixes
            | "Gather" >> beam.combiners.ToList()
            | "InOrder" >> beam.Map(_in_rank_order)
            | "Write" >> beam.Map(_write_lines, self.path)
        )


def _write_lines(text: str, path: str) -> str:
    # In one piece, renamed into place: a reader (timeliness, predict --prefixes) never sees half the prefixes.
    write_atomically(path, (text + "\n" if text else "").encode("utf-8"))
    return path


def read_anytime_model(path: str) -> AnytimeModel:
    """The anytime prefixes of a JSON-lines file on any Beam file system (gs://, s3://, local, ...)."""
    from polybeam.selection.anytime import AnytimeModelError
    from polybeam.transforms.files import read_bytes

    try:
        text = read_bytes(path).decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise AnytimeModelError(f"cannot read anytime prefixes {path}: {error}") from None
    return AnytimeModel.parse(text, source=path)


# The columns ApplyAnytime's predictions carry: how many groups the prefix used, and their cost.
PREFIX_COLUMNS = ("prefix", "cost")


class _ApplyFn(beam.DoFn):
    def __init__(self, model: AnytimeModel, budget: float | None, groups: tuple[str, ...] | None):
        self.model = model
        self.prefix = model.prefix_length(budget=budget, groups=groups)
        self.used = (self.prefix, model.prefix_cost(self.prefix))

    def process(self, batch):
        predictions = self.model.predict(batch, prefix=self.prefix)
        yield ScoredBatch(predictions, batch.labels, batch.source, batch.row_ids, batch.tags, extra=self.used)


class ApplyAnytime(beam.PTransform):
    """Scores ExampleBatches with the prefix a ``budget`` pays for, or the one made of the available ``groups``.

    With neither, the whole sequence is used. Emits one
    :class:`~polybeam.transforms.predict.ScoredBatch` per batch, carrying the
    prefix's size and cumulative cost (write them with
    ``WritePredictions(..., extra_columns=PREFIX_COLUMNS)``).
    """

    def __init__(self, model: AnytimeModel, *, budget: float | None = None, groups: Iterable[str] | None = None):
        super().__init__()
        if budget is not None and groups is not None:
            raise ValueError("choose the prefix by budget or by available groups, not both")
        self.model = model
        self.budget = budget
        self.groups = tuple(groups) if groups is not None else None

    def expand(self, batches):
        return batches | "Score" >> beam.ParDo(_ApplyFn(self.model, self.budget, self.groups))


class _CurvesFn(beam.DoFn):
    def __init__(self, models: Mapping[str, AnytimeModel]):
        self.models = dict(models)

    def process(self, batch):
        for name, model in self.models.items():
            yield name, HeldOutCurve.of(model.predict_prefixes(batch), batch.labels, batch.weights)


class EvaluateAnytime(beam.PTransform):
    """``(name, HeldOutCurve)`` per model of ``models`` (name -> AnytimeModel): every prefix on held-out batches."""

    def __init__(self, models: Mapping[str, AnytimeModel]):
        super().__init__()
        self.models = dict(models)

    def expand(self, batches):
        return batches | "Score" >> beam.ParDo(_CurvesFn(self.models)) | "Merge" >> beam.CombinePerKey(MergeFn())
