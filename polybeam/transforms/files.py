"""Whole files on any Beam file system, written so that a reader never sees half of one.

A worker on a cluster writes models, reports and checkpoints to shared storage
(``gs://``, ``s3://``, HDFS, or a local path when everything runs on one
machine), and someone else reads them, perhaps while the job still runs. So a
file is written under a temporary name next to its target and then renamed
into place: on a local disk the rename is atomic; object stores publish an
object only once it is complete.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "deep", "er", "report.json")
>>> write_atomically(path, b'{"ok": true}')
>>> read_bytes(path), exists(path)
(b'{"ok": true}', True)
>>> sorted(os.listdir(os.path.dirname(path)))   # no temporary file left behind
['report.json']
"""

from __future__ import annotations

import json
import uuid

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

# Bytes are written and read as they are: a model called "m.model.gz" is not gzip.
_RAW = CompressionTypes.UNCOMPRESSED


def write_atomically(path: str, data: bytes) -> None:
    """Write ``data`` to ``path``: first under a temporary name in the same folder, then renamed.

    Local parent folders are created as needed (object stores have none).
    """
    temporary = f"{path}.tmp-{uuid.uuid4().hex}"
    try:
        with FileSystems.create(temporary, compression_type=_RAW) as handle:
            handle.write(data)
        if "://" in path and FileSystems.exists(path):
            FileSystems.delete([path])  # object stores may refuse to rename onto an existing object
        FileSystems.rename([temporary], [path])
    except BaseException:
        if FileSystems.exists(temporary):
            FileSystems.delete([temporary])
        raise


# A JSON document longer than this is written on one line: Python indents with its pure-Python encoder,
# seconds for the report of 100,000 keys' metrics, where the compiled one takes a fraction of that.
INDENTED_JSON_LIMIT = 1 << 20


def write_json(path: str, value, *, indent: int | None = 2) -> None:
    """Write ``value`` as a JSON document (atomically; NaN and infinity become null; keys sorted; indented
    unless longer than :data:`INDENTED_JSON_LIMIT`)."""
    write_atomically(path, (json_document(value, indent) + "\n").encode("utf-8"))


def json_document(value, indent: int | None = 2) -> str:
    """``value`` as JSON text, keys sorted, NaN and infinity as null, with ``indent`` unless the text is
    longer than :data:`INDENTED_JSON_LIMIT` (all in the compiled encoder and decoder: no Python per value).

    >>> json_document({"b": [1.5, float("nan")], "a": float("-inf")}, None)
    '{"a": null, "b": [1.5, null]}'
    """
    text = json.dumps(value, sort_keys=True)
    if "NaN" in text or "Infinity" in text:  # (maybe only in a string: then nothing changes)
        value = json.loads(text, parse_constant=lambda _: None)
        text = json.dumps(value, sort_keys=True)
    if indent is None or len(text) > INDENTED_JSON_LIMIT:
        return text
    return json.dumps(json.loads(text), indent=indent, sort_keys=True)


def read_bytes(path: str) -> bytes:
    """The whole file at ``path`` (any Beam file system)."""
    with FileSystems.open(path, compression_type=_RAW) as handle:
        return handle.read()


def read_json(path: str):
    """The JSON document at ``path``."""
    return json.loads(read_bytes(path).decode("utf-8"))


def absolute_path(path: str) -> str:
    """A local path made absolute (workers run in folders of their own); URLs are left alone.

    >>> absolute_path("gs://bucket/a-*.gz"), absolute_path("/data/x")
    ('gs://bucket/a-*.gz', '/data/x')
    """
    if not path or "://" in path:
        return path
    import os.path

    return os.path.abspath(path)


def exists(path: str) -> bool:
    return FileSystems.exists(path)


def finite(value):
    """``value`` with NaN and infinite floats replaced by None: JSON cannot carry them.

    >>> finite({"a": float("nan"), "b": [1.5, float("inf")]})
    {'a': None, 'b': [1.5, None]}
    """
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value
