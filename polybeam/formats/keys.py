"""Per-example keys picked out of the text by a parser, as integer codes.

A parser that finds each example's key (``--key namespace:NAME`` in VW text,
``--key column:NAME`` in CSV) records where the key's bytes lie in the block,
a ``(start, stop)`` span per example (``start < 0``: no key, the empty key).
:func:`key_codes` turns the spans into what :class:`ExampleBatch` keeps: one
code per example and the distinct keys, so that the only Python work is per
distinct key, never per example. Keys are told apart by a 64-bit FNV-1a hash
of their bytes (two different keys collide with probability about
``k**2 / 2**65`` for ``k`` distinct keys: nil in practice).

>>> data = b"alpha beta alpha"
>>> codes, names = key_codes(np.frombuffer(data, dtype=np.uint8), np.array([[0, 5], [6, 10], [11, 16], [-1, -1]]))
>>> codes.tolist(), names
([0, 1, 0, 2], ('alpha', 'beta', ''))
"""

from __future__ import annotations

import numba
import numpy as np

from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernels below)

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


@numba.njit(cache=True, nogil=True)
def span_hashes(data, spans):
    """FNV-1a (64-bit) of each span's bytes; a missing key (start < 0) hashes like the empty key."""
    out = np.empty(len(spans), dtype=np.uint64)
    for i in range(len(spans)):
        value = _FNV_OFFSET
        start, stop = spans[i, 0], spans[i, 1]
        if start >= 0:
            for k in range(start, stop):
                value = (value ^ np.uint64(data[k])) * _FNV_PRIME
        out[i] = value
    return out


def key_codes(data: np.ndarray, spans: np.ndarray) -> tuple[np.ndarray, tuple[str, ...]]:
    """``(codes, names)``: each example's key as an index into the distinct keys, in first-seen order."""
    if len(spans) == 0:
        return np.zeros(0, dtype=np.int32), ()
    hashes = span_hashes(data, spans)
    distinct, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # number keys by first appearance: stable, readable codes
    rank = np.empty(len(distinct), dtype=np.int32)
    rank[order] = np.arange(len(distinct), dtype=np.int32)
    return rank[inverse.reshape(-1)], _span_texts(data, spans[first[order]])


def _span_texts(data: np.ndarray, spans: np.ndarray) -> tuple[str, ...]:
    """The text of each span of ``data`` (UTF-8; a span starting at -1 is ""): the spans' bytes gathered at
    once and, when they are ASCII (as keys mostly are), decoded once and sliced (a block has thousands)."""
    starts = spans[:, 0]
    lengths = np.where(starts >= 0, spans[:, 1] - starts, 0)
    ends = np.cumsum(lengths)
    gathered = data[np.repeat(starts - (ends - lengths), lengths) + np.arange(ends[-1] if len(ends) else 0)]
    if not len(gathered) or int(gathered.max()) < 0x80:
        text = gathered.tobytes().decode("ascii")
        return tuple(text[stop - length : stop] for stop, length in zip(ends.tolist(), lengths.tolist()))
    return tuple(
        bytes(data[start:stop]).decode("utf-8", errors="replace") if start >= 0 else ""
        for start, stop in spans.tolist()
    )
