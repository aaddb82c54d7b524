"""Splitting batches by key, for per-key learners: a user's key function, or ``--key``'s.

:class:`ParsedKeys` is the key of ``--key``: ``tag`` (VW tags), ``file`` (the
input file), ``namespace:NAME`` (the feature of a VW namespace) or
``column:NAME`` (a CSV/Parquet column); the readers pick the last two out of
the examples as integer codes (see ``ExampleBatch.key_codes``), so a batch
splits by key without Python work per example. Missing keys (an example
without a tag, an empty column) are the empty key ``""``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable

import apache_beam as beam
import numpy as np

from polybeam.learners.batch import ExampleBatch
from polybeam.learners.key_spec import KeySpec

KeyFn = Callable[[ExampleBatch], Hashable]


class SplitByKey(beam.DoFn):
    """Emits ``(key, batch)`` pairs: ``key(batch)`` gives one key per example or one for the batch."""

    def __init__(self, key: KeyFn):
        self.key = key

    def process(self, batch: ExampleBatch):
        split = getattr(self.key, "split", None)
        if split is not None:
            yield from split(batch)
            return
        keys = self.key(batch)
        if isinstance(keys, (str, bytes, tuple)) or np.ndim(keys) == 0:
            yield keys, batch
        else:
            yield from batch.split_by(keys)


def split_by_key(batches, key: KeyFn | None):
    """``batches`` as ``(key, batch)`` pairs when a key function is given, else unchanged."""
    if key is None:
        return batches
    return batches | "SplitByKey" >> beam.ParDo(SplitByKey(key))


class ParsedKeys:
    """The key function of ``--key SPEC``; see the module docstring.

    >>> batch = ExampleBatch.from_rows([(1.0, {1: 1.0}), (0.0, {2: 1.0})])
    >>> ParsedKeys("file")(batch)
    ''
    """

    def __init__(self, spec: str | KeySpec):
        self.key_spec = KeySpec.parse(spec)  # (parsed once: what the key is, where each example has it)
        self.spec = str(spec)

    @property
    def kind(self) -> str:
        return self.key_spec.kind

    @property
    def name(self) -> str:
        return self.key_spec.name

    def __call__(self, batch: ExampleBatch):
        if self.kind == "file":
            return batch.source or ""
        if self.kind == "tag":
            return np.array(["" if tag is None else tag for tag in _tags(batch)], dtype=object)
        return _parsed_keys(batch, self.spec).keys

    def split(self, batch: ExampleBatch) -> list[tuple[str, ExampleBatch]]:
        """``(key, part)`` for every key of ``batch``."""
        if self.kind == "file":
            return [(batch.source or "", batch)]
        if self.kind == "tag":
            index: dict[str, int] = {}
            codes = np.fromiter(
                (index.setdefault("" if tag is None else tag, len(index)) for tag in _tags(batch)),
                dtype=np.int32,
                count=len(batch),
            )
            keyed = dataclasses.replace(batch, key_codes=codes, key_names=tuple(index))
            return keyed.split_by_key_codes()
        return _parsed_keys(batch, self.spec).split_by_key_codes()

    def __repr__(self) -> str:
        return f"ParsedKeys({self.spec!r})"


def _tags(batch: ExampleBatch):
    return batch.tags if batch.tags is not None else [None] * len(batch)


def _parsed_keys(batch: ExampleBatch, spec: str) -> ExampleBatch:
    if batch.key_codes is None:
        raise ValueError(f"--key {spec}: the batch has no keys; read it with the key's column or namespace")
    return batch


def key_codes(key: KeyFn, batch: ExampleBatch) -> tuple[np.ndarray, tuple]:
    """``(codes, keys)``: example ``i`` has key ``keys[codes[i]]``, whatever the key function (``--key``'s
    read codes when the batch has them; otherwise ``key(batch)``: one key per example, or one for all).

    >>> batch = ExampleBatch.from_rows([(1.0, {1: 1.0}), (0.0, {2: 1.0}), (1.0, {3: 1.0})])
    >>> codes, keys = key_codes(lambda b: np.array(["x", "y", "x"], dtype=object), batch)
    >>> codes.tolist(), keys
    ([0, 1, 0], ('x', 'y'))
    """
    if isinstance(key, ParsedKeys):
        if key.kind == "file":
            return np.zeros(len(batch), dtype=np.int32), (batch.source or "",)
        if key.kind != "tag":
            parsed = _parsed_keys(batch, key.spec)
            return parsed.key_codes, tuple(parsed.key_names)
    keys = key(batch)
    if isinstance(keys, (str, bytes, tuple)) or np.ndim(keys) == 0:
        return np.zeros(len(batch), dtype=np.int32), (keys,)
    index: dict = {}
    codes = np.fromiter((index.setdefault(value, len(index)) for value in keys), dtype=np.int32, count=len(batch))
    return codes, tuple(index)
