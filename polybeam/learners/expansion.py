"""Polynomial expansion of sparse batches over a set of parent monomials.

Given parents P (monomials, see :mod:`polybeam.learners.monomials`), an
example's expanded features are its base features plus every product
``x_i * m`` of a parent m present in the example (all of m's factors are) with
a base feature i of the example: the feature set S_k of apple's Algorithm 1,
restricted to the example. Products of products follow: a child that is itself
a parent is expanded in turn, up to ``max_degree``. Each monomial appears once
per example however many parents reach it (``x_a * x_b`` is reached from
parent ``x_a`` and from parent ``x_b``), because monomials are identified by
their order-free keys.

Expansion is a batch-to-batch step (numba, one call per batch), so every
learner, loss, step rule and sparsity rule works on expanded features
unchanged. It also records, for every weight slot it writes, which parent and
which base feature made it (``slot_trace``: parent index * 2**32 + factor
slot, one array so that a product costs one scattered store), which is how
apple turns the heaviest weights back into monomials when it picks the next
parents.

>>> from polybeam.learners.batch import ExampleBatch
>>> from polybeam.learners.monomials import Monomial
>>> batch = ExampleBatch.from_rows([(1.0, {3: 2.0, 5: 1.0, 7: 0.5})], bits=10)
>>> expander = Expander([Monomial.of([3])], bits=10)
>>> expanded = expander.expand(batch)
>>> sorted(expander.monomials_of(expanded)[0].items())   # doctest: +NORMALIZE_WHITESPACE
[('w3', 2.0), ('w3*w5', 2.0), ('w3*w7', 1.0), ('w3^2', 4.0), ('w5', 1.0), ('w7', 0.5)]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

import numba
import numpy as np

from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernels below)
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config_parts import check_interactions
from polybeam.learners.monomials import Monomial, extend, factor_term, product_slot

# Results of the kernel besides a row count.
NEEDS_ROOM = -1  # the output arrays are full: call again with more room
NEEDS_TABLE = -2  # one example has more monomials than its dedupe table holds

NO_PARENT = -1
# Output buffers an Expander cycles through when asked to reuse memory.
RING = 3
NO_TRACE = -1  # slot_trace of a slot no product has been written to


@numba.njit(cache=True)
def _probe(table, key):
    """The position of ``key`` in an open-addressing table (0 marks a free cell), or where it would go."""
    mask = table.shape[0] - 1
    position = np.int64(key & np.uint64(mask))
    while table[position] != np.uint64(0) and table[position] != key:
        position = (position + 1) & mask
    return position


@numba.njit(cache=True)
def build_table(keys):
    """An open-addressing table of ``keys`` (uint64, none 0) at most 1/8 full, and the index of each."""
    size = 4
    while size < 8 * len(keys):  # mostly misses are probed: a sparse table ends them at once
        size *= 2
    table = np.zeros(size, dtype=np.uint64)
    index = np.full(size, NO_PARENT, dtype=np.int64)
    for i in range(len(keys)):
        position = _probe(table, keys[i])
        table[position] = keys[i]
        index[position] = i
    return table, index


@numba.njit(cache=True, nogil=True)
def expand_rows(
    indptr,
    indices,
    values,
    parent_table,
    parent_index,
    parent_degree,
    mask,
    max_degree,
    repeat_factors,
    out_indptr,
    out_slots,
    out_values,
    out_degrees,
    slot_trace,
    record_trace,
    seen,
    seen_stamp,
):
    """Expand every row of a CSR batch; returns the number of expanded features, or a NEEDS_* code.

    ``seen`` / ``seen_stamp`` are a dedupe table reused across rows and calls
    (a cell counts as used only when its stamp is the current row's, and the
    last stamp cell counts the rows so far), so nothing is cleared per row.
    A row's monomials are listed with their key, the monomial they extend and
    the factor they added, so their factors can be walked (``repeat_factors``).
    ``out_*`` receive each row's base features first, then its products.
    """
    n_rows = indptr.shape[0] - 1
    capacity = out_slots.shape[0]
    seen_mask = seen.shape[0] - 1
    row_room = seen.shape[0] // 2
    keys = np.empty(row_room, dtype=np.uint64)
    origin = np.empty(row_room, dtype=np.int64)
    added = np.empty(row_room, dtype=np.int64)
    base_parent = np.empty(row_room, dtype=np.int64)
    has_parents = parent_table.shape[0] > 0
    parent_slots = parent_table.shape[0] - 1
    parent_mask = np.uint64(max(parent_slots, 0))
    first_stamp = seen_stamp[-1] + 1
    seen_stamp[-1] += n_rows  # also on an early return, so that a retry never sees stale cells
    nnz = 0
    out_indptr[0] = 0
    for row in range(n_rows):
        start, stop = indptr[row], indptr[row + 1]
        stamp = first_stamp + row
        first = nnz
        if stop - start > row_room:
            return NEEDS_TABLE
        # Base features as they are (the linear part of the model does not move), each
        # looked up among the parents, and entered in the dedupe table to spot a slot
        # that a row repeats.
        repeated_slot = False
        for k in range(start, stop):
            if nnz >= capacity:
                return NEEDS_ROOM
            key = factor_term(indices[k])
            out_slots[nnz] = indices[k]
            out_values[nnz] = values[k]
            out_degrees[nnz] = 1
            keys[nnz - first] = key
            origin[nnz - first] = -1
            added[nnz - first] = indices[k]
            base_parent[k - start] = NO_PARENT
            if has_parents and max_degree > 1:
                position = np.int64(key & parent_mask)
                while parent_table[position] != np.uint64(0):
                    if parent_table[position] == key:
                        base_parent[k - start] = parent_index[position]
                        break
                    position = (position + 1) & parent_slots
            cell = np.int64(key & np.uint64(seen_mask))
            while seen_stamp[cell] == stamp and seen[cell] != key:
                cell = (cell + 1) & seen_mask
            repeated_slot = repeated_slot or seen_stamp[cell] == stamp
            seen[cell] = key
            seen_stamp[cell] = stamp
            nnz += 1
        # Breadth-first over the row's monomials: a parent among them adds its children.
        # Monomials come in order of degree, and none above the parents' largest degree is a parent.
        cursor = first
        while has_parents and cursor < nnz and out_degrees[cursor] <= parent_degree:
            key = keys[cursor - first]
            degree = out_degrees[cursor]
            # Is it a parent? (The probe is written out here: a helper taking the
            # table would cost more than the lookup, once per monomial of every row.)
            parent = NO_PARENT
            if degree == 1:
                parent = base_parent[cursor - first]
            elif degree < max_degree:
                position = np.int64(key & parent_mask)
                while parent_table[position] != np.uint64(0):
                    if parent_table[position] == key:
                        parent = parent_index[position]
                        break
                    position = (position + 1) & parent_slots
            if parent != NO_PARENT:
                for k in range(start, stop):
                    if not repeat_factors and _has_factor(origin, added, cursor - first, indices[k]):
                        continue
                    # The row's base features come first, so keys[k - start] is factor_term(indices[k]).
                    child = key + keys[k - start]
                    if degree == 1 and not repeated_slot:
                        # x_a * x_b comes only from the parents x_a and x_b: the one earlier
                        # in the row makes it, so no table is needed (most children).
                        if base_parent[k - start] != NO_PARENT and k - start < cursor - first:
                            continue
                    else:
                        cell = np.int64(child & np.uint64(seen_mask))
                        fresh = True
                        while seen_stamp[cell] == stamp:
                            if seen[cell] == child:
                                fresh = False
                                break
                            cell = (cell + 1) & seen_mask
                        if not fresh:
                            continue
                        seen[cell] = child
                        seen_stamp[cell] = stamp
                    if nnz - first >= row_room:
                        return NEEDS_TABLE
                    if nnz >= capacity:
                        return NEEDS_ROOM
                    slot = product_slot(child, mask)
                    out_slots[nnz] = slot
                    out_values[nnz] = out_values[cursor] * values[k]
                    out_degrees[nnz] = degree + 1
                    keys[nnz - first] = child
                    origin[nnz - first] = cursor - first
                    added[nnz - first] = indices[k]
                    if record_trace:
                        slot_trace[slot] = (parent << 32) | np.int64(indices[k])
                    nnz += 1
            cursor += 1
        out_indptr[row + 1] = nnz
    return nnz


@numba.njit(cache=True)
def _has_factor(origin, added, position, slot):
    """Whether ``slot`` is a factor of the row's monomial at ``position`` (walks its chain of extensions)."""
    while position >= 0:
        if added[position] == slot:
            return True
        position = origin[position]
    return False


class Expander:
    """Expands batches over a fixed set of parent monomials (see the module docstring).

    ``repeat_factors=False`` never multiplies a monomial by one of its own
    factors (x*x = x for binary features, so those products only duplicate);
    keep the default for real-valued features, where ``x_a^2`` is a feature of
    its own.
    """

    def __init__(
        self,
        parents: Iterable[Monomial] = (),
        *,
        bits: int,
        max_degree: int = 6,
        repeat_factors: bool = True,
        trace: bool = True,
    ):
        if max_degree < 1:
            raise ValueError(f"max_degree must be at least 1; got {max_degree}")
        self.parents: list[Monomial] = []
        self.bits = bits
        self.max_degree = max_degree
        self.repeat_factors = repeat_factors
        self.add_parents(parents)
        # Prediction needs no trace (and must not share one between threads).
        self.slot_trace = np.full(1 << bits if trace else 0, NO_TRACE, dtype=np.int64)
        self._seen = np.zeros(256, dtype=np.uint64)
        self._stamps = np.zeros(257, dtype=np.int64)  # the last cell counts rows so far
        self.last_degrees = np.zeros(0, dtype=np.int8)
        self._ratio = 2.0  # expanded / base features in the last batch
        self._ring: list = []  # reusable output buffers (see expand)
        self._ring_next = 0

    def add_parents(self, parents: Iterable[Monomial]) -> None:
        """Make more monomials parents (the ones already parents keep their index in the trace)."""
        known = set(self.parents)
        self.parents += [parent for parent in dict.fromkeys(parents) if parent not in known]
        keys = np.array([parent.key for parent in self.parents], dtype=np.uint64)
        self._parent_degree = max((parent.degree for parent in self.parents), default=0)
        if len(keys):
            self._table, self._index = build_table(keys)
        else:
            self._table, self._index = np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64)

    def expand(self, batch: ExampleBatch, *, reuse: bool = False) -> ExampleBatch:
        """``batch`` with every example's products over the parents added.

        The degree of every expanded feature is left in ``last_degrees``. With
        ``reuse`` the result lives in one of :data:`RING` output buffers that
        later calls with ``reuse`` write again: it stays valid for the next
        ``RING - 1`` such calls. (Fresh memory costs a page fault per 4 KiB on
        first touch, more than expanding into it; a learner consumes each
        expanded batch at once.)
        """
        if batch.bits != self.bits:
            raise ValueError(f"batch is hashed into {batch.bits} bits but the expander uses {self.bits}")
        # Room for the expansion ratio seen so far (and a margin), so that a retry of the
        # whole batch with more room is rare.
        room = max(16, int(batch.nnz * self._ratio * 1.25) + 16)
        while True:
            indptr, slots, values, degrees = self._output(len(batch) + 1, room, batch.indices.dtype, reuse)
            result = expand_rows(
                batch.indptr,
                batch.indices,
                batch.values,
                self._table,
                self._index,
                self._parent_degree,
                (1 << self.bits) - 1,
                self.max_degree,
                self.repeat_factors,
                indptr,
                slots,
                values,
                degrees,
                self.slot_trace,
                len(self.slot_trace) > 0,
                self._seen,
                self._stamps,
            )
            if result == NEEDS_ROOM:
                room = 2 * len(slots)
            elif result == NEEDS_TABLE:
                self._grow_dedupe_table()
            else:
                if reuse:
                    self._ring_next = (self._ring_next + 1) % RING
                self.last_degrees = degrees[:result]
                if batch.nnz:
                    self._ratio = max(1.0, result / batch.nnz)
                return ExampleBatch(
                    labels=batch.labels,
                    weights=batch.weights,
                    indptr=indptr,
                    indices=slots[:result],
                    values=values[:result],
                    bits=batch.bits,
                    names=batch.names,
                )

    def _output(self, rows: int, room: int, index_dtype, reuse: bool):
        """Output arrays for one expansion: fresh ones, or the next ring buffer grown to fit."""
        if not reuse:
            return (
                np.empty(rows, dtype=np.int64),
                np.empty(room, dtype=index_dtype),
                np.empty(room, dtype=np.float64),
                np.empty(room, dtype=np.int8),
            )
        while len(self._ring) <= self._ring_next:
            self._ring.append(None)
        buffer = self._ring[self._ring_next]
        if buffer is None or len(buffer[0]) < rows or len(buffer[1]) < room or buffer[1].dtype != index_dtype:
            # Grown with a margin, so that slowly growing batches do not reallocate every time.
            size = max(room, int(1.5 * len(buffer[1])) if buffer is not None else 0)
            buffer = (
                np.empty(max(rows, len(buffer[0]) if buffer is not None else 0), dtype=np.int64),
                np.empty(size, dtype=index_dtype),
                np.empty(size, dtype=np.float64),
                np.empty(size, dtype=np.int8),
            )
            self._ring[self._ring_next] = buffer
        return buffer[0][:rows], buffer[1], buffer[2], buffer[3]

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_ring"], state["_ring_next"] = [], 0  # scratch memory, not state
        return state

    def _grow_dedupe_table(self) -> None:
        rows_so_far = self._stamps[-1]
        self._seen = np.zeros(2 * len(self._seen), dtype=np.uint64)
        self._stamps = np.zeros(len(self._seen) + 1, dtype=np.int64)
        self._stamps[-1] = rows_so_far

    def traced_product(self, slot: int) -> Monomial | None:
        """The product last written to ``slot``, or None if none was (or no trace is kept)."""
        trace = int(self.slot_trace[slot]) if len(self.slot_trace) else NO_TRACE
        if trace == NO_TRACE:
            return None
        return self.parents[trace >> 32].times(trace & 0xFFFFFFFF)

    def monomial_of_slot(self, slot: int, degree: int) -> Monomial:
        """The monomial that was last written to ``slot`` (degree 1: the base feature itself)."""
        if degree == 1:
            return Monomial.of([slot])
        product = self.traced_product(slot)
        if product is None:
            raise KeyError(f"no product has been written to slot {slot}")
        return product

    def monomials_of(self, expanded: ExampleBatch, names: Mapping[int, str] | None = None) -> list[dict[str, float]]:
        """The last expanded batch's examples as {monomial name: value} (for inspection and tests; slow)."""
        rows = []
        for row in range(len(expanded)):
            entries = {}
            for k in range(expanded.indptr[row], expanded.indptr[row + 1]):
                monomial = self.monomial_of_slot(int(expanded.indices[k]), int(self.last_degrees[k]))
                entries[monomial.name(names)] = float(expanded.values[k])
            rows.append(entries)
        return rows


@numba.njit(cache=True)
def _all_products_room(indptr, degree, repeat_factors):
    """Output size of :func:`expand_all` (base features and every product up to ``degree``)."""
    total = 0
    for row in range(indptr.shape[0] - 1):
        n = indptr[row + 1] - indptr[row]
        count = 1.0
        for d in range(1, degree + 1):
            # Multisets (with repeats) or sets (without) of d positions out of n.
            count = count * (n + d - 1 if repeat_factors else n - d + 1) / d
            total += max(np.int64(round(count)), 0)
    return total


@numba.njit(cache=True)
def _width(mask):
    """field_width(bits) for mask = 2**bits - 1."""
    width = np.int64(1)
    while (np.int64(1) << width) <= mask + 1:
        width += 1
    return width


@numba.njit(cache=True, nogil=True)
def expand_all(
    indptr, indices, values, degree, repeat_factors, mask, out_indptr, out_slots, out_values, out_degrees, slot_trace
):
    """Every product of up to ``degree`` (2 or 3) of a row's base features: VW's -q / --cubic.

    Products are enumerated over positions i <= j (<= k) (i < j < k without
    repeated factors), so each appears once; their slots come from the same
    order-free keys as apple's, so a pair in the quadratic model and the same
    pair found by apple share a slot. Unless ``slot_trace`` is empty, each
    product's factors are packed into it (:func:`pack_factors`).
    """
    trace = slot_trace.shape[0] > 0
    width = _width(mask)
    nnz = 0
    out_indptr[0] = 0
    for row in range(indptr.shape[0] - 1):
        start, stop = indptr[row], indptr[row + 1]
        for i in range(start, stop):
            out_slots[nnz] = indices[i]
            out_values[nnz] = values[i]
            out_degrees[nnz] = 1
            nnz += 1
        step = 0 if repeat_factors else 1
        for i in range(start, stop):
            key_i = factor_term(indices[i])
            for j in range(i + step, stop):
                key_ij = extend(key_i, indices[j])
                value_ij = values[i] * values[j]
                slot = product_slot(key_ij, mask)
                out_slots[nnz] = slot
                out_values[nnz] = value_ij
                out_degrees[nnz] = 2
                if trace:
                    slot_trace[slot] = (np.int64(indices[i]) + 1) | ((np.int64(indices[j]) + 1) << width)
                nnz += 1
                if degree >= 3:
                    for k in range(j + step, stop):
                        slot = product_slot(extend(key_ij, indices[k]), mask)
                        out_slots[nnz] = slot
                        out_values[nnz] = value_ij * values[k]
                        out_degrees[nnz] = 3
                        if trace:
                            slot_trace[slot] = (
                                (np.int64(indices[i]) + 1)
                                | ((np.int64(indices[j]) + 1) << width)
                                | ((np.int64(indices[k]) + 1) << (2 * width))
                            )
                        nnz += 1
        out_indptr[row + 1] = nnz
    return nnz


def expand_all_products(
    batch: ExampleBatch, degree: int, *, repeat_factors: bool = True, slot_trace: np.ndarray | None = None
) -> tuple[ExampleBatch, np.ndarray]:
    """``batch`` with every pair (``degree=2``, quadratic) or also every triple (3, cubic) of base features.

    Returns the expanded batch and each feature's degree. ``slot_trace``
    (from :func:`new_product_trace`) receives each product's packed factors.
    """
    if degree not in (2, 3):
        raise ValueError(f"all-products expansion is quadratic (2) or cubic (3); got degree {degree}")
    room = int(_all_products_room(batch.indptr, degree, repeat_factors))
    indptr = np.empty(len(batch) + 1, dtype=np.int64)
    slots = np.empty(room, dtype=batch.indices.dtype)
    values = np.empty(room, dtype=np.float64)
    degrees = np.empty(room, dtype=np.int8)
    trace = np.zeros(0, dtype=np.int64) if slot_trace is None else slot_trace
    nnz = expand_all(
        batch.indptr,
        batch.indices,
        batch.values,
        degree,
        repeat_factors,
        (1 << batch.bits) - 1,
        indptr,
        slots,
        values,
        degrees,
        trace,
    )
    expanded = ExampleBatch(
        labels=batch.labels,
        weights=batch.weights,
        indptr=indptr,
        indices=slots[:nnz],
        values=values[:nnz],
        bits=batch.bits,
        names=batch.names,
    )
    return expanded, degrees[:nnz]


@numba.njit(cache=True, nogil=True)
def expand_interactions(
    indptr,
    indices,
    values,
    namespaces,
    interactions,
    repeat_factors,
    mask,
    write,
    out_indptr,
    out_slots,
    out_values,
    out_degrees,
    slot_trace,
):
    """Base features plus the products VW's ``-q ab`` / ``--cubic abc`` make, each once per row.

    ``interactions`` is an (m, 3) uint8 array of sorted namespace bytes, 0 in
    the last column for a pair. A product takes one feature from each listed
    namespace; within one namespace listed twice, positions ascend (i <= j, or
    i < j without repeated factors), so each product appears once. With
    ``write`` False only counts (the output size); returns the count. Unless
    ``slot_trace`` is empty, written products' factors are packed into it.
    """
    trace = write and slot_trace.shape[0] > 0
    width = _width(mask)
    nnz = 0
    if write:
        out_indptr[0] = 0
    step = 0 if repeat_factors else 1
    for row in range(indptr.shape[0] - 1):
        start, stop = indptr[row], indptr[row + 1]
        for i in range(start, stop):
            if write:
                out_slots[nnz] = indices[i]
                out_values[nnz] = values[i]
                out_degrees[nnz] = 1
            nnz += 1
        for m in range(interactions.shape[0]):
            first, second, third = interactions[m, 0], interactions[m, 1], interactions[m, 2]
            for i in range(start, stop):
                if namespaces[i] != first:
                    continue
                key_i = factor_term(indices[i])
                j_from = i + step if second == first else start
                for j in range(j_from, stop):
                    if namespaces[j] != second:
                        continue
                    key_ij = extend(key_i, indices[j])
                    if third == 0:
                        if write:
                            slot = product_slot(key_ij, mask)
                            out_slots[nnz] = slot
                            out_values[nnz] = values[i] * values[j]
                            out_degrees[nnz] = 2
                            if trace:
                                slot_trace[slot] = (np.int64(indices[i]) + 1) | ((np.int64(indices[j]) + 1) << width)
                        nnz += 1
                        continue
                    k_from = j + step if third == second else start
                    for k in range(k_from, stop):
                        if namespaces[k] != third:
                            continue
                        if write:
                            slot = product_slot(extend(key_ij, indices[k]), mask)
                            out_slots[nnz] = slot
                            out_values[nnz] = values[i] * values[j] * values[k]
                            out_degrees[nnz] = 3
                            if trace:
                                slot_trace[slot] = (
                                    (np.int64(indices[i]) + 1)
                                    | ((np.int64(indices[j]) + 1) << width)
                                    | ((np.int64(indices[k]) + 1) << (2 * width))
                                )
                        nnz += 1
        if write:
            out_indptr[row + 1] = nnz
    return nnz


def interaction_array(interactions) -> np.ndarray:
    """Interactions like ``("ab", "abc")`` as the kernel's (m, 3) array of sorted namespace bytes."""
    rows = sorted({tuple(sorted(text.encode("utf-8"))) for text in interactions})
    array = np.zeros((len(rows), 3), dtype=np.uint8)
    for m, row in enumerate(rows):
        array[m, : len(row)] = row
    return array


def expand_namespace_interactions(
    batch: ExampleBatch, interactions, *, repeat_factors: bool = True, slot_trace: np.ndarray | None = None
) -> tuple[ExampleBatch, np.ndarray]:
    """``batch`` with the products of the given namespace interactions (see :func:`expand_interactions`).

    Returns the expanded batch and each feature's degree; ``slot_trace`` as in
    :func:`expand_all_products`.
    """
    if batch.namespaces is None:
        raise ValueError(
            "namespace interactions need to know each feature's namespace: read VW text input "
            "(LIBSVM, CSV, JSON Lines, Parquet and Avro features have none), or expand all pairs / triples instead"
        )
    table = interaction_array(interactions)
    mask = (1 << batch.bits) - 1
    unused = np.empty(0, dtype=np.int64)
    room = expand_interactions(
        batch.indptr,
        batch.indices,
        batch.values,
        batch.namespaces,
        table,
        repeat_factors,
        mask,
        False,
        unused,
        unused.astype(batch.indices.dtype),
        unused.astype(np.float64),
        unused.astype(np.int8),
        unused,
    )
    indptr = np.empty(len(batch) + 1, dtype=np.int64)
    slots = np.empty(room, dtype=batch.indices.dtype)
    values = np.empty(room, dtype=np.float64)
    degrees = np.empty(room, dtype=np.int8)
    trace = unused if slot_trace is None else slot_trace
    expand_interactions(
        batch.indptr,
        batch.indices,
        batch.values,
        batch.namespaces,
        table,
        repeat_factors,
        mask,
        True,
        indptr,
        slots,
        values,
        degrees,
        trace,
    )
    expanded = ExampleBatch(
        labels=batch.labels,
        weights=batch.weights,
        indptr=indptr,
        indices=slots,
        values=values,
        bits=batch.bits,
        names=batch.names,
    )
    return expanded, degrees


def field_width(bits: int) -> int:
    """Bits per packed factor: enough for slot + 1 up to 2**bits (0 marks no factor)."""
    return bits + 1


def new_product_trace(bits: int, degree: int) -> np.ndarray:
    """A trace of all-products factors for ``2**bits`` slots, or an empty array when ``degree`` factors do not fit 63 bits."""
    if degree * field_width(bits) > 63:
        return np.zeros(0, dtype=np.int64)
    return np.zeros(1 << bits, dtype=np.int64)


def unpack_factors(packed: np.ndarray, bits: int) -> np.ndarray:
    """Packed traces (0: none) as an (n, 3) matrix of factor slots, -1 where there is no factor.

    >>> unpack_factors(np.array([(3 + 1) | ((7 + 1) << 11)]), bits=10).tolist()
    [[3, 7, -1]]
    """
    width = field_width(bits)
    fields = np.stack([(packed >> (width * f)) & ((1 << width) - 1) for f in range(3)], axis=1)
    return fields - 1


EXPANSION_KINDS = ("apple", "quadratic", "cubic")


@dataclasses.dataclass(frozen=True)
class Expansion:
    """How a model expands its input, as recorded in the model file.

    ``apple``: products over the recorded ``parents``; ``quadratic`` /
    ``cubic``: every pair / triple of base features, or with ``interactions``
    (e.g. ``("ab", "abc")``, VW's ``-q ab --cubic abc``) only the products of
    one feature from each listed namespace (keyed on the namespace's first
    byte, as VW does).
    """

    kind: str
    parents: tuple[Monomial, ...] = ()
    max_degree: int = 6
    repeat_factors: bool = True
    interactions: tuple[str, ...] = ()

    def __post_init__(self):
        if self.kind not in EXPANSION_KINDS:
            raise ValueError(f"unknown expansion {self.kind!r}; choose from {', '.join(EXPANSION_KINDS)}")
        object.__setattr__(self, "interactions", check_interactions(self.interactions, self.kind))

    def expand(self, batch: ExampleBatch, *, slot_trace: np.ndarray | None = None) -> ExampleBatch:
        """``batch`` expanded exactly as training expanded it (safe to call from several threads).

        quadratic / cubic: ``slot_trace`` (:func:`new_product_trace`) receives the products' factors.
        """
        if self.kind == "apple":
            expander = Expander(
                self.parents,
                bits=batch.bits,
                max_degree=self.max_degree,
                repeat_factors=self.repeat_factors,
                trace=False,
            )
            return expander.expand(batch)
        if self.interactions:
            return expand_namespace_interactions(
                batch, self.interactions, repeat_factors=self.repeat_factors, slot_trace=slot_trace
            )[0]
        return expand_all_products(
            batch, 2 if self.kind == "quadratic" else 3, repeat_factors=self.repeat_factors, slot_trace=slot_trace
        )[0]

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "parents": [list(parent.factors) for parent in self.parents],
            "max_degree": self.max_degree,
            "repeat_factors": self.repeat_factors,
            "interactions": list(self.interactions),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Expansion:
        return cls(
            kind=data["kind"],
            parents=tuple(Monomial.of(factors) for factors in data.get("parents", [])),
            max_degree=int(data.get("max_degree", 6)),
            repeat_factors=bool(data.get("repeat_factors", True)),
            interactions=tuple(data.get("interactions", ())),
        )
