"""A shared per-key model: feature hashing for multitask learning (Weinberger et al. 2009).

Every example's features are hashed twice into ONE weight space of ``2**bits``
slots: as they are (the shared part, which every key learns) and crossed with
the example's key (the key's own offsets). A key's model is then the shared
weights plus its own, learnt together by one ordinary learner from the crossed
examples, and memory does not grow with the number of keys.

The rules (:func:`crossed_slot` is the reference; tests check the vectorised
kernels against a plain-Python copy of it):

* a key's hash is ``hash_string(key, KEY_SEED ^ seed)`` (MurmurHash3 of its
  UTF-8 bytes, unsigned 32-bit);
* the crossed copy of slot ``s`` for a key of hash ``k`` lives in slot
  ``murmur3_32(s as 4 little-endian bytes, seed=k) & (2**bits - 1)``, with
  the value ``offset_scale * x`` (the copy of a feature of value ``x``);
* the bias (slot 0, which the learner adds itself) gets a crossed copy too:
  an explicit feature of value ``offset_scale`` in slot ``crossed_slot(0, k)``,
  so every key has its own intercept offset.

A key that training never saw has no offsets; the model knows which keys it
trained (the sorted hashes of :func:`key_hashes`), and crosses only those, so
an unseen key is predicted by the shared part exactly, not by whatever other
keys left in the slots its copies would hash to.

Examples
--------
>>> from polybeam.learners.batch import ExampleBatch
>>> batch = ExampleBatch.from_rows([(1.0, {3: 2.0}), (0.0, {5: 1.0})], bits=12)
>>> keys = np.array(["a", "b"], dtype=object)
>>> crossed = cross_batch(batch, key_hashes(keys), bits=12)
>>> crossed.indptr.tolist()                 # each row: its features, their copies, the key's bias
[0, 3, 6]
>>> crossed.indices[:3].tolist() == [3, crossed_slot(3, key_hash("a"), 12), crossed_slot(0, key_hash("a"), 12)]
True
>>> crossed.values[:3].tolist()
[2.0, 2.0, 1.0]
"""

from __future__ import annotations

import dataclasses

import numba
import numpy as np

from polybeam.learners.choices import KEY_MODELS  # noqa: F401  (re-exported)
from polybeam.learners.batch import INDEX_DTYPE, VALUE_DTYPE, ExampleBatch
from polybeam.learners.hashing import BIAS_SLOT, hash_string, murmur3_32

# Keys are hashed apart from feature names (a key "a" and a feature "a" must not share a seed).
KEY_SEED = 0x4B45_5953  # b"KEYS"
# A missing key (no tag, an empty column) is the empty key, as for separate per-key models.
MISSING_KEY = ""


def key_hash(key: str, seed: int = 0) -> int:
    """The unsigned 32-bit hash of a key (see the module docstring; as for feature names, whitespace at
    either end is trimmed, so " a" and "a" are one key)."""
    return hash_string(str(key), KEY_SEED ^ int(seed))


def key_hashes(keys, seed: int = 0) -> np.ndarray:
    """The hash of every key (an array of str / None, one per example), as int64; each distinct key
    is hashed once."""
    keys = np.asarray(keys, dtype=object)
    if len(keys) == 0:
        return np.zeros(0, dtype=np.int64)
    distinct, inverse = np.unique(np.where(keys == None, MISSING_KEY, keys).astype(str), return_inverse=True)  # noqa: E711
    return np.array([key_hash(key, seed) for key in distinct.tolist()], dtype=np.int64)[inverse.reshape(-1)]


@numba.njit(cache=True)
def _crossed_slot(slot, hashed_key, mask):
    buf = np.empty(4, dtype=np.uint8)
    value = np.uint64(slot)
    for i in range(4):
        buf[i] = np.uint8((value >> np.uint64(8 * i)) & np.uint64(0xFF))
    return murmur3_32(buf, 0, 4, hashed_key) & mask


def crossed_slot(slot: int, hashed_key: int, bits: int) -> int:
    """The slot of the copy of ``slot`` crossed with the key of hash ``hashed_key``."""
    return int(_crossed_slot(np.int64(slot), np.int64(hashed_key), np.int64((1 << bits) - 1)))


@numba.njit(cache=True)
def _cross(indptr, indices, values, hashes, scales, mask, out_indptr, out_indices, out_values):
    position = 0
    for row in range(len(indptr) - 1):
        start, stop = indptr[row], indptr[row + 1]
        for j in range(start, stop):
            out_indices[position] = indices[j]
            out_values[position] = values[j]
            position += 1
        if scales[row] != 0.0:
            for j in range(start, stop):
                out_indices[position] = _crossed_slot(indices[j], hashes[row], mask)
                out_values[position] = scales[row] * values[j]
                position += 1
            out_indices[position] = _crossed_slot(BIAS_SLOT, hashes[row], mask)
            out_values[position] = scales[row]
            position += 1
        out_indptr[row + 1] = position


def cross_batch(batch: ExampleBatch, hashes: np.ndarray, *, bits: int | None = None, offset_scale: float = 1.0,
                known: np.ndarray | None = None) -> ExampleBatch:  # fmt: skip
    """``batch`` with every example's features copied, crossed with its key (see the module docstring).

    Parameters
    ----------
    batch : ExampleBatch
    hashes : int array, shape (n,)
        Each example's key hash (:func:`key_hashes`).
    bits : int, optional
        The weight space (default: the batch's).
    offset_scale : float
        The value of a crossed copy, relative to the feature's.
    known : sorted int array, optional
        The key hashes that have offsets (a model's trained keys): the
        examples of any other key keep their plain features only. None: every
        key is crossed (training).
    """
    bits = batch.bits if bits is None else bits
    hashes = np.asarray(hashes, dtype=np.int64)
    if len(hashes) != len(batch):
        raise ValueError(f"got {len(hashes)} key hashes for a batch of {len(batch)} examples")
    scales = row_scales(hashes, offset_scale, known)
    lengths = np.diff(batch.indptr)
    size = int(batch.nnz + np.sum((lengths + 1)[scales != 0.0]))
    indptr = np.zeros(len(batch) + 1, dtype=np.int64)
    indices = np.empty(size, dtype=INDEX_DTYPE)
    values = np.empty(size, dtype=VALUE_DTYPE)
    _cross(batch.indptr.astype(np.int64), batch.indices, batch.values.astype(VALUE_DTYPE), hashes, scales,
           np.int64((1 << bits) - 1), indptr, indices, values)  # fmt: skip
    # The per-entry extras (VW namespaces) describe the plain features only.
    return dataclasses.replace(batch, indptr=indptr, indices=indices, values=values, namespaces=None)


def row_scales(hashes: np.ndarray, offset_scale: float = 1.0, known: np.ndarray | None = None) -> np.ndarray:
    """The value of each example's crossed copies (per unit of the feature's): ``offset_scale``, and 0
    (no copies) for a key not in ``known``.

    >>> row_scales(np.array([5, 9]), 0.5, known=np.array([5, 7])).tolist()
    [0.5, 0.0]
    """
    hashes = np.asarray(hashes, dtype=np.int64)
    if known is None:
        return np.full(len(hashes), float(offset_scale))
    known = np.asarray(known, dtype=np.int64)
    if len(known) == 0:
        return np.zeros(len(hashes))
    at = np.minimum(np.searchsorted(known, hashes), len(known) - 1)
    return np.where(known[at] == hashes, float(offset_scale), 0.0)


def batch_keys(batch: ExampleBatch, spec: str) -> np.ndarray:
    """Each example's key under ``--key spec`` (``tag``, ``file``, ``namespace:NAME``, ``column:NAME``),
    as an object array of str; a missing key is ``""``.

    >>> batch = ExampleBatch.from_rows([(1.0, {1: 1.0})] * 2)
    >>> batch_keys(batch, "file").tolist()
    ['', '']
    """
    kind = spec.partition(":")[0]
    n = len(batch)
    if kind == "file":
        return np.full(n, batch.source or MISSING_KEY, dtype=object)
    if kind == "tag":
        if batch.tags is None:
            return np.full(n, MISSING_KEY, dtype=object)
        return np.array([MISSING_KEY if tag is None else tag for tag in batch.tags], dtype=object)
    if batch.key_codes is None:
        raise ValueError(f"--key {spec}: the batch has no keys; read it with the key's column or namespace")
    return batch.keys


def batch_key_hashes(batch: ExampleBatch, spec: str, seed: int = 0) -> np.ndarray:
    """:func:`key_hashes` of :func:`batch_keys`, hashing each of a batch's key names once."""
    if spec.partition(":")[0] in ("namespace", "column") and batch.key_codes is not None:
        per_name = np.array([key_hash(name, seed) for name in batch.key_names], dtype=np.int64)
        return per_name[batch.key_codes] if len(batch) else np.zeros(0, dtype=np.int64)
    return key_hashes(batch_keys(batch, spec), seed)


@dataclasses.dataclass(frozen=True)
class SharedKeys:
    """How a shared per-key model crosses its examples: the key spec, the copies' value and the
    keys that have offsets (a model's record; see :meth:`to_metadata`).

    >>> shared = SharedKeys("column:store", offset_scale=0.5, trained=np.array([7, 3]))
    >>> SharedKeys.from_metadata(shared.to_metadata()).trained.tolist()
    [3, 7]
    """

    key: str
    offset_scale: float = 1.0
    seed: int = 0
    trained: np.ndarray | None = None

    def __post_init__(self) -> None:
        if not (self.offset_scale > 0 and np.isfinite(self.offset_scale)):
            raise ValueError(f"offset_scale must be a finite number > 0; got {self.offset_scale!r}")
        if self.trained is not None:
            object.__setattr__(self, "trained", np.unique(np.asarray(self.trained, dtype=np.int64)))

    def cross(self, batch: ExampleBatch, bits: int | None = None) -> ExampleBatch:
        """``batch`` crossed with its keys: every key (training), or the trained keys only (a model)."""
        hashes = batch_key_hashes(batch, self.key, self.seed)
        return cross_batch(batch, hashes, bits=bits, offset_scale=self.offset_scale, known=self.trained)

    def to_metadata(self) -> dict:
        return {"key_model": "shared", "key": self.key, "offset_scale": float(self.offset_scale),
                "key_seed": int(self.seed),
                "trained_keys": [] if self.trained is None else self.trained.tolist()}  # fmt: skip

    @classmethod
    def from_metadata(cls, metadata) -> "SharedKeys | None":
        """The crossing a model's metadata records, or None for a model that is not a shared per-key model."""
        if metadata.get("key_model") != "shared":
            return None
        return cls(str(metadata["key"]), float(metadata.get("offset_scale", 1.0)), int(metadata.get("key_seed", 0)),
                   np.asarray(metadata.get("trained_keys", []), dtype=np.int64))  # fmt: skip
