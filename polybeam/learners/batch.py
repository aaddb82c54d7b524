"""ExampleBatch: the one representation of examples that flows through polybeam.

A batch holds a few thousand examples as CSR arrays over hashed feature slots.
Readers emit batches as single PCollection elements, learners consume them and
predictors return one array per batch, so per-element Beam overhead is paid per
batch rather than per example.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace

import numpy as np

INDEX_DTYPE = np.int32
VALUE_DTYPE = np.float64


@dataclass(frozen=True, eq=False)
class ExampleBatch:
    """Examples as CSR arrays over hashed feature slots in ``[0, 2**bits)``.

    Parameters
    ----------
    labels : float64 array, shape (n,)
        One label per example (regression target, +-1 / 0-1 class, or class id).
    weights : float64 array, shape (n,)
        Importance weight per example (1.0 unless the input says otherwise).
    indptr : int64 array, shape (n + 1,)
        Example ``i`` owns ``indices[indptr[i]:indptr[i + 1]]``.
    indices : int32 array, shape (nnz,)
        Hashed feature slots.
    values : float64 array, shape (nnz,)
        Feature values.
    bits : int
        Size of the hashed feature space, ``2**bits`` slots.
    namespaces : uint8 array, shape (nnz,), optional
        For each feature, the first byte of its VW namespace (``b" "`` for the
        default namespace), as VW's ``-q`` interactions key on it.
    row_ids : int64 array, shape (n,), optional
        Where each example sits in its source: the byte offset of its line in
        the (decompressed) text, or its row number in a Parquet file.
    source : str, optional
        The file the batch was read from.
    tags : object array of str or None, shape (n,), optional
        Per-example IDs, when the input has any: VW's ``'tag``, or the value
        of a CSV/Parquet ID column (``id_column``). Predictions carry them.
    names : mapping of slot -> feature name, optional
        Names of the features seen in this batch, when the format knows them.
    key_codes : int32 array, shape (n,), optional
        Each example's key (``--key namespace:NAME`` or ``column:NAME``) as an
        index into ``key_names``; keys are kept as codes so that splitting a
        batch by key costs no Python per example.
    key_names : tuple of str, optional
        The distinct keys ``key_codes`` point to.
    timestamps : float64 array, shape (n,), optional
        Each example's event time in seconds since the epoch (``--timestamp
        column:NAME``), which puts it in event-time windows
        (:mod:`polybeam.learners.windows`).

    Examples
    --------
    >>> batch = ExampleBatch.from_rows([(1.0, {3: 1.0, 7: 2.0}), (-1.0, {3: 0.5})])
    >>> len(batch), batch.nnz
    (2, 3)
    >>> batch.row(0)
    (array([3, 7], dtype=int32), array([1., 2.]))
    >>> batch.take([1]).labels
    array([-1.])
    """

    labels: np.ndarray
    weights: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    bits: int = 18
    namespaces: np.ndarray | None = None
    row_ids: np.ndarray | None = None
    source: str | None = None
    tags: np.ndarray | None = None
    names: Mapping[int, str] | None = field(default=None)
    key_codes: np.ndarray | None = None
    key_names: tuple[str, ...] = ()
    timestamps: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.labels)
        if len(self.weights) != n or len(self.indptr) != n + 1:
            raise ValueError(
                f"inconsistent batch: {n} labels, {len(self.weights)} weights, "
                f"{len(self.indptr)} indptr entries (need labels == weights == indptr - 1)"
            )
        nnz = int(self.indptr[-1]) if len(self.indptr) else 0
        if len(self.indices) != nnz or len(self.values) != nnz:
            raise ValueError(
                f"inconsistent batch: indptr ends at {nnz} but there are "
                f"{len(self.indices)} indices and {len(self.values)} values"
            )
        for name in ("row_ids", "tags", "key_codes", "timestamps"):
            extra = getattr(self, name)
            if extra is not None and len(extra) != n:
                raise ValueError(f"batch {name} has {len(extra)} entries for {n} examples")
        if self.namespaces is not None and len(self.namespaces) != nnz:
            raise ValueError(f"batch namespaces has {len(self.namespaces)} entries for {nnz} features")

    def __reduce__(self):
        """Pickled compactly, since a runner's shuffle moves batches as pickles: weights that are all 1 are
        not written, nor every row's slots when all rows have the same ones (a table of numbers' columns:
        a third of a CSV row's bytes). Unpickling gives back equal arrays of the same types.

        >>> import pickle
        >>> batch = ExampleBatch.from_rows([(1.0, {3: 1.0, 7: 2.0}), (0.0, {3: 0.5, 7: 1.0})])
        >>> again = pickle.loads(pickle.dumps(batch))
        >>> again.indices.tolist(), again.indptr.tolist(), again.weights.tolist()
        ([3, 7, 3, 7], [0, 2, 4], [1.0, 1.0])
        """
        state = {name: getattr(self, name) for name in _FIELD_NAMES}
        n = len(self.labels)
        if n and self.weights.dtype == np.float64 and bool((self.weights == 1.0).all()):
            state["weights"] = None
        width = int(self.indptr[1] - self.indptr[0]) if n else 0
        if (
            width
            and self.indptr.dtype == np.int64
            and self.indices.dtype == INDEX_DTYPE
            and int(self.indptr[0]) == 0
            and len(self.indices) == n * width
            and bool((np.diff(self.indptr) == width).all())
            and bool((self.indices.reshape(n, width) == self.indices[:width]).all())
        ):
            state["indptr"] = None
            state["indices"] = self.indices[:width].copy()  # (the slots of every row)
        return _unpickled_batch, (n, state)

    # -- construction -------------------------------------------------------

    @classmethod
    def empty(cls, bits: int = 18) -> ExampleBatch:
        """A batch of no examples."""
        return cls(
            labels=np.zeros(0),
            weights=np.zeros(0),
            indptr=np.zeros(1, dtype=np.int64),
            indices=np.zeros(0, dtype=INDEX_DTYPE),
            values=np.zeros(0, dtype=VALUE_DTYPE),
            bits=bits,
        )

    @classmethod
    def from_rows(
        cls,
        rows: Iterable[tuple[float, Mapping[int, float]]],
        *,
        bits: int = 18,
        weights: Iterable[float] | None = None,
    ) -> ExampleBatch:
        """Build a batch from ``(label, {slot: value})`` pairs (slow; for tests and docs)."""
        labels, indptr, indices, values = [], [0], [], []
        for label, features in rows:
            labels.append(float(label))
            for slot, value in features.items():
                indices.append(int(slot))
                values.append(float(value))
            indptr.append(len(indices))
        n = len(labels)
        return cls(
            labels=np.asarray(labels, dtype=np.float64),
            weights=np.ones(n) if weights is None else np.asarray(list(weights), dtype=np.float64),
            indptr=np.asarray(indptr, dtype=np.int64),
            indices=np.asarray(indices, dtype=INDEX_DTYPE),
            values=np.asarray(values, dtype=VALUE_DTYPE),
            bits=bits,
        )

    @classmethod
    def from_slot_matrix(cls, matrix, labels, *, bits: int = 18, weights=None) -> ExampleBatch:
        """Build a batch from a SciPy sparse matrix of shape ``(n, 2**bits)`` whose columns are slots
        (the inverse of :meth:`to_csr`; column 0 is the bias slot).

        >>> batch = ExampleBatch.from_rows([(1.0, {3: 1.0, 7: 2.0})], bits=4)
        >>> ExampleBatch.from_slot_matrix(batch.to_csr(), batch.labels, bits=4).indices.tolist()
        [3, 7]
        """
        matrix = matrix.tocsr()
        if matrix.shape[1] != 1 << bits:
            raise ValueError(
                f"a slot matrix of {bits} bits has {1 << bits} columns, not {matrix.shape[1]}; "
                "for a matrix of features use polybeam.learners.arrays.batch_from_arrays"
            )
        n = matrix.shape[0]
        return cls(
            labels=np.asarray(labels, dtype=np.float64),
            weights=np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64),
            indptr=np.asarray(matrix.indptr, dtype=np.int64),
            indices=np.asarray(matrix.indices, dtype=INDEX_DTYPE),
            values=np.asarray(matrix.data, dtype=VALUE_DTYPE),
            bits=bits,
        )

    @classmethod
    def concat(cls, batches: Iterable[ExampleBatch]) -> ExampleBatch:
        """Join batches into one; the optional arrays survive only if all have them (keys: their codes
        renumbered into the union of the batches' key names).

        >>> a = replace(ExampleBatch.from_rows([(1.0, {})]), key_codes=np.array([0], np.int32), key_names=("x",))
        >>> b = replace(ExampleBatch.from_rows([(2.0, {})] * 2), key_codes=np.array([1, 0], np.int32),
        ...             key_names=("x", "y"))
        >>> ExampleBatch.concat([b, a]).keys.tolist()
        ['y', 'x', 'x']
        """
        batches = list(batches)
        if not batches:
            return cls.empty()
        bits = batches[0].bits
        if any(b.bits != bits for b in batches):
            raise ValueError("cannot concatenate batches hashed with different bits")
        offsets = np.cumsum([0] + [b.nnz for b in batches])
        indptr = np.concatenate(
            [np.zeros(1, dtype=np.int64)] + [b.indptr[1:] + off for b, off in zip(batches, offsets)]
        )

        def joined(attr):
            parts = [getattr(b, attr) for b in batches]
            return None if any(p is None for p in parts) else np.concatenate(parts)

        names: dict[int, str] = {}
        for b in batches:
            if b.names:
                for slot, name in b.names.items():
                    names.setdefault(slot, name)
        sources = {b.source for b in batches}
        tags = None
        if any(b.tags is not None for b in batches):
            tags = np.concatenate(
                [b.tags if b.tags is not None else np.full(len(b), None, dtype=object) for b in batches]
            )
        key_codes, key_names = _joined_keys(batches)
        return cls(
            labels=np.concatenate([b.labels for b in batches]),
            weights=np.concatenate([b.weights for b in batches]),
            indptr=indptr,
            indices=np.concatenate([b.indices for b in batches]).astype(INDEX_DTYPE, copy=False),
            values=np.concatenate([b.values for b in batches]).astype(VALUE_DTYPE, copy=False),
            bits=bits,
            namespaces=joined("namespaces"),
            row_ids=joined("row_ids") if len(sources) == 1 else None,
            source=sources.pop() if len(sources) == 1 else None,
            tags=tags,
            names=names or None,
            key_codes=key_codes,
            key_names=key_names,
            timestamps=joined("timestamps"),
        )

    # -- views --------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def nnz(self) -> int:
        """Number of stored (example, feature) entries."""
        return int(self.indptr[-1])

    def row(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Slots and values of example ``i``."""
        start, stop = self.indptr[i], self.indptr[i + 1]
        return self.indices[start:stop], self.values[start:stop]

    def read_place(self) -> tuple[str, int]:
        """``(source, row id)`` of the batch's first row: sorting batches by it puts them in read order
        whatever order a runner hands them over in (batches without row ids: row 0, as they come).

        >>> replace(ExampleBatch.from_rows([(1.0, {})]), source="a", row_ids=np.array([40])).read_place()
        ('a', 40)
        """
        return self.source or "", int(self.row_ids[0]) if self.row_ids is not None and len(self) else 0

    def rows_between(self, start: int, stop: int) -> ExampleBatch:
        """Examples ``start:stop`` as a batch of views into this one's arrays (no copy).

        >>> batch = ExampleBatch.from_rows([(1.0, {1: 1.0}), (2.0, {2: 1.0, 3: 1.0}), (3.0, {})])
        >>> part = batch.rows_between(1, 3)
        >>> part.labels.tolist(), part.indptr.tolist(), part.indices.tolist()
        ([2.0, 3.0], [0, 2, 2], [2, 3])
        """
        first, last = int(self.indptr[start]), int(self.indptr[stop])
        return replace(
            self,
            labels=self.labels[start:stop],
            weights=self.weights[start:stop],
            indptr=self.indptr[start : stop + 1] - first,
            indices=self.indices[first:last],
            values=self.values[first:last],
            namespaces=None if self.namespaces is None else self.namespaces[first:last],
            row_ids=None if self.row_ids is None else self.row_ids[start:stop],
            tags=None if self.tags is None else self.tags[start:stop],
            key_codes=None if self.key_codes is None else self.key_codes[start:stop],
            timestamps=None if self.timestamps is None else self.timestamps[start:stop],
        )

    def take(self, rows) -> ExampleBatch:
        """A new batch with the examples at ``rows`` (indices or a boolean mask), in that order."""
        rows = np.asarray(rows)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        rows = rows.astype(np.int64, copy=False)
        starts, stops = self.indptr[rows], self.indptr[rows + 1]
        lengths = stops - starts
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        # Gather every kept entry at once: position j of row r maps to starts[r] + j.
        gather = np.repeat(starts - indptr[:-1], lengths) + np.arange(indptr[-1])
        kept_slots = np.unique(self.indices[gather]) if self.names else None
        return replace(
            self,
            labels=self.labels[rows],
            weights=self.weights[rows],
            indptr=indptr,
            indices=self.indices[gather],
            values=self.values[gather],
            namespaces=None if self.namespaces is None else self.namespaces[gather],
            row_ids=None if self.row_ids is None else self.row_ids[rows],
            tags=None if self.tags is None else self.tags[rows],
            key_codes=None if self.key_codes is None else self.key_codes[rows],
            timestamps=None if self.timestamps is None else self.timestamps[rows],
            names=None
            if kept_slots is None
            else {int(s): self.names[int(s)] for s in kept_slots if int(s) in self.names},
        )

    def split_by(self, keys) -> list[tuple[object, ExampleBatch]]:
        """One ``(key, batch)`` per distinct key, given one key per example.

        Examples keep their order within a key; keys come out sorted.

        >>> batch = ExampleBatch.from_rows([(1.0, {1: 1.0}), (2.0, {2: 1.0}), (3.0, {3: 1.0})])
        >>> [(key, part.labels.tolist()) for key, part in batch.split_by(["b", "a", "b"])]
        [('a', [2.0]), ('b', [1.0, 3.0])]
        >>> [key for key, _ in batch.split_by(np.array(["b", "a", "b"], dtype=object))]  # a key function's objects
        ['a', 'b']
        """
        keys = np.asarray(keys)
        if len(keys) != len(self):
            raise ValueError(f"got {len(keys)} keys for a batch of {len(self)} examples")
        distinct, inverse = np.unique(keys, return_inverse=True)
        # (plain Python keys: NumPy's scalars give theirs by .item(); an object array's are Python objects)
        distinct = [key.item() if isinstance(key, np.generic) else key for key in distinct]
        if len(distinct) == 1:
            return [(distinct[0], self)]
        order = np.argsort(inverse, kind="stable")
        bounds = np.searchsorted(inverse[order], np.arange(len(distinct) + 1))
        return [(key, self.take(order[bounds[i] : bounds[i + 1]])) for i, key in enumerate(distinct)]

    @property
    def keys(self) -> np.ndarray | None:
        """Each example's key as an object array of str (None when the batch has no keys)."""
        if self.key_codes is None:
            return None
        return np.array(self.key_names, dtype=object)[self.key_codes] if len(self) else np.zeros(0, dtype=object)

    def split_by_key_codes(self) -> list[tuple[str, ExampleBatch]]:
        """One ``(key, batch)`` per distinct key of ``key_codes``, keys in the order of ``key_names``.

        >>> batch = ExampleBatch.from_rows([(1.0, {1: 1.0}), (2.0, {2: 1.0}), (3.0, {3: 1.0})])
        >>> batch = replace(batch, key_codes=np.array([1, 0, 1], dtype=np.int32), key_names=("a", "b"))
        >>> [(key, part.labels.tolist()) for key, part in batch.split_by_key_codes()]
        [('a', [2.0]), ('b', [1.0, 3.0])]
        """
        if self.key_codes is None:
            raise ValueError("this batch has no keys (read it with a key column or key namespace)")
        present = np.flatnonzero(np.bincount(self.key_codes, minlength=len(self.key_names)))
        if len(present) == 1:
            return [(self.key_names[present[0]], self)]
        order = np.argsort(self.key_codes, kind="stable")
        bounds = np.searchsorted(self.key_codes[order], np.append(present, len(self.key_names)))
        return [(self.key_names[code], self.take(order[bounds[i] : bounds[i + 1]])) for i, code in enumerate(present)]

    def with_labels(self, labels) -> ExampleBatch:
        """The same examples with new labels."""
        return replace(self, labels=np.asarray(labels, dtype=np.float64))

    def missing_as_zero(self) -> ExampleBatch:
        """This batch with each missing value (NaN) read as 0, an absent feature: for the sequencing
        transform, whose least squares take no means (learners fill means: polybeam.learners.missing).

        >>> ExampleBatch.from_rows([(1.0, {3: float("nan"), 7: 2.0})]).missing_as_zero().values.tolist()
        [0.0, 2.0]
        """
        missing = np.isnan(self.values)
        return replace(self, values=np.where(missing, 0.0, self.values)) if missing.any() else self

    def to_csr(self):
        """The features as a scipy CSR matrix of shape ``(n, 2**bits)``; duplicate slots are summed."""
        from scipy import sparse

        matrix = sparse.csr_matrix((self.values, self.indices, self.indptr), shape=(len(self), 1 << self.bits))
        matrix.sum_duplicates()
        return matrix

    def __repr__(self) -> str:
        where = f", source={self.source!r}" if self.source else ""
        return f"ExampleBatch(n={len(self)}, nnz={self.nnz}, bits={self.bits}{where})"


def _joined_keys(batches: list[ExampleBatch]) -> tuple[np.ndarray | None, tuple[str, ...]]:
    """The key codes of ``batches`` joined, into the union of their key names (first come, first
    numbered); none unless every batch has keys."""
    if any(batch.key_codes is None for batch in batches):
        return None, ()
    index: dict[str, int] = {}
    codes = []
    for batch in batches:
        local = np.array([index.setdefault(name, len(index)) for name in batch.key_names], dtype=np.int32)
        codes.append(local[batch.key_codes] if len(batch) else np.zeros(0, dtype=np.int32))
    return np.concatenate(codes).astype(np.int32, copy=False), tuple(index)


def _unpickled_batch(n: int, state: dict) -> ExampleBatch:
    """The batch :meth:`ExampleBatch.__reduce__` wrote."""
    if state["weights"] is None:
        state["weights"] = np.ones(n)
    if state["indptr"] is None:
        width = len(state["indices"])
        state["indptr"] = np.arange(n + 1, dtype=np.int64) * width
        state["indices"] = np.tile(state["indices"], n)
    return ExampleBatch(**state)


_FIELD_NAMES = tuple(item.name for item in fields(ExampleBatch))
