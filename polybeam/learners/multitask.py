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

Offsets are pulled toward zero by a prior on their AdaGrad sums
(:func:`seed_offset_sums`, ``LearnerConfig.offset_prior``): the first time a
key's copy is learnt, its sum of squared gradients starts as if it had
already seen ``offset_prior`` examples of unit gradient at the feature's
largest magnitude so far, so the first rows of
a key move its offsets less, and a key with few rows leans on the shared
weights; with more rows the prior fades, as AdaGrad's sums grow. (A smaller
value on the copies would not do: normalised adaptive steps are invariant to
a feature's scale.)

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

from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernels below)
from polybeam.learners.batch import INDEX_DTYPE, VALUE_DTYPE, ExampleBatch
from polybeam.learners.choices import DEFAULT_OFFSET_PRIOR, KEY_MODELS  # noqa: F401  (re-exported)
from polybeam.learners.hashing import BIAS_SLOT, hash_string, hash_strings, murmur3_32
from polybeam.learners.key_spec import KeySpec

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
    return hash_strings(distinct.tolist(), KEY_SEED ^ int(seed))[inverse.reshape(-1)]


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


def cross_batch(
    batch: ExampleBatch,
    hashes: np.ndarray,
    *,
    bits: int | None = None,
    offset_scale: float = 1.0,
    known: np.ndarray | None = None,
) -> ExampleBatch:
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
    _cross(
        batch.indptr.astype(np.int64),
        batch.indices,
        batch.values.astype(VALUE_DTYPE),
        hashes,
        scales,
        np.int64((1 << bits) - 1),
        indptr,
        indices,
        values,
    )
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


def shared_config(config, shared: bool):
    """``config`` for a shared per-key model (``shared``: its offset prior, ``DEFAULT_OFFSET_PRIOR``
    unless set, and no expansion) or for any other model (no offset prior), refusing what does not apply."""
    if not shared:
        if config.offset_prior:
            raise ValueError("offset_prior applies to a shared per-key model (--key-model shared)")
        return config
    if config.expand != "none":
        raise ValueError(f"a shared per-key model is linear; it takes no expansion (expand={config.expand!r})")
    return config if config.offset_prior is not None else config.replace(offset_prior=DEFAULT_OFFSET_PRIOR)


def crossed_entries(batch: ExampleBatch) -> np.ndarray:
    """Which entries of a batch crossed with every key (training's) are key-crossed copies: the last
    ``(length - 1) / 2 + 1`` of each row (after its ``p`` features come their ``p`` copies and the bias copy).

    >>> crossed = cross_batch(ExampleBatch.from_rows([(1.0, {3: 2.0, 4: 1.0})], bits=12), np.array([7]))
    >>> crossed_entries(crossed).tolist()
    [False, False, True, True, True]
    """
    lengths = np.diff(batch.indptr)
    if np.any(lengths % 2 == 0):
        raise ValueError("a batch crossed with every key has rows of 2 p + 1 entries")
    plain = (lengths - 1) // 2
    position = np.arange(batch.nnz) - np.repeat(batch.indptr[:-1], lengths)
    return position >= np.repeat(plain, lengths)


def seed_offset_sums(
    sum_sq_grad: np.ndarray, batch: ExampleBatch, prior: float, feature_scale: np.ndarray | None = None
) -> None:
    """The offsets' prior: the AdaGrad sum of every key-crossed slot of ``batch`` (a batch crossed with
    every key, as training's) that has none yet starts at ``prior * m**2``, as if ``prior`` examples of unit
    gradient had come before; ``m`` is the magnitude of the feature's values so far (its plain slot's
    ``feature_scale``, at least this copy's value), so that the prior is in the feature's units (see the
    module docstring). In place."""
    if prior <= 0 or batch.nnz == 0:
        return
    mask = crossed_entries(batch)
    slots = batch.indices[mask]
    fresh = sum_sq_grad[slots, 0] == 0.0
    if not np.any(fresh):
        return
    magnitude = np.abs(batch.values[mask][fresh])
    if feature_scale is not None and len(feature_scale):
        # Each row's copies follow its features in order, then the bias copy (the bias: value 1, scale 1).
        lengths = np.diff(batch.indptr)
        plain_of = np.flatnonzero(mask) - np.repeat((lengths - 1) // 2, lengths)[mask]
        is_bias = np.flatnonzero(mask) == np.repeat(batch.indptr[1:] - 1, lengths)[mask]
        plain_slots = np.where(is_bias, 0, batch.indices[np.maximum(plain_of, 0)])[fresh]
        offset_scale = np.where(is_bias[fresh], magnitude, 1.0)
        # The feature's magnitude so far, and in this batch (a first batch has no scales yet).
        plain = ~mask
        distinct, inverse = np.unique(batch.indices[plain], return_inverse=True)
        in_batch = np.zeros(len(distinct))
        np.maximum.at(in_batch, inverse.reshape(-1), np.abs(batch.values[plain]))
        at = np.minimum(np.searchsorted(distinct, plain_slots), max(len(distinct) - 1, 0))
        seen = np.where(len(distinct) and distinct[at] == plain_slots, in_batch[at] if len(distinct) else 0.0, 0.0)
        scale = np.maximum(feature_scale[plain_slots], seen)
        known = np.where(is_bias[fresh], 1.0, scale) * offset_scale
        magnitude = np.maximum(magnitude, known)
    sum_sq_grad[slots[fresh]] = prior * np.maximum(magnitude**2, np.finfo(np.float32).tiny)[:, None]


def batch_keys(batch: ExampleBatch, spec: str | KeySpec) -> np.ndarray:
    """Each example's key under ``--key spec`` (``tag``, ``file``, ``namespace:NAME``, ``column:NAME``),
    as an object array of str; a missing key is ``""``.

    >>> batch = ExampleBatch.from_rows([(1.0, {1: 1.0})] * 2)
    >>> batch_keys(batch, "file").tolist()
    ['', '']
    """
    kind = KeySpec.parse(spec).kind
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


def batch_key_hashes(batch: ExampleBatch, spec: str | KeySpec, seed: int = 0) -> np.ndarray:
    """:func:`key_hashes` of :func:`batch_keys`, hashing each of a batch's key names once."""
    spec = KeySpec.parse(spec)
    if spec.read_by_parser and batch.key_codes is not None:
        per_name = hash_strings(batch.key_names, KEY_SEED ^ int(seed))  # (key_hash of each name, in one pass)
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
    spec: KeySpec = dataclasses.field(init=False, repr=False, compare=False)  # ``key`` parsed, once

    def __post_init__(self) -> None:
        object.__setattr__(self, "spec", KeySpec.parse(self.key))
        if not (self.offset_scale > 0 and np.isfinite(self.offset_scale)):
            raise ValueError(f"offset_scale must be a finite number > 0; got {self.offset_scale!r}")
        if self.trained is not None:
            object.__setattr__(self, "trained", np.unique(np.asarray(self.trained, dtype=np.int64)))

    def cross(self, batch: ExampleBatch, bits: int | None = None) -> ExampleBatch:
        """``batch`` crossed with its keys: every key (training), or the trained keys only (a model)."""
        hashes = batch_key_hashes(batch, self.spec, self.seed)
        return cross_batch(batch, hashes, bits=bits, offset_scale=self.offset_scale, known=self.trained)

    def to_metadata(self) -> dict:
        return {
            "key_model": "shared",
            "key": self.key,
            "offset_scale": float(self.offset_scale),
            "key_seed": int(self.seed),
            "trained_keys": [] if self.trained is None else self.trained.tolist(),
        }

    @classmethod
    def from_metadata(cls, metadata) -> SharedKeys | None:
        """The crossing a model's metadata records, or None for a model that is not a shared per-key model."""
        if metadata.get("key_model") != "shared":
            return None
        return cls(
            str(metadata["key"]),
            float(metadata.get("offset_scale", 1.0)),
            int(metadata.get("key_seed", 0)),
            np.asarray(metadata.get("trained_keys", []), dtype=np.int64),
        )
