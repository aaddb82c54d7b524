"""Self-checking binary files: a signature, a version, a JSON header, named arrays, a checksum.

Model files and learner-state files (checkpoints) share this layout::

    signature                     e.g. b"POLYBEAM-MODEL\\n"
    uint32 little-endian          format version
    uint64 little-endian          length of the JSON header
    JSON header (UTF-8)           the caller's fields plus "arrays": {name: [dtype, shape]}
    array bytes                   each array in header order, C order
    32 bytes                      SHA-256 of everything above

Reading refuses, with a message that says what is wrong, a file that lacks the
signature, comes from a newer version, is truncated, or fails its checksum.

>>> import numpy as np
>>> data = pack(b"DEMO\\n", 1, {"note": "hi"}, {"w": np.arange(3.0)})
>>> version, header, arrays = unpack(data, b"DEMO\\n", newest=1, what="demo file")
>>> version, header["note"], arrays["w"].tolist()
(1, 'hi', [0.0, 1.0, 2.0])
>>> try:
...     unpack(data[:-1], b"DEMO\\n", newest=1, what="demo file")
... except FormatError as error:
...     print(error)
demo file is truncated: expected 140 bytes, found 139
"""

from __future__ import annotations

import hashlib
import json
import math
import struct

import numpy as np

_PREFIX = struct.Struct("<IQ")
_DIGEST_BYTES = 32
# The array types a file may declare: nothing that needs Python objects to rebuild.
_DTYPES = frozenset({"<f8", "<i8", "<u8", "<i4", "|b1", "|u1", "|i1"})


class FormatError(ValueError):
    """A file that cannot be read, with the reason."""


def pack(magic: bytes, version: int, header: dict, arrays: dict[str, np.ndarray]) -> bytes:
    """The bytes of a file holding ``header`` (JSON-able) and ``arrays`` (little-endian, C order)."""
    arrays = {
        name: np.ascontiguousarray(array, dtype=np.asarray(array).dtype.newbyteorder("<"))
        for name, array in arrays.items()
    }
    described = {
        **header,
        "arrays": {name: [array.dtype.str, list(array.shape)] for name, array in arrays.items()},
        "array_order": list(arrays),
    }  # the header's keys are sorted; the bytes follow this order
    text = json.dumps(described, sort_keys=True).encode("utf-8")
    body = magic + _PREFIX.pack(version, len(text)) + text + b"".join(array.tobytes() for array in arrays.values())
    return body + hashlib.sha256(body).digest()


def unpack(data: bytes, magic: bytes, *, newest: int, what: str, names=None) -> tuple[int, dict, dict[str, np.ndarray]]:
    """``(version, header, arrays)`` of a file written by :func:`pack`; arrays are read-only views.

    ``names`` (optional) lists the arrays to read, in file order, for files
    that do not record their order; ``what`` names the
    kind of file in error messages ("model file").
    """
    if not data.startswith(magic):
        raise FormatError(f"not a polybeam {what}: it does not start with the polybeam {what} signature")
    fixed = len(magic) + _PREFIX.size
    if len(data) < fixed:
        raise FormatError(f"{what} is truncated: only {len(data)} bytes")
    version, header_length = _PREFIX.unpack_from(data, len(magic))
    if version > newest:
        raise FormatError(
            f"{what} format version {version} is newer than this polybeam reads (up to {newest}); "
            "upgrade polybeam to load it"
        )
    if version < 1:
        raise FormatError(f"{what} has an invalid format version {version}")
    if len(data) < fixed + header_length + _DIGEST_BYTES:
        raise FormatError(
            f"{what} is truncated: its header alone needs {fixed + header_length + _DIGEST_BYTES} "
            f"bytes, found {len(data)}"
        )
    try:
        header = json.loads(data[fixed : fixed + header_length].decode("utf-8"))
        declared = header["arrays"]
        order = names if names is not None else header.get("array_order", list(declared))
        layout = {name: (_dtype(declared[name][0]), _shape(declared[name][1])) for name in order if name in declared}
    except (ValueError, KeyError, TypeError, IndexError) as error:
        raise FormatError(f"{what} is corrupt: unreadable header ({error})") from None
    size = sum(dtype.itemsize * math.prod(shape) for dtype, shape in layout.values())
    expected = fixed + header_length + size + _DIGEST_BYTES
    if len(data) != expected:
        kind = "truncated" if len(data) < expected else "corrupt"
        raise FormatError(f"{what} is {kind}: expected {expected} bytes, found {len(data)}")
    body, digest = data[:-_DIGEST_BYTES], data[-_DIGEST_BYTES:]
    if hashlib.sha256(body).digest() != digest:
        raise FormatError(f"{what} is corrupt: its checksum does not match its contents")
    arrays, offset = {}, fixed + header_length
    for name, (dtype, shape) in layout.items():
        count = math.prod(shape)
        arrays[name] = np.frombuffer(data, dtype=dtype, count=count, offset=offset).reshape(shape)
        offset += dtype.itemsize * count
    return version, header, arrays


def _dtype(recorded) -> np.dtype:
    if recorded not in _DTYPES:
        raise ValueError(f"unsupported array type {recorded!r}")
    return np.dtype(recorded)


def _shape(recorded) -> tuple[int, ...]:
    # Version 1 model files recorded an array's length instead of its shape.
    shape = (int(recorded),) if isinstance(recorded, (int, float)) else tuple(int(n) for n in recorded)
    if any(n < 0 for n in shape):
        raise ValueError(f"negative array shape {shape}")
    return shape
