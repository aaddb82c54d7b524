"""What ``--key`` names, parsed once: a value object every layer reads instead of splitting the text.

A key is where each example's key comes from: ``tag`` (a VW line's tag),
``file`` (the input file), ``namespace:NAME`` (the feature of a VW namespace,
then not a feature) or ``column:NAME`` (a column of named-column input, then
not a feature). The last two are *read*: the parser finds each example's key and
the batch carries it (``ExampleBatch.key_codes``).

>>> spec = KeySpec.parse("column:store")
>>> spec.kind, spec.name, spec.read_by_parser, str(spec)
('column', 'store', True, 'column:store')
>>> KeySpec.parse("tag").read_by_parser
False
>>> KeySpec.parse("column")
Traceback (most recent call last):
ValueError: --key column needs a name: column:NAME
"""

from __future__ import annotations

from dataclasses import dataclass

KEY_KINDS = ("tag", "namespace", "column", "file")
# Kinds whose key a parser reads out of each record (the others come with the batch: its tags, its file).
PARSED_KINDS = ("namespace", "column")


def key_text(key) -> str:
    """The key as a per-key model folder writes it (keys from the command line are strings already).

    >>> key_text("a"), key_text(b"b"), key_text(7)
    ('a', 'b', '7')
    """
    if isinstance(key, bytes):
        return key.decode("utf-8", errors="surrogateescape")
    return key if isinstance(key, str) else str(key)


def all_text(keys) -> bool:
    """Whether every one of ``keys`` is a str (checked in C: joining them).

    >>> all_text(["a", "b"]), all_text(["a", b"b"])
    (True, False)
    """
    try:
        "".join(keys)
    except TypeError:
        return False
    return True


@dataclass(frozen=True)
class KeySpec:
    """``kind`` (one of :data:`KEY_KINDS`) and, for ``namespace`` and ``column``, the ``name``."""

    kind: str
    name: str = ""

    @classmethod
    def parse(cls, text: str | KeySpec) -> KeySpec:
        """The spec of ``--key TEXT``; a ValueError says what is wrong and what to write."""
        if isinstance(text, KeySpec):
            return text
        kind, _, name = str(text).partition(":")
        if kind not in KEY_KINDS:
            raise ValueError(f"--key must be tag, file, namespace:NAME or column:NAME, got {text!r}")
        if kind in PARSED_KINDS and not name:
            raise ValueError(f"--key {kind} needs a name: {kind}:NAME")
        if kind not in PARSED_KINDS and name:
            raise ValueError(f"--key {kind} takes no name, got {text!r}")
        return cls(kind, name)

    @property
    def read_by_parser(self) -> bool:
        """Whether the parser reads each example's key out of its record (a column or a namespace)."""
        return self.kind in PARSED_KINDS

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}" if self.name else self.kind
