"""Shard files of per-key models: many keys' sparse models in one file, with an index at its end.

A folder of per-key models holds a few shard files (``shard-00003-of-00016.keys``)
and ``index.json``; a key's models lives in shard ``shard_of(key, shards)``, a
hash of the key's text, so a reader finds it without a list of every key. A
shard file is::

    b"POLYBEAM-KEYS\\n"
    one record per key            a self-checking container (polybeam.learners.container)
                                  with the key's own metadata and arrays (slots, weights,
                                  clip ranges, the factor table of apple's products, the
                                  means its missing values are filled with: version 2)
    the shard's index             a container: the config, the metadata and feature names
                                  every key shares, the keys, one entry per key (examples,
                                  progressive loss, non-zero weights, holdout), record offsets
    uint64 little-endian          the index's length
    b"PBKEYEND"

so a reader reads the 16 bytes at the end, then the index, then only the
records of the keys it needs (:class:`ShardReader` takes a function that reads a
byte range: a local file, or any Beam file system). What every key shares
(the config, how the input was read, the provenance, the feature names) is
written once per shard, not once per key: a key's record is its weights and
its own figures, about a kilobyte for 20 features. Per-key models keep no
learning curve (a line per doubling of a key's few examples).

>>> from polybeam.learners.batch import ExampleBatch
>>> from polybeam.learners.linear import LinearLearner
>>> from polybeam.learners.config import LearnerConfig
>>> def model(label):
...     rows = [(label, {3: 1.0})] * 4
...     return LinearLearner(LearnerConfig(loss="squared", bits=8)).learn(ExampleBatch.from_rows(rows, bits=8)).to_model()
>>> data = shard_bytes([("a", model(1.0)), ("b", model(-1.0))])
>>> reader = ShardReader.of_bytes(data)
>>> reader.keys(), reader.model("b").predict(ExampleBatch.from_rows([(0.0, {3: 1.0})], bits=8)).round(1).tolist()
(['a', 'b'], [-1.0])
>>> reader.entry("a")["examples"], reader.model("z")
(4, None)
"""

from __future__ import annotations

import dataclasses
import struct
import zlib
from collections.abc import Callable, Iterable, Sequence

import numba
import numpy as np

from polybeam.learners import container, kernel_cache  # noqa: F401  (first: where numba caches the kernels below)
from polybeam.learners.config import LearnerConfig
from polybeam.learners.hashing import utf8_segments
from polybeam.learners.key_spec import all_text, key_text
from polybeam.learners.key_table import KeyTableModels
from polybeam.learners.model import Expansion, FactorTable, Model, ModelFileError

SHARD_MAGIC = b"POLYBEAM-KEYS\n"
_RECORD_MAGIC = b"PBKEY\n"
_INDEX_MAGIC = b"POLYBEAM-KEY-INDEX\n"
_TABLE_MAGIC = b"PBKEYTABLE\n"
_TAIL = struct.Struct("<Q8s")
_TAIL_MARK = b"PBKEYEND"
# Version 2: a key's record holds its missing values' fills (fill_slots, fill_values, fill_indicated), so
# that a polybeam which would score them as zeros (version 1 had none) refuses the file instead; and keys'
# models may be rows of a table instead of records of their own.
VERSION = 2
# Metadata every key of a run shares, written once per shard.
SHARED_METADATA = ("input", "provenance", "input_format")
# Metadata a per-key model leaves out (see the module docstring).
DROPPED_METADATA = ("learning_curve",)
SHARD_SUFFIX = ".keys"


def shard_of(key: str, shards: int) -> int:
    """The shard of ``key`` (its text, as the index writes it) among ``shards``: stable across runs and machines.

    >>> shard_of("store 12", 16), shard_of("", 16)
    (1, 0)
    """
    return zlib.crc32(key.encode("utf-8", errors="surrogateescape")) % shards


def shards_of(keys: Sequence[str], shards: int) -> np.ndarray:
    """:func:`shard_of` of every key's text (:func:`key_text`), in one compiled pass over their UTF-8 bytes: a batch
    of thousands of keys without a Python call per key.

    >>> shards_of(["store 12", "", "b"], 16).tolist() == [shard_of(k, 16) for k in ["store 12", "", "b"]]
    True
    """
    if not len(keys):
        return np.zeros(0, dtype=np.int64)
    data, starts, stops = utf8_segments(keys if all_text(keys) else [key_text(key) for key in keys], "surrogateescape")
    return (_crc32_rows(data, starts, stops, _CRC32_TABLE) % np.uint32(shards)).astype(np.int64)


def _crc32_table() -> np.ndarray:
    """The table of the reflected CRC-32 (polynomial 0xEDB88320) that ``zlib.crc32`` computes."""
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(0xEDB88320), table >> 1).astype(np.uint32)
    return table


_CRC32_TABLE = _crc32_table()


@numba.njit(cache=True, nogil=True)
def _crc32_rows(data, starts, stops, table):
    """``zlib.crc32(data[starts[i]:stops[i]])`` for every ``i``."""
    out = np.empty(len(starts), dtype=np.uint32)
    for row in range(len(starts)):
        crc = np.uint32(0xFFFFFFFF)
        for position in range(starts[row], stops[row]):
            crc = table[(crc ^ data[position]) & np.uint32(0xFF)] ^ (crc >> np.uint32(8))
        out[row] = crc ^ np.uint32(0xFFFFFFFF)
    return out


def shard_name(number: int, shards: int) -> str:
    return f"shard-{number:05d}-of-{shards:05d}{SHARD_SUFFIX}"


def entry_of(model: Model) -> dict:
    """What the index says of a key's model: kind, examples, progressive loss, non-zero weights, holdout."""
    meta = model.metadata
    entry = {
        "kind": model.kind,
        "examples": meta.get("examples"),
        "progressive_loss": meta.get("progressive_loss"),
        "nonzero_weights": model.nonzero,
    }
    holdout = meta.get("holdout")
    if holdout:  # each key's learner was judged on its own held-out examples
        entry.update(
            holdout_loss=holdout["best_loss"], best_pass=holdout["best_pass"], stopped_after=holdout["stopped_after"]
        )
    return entry


def _record(model: Model) -> bytes:
    arrays = {"slots": model.slots.astype("<i8"), "weights": model.weights.astype("<f8")}
    if len(model.monomials.slots):
        arrays.update(
            monomial_slots=model.monomials.slots.astype("<i8"),
            monomial_offsets=model.monomials.offsets.astype("<i8"),
            monomial_factors=model.monomials.factors.astype("<i8"),
        )
    if model.clip_low is not None:
        arrays.update(clip_low=model.clip_low.astype("<f8"), clip_high=model.clip_high.astype("<f8"))
    if model.fill_slots is not None:
        arrays.update(
            fill_slots=model.fill_slots.astype("<i8"),
            fill_values=model.fill_values.astype("<f8"),
            fill_indicated=model.fill_indicated.astype("|b1"),
        )
    own = {
        name: value
        for name, value in model.metadata.items()
        if name not in SHARED_METADATA and name not in DROPPED_METADATA
    }
    header = {"metadata": own, "expansion": None if model.expansion is None else model.expansion.to_dict()}
    return container.pack(_RECORD_MAGIC, VERSION, header, arrays)


def shard_bytes(
    models: Iterable[tuple[str, Model]],
    *,
    names: dict | None = None,
    shared: dict | None = None,
    table: KeyTableModels | None = None,
) -> bytes:
    """The bytes of a shard file holding ``(key text, Model)`` pairs and the models of ``table`` (whose keys
    are key texts) (keys in sorted order; one config).

    ``names`` (slot -> feature name) and ``shared`` (metadata such as ``input`` and ``provenance``): what
    the keys share when their models do not carry it themselves (else the first model's is written)."""
    return encode_shard(models, names=names, shared=shared, table=table)[0]


def _own_metadata(metadata: dict) -> dict:
    return {name: value for name, value in metadata.items() if name not in SHARED_METADATA + DROPPED_METADATA}


def encode_shard(
    models: Iterable[tuple[str, Model]],
    *,
    names: dict | None = None,
    shared: dict | None = None,
    table: KeyTableModels | None = None,
) -> tuple[bytes, list[dict]]:
    """``(bytes, entries)``: :func:`shard_bytes`, and the index entry of each key (in key order)."""
    models = list(models)
    tabled = len(table) if table is not None else 0
    if not models and not tabled:
        raise ValueError("a shard holds at least one key's model")
    config = models[0][1].config if models else table.config
    if tabled and table.config != config:
        raise ValueError("the models of one folder share one config; the table's differs")
    names = {str(slot): name for slot, name in (names or {}).items()}
    parts, offsets = [SHARD_MAGIC], [len(SHARD_MAGIC)]
    models.sort(key=lambda pair: pair[0])
    # Each key: (key, its record's number, or -1 - its row of the table).
    keys = [(key, number) for number, (key, _) in enumerate(models)]
    for key, model in models:
        if model.config != config:
            raise ValueError(f"the models of one folder share one config; {key!r}'s differs")
        for slot, name in model.names.items():
            names.setdefault(str(slot), name)
        record = _record(model)
        parts.append(record)
        offsets.append(offsets[-1] + len(record))
    header_table = None
    if tabled:
        keys += [(key, -1 - row) for row, key in enumerate(table.key_list)]
        record = container.pack(_TABLE_MAGIC, VERSION, {"metadata": _own_metadata(table.metadata)}, table.arrays())
        header_table = [offsets[-1], len(record)]
        parts.append(record)
    keys.sort(key=lambda pair: pair[0])
    if len({key for key, _ in keys}) != len(keys):
        raise ValueError("a shard holds one model per key")
    entries = [entry_of(models[where][1]) if where >= 0 else table.entry(-1 - where) for _, where in keys]
    first = {**(models[0][1].metadata if models else table.metadata), **(shared or {})}
    header = {
        "config": config.to_dict(),
        "shared": {name: first[name] for name in SHARED_METADATA if name in first},
        "names": names,
        "keys": [key for key, _ in keys],
        "entries": entries,
        "table": header_table,
    }
    arrays = {"offsets": np.array(offsets, dtype="<i8"), "where": np.array([w for _, w in keys], dtype="<i8")}
    index = container.pack(_INDEX_MAGIC, VERSION, header, arrays)
    parts.append(index)
    parts.append(_TAIL.pack(len(index), _TAIL_MARK))
    return b"".join(parts), entries


class ShardReader:
    """The models of one shard file, read a key at a time (see the module docstring).

    ``read_range(start, stop)`` returns those bytes of the file (negative
    ``start``: from the end); ``what`` names the file in errors.
    """

    def __init__(self, read_range: Callable[[int, int | None], bytes], what: str = "shard file"):
        self.read_range = read_range
        self.what = what
        tail = read_range(-_TAIL.size, None)
        if len(tail) != _TAIL.size or not tail.endswith(_TAIL_MARK):
            raise ModelFileError(f"{what} is not a polybeam shard of per-key models (or is truncated)")
        (length, _) = _TAIL.unpack(tail)
        data = read_range(-_TAIL.size - length, -_TAIL.size)
        try:
            _, header, arrays = container.unpack(data, _INDEX_MAGIC, newest=VERSION, what=f"{what} index")
        except container.FormatError as error:
            raise ModelFileError(str(error)) from None
        self.config = LearnerConfig.from_dict(header["config"])
        self.shared = header["shared"]
        self.names = {int(slot): name for slot, name in header["names"].items()}
        self._keys: list[str] = header["keys"]
        self._position = {key: i for i, key in enumerate(self._keys)}
        self._entries: list[dict] = header["entries"]
        self._offsets = arrays["offsets"].astype(np.int64)
        # Where each key's model is: its record's number, or -1 - its row of the table (version 1: records).
        self._where = arrays["where"].astype(np.int64) if "where" in arrays else np.arange(len(self._keys))
        self._table_at = header.get("table")
        self._table: KeyTableModels | None = None

    @classmethod
    def of_bytes(cls, data: bytes, what: str = "shard file") -> ShardReader:
        return cls(lambda start, stop: data[start:stop], what)

    def keys(self) -> list[str]:
        return list(self._keys)

    def __contains__(self, key: str) -> bool:
        return key in self._position

    def __len__(self) -> int:
        return len(self._keys)

    def record_keys(self) -> list[str]:
        """The keys whose models have records of their own (not rows of the table), in key order."""
        return [key for key, where in zip(self._keys, self._where) if where >= 0]

    def entry(self, key: str) -> dict | None:
        position = self._position.get(key)
        return None if position is None else self._entries[position]

    def entries(self) -> Iterable[tuple[str, dict]]:
        return zip(self._keys, self._entries)

    def model(self, key: str) -> Model | None:
        """``key``'s model (None when the shard has none), read from its record alone (or from the table)."""
        position = self._position.get(key)
        if position is None:
            return None
        where = int(self._where[position])
        if where < 0:
            _, model = self.table().pair(-1 - where)
            names = {int(slot): self.names[int(slot)] for slot in model.slots if int(slot) in self.names}
            return dataclasses.replace(model, names=names, metadata={**self.shared, **model.metadata})
        data = self.read_range(int(self._offsets[where]), int(self._offsets[where + 1]))
        try:
            _, header, arrays = container.unpack(data, _RECORD_MAGIC, newest=VERSION, what=f"{self.what}, key {key!r}")
        except container.FormatError as error:
            raise ModelFileError(str(error)) from None
        slots = arrays["slots"].astype(np.int64)
        monomials = (
            FactorTable(
                arrays["monomial_slots"].astype(np.int64),
                arrays["monomial_offsets"].astype(np.int64),
                arrays["monomial_factors"].astype(np.int64),
            )
            if "monomial_slots" in arrays
            else {}
        )
        names = {int(slot): self.names[int(slot)] for slot in slots if int(slot) in self.names}
        return Model(
            config=self.config,
            slots=slots,
            weights=arrays["weights"].astype(np.float64),
            metadata={**self.shared, **header["metadata"]},
            names=names,
            expansion=Expansion.from_dict(header["expansion"]) if header.get("expansion") else None,
            monomials=monomials,
            clip_low=arrays["clip_low"].astype(np.float64) if "clip_low" in arrays else None,
            clip_high=arrays["clip_high"].astype(np.float64) if "clip_high" in arrays else None,
            fill_slots=arrays["fill_slots"].astype(np.int64) if "fill_slots" in arrays else None,
            fill_values=arrays["fill_values"].astype(np.float64) if "fill_values" in arrays else None,
            fill_indicated=arrays["fill_indicated"].astype(bool) if "fill_indicated" in arrays else None,
        )

    def table(self) -> KeyTableModels | None:
        """The models of the shard's keys learned as a table (None when it has none), read once."""
        if self._table is None and self._table_at is not None:
            start, length = self._table_at
            data = self.read_range(int(start), int(start) + int(length))
            try:
                _, header, arrays = container.unpack(data, _TABLE_MAGIC, newest=VERSION, what=f"{self.what}, table")
            except container.FormatError as error:
                raise ModelFileError(str(error)) from None
            rows = np.flatnonzero(self._where < 0)
            keys = [None] * len(rows)
            for position in rows:
                keys[-1 - int(self._where[position])] = self._keys[position]
            self._table = KeyTableModels.from_arrays(self.config, keys, arrays, header["metadata"])
        return self._table

    def models(self) -> Iterable[tuple[str, Model]]:
        """Every key's model, in key order."""
        for key in self._keys:
            yield key, self.model(key)


def summarise(entries: Sequence[dict]) -> dict:
    """Figures over keys' index entries: keys, examples, the example-weighted progressive loss (over
    ``examples_with_loss``), non-zero weights, and the holdout's judged / released / stopped-early keys.

    >>> summarise([{"examples": 10, "progressive_loss": 0.5, "nonzero_weights": 3},
    ...            {"examples": 30, "progressive_loss": 0.1, "nonzero_weights": 2}])["progressive_loss"]
    0.2
    """
    losses = [
        (entry["progressive_loss"], entry.get("examples") or 0)
        for entry in entries
        if entry.get("progressive_loss") is not None
    ]
    weight = sum(count for _, count in losses)
    summary = {
        "keys": len(entries),
        "examples": sum(entry.get("examples") or 0 for entry in entries),
        "nonzero_weights": sum(entry.get("nonzero_weights") or 0 for entry in entries),
        "progressive_loss": sum(loss * count for loss, count in losses) / weight if weight else None,
        "examples_with_loss": weight,
    }
    held = [entry for entry in entries if "best_pass" in entry]
    if held:
        judged = [entry for entry in held if entry["best_pass"] is not None]
        summary["holdout"] = {
            "keys_judged": len(judged),
            "keys_released": len(held) - len(judged),
            "keys_stopped_early": sum(1 for entry in judged if entry.get("stopped_after")),
        }
    return summary


def add_summaries(summaries: Sequence[dict]) -> dict:
    """The :func:`summarise` of all the entries that ``summaries`` summarise, one part each.

    >>> parts = [summarise([{"examples": 10, "progressive_loss": 0.5}]), summarise([{"examples": 30, "progressive_loss": 0.1}])]
    >>> total = add_summaries(parts)
    >>> total["keys"], total["examples"], round(total["progressive_loss"], 6)
    (2, 40, 0.2)
    """
    total = {
        name: sum(part[name] for part in summaries)
        for name in ("keys", "examples", "nonzero_weights", "examples_with_loss")
    }
    weighted = sum(
        part["progressive_loss"] * part["examples_with_loss"]
        for part in summaries
        if part["progressive_loss"] is not None
    )
    total["progressive_loss"] = weighted / total["examples_with_loss"] if total["examples_with_loss"] else None
    held = [part["holdout"] for part in summaries if "holdout" in part]
    if held:
        total["holdout"] = {name: sum(part[name] for part in held) for name in held[0]}
    return total
