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

from polybeam.learners.key_spec import key_text
from polybeam.transforms.files import read_json, write_json

INDEX_NAME = "index.json"
MAX_STEM = 120
_SAFE = re.compile(rb"[A-Za-z0-9_-]")


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
    write_json(
        path, {**facts, "entries": {key_text(k): v for k, v in sorted(entries.items(), key=lambda kv: key_text(kv[0]))}}
    )
    return path


def read_index(folder: str) -> dict:
    """The index of a per-key folder; raises FileNotFoundError with what to check."""
    path = join(folder, INDEX_NAME)
    try:
        return read_json(path)
    except Exception as error:  # Beam wraps file-system errors in its own types
        raise FileNotFoundError(f"{folder}: no readable {INDEX_NAME} ({error})") from None


def _range_reader(path: str):
    """``read_range(start, stop)`` over the file at ``path`` (any Beam file system), one open handle kept."""
    from apache_beam.io.filesystem import CompressionTypes
    from apache_beam.io.filesystems import FileSystems

    state: dict = {}

    def read_range(start: int, stop: int | None) -> bytes:
        handle = state.get("handle")
        if handle is None:
            handle = state["handle"] = FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
            handle.seek(0, 2)
            state["size"] = handle.tell()
        size = state["size"]
        begin = start if start >= 0 else size + start
        end = size if stop is None else (stop if stop >= 0 else size + stop)
        handle.seek(begin)
        return handle.read(end - begin)

    return read_range


class KeyedFolder:
    """A folder of per-key models as a reader sees it: which keys it has, their index entries, and
    each key's model read on its own (see :mod:`polybeam.learners.model_shards`).

    Reads both layouts: shard files (``"layout": "shards"`` in the index, what ``train --key``
    writes) and one model file per key (folders written before shards, and checkpoints).
    """

    def __init__(self, folder: str, index: dict | None = None):
        self.folder = folder
        self.index = read_index(folder) if index is None else index
        self.sharded = self.index.get("layout") == "shards"
        self._readers: dict = {}

    def shard_reader(self, number: int):
        """The reader of shard file ``number`` (None: the folder has no such shard), opened once."""
        return self._reader(number)

    def _reader(self, number: int):
        from polybeam.learners.model_shards import ShardReader

        reader = self._readers.get(number)
        if reader is None:
            file = self.index["files"].get(str(number))
            if file is None:
                return None
            path = join(self.folder, file)
            reader = self._readers[number] = ShardReader(_range_reader(path), path)
        return reader

    def _shard(self, key: str):
        from polybeam.learners.model_shards import shard_of

        return self._reader(shard_of(key, self.index["shards"]))

    def has(self, key) -> bool:
        name = key_text(key)
        if not self.sharded:
            return name in self.index["entries"]
        reader = self._shard(name)
        return reader is not None and name in reader

    def entry(self, key) -> dict | None:
        name = key_text(key)
        if not self.sharded:
            return self.index["entries"].get(name)
        reader = self._shard(name)
        return None if reader is None else reader.entry(name)

    def model(self, key):
        """``key``'s model, or None when the folder has none."""
        from polybeam.transforms.model_io import read_model

        name = key_text(key)
        if not self.sharded:
            entry = self.index["entries"].get(name)
            return None if entry is None else read_model(join(self.folder, entry["file"]))
        reader = self._shard(name)
        return None if reader is None else reader.model(name)

    def entries(self):
        """``(key, entry)`` of every key (shard after shard)."""
        if not self.sharded:
            yield from self.index["entries"].items()
            return
        for number in sorted(int(n) for n in self.index["files"]):
            yield from self._reader(number).entries()

    def first_model(self):
        """One key's model (to check what the folder was trained with), or None for an empty folder."""
        for key, _ in self.entries():
            return self.model(key)
        return None

    @property
    def keys(self) -> int:
        return self.index["keys"] if self.sharded else len(self.index["entries"])
