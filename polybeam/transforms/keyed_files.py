"""Folders of per-key files: safe file names for any key, and the index that lists them.

A key comes from the data (a VW tag, a CSV column's value, a file name), so
it can be anything: ``../x``, ``/abs``, empty, a thousand characters long, or
non-ASCII. :func:`key_file_stem` turns it into a name that stays inside its
folder on every file system: letters, digits, ``_`` and ``-`` are kept, every
other byte of its UTF-8 form is percent-encoded, a ``k`` goes first (so no
name is empty or starts with a dot), and a long key keeps its first
characters plus a hash of the whole. The mapping is one-to-one, but nothing
decodes it: the folder's ``index.json``, written last and atomically, maps
each key to its file, and a reader trusts only the index.

>>> key_file_stem("store 12"), key_file_stem("../x"), key_file_stem(""), key_file_stem("café")
('kstore%2012', 'k%2E%2E%2Fx', 'k', 'kcaf%C3%A9')
>>> len(key_file_stem("z" * 1000)) <= MAX_STEM
True
"""

from __future__ import annotations

import hashlib
import posixpath
import re

from polybeam.transforms.files import read_json, write_json

INDEX_NAME = "index.json"
MAX_STEM = 120
_SAFE = re.compile(rb"[A-Za-z0-9_-]")


def key_text(key) -> str:
    """The key as the index writes it (keys from the command line are strings already)."""
    if isinstance(key, bytes):
        return key.decode("utf-8", errors="surrogateescape")
    return key if isinstance(key, str) else str(key)


def key_file_stem(key) -> str:
    """A file name (without extension) for ``key``, safe in any folder (module docstring)."""
    raw = key_text(key).encode("utf-8", errors="surrogateescape")
    encoded = "".join(chr(byte) if _SAFE.fullmatch(bytes([byte])) else f"%{byte:02X}" for byte in raw)
    stem = "k" + encoded
    if len(stem) > MAX_STEM:
        digest = hashlib.sha256(raw).hexdigest()[:24]
        stem = stem[: MAX_STEM - len(digest) - 1] + "~" + digest
    return stem


def join(folder: str, *parts: str) -> str:
    """``folder/part/...`` for local paths and URLs alike."""
    if "://" in folder:
        return posixpath.join(folder, *parts)
    import os.path

    return os.path.join(folder, *parts)


def write_index(folder: str, entries: dict, **facts) -> str:
    """Write ``folder/index.json`` listing ``entries`` (key text -> dict with at least "file")."""
    path = join(folder, INDEX_NAME)
    write_json(path, {**facts, "entries": {key_text(k): v for k, v in sorted(entries.items(), key=lambda kv: key_text(kv[0]))}})
    return path


def read_index(folder: str) -> dict:
    """The index of a per-key folder; raises FileNotFoundError with what to check."""
    path = join(folder, INDEX_NAME)
    try:
        return read_json(path)
    except Exception as error:  # Beam wraps file-system errors in its own types
        raise FileNotFoundError(f"{folder}: no readable {INDEX_NAME} ({error})") from None
