"""What parsing a block of input produces: examples, dead letters and counts.

Every record read ends up in exactly one place, so that

    records == examples + dead letters + skipped (blank, comment and header lines)

holds for every block and therefore for every file and every pipeline.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

import numpy as np

from polybeam.learners.batch import ExampleBatch

# Dead letters keep the start of the offending record, not megabytes of it.
MAX_RAW_CHARS = 1000


class InputFileError(ValueError):
    """A whole input file cannot be read as asked (a Parquet file without the label column, ...): the
    message names the file and what is wrong, for the user; a job that meets one fails."""


@dataclass(frozen=True)
class DeadLetter:
    """A record that could not become an example, and why.

    ``line`` is the 1-based line number in ``source`` (the row number for
    Parquet) when known; a reader that starts in the middle of a split file
    knows only ``offset``, the record's byte offset in the decompressed
    stream, and the dead-letter path fills the line number in later.

    ``refused`` says what the record holds that contradicts the task or the
    input's contract (``"label 2"`` in a binary task, a feature index 0 in a
    LIBSVM file numbered from 1); None for a damaged record. A refused record
    is never dropped as damage: a job that meets one fails, saying what to
    pass (see :class:`~polybeam.formats.acceptance.InputPolicy`).

    >>> letter = DeadLetter("a.txt", 3, 42, "1 0:1", "feature index must be >= 1")
    >>> DeadLetter.from_json(letter.to_json()) == letter
    True
    """

    source: str
    line: int | None
    offset: int
    raw: str
    reason: str
    refused: str | None = None

    @classmethod
    def from_bytes(
        cls, raw: bytes, *, source: str, line: int | None, offset: int, reason: str, refused: str | None = None
    ) -> DeadLetter:
        """A dead letter for raw input bytes, cut to a readable length."""
        text = raw[: MAX_RAW_CHARS * 4].decode("utf-8", errors="replace").rstrip("\r\n")
        if len(text) > MAX_RAW_CHARS:
            text = text[:MAX_RAW_CHARS] + "..."
        return cls(source=source, line=line, offset=offset, raw=text, reason=reason, refused=refused)

    def to_json(self) -> str:
        record = asdict(self)
        if record["refused"] is None:  # (damaged records' letters read as they always did)
            del record["refused"]
        return json.dumps(record, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> DeadLetter:
        return cls(**json.loads(text))


@dataclass(frozen=True)
class ReadCounts:
    """Records read and where each went; they add up across blocks, files and workers.

    ``reconciles`` checks that none was lost: every record became an example,
    a dead letter or a skipped (blank, comment or header) line.

    >>> total = ReadCounts(10, 7, 1, 2) + ReadCounts(5, 5, 0, 0)
    >>> total, total.reconciles
    (ReadCounts(records=15, examples=12, dead_letters=1, skipped=2), True)
    >>> ReadCounts.from_dict(total.to_dict()) == total
    True
    """

    records: int = 0
    examples: int = 0
    dead_letters: int = 0
    skipped: int = 0

    def __add__(self, other: ReadCounts) -> ReadCounts:
        return ReadCounts(
            self.records + other.records,
            self.examples + other.examples,
            self.dead_letters + other.dead_letters,
            self.skipped + other.skipped,
        )

    @property
    def reconciles(self) -> bool:
        return self.records == self.examples + self.dead_letters + self.skipped

    def to_dict(self) -> dict:
        return {**asdict(self), "reconciles": self.reconciles}

    @classmethod
    def from_dict(cls, values: dict) -> ReadCounts:
        return cls(*(int(values.get(name, 0)) for name in ("records", "examples", "dead_letters", "skipped")))

    def describe(self) -> str:
        check = "ok" if self.reconciles else "MISMATCH"
        return (
            f"records read {self.records} = examples {self.examples} + dead letters {self.dead_letters} "
            f"+ skipped {self.skipped} ({check})"
        )


@dataclass
class ParsedBlock:
    """The outcome of parsing one block of records.

    ``batch`` holds the good examples (its ``row_ids`` are the records' byte
    offsets, or row numbers for Parquet), ``dead_letters`` the bad ones, and
    ``skipped`` counts blank, comment and header lines.
    """

    batch: ExampleBatch
    dead_letters: list[DeadLetter] = field(default_factory=list)
    records: int = 0
    skipped: int = 0

    @property
    def counts(self) -> ReadCounts:
        """Where this block's records went."""
        return ReadCounts(self.records, len(self.batch), len(self.dead_letters), self.skipped)

    def __post_init__(self) -> None:
        accounted = len(self.batch) + len(self.dead_letters) + self.skipped
        if accounted != self.records:
            raise AssertionError(
                f"parser lost records: read {self.records}, but {len(self.batch)} examples + "
                f"{len(self.dead_letters)} dead letters + {self.skipped} skipped = {accounted}"
            )


def reject_examples(parsed: ParsedBlock, bad: np.ndarray, reason, raw_of, refused=None) -> ParsedBlock:
    """Move the examples flagged in ``bad`` from the batch to dead letters.

    ``reason`` is a string, or a function of the example's index in the batch
    returning one. ``raw_of(i)`` returns ``(raw bytes, line, offset)`` for
    example ``i`` of the batch, so that the dead letter says where the record
    came from. ``refused`` (a function of the index, like ``reason``) marks
    the letters as refused records (see :class:`DeadLetter`).
    """
    bad = np.asarray(bad, dtype=bool)
    if not bad.any():
        return parsed
    letters = list(parsed.dead_letters)
    for i in np.flatnonzero(bad):
        raw, line, offset = raw_of(int(i))
        why = reason(int(i)) if callable(reason) else reason
        source = parsed.batch.source or ""
        held = refused(int(i)) if refused is not None else None
        letters.append(DeadLetter.from_bytes(raw, source=source, line=line, offset=offset, reason=why, refused=held))
    return ParsedBlock(
        batch=parsed.batch.take(~bad),
        dead_letters=letters,
        records=parsed.records,
        skipped=parsed.skipped,
    )
