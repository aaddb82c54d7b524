"""Feature groups with costs: the input of cost-sensitive group sequencing.

A group specification is JSON of this form::

    {"groups": [{"name": "words", "features": [1, 2, "3-48", "capital_run_length"], "cost": 2.5},
                {"name": "capitals", "features": ["55-57"], "cost": 1}]}

Features are given as they appear in the input: integers and inclusive ranges
``"a-b"`` are LIBSVM (or Parquet) indices as written in the file, 1-based;
other strings are feature names of named formats (CSV header names, VW names;
``"ns^name"`` for a VW feature in namespace ``ns``), hashed exactly as the
readers hash them (:mod:`polybeam.learners.hashing`). Every group needs a
unique name, at least one feature and a finite cost > 0; a feature may belong
to one group only.

The resolved :class:`GroupSpec` lists the groups' weight slots in order: the
columns of the dense design the Gram statistics are taken over. Slots the data
has but no group names are rejected by default; ``default_group`` (with its
cost) gathers them into one more group instead (:meth:`GroupSpec.with_default`).

>>> spec = GroupSpec.from_json('{"groups": [{"name": "a", "features": ["1-3"], "cost": 2},'
...                            ' {"name": "b", "features": [7], "cost": 1}]}')
>>> [group.name for group in spec.groups], spec.slots.tolist(), spec.group_of_column.tolist()
(['a', 'b'], [1, 2, 3, 7], [0, 0, 0, 1])
>>> spec.with_default([1, 2, 3, 7, 9, 12], name="rest", cost=0.5).groups[-1]
FeatureGroup(name='rest', slots=(9, 12), cost=0.5)
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from polybeam.learners.hashing import DEFAULT_BITS, feature_slot, libsvm_slot

_RANGE = re.compile(r"^\s*(\d+)\s*-\s*(\d+)\s*$")


class GroupSpecError(ValueError):
    """A group specification that cannot be used, with what to fix."""


@dataclasses.dataclass(frozen=True)
class FeatureGroup:
    """One group: its name, the weight slots of its features (in the order given) and its cost."""

    name: str
    slots: tuple[int, ...]
    cost: float
    # The features as written in the specification, one per slot (a LIBSVM index
    # as a string, or the name); empty: the slots' numbers name them.
    features: tuple[str, ...] = dataclasses.field(default=(), repr=False)

    @property
    def feature_names(self) -> tuple[str, ...]:
        return self.features if len(self.features) == len(self.slots) else tuple(str(slot) for slot in self.slots)


@dataclasses.dataclass(frozen=True)
class GroupSpec:
    """Resolved groups (see the module docstring)."""

    groups: tuple[FeatureGroup, ...]
    bits: int = DEFAULT_BITS

    def __post_init__(self):
        if not self.groups:
            raise GroupSpecError("the group specification has no groups")
        owner: dict[int, str] = {}
        for group in self.groups:
            for slot in group.slots:
                if slot in owner and owner[slot] != group.name:
                    raise GroupSpecError(
                        f"feature slot {slot} is in groups {owner[slot]!r} and {group.name!r}; "
                        "a feature may belong to one group only"
                    )
                owner[slot] = group.name

    @classmethod
    def from_json(cls, text: str | bytes | Mapping[str, Any], *, bits: int = DEFAULT_BITS, seed: int = 0) -> GroupSpec:
        """Parse and resolve a specification (JSON text or the decoded object)."""
        if isinstance(text, (str, bytes)):
            try:
                data = json.loads(text)
            except ValueError as error:
                raise GroupSpecError(f"the group specification is not valid JSON: {error}") from None
        else:
            data = text
        if not isinstance(data, Mapping) or not isinstance(data.get("groups"), list):
            raise GroupSpecError(
                'a group specification is an object with a list "groups": '
                '{"groups": [{"name": ..., "features": [...], "cost": ...}, ...]}'
            )
        names: set[str] = set()
        groups = []
        for position, entry in enumerate(data["groups"], 1):
            group = _parse_group(entry, position, bits=bits, seed=seed)
            if group.name in names:
                raise GroupSpecError(f"group name {group.name!r} appears twice; names must be unique")
            names.add(group.name)
            groups.append(group)
        return cls(tuple(groups), bits=bits)

    @classmethod
    def load(cls, path: str, *, bits: int = DEFAULT_BITS, seed: int = 0) -> GroupSpec:
        try:
            with open(path, "rb") as handle:
                text = handle.read()
        except OSError as error:
            raise GroupSpecError(f"cannot read the group specification {path}: {error}") from None
        try:
            return cls.from_json(text, bits=bits, seed=seed)
        except GroupSpecError as error:
            raise GroupSpecError(f"{path}: {error}") from None

    @property
    def slots(self) -> np.ndarray:
        """Every group's slots, group after group: the design's columns."""
        return np.array([slot for group in self.groups for slot in group.slots], dtype=np.int64)

    @property
    def group_of_column(self) -> np.ndarray:
        """The group (index) of each column."""
        return np.repeat(np.arange(len(self.groups)), [len(group.slots) for group in self.groups])

    @property
    def feature_names(self) -> list[str]:
        """Each column's feature as written in the specification (slot numbers for a default group)."""
        return [name for group in self.groups for name in group.feature_names]

    @property
    def costs(self) -> np.ndarray:
        return np.array([group.cost for group in self.groups], dtype=np.float64)

    def column_of_slot(self) -> np.ndarray:
        """A lookup of 2**bits entries: each slot's column, or -1 for a slot no group has."""
        lookup = np.full(1 << self.bits, -1, dtype=np.int64)
        lookup[self.slots] = np.arange(len(self.slots))
        return lookup

    def unassigned(self, slots_seen: Iterable[int]) -> list[int]:
        """The slots in ``slots_seen`` that no group has, ascending."""
        known = set(self.slots.tolist())
        return sorted(int(slot) for slot in set(slots_seen) if int(slot) not in known)

    def with_default(self, slots_seen: Iterable[int], *, name: str, cost: float) -> GroupSpec:
        """This spec plus a group ``name`` holding every slot seen that no group has (unchanged if none)."""
        rest = self.unassigned(slots_seen)
        if not rest:
            return self
        if name in {group.name for group in self.groups}:
            raise GroupSpecError(f"the default group's name {name!r} is already a group's name")
        _check_cost(cost, name)
        return dataclasses.replace(self, groups=self.groups + (FeatureGroup(name, tuple(rest), float(cost)),))

    def to_dict(self) -> dict[str, Any]:
        """The resolved groups (slots, not the features as written)."""
        return {
            "bits": self.bits,
            "groups": [{"name": g.name, "slots": list(g.slots), "cost": g.cost} for g in self.groups],
        }


def _parse_group(entry: Any, position: int, *, bits: int, seed: int) -> FeatureGroup:
    where = f"group {position}"
    if not isinstance(entry, Mapping):
        raise GroupSpecError(f"{where} must be an object with name, features and cost; got {entry!r}")
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        raise GroupSpecError(f"{where} needs a non-empty string name")
    where = f"group {name!r}"
    features = entry.get("features")
    if not isinstance(features, list) or not features:
        raise GroupSpecError(f"{where} needs a non-empty list of features")
    if "cost" not in entry:
        raise GroupSpecError(f"{where} needs a cost")
    _check_cost(entry["cost"], name)
    slots: dict[int, str] = {}
    for feature in features:
        for slot, written in _feature_slots(feature, where, bits=bits, seed=seed):
            slots.setdefault(slot, written)
    return FeatureGroup(name=name, slots=tuple(slots), cost=float(entry["cost"]), features=tuple(slots.values()))


def _check_cost(cost: Any, name: str) -> None:
    if isinstance(cost, bool) or not isinstance(cost, (int, float)) or not math.isfinite(cost) or cost <= 0:
        raise GroupSpecError(f"group {name!r} needs a finite cost > 0; got {cost!r}")


def _feature_slots(feature: Any, where: str, *, bits: int, seed: int) -> list[tuple[int, str]]:
    """The (slot, feature as written) pairs a specification entry stands for."""
    if isinstance(feature, bool) or isinstance(feature, float):
        raise GroupSpecError(f"{where}: feature {feature!r} is neither an index, a range 'a-b' nor a name")
    if isinstance(feature, int):
        if feature < 1:
            raise GroupSpecError(f"{where}: feature index {feature} must be >= 1 (LIBSVM indices are 1-based)")
        return [(libsvm_slot(feature, bits, seed), str(feature))]
    if not isinstance(feature, str) or not feature:
        raise GroupSpecError(f"{where}: feature {feature!r} is neither an index, a range 'a-b' nor a name")
    match = _RANGE.match(feature)
    if match:
        first, last = int(match.group(1)), int(match.group(2))
        if first < 1 or last < first:
            raise GroupSpecError(f"{where}: range {feature!r} must be 'a-b' with 1 <= a <= b")
        return [(libsvm_slot(index, bits, seed), str(index)) for index in range(first, last + 1)]
    namespace, _, name = feature.rpartition("^")
    return [(feature_slot(name, bits, namespace, seed), feature)]
