"""Feature hashing: how names and indices become slots in ``[0, 2**bits)``.

The rules, chosen so that a file hashes the same way in polybeam and in Vowpal
Wabbit (``--hash strings``, the default):

* A namespace's seed is ``hash_string(namespace, seed)``; the default namespace
  (VW's ``| a b``) has the seed of the empty name, MurmurHash3 of no bytes, which
  is 0 for the default ``seed`` 0.
* A string feature ``name`` in a namespace hashes to
  ``hash_string(name, namespace_seed) & (2**bits - 1)``, where ``hash_string`` is
  MurmurHash3 (x86, 32-bit) of the UTF-8 bytes, except that a name made only of
  decimal digits (at most 18 of them) is taken as its integer value plus the seed,
  exactly as VW does; CSV header names are hashed in the default namespace.
* A numeric LIBSVM index ``i`` with ``1 <= i < 2**bits`` is its own slot, so
  datasets with fewer than ``2**bits`` columns are never hashed and the model's
  slots are the file's column numbers. Larger indices are hashed:
  MurmurHash3 of the index's 8 little-endian bytes, seeded by ``seed``.
* The bias (constant) feature always lives in slot :data:`BIAS_SLOT` = 0, which no
  LIBSVM index can reach (indices start at 1).

Collisions: two features that land in one slot share one weight; the learner
cannot tell them apart. With ``b`` bits and ``m`` distinct hashed features, about
``m**2 / 2**(b + 1)`` pairs collide, so use more bits when ``m`` approaches
``2**(b/2)``. A hashed feature can also land in slot 0 and share the bias weight.
Names recorded for a slot keep the first name seen there.

Examples
--------
>>> hash_string(b"a", hash_string(b"f", 0)) & ((1 << 18) - 1)   # VW: |f a
14355
>>> hash_string(b"123", 7)   # digits: the number itself plus the seed
130
>>> libsvm_slot(57, 18), libsvm_slot(1 << 20, 18) < (1 << 18)
(57, True)
"""

from __future__ import annotations

import numba
import numpy as np

from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernels below)
from polybeam.learners.choices import DEFAULT_BITS, MAX_BITS, MIN_BITS  # noqa: F401  (re-exported)

BIAS_SLOT = 0
# A digit-only name longer than this would overflow VW's integer conversion;
# such names are hashed like any other string.
MAX_DIGIT_NAME = 18

_MASK32 = np.uint64(0xFFFFFFFF)


def check_bits(bits: int) -> int:
    """Validate a ``bits`` setting with a message that says what to fix."""
    if not isinstance(bits, (int, np.integer)) or isinstance(bits, bool):
        raise TypeError(f"bits must be an integer, got {bits!r}")
    if not MIN_BITS <= bits <= MAX_BITS:
        raise ValueError(f"bits must be between {MIN_BITS} and {MAX_BITS}, got {bits}")
    return int(bits)


def slot_mask(bits: int) -> int:
    """The mask that maps a 32-bit hash to a slot."""
    return (1 << check_bits(bits)) - 1


@numba.njit(cache=True, inline="always")
def _rotl32(x, r):
    return ((x << np.uint64(r)) | (x >> np.uint64(32 - r))) & np.uint64(0xFFFFFFFF)


@numba.njit(cache=True, inline="always")
def _fmix32(h):
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x85EBCA6B)) & np.uint64(0xFFFFFFFF)
    h ^= h >> np.uint64(13)
    h = (h * np.uint64(0xC2B2AE35)) & np.uint64(0xFFFFFFFF)
    h ^= h >> np.uint64(16)
    return h


@numba.njit(cache=True)
def murmur3_32(data, start, stop, seed):
    """MurmurHash3_x86_32 of ``data[start:stop]`` (a uint8 array) with ``seed``.

    Returns the unsigned 32-bit hash as an int64. Written from the published
    algorithm description; tests check it against the ``mmh3`` package.
    """
    c1 = np.uint64(0xCC9E2D51)
    c2 = np.uint64(0x1B873593)
    mask = np.uint64(0xFFFFFFFF)
    h = np.uint64(seed) & mask
    length = stop - start
    nblocks = length // 4
    for block in range(nblocks):
        i = start + 4 * block
        k = (
            np.uint64(data[i])
            | (np.uint64(data[i + 1]) << np.uint64(8))
            | (np.uint64(data[i + 2]) << np.uint64(16))
            | (np.uint64(data[i + 3]) << np.uint64(24))
        )
        k = (k * c1) & mask
        k = _rotl32(k, 15)
        k = (k * c2) & mask
        h ^= k
        h = _rotl32(h, 13)
        h = (h * np.uint64(5) + np.uint64(0xE6546B64)) & mask
    tail = start + 4 * nblocks
    k = np.uint64(0)
    rest = length & 3
    if rest >= 3:
        k ^= np.uint64(data[tail + 2]) << np.uint64(16)
    if rest >= 2:
        k ^= np.uint64(data[tail + 1]) << np.uint64(8)
    if rest >= 1:
        k ^= np.uint64(data[tail])
        k = (k * c1) & mask
        k = _rotl32(k, 15)
        k = (k * c2) & mask
        h ^= k
    h ^= np.uint64(length) & mask
    return np.int64(_fmix32(h))


@numba.njit(cache=True)
def hash_token(data, start, stop, seed):
    """VW's ``hashstring``: digits-only tokens are their value plus ``seed``.

    Leading and trailing whitespace and control bytes are ignored, as VW trims them. Returns an
    unsigned 32-bit value (as int64) before masking.
    """
    while start < stop and data[start] <= 32:
        start += 1
    while stop > start and data[stop - 1] <= 32:
        stop -= 1
    length = stop - start
    if 0 < length <= MAX_DIGIT_NAME:
        value = np.int64(0)
        all_digits = True
        for i in range(start, stop):
            c = data[i]
            if c < 48 or c > 57:
                all_digits = False
                break
            value = value * 10 + (c - 48)
        if all_digits:
            return (value + np.int64(seed)) & np.int64(0xFFFFFFFF)
    return murmur3_32(data, start, stop, seed)


@numba.njit(cache=True)
def hash_index(index, seed):
    """MurmurHash3 of a 64-bit integer's 8 little-endian bytes, for large LIBSVM indices."""
    buf = np.empty(8, dtype=np.uint8)
    value = np.uint64(index)
    for i in range(8):
        buf[i] = np.uint8((value >> np.uint64(8 * i)) & np.uint64(0xFF))
    return murmur3_32(buf, 0, 8, seed)


@numba.njit(cache=True)
def libsvm_slot_kernel(index, mask, seed):
    """Slot of a positive LIBSVM index: itself when it fits, else its hash."""
    if index <= mask:
        return index
    return hash_index(index, seed) & mask


def hash_string(name: str | bytes, seed: int = 0) -> int:
    """VW-compatible hash of one feature or namespace name (unmasked, unsigned 32-bit)."""
    raw = name.encode("utf-8") if isinstance(name, str) else bytes(name)
    return int(hash_token(np.frombuffer(raw, dtype=np.uint8), 0, len(raw), int(seed)))


def hash_strings(names, seed: int = 0) -> np.ndarray:
    """:func:`hash_string` of each of ``names`` (str), as int64, in one compiled pass over their bytes.

    >>> hash_strings(["a", " b ", ""], 7).tolist() == [hash_string(name, 7) for name in ["a", " b ", ""]]
    True
    """
    data, starts, stops = utf8_segments(names)
    return _hash_segments(data, starts, stops, int(seed))


def utf8_segments(texts, errors: str = "strict") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(data, starts, stops)``: the UTF-8 bytes of ``texts`` (each ``str(text)``) in one array, text ``i``
    at ``data[starts[i]:stops[i]]``, encoded at once (no Python call per text) unless a text holds a line
    break.

    >>> data, starts, stops = utf8_segments(["ab", "", "é"])
    >>> [bytes(data[a:b]).decode() for a, b in zip(starts, stops)]
    ['ab', '', 'é']
    """
    try:
        joined = "\n".join(texts)
    except TypeError:  # some are not str
        texts = [str(text) for text in texts]
        joined = "\n".join(texts)
    data = np.frombuffer(joined.encode("utf-8", errors), dtype=np.uint8)
    breaks = np.flatnonzero(data == 10)
    if len(breaks) == len(texts) - 1:
        starts = np.concatenate([np.zeros(1, dtype=np.int64), breaks + 1])
        return data, starts, np.concatenate([breaks, np.array([len(data)], dtype=np.int64)])
    encoded = [text.encode("utf-8", errors) for text in texts]  # (none, or a text holds a line break)
    lengths = np.array([len(raw) for raw in encoded], dtype=np.int64)
    stops = np.cumsum(lengths, dtype=np.int64)
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), stops - lengths, stops


@numba.njit(cache=True, nogil=True)
def _hash_segments(data, starts, stops, seed):
    out = np.empty(starts.shape[0], dtype=np.int64)
    for i in range(starts.shape[0]):
        out[i] = hash_token(data, starts[i], stops[i], seed)
    return out


def namespace_seed(namespace: str | bytes, seed: int = 0) -> int:
    """The seed for features of a VW namespace.

    The default (empty or blank) namespace uses the hash of the empty string,
    which is 0 for seed 0, as VW does with ``--hash_seed``.
    """
    raw = namespace.encode("utf-8") if isinstance(namespace, str) else bytes(namespace)
    if raw.strip(b" ") == b"":
        return int(murmur3_32(np.zeros(0, dtype=np.uint8), 0, 0, int(seed)))
    return hash_string(raw, seed)


def feature_slot(name: str | bytes, bits: int = DEFAULT_BITS, namespace: str | bytes = b"", seed: int = 0) -> int:
    """Slot of a named feature in a namespace, as the VW and CSV readers compute it."""
    return hash_string(name, namespace_seed(namespace, seed)) & slot_mask(bits)


def libsvm_slot(index: int, bits: int = DEFAULT_BITS, seed: int = 0) -> int:
    """Slot of a (1-based, positive) LIBSVM feature index."""
    if index <= 0:
        raise ValueError(f"LIBSVM feature indices start at 1, got {index}")
    return int(libsvm_slot_kernel(np.int64(index), np.int64(slot_mask(bits)), int(seed)))
