"""Monomials over hashed base features: order-free identities, weight slots and names.

A monomial is a *multiset* of base-feature slots: ``x12*x57`` and ``x57*x12``
are one monomial with one weight; ``x12*x12`` (the square of a real-valued
feature) is another, of degree 2. Polynomial expansion (``apple``, and the
all-pairs / all-triples baselines) identifies a monomial by its **key**: the
sum, modulo 2**64, of a 64-bit mix of each factor's slot. Addition commutes,
so the key does not depend on the order in which the factors were multiplied
(VW's ``--stage_poly`` hashes the path by which a product was reached, so one
product can land in several slots); multiplying by one more factor adds one
term, so a parent's children cost O(1) each to identify; a factor that repeats
adds its term again, so multisets keep their multiplicities.

Weight slots: a base feature keeps its own slot, so that expansion leaves the
linear part of the model where it was; a product of two or more factors goes
to ``finish(key) & mask``, a second mix of the key. Keys of distinct monomials
collide with probability about 2**-64 per pair; their slots collide like any
hashed features.

>>> m = Monomial.of([57, 12])
>>> m == Monomial.of([12, 57]), m.degree, m.name()
(True, 2, 'w12*w57')
>>> Monomial.of([12, 12]).name({12: "age"}), bool(Monomial.of([12, 12]).key == m.key)
('age^2', False)
>>> Monomial.of([12]).slot(bits=18), m.slot(bits=18) == product_slot(m.key, (1 << 18) - 1)
(12, True)
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping

import numba
import numpy as np

from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernels below)

# splitmix64's constants (Steele, Lea and Flood): a cheap mix whose outputs of
# consecutive inputs look independent, which is what a sum of them needs.
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)
_SHIFT_1 = np.uint64(30)
_SHIFT_2 = np.uint64(27)
_SHIFT_3 = np.uint64(31)
# Keys are offset by a different odd constant before the final mix, so that a
# product's slot is not the base slot of any single factor's mix.
_PRODUCT_SALT = np.uint64(0xD6E8FEB86659FD93)


@numba.njit(cache=True)
def _splitmix(z):
    z = (z ^ (z >> _SHIFT_1)) * _MIX_1
    z = (z ^ (z >> _SHIFT_2)) * _MIX_2
    return z ^ (z >> _SHIFT_3)


@numba.njit(cache=True)
def factor_term(slot):
    """The key term of one factor: a 64-bit mix of its slot."""
    return _splitmix(np.uint64(slot) + _GOLDEN)


@numba.njit(cache=True)
def extend(key, slot):
    """The key of the monomial ``key`` times the base feature in ``slot`` (wraps modulo 2**64)."""
    return np.uint64(key) + factor_term(slot)


@numba.njit(cache=True)
def key_of_factors(factors):
    """The key of the monomial with these factor slots, in any order (an int array)."""
    key = np.uint64(0)
    for slot in factors:
        key = extend(key, slot)
    return key


@numba.njit(cache=True)
def product_slot(key, mask):
    """The weight slot of a product of two or more factors with this key."""
    return np.int64(_splitmix(np.uint64(key) ^ _PRODUCT_SALT) & np.uint64(mask))


@dataclasses.dataclass(frozen=True, order=True)
class Monomial:
    """A product of base features, as the sorted tuple of its factors' slots (repeats allowed)."""

    factors: tuple[int, ...]

    def __post_init__(self):
        if not self.factors:
            raise ValueError("a monomial needs at least one factor")
        if any(slot < 0 for slot in self.factors):
            raise ValueError(f"factor slots are non-negative; got {self.factors}")
        if list(self.factors) != sorted(self.factors):
            raise ValueError("factors must be sorted; build monomials with Monomial.of")

    @classmethod
    def of(cls, factors: Iterable[int]) -> Monomial:
        """The monomial of these factor slots, in any order."""
        return cls(tuple(sorted(int(slot) for slot in factors)))

    @property
    def degree(self) -> int:
        return len(self.factors)

    @property
    def key(self) -> np.uint64:
        """The order-free identity (see the module docstring).

        A numpy uint64, which the numba helpers take as it is (a Python int of
        2**63 or more would not fit their int64 arguments).
        """
        return np.uint64(key_of_factors(np.asarray(self.factors, dtype=np.int64)))

    def times(self, slot: int) -> Monomial:
        """This monomial multiplied by the base feature in ``slot``."""
        return Monomial.of((*self.factors, slot))

    def slot(self, bits: int) -> int:
        """The weight slot: a base feature's own slot, else the hashed key."""
        if self.degree == 1:
            return self.factors[0]
        return int(product_slot(self.key, (1 << bits) - 1))

    def name(self, names: Mapping[int, str] | None = None) -> str:
        """``w12*w57``, or with feature names for the slots (``age^2*income``)."""
        names = names or {}
        parts = []
        for slot, power in sorted(Counter(self.factors).items()):
            base = names.get(slot, f"w{slot}")
            parts.append(base if power == 1 else f"{base}^{power}")
        return "*".join(parts)


def _frozen(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


# The empty table's arrays, shared by every table without products (read-only).
_NO_SLOTS = _frozen(np.zeros(0, dtype=np.int64))
_NO_OFFSETS = _frozen(np.zeros(1, dtype=np.int64))


class FactorTable(Mapping):
    """Read-only mapping of weight slot -> factor slots of the product it holds, kept as three arrays.

    A polynomial model names up to one product per weight slot (hundreds of
    thousands with 18 bits): as flat arrays (``slots`` ascending, ``offsets``
    into ``factors``) it saves and loads in milliseconds, and lookups are a
    binary search.

    >>> table = FactorTable.from_mapping({9: (1, 2), 4: (3, 3, 5)})
    >>> table[9], list(table), len(table), 7 in table
    ((1, 2), [4, 9], 2, False)
    >>> table == {4: (3, 3, 5), 9: (1, 2)}
    True
    """

    def __init__(self, slots: np.ndarray, offsets: np.ndarray, factors: np.ndarray):
        self.slots = np.asarray(slots, dtype=np.int64)
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.factors = np.asarray(factors, dtype=np.int64)
        if len(self.offsets) != len(self.slots) + 1 or (len(self.offsets) and self.offsets[-1] != len(self.factors)):
            raise ValueError("factor table offsets do not match its slots and factors")
        if np.any(np.diff(self.slots) <= 0):
            raise ValueError("factor table slots must be distinct and ascending")

    @classmethod
    def empty(cls) -> FactorTable:
        """No products (every linear model's table: made without the checks, once per model)."""
        table = cls.__new__(cls)
        table.slots, table.offsets, table.factors = _NO_SLOTS, _NO_OFFSETS, _NO_SLOTS
        return table

    @classmethod
    def from_mapping(cls, mapping: Mapping[int, Iterable[int]]) -> FactorTable:
        if isinstance(mapping, FactorTable):
            return mapping
        if not mapping:  # most models (every linear one): no products
            return cls.empty()
        items = sorted((int(slot), tuple(sorted(int(f) for f in factors))) for slot, factors in mapping.items())
        lengths = [len(factors) for _, factors in items]
        return cls(
            np.array([slot for slot, _ in items], dtype=np.int64),
            np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).astype(np.int64),
            np.array([f for _, factors in items for f in factors], dtype=np.int64),
        )

    @classmethod
    def from_products(
        cls, slots: np.ndarray, parents: list[Monomial], parent_index: np.ndarray, factor: np.ndarray
    ) -> FactorTable:
        """Products ``parents[parent_index[i]] * x_factor[i]`` in ``slots[i]`` (vectorised)."""
        if not len(slots):
            return cls.empty()
        widest = max(parent.degree for parent in parents) + 1
        parent_factors = np.full((len(parents), widest), -1, dtype=np.int64)
        for i, parent in enumerate(parents):
            parent_factors[i, : parent.degree] = parent.factors
        rows = parent_factors[parent_index]
        rows[:, -1] = factor
        return cls.from_matrix(slots, rows)

    @classmethod
    def from_matrix(cls, slots: np.ndarray, factors: np.ndarray) -> FactorTable:
        """Products in ``slots[i]`` with the factor slots of row i of ``factors`` (-1: no factor; any order)."""
        if not len(slots):
            return cls.empty()
        order = np.argsort(slots, kind="stable")
        padding = np.iinfo(np.int64).max  # sorts last, then dropped
        rows = np.where(factors[order] < 0, padding, factors[order])
        rows.sort(axis=1)
        present = rows != padding
        offsets = np.concatenate([[0], np.cumsum(present.sum(axis=1))]).astype(np.int64)
        return cls(np.asarray(slots)[order], offsets, rows[present])

    def __getitem__(self, slot: int) -> tuple[int, ...]:
        i = int(np.searchsorted(self.slots, slot))
        if i == len(self.slots) or self.slots[i] != slot:
            raise KeyError(slot)
        return tuple(int(f) for f in self.factors[self.offsets[i] : self.offsets[i + 1]])

    def __iter__(self):
        return iter(self.slots.tolist())

    def __len__(self) -> int:
        return len(self.slots)

    def __contains__(self, slot) -> bool:
        i = int(np.searchsorted(self.slots, slot))
        return i < len(self.slots) and self.slots[i] == slot

    def __repr__(self) -> str:
        return f"FactorTable({len(self)} products)"
