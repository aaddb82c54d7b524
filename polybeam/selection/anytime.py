"""Anytime prefixes: the sequenced groups' models, as JSON lines, and the predictor that reads them back.

A sequencing becomes one record per chosen group, in order::

    {"rank": 1, "group": "symbols", "cost": 1.0, "cumulative_cost": 1.0,
     "explained_variance": 0.31, "objective": 0.31, "groups": ["symbols"],
     "weights": {"52": 0.12, ...}, "intercept": -0.4, "slots": {"52": 52, ...},
     "standardization": {"mean_y": ..., "scale_y": ..., "mean": {...}, "scale": {...}},
     "method": "cs-g-omp", "ridge": 1e-06, "whiten": true, "standardize": true,
     "examples": 3681, "bits": 18}

``weights`` and ``intercept`` are in the input's units (a prediction is
``intercept + sum weights[f] * x_f`` over the features of the groups so far),
keyed by the features as the group specification writes them; ``slots`` are
their hashed weight slots, so batches from any polybeam reader are scored
directly; ``standardization`` holds the constants that map the standardised
model the sequencer fitted to these weights. ``explained_variance`` is the
training fraction of the response's variance explained, ``objective`` the
ridge objective the greedy choice maximised.

:class:`AnytimeModel` predicts for a budget (the longest prefix whose
cumulative cost fits; below the first group's cost, the training mean, or 0
when the problem was not standardised) or
from the groups available when interrupted (the longest prefix made only of
them).

>>> import numpy as np
>>> from polybeam.learners.batch import ExampleBatch
>>> from polybeam.selection.groups import GroupSpec
>>> from polybeam.selection.statistics import GramStatistics
>>> spec = GroupSpec.from_json('{"groups": [{"name": "a", "features": [1], "cost": 1},'
...                            ' {"name": "b", "features": [2], "cost": 3}]}', bits=4)
>>> rows = [(3 * x1 - x2 + 1, {1: x1, 2: x2}) for x1, x2 in [(0, 1), (1, 0), (2, 2), (3, 1), (1, 3)]]
>>> batch = ExampleBatch.from_rows(rows, bits=4)
>>> statistics = GramStatistics.for_columns(spec.slots, bits=4).add(batch)
>>> model = AnytimeModel(prefix_records(spec, statistics, method="cs-g-fr"))
>>> [(p["group"], p["cumulative_cost"]) for p in model.prefixes]
[('a', 1.0), ('b', 4.0)]
>>> (model.predict(batch, budget=4).round(6) + 0.0).tolist()
[0.0, 4.0, 5.0, 9.0, 1.0]
>>> model.predict(batch, groups={"b"}).tolist() == [model.prefixes[0]["standardization"]["mean_y"]] * 5
True
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from scipy import sparse

from polybeam.learners.batch import ExampleBatch
from polybeam.selection.errors import AnytimeModelError
from polybeam.selection.groups import GroupSpec
from polybeam.selection.sequencing import SequenceResult, Skipped, sequence
from polybeam.selection.standardize import StandardizedProblem, standardized
from polybeam.selection.statistics import GramStatistics

REQUIRED_KEYS = (
    "rank",
    "group",
    "cost",
    "cumulative_cost",
    "explained_variance",
    "weights",
    "intercept",
    "slots",
    "standardization",
)


def sequence_statistics(
    spec: GroupSpec,
    statistics: GramStatistics,
    *,
    method: str = "cs-g-omp",
    ridge: float = 0.0,
    whiten: bool | None = None,
    standardize: bool = True,
    **options: Any,
) -> tuple[StandardizedProblem, SequenceResult]:
    """Standardise the statistics and sequence the spec's groups with ``method``."""
    problem = standardized(statistics, standardize=standardize)
    result = sequence(
        problem.gram,
        problem.correlations,
        spec.group_of_column,
        spec.costs,
        method=method,
        ridge=ridge,
        whiten=whiten,
        constant=problem.constant,
        total_variance=problem.total_variance,
        names=[group.name for group in spec.groups],
        **options,
    )
    return problem, result


def prefix_records(spec: GroupSpec, statistics: GramStatistics, **options: Any) -> list[dict]:
    """The anytime prefixes (JSON-ready dicts) of sequencing ``spec``'s groups over ``statistics``."""
    problem, result = sequence_statistics(spec, statistics, **options)
    return records_of(spec, problem, result, examples=statistics.examples)


def records_of(
    spec: GroupSpec, problem: StandardizedProblem, result: SequenceResult, *, examples: int = 0
) -> list[dict]:
    names = spec.feature_names
    slots = spec.slots.tolist()
    columns_of_group = np.split(np.arange(len(names)), np.cumsum([len(g.slots) for g in spec.groups])[:-1])
    records, chosen_columns, chosen_names, spent = [], [], [], 0.0
    for rank, step in enumerate(result.steps, 1):
        group = spec.groups[step.group]
        spent += group.cost
        chosen_columns.extend(columns_of_group[step.group].tolist())
        chosen_names.append(group.name)
        raw, intercept = problem.raw_model(step.weights)
        records.append(
            {
                "rank": rank,
                "group": group.name,
                "cost": group.cost,
                "cumulative_cost": spent,
                "explained_variance": step.explained_variance,
                "objective": step.objective,
                "groups": list(chosen_names),
                "weights": {names[c]: float(raw[c]) for c in chosen_columns},
                "intercept": intercept,
                "slots": {names[c]: slots[c] for c in chosen_columns},
                "standardization": {
                    "mean_y": problem.mean_y,
                    "scale_y": problem.scale_y,
                    "mean": {names[c]: float(problem.mean_x[c]) for c in chosen_columns},
                    "scale": {names[c]: float(problem.scale_x[c]) for c in chosen_columns},
                },
                "method": result.method,
                "ridge": result.ridge,
                "whiten": result.whiten,
                "standardize": problem.standardize,
                "examples": int(examples),
                "bits": spec.bits,
            }
        )
    return records


def skipped_records(spec: GroupSpec, skipped: Iterable[Skipped]) -> list[dict]:
    return [
        {"group": spec.groups[skip.group].name, "cost": spec.groups[skip.group].cost, "reason": skip.reason}
        for skip in skipped
    ]


class AnytimeModel:
    """Predictions of the sequenced prefixes (see the module docstring)."""

    def __init__(self, records: Sequence[Mapping[str, Any]], *, source: str = "the prefix records"):
        for position, record in enumerate(records, 1):
            if not isinstance(record, Mapping):
                raise AnytimeModelError(f"{source}: prefix {position} is not a JSON object: {record!r:.80}")
        self.prefixes = [dict(record) for record in records]
        _check_records(self.prefixes, source)
        self._matrix = None

    @classmethod
    def load(cls, path: str) -> AnytimeModel:
        """Read prefixes written as JSON lines (``polybeam sequence --output``) from a local file.

        (:func:`polybeam.transforms.sequence.read_anytime_model` reads them from any Beam file system.)
        """
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError) as error:
            raise AnytimeModelError(f"cannot read anytime prefixes {path}: {error}") from None
        return cls.parse(text, source=path)

    @classmethod
    def parse(cls, text: str, *, source: str = "the prefix records") -> AnytimeModel:
        """Prefixes from the text of a JSON-lines prefix file."""
        records = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except ValueError as error:
                raise AnytimeModelError(f"{source}, line {number}: not a JSON object ({error})") from None
        return cls(records, source=source)

    def save(self, path: str) -> None:
        write_records(path, self.prefixes)

    @property
    def bits(self) -> int:
        return int(self.prefixes[0].get("bits", 18)) if self.prefixes else 18

    @property
    def mean_response(self) -> float:
        """The prediction before any group is computed: the training mean."""
        return float(self.prefixes[0]["standardization"]["mean_y"]) if self.prefixes else 0.0

    def prefix_for_budget(self, budget: float) -> int:
        """How many groups the budget pays for: the longest prefix whose cumulative cost is <= ``budget``."""
        if not budget == budget:  # NaN
            raise ValueError("the budget must be a number, got NaN")
        costs = [prefix["cumulative_cost"] for prefix in self.prefixes]
        return int(np.searchsorted(costs, budget * (1 + 1e-12), side="right"))

    def prefix_for_groups(self, available: Iterable[str]) -> int:
        """The longest prefix made only of ``available`` groups (as when interrupted)."""
        available = set(available)
        count = 0
        for prefix in self.prefixes:
            if prefix["group"] not in available:
                break
            count += 1
        return count

    def prefix_length(
        self, *, budget: float | None = None, groups: Iterable[str] | None = None, prefix: int | None = None
    ) -> int:
        """How many groups the chosen prefix has: by ``budget``, by available ``groups`` or by length (default all)."""
        if sum(choice is not None for choice in (budget, groups, prefix)) > 1:
            raise ValueError("choose the prefix by one of budget, groups or prefix")
        if budget is not None:
            return self.prefix_for_budget(budget)
        if groups is not None:
            return self.prefix_for_groups(groups)
        return len(self.prefixes) if prefix is None else prefix

    def prefix_cost(self, length: int) -> float:
        """The cumulative feature cost of the prefix of ``length`` groups (0 for the training mean alone)."""
        return float(self.prefixes[length - 1]["cumulative_cost"]) if length else 0.0

    def predict(
        self,
        batch: ExampleBatch,
        *,
        budget: float | None = None,
        groups: Iterable[str] | None = None,
        prefix: int | None = None,
    ) -> np.ndarray:
        """Predictions of one prefix: chosen by ``budget``, by available ``groups`` or by length (default all)."""
        length = self.prefix_length(budget=budget, groups=groups, prefix=prefix)
        return self._predict(batch, [length])[:, 0]

    def predict_prefixes(self, batch: ExampleBatch) -> np.ndarray:
        """Every prefix's predictions at once (n x (prefixes + 1)); column 0 is the training mean."""
        return self._predict(batch, slice(None))

    def _predict(self, batch: ExampleBatch, prefixes) -> np.ndarray:
        """Predictions of the chosen columns (prefix lengths) only: one sparse product."""
        if batch.bits != self.bits:
            raise AnytimeModelError(
                f"the batch is hashed to {batch.bits} bits but the prefixes to {self.bits}; "
                f"read the input with --bits {self.bits}"
            )
        matrix, intercepts = self._weights()
        return (batch.missing_as_zero().to_csr() @ matrix[:, prefixes]).toarray() + intercepts[prefixes]

    def _weights(self):
        """A sparse (2^bits x prefixes+1) matrix of every prefix's weights, and their intercepts."""
        if self._matrix is None:
            rows, cols, values = [], [], []
            for column, prefix in enumerate(self.prefixes, 1):
                slots = prefix["slots"]
                for name, weight in prefix["weights"].items():
                    rows.append(int(slots[name]))
                    cols.append(column)
                    values.append(float(weight))
            shape = (1 << self.bits, len(self.prefixes) + 1)
            matrix = sparse.csc_matrix((values, (rows, cols)), shape=shape)
            intercepts = np.array([self.mean_response] + [float(p["intercept"]) for p in self.prefixes])
            self._matrix = (matrix, intercepts)
        return self._matrix

    def curve(self) -> tuple[np.ndarray, np.ndarray]:
        """Training explained variance against cumulative cost, from (0, 0)."""
        costs = np.array([0.0] + [p["cumulative_cost"] for p in self.prefixes])
        values = np.array([0.0] + [p["explained_variance"] for p in self.prefixes])
        return costs, values

    @property
    def method(self) -> str:
        return str(self.prefixes[0].get("method", "")) if self.prefixes else ""


def write_records(path: str, records: Iterable[Mapping[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, allow_nan=False) + "\n")


def _check_records(records: list[dict], source: str) -> None:
    previous = 0.0
    for position, record in enumerate(records, 1):
        where = f"{source}: prefix {position}"
        missing = [key for key in REQUIRED_KEYS if key not in record]
        if missing:
            raise AnytimeModelError(f"{where} lacks {', '.join(missing)}; write prefixes with polybeam sequence")
        if record["rank"] != position:
            raise AnytimeModelError(f"{where} has rank {record['rank']}: prefixes must come in order, ranks 1, 2, ...")
        cumulative = record["cumulative_cost"]
        if not isinstance(cumulative, (int, float)) or not math.isfinite(cumulative) or cumulative < previous:
            raise AnytimeModelError(f"{where}: cumulative_cost {cumulative!r} must be a number >= the previous one")
        previous = cumulative
        weights, slots = record["weights"], record["slots"]
        if not isinstance(weights, dict) or not isinstance(slots, dict) or set(weights) - set(slots):
            raise AnytimeModelError(f"{where}: weights and slots must be objects naming the same features")
        bits = int(record.get("bits", 18))
        if any(not isinstance(slot, int) or not 0 <= slot < (1 << bits) for slot in slots.values()):
            raise AnytimeModelError(f"{where}: every slot must be an integer in [0, 2^{bits})")
        values = list(weights.values()) + [record["intercept"]]
        if any(not isinstance(v, (int, float)) or not math.isfinite(v) for v in values):
            raise AnytimeModelError(f"{where}: weights and intercept must be finite numbers")
