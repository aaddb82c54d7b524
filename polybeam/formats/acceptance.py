"""Whether a read can be what the user meant: the input checks every job makes before it writes.

A job that read no example, or whose records were mostly unreadable, almost
always read the wrong files or read them in the wrong format (a CSV file
read with the default ``--format libsvm`` turns every record into a dead
letter). Training on what is left would write a model that looks fine and
is not, so such a job fails, and says what to fix:

* a refused record, one holding what the task cannot take (a label that is
  not one of its classes, a feature index 0 in a LIBSVM file numbered from
  1): whatever their share, since training without them gives a model that
  never saw a class; the message counts each kind and says what to pass;
* no example read: unless ``allow_empty``;
* more dead letters than ``max_dead_letter_fraction`` of the records that
  were not blank, comments or headers: the count, the first reasons, and the
  likely cause (for a wrong format, which format the records look like).

The dead letters themselves are written in full either way.

>>> from polybeam.formats.records import DeadLetter, ReadCounts
>>> policy = InputPolicy(format="libsvm", dead_letter_file="bad.jsonl")
>>> policy.problem(ReadCounts(records=100, examples=97, dead_letters=3), []) is None
True
>>> letters = [DeadLetter("x.csv", line, 0, raw, "label is not a number")
...            for line, raw in [(1, "a,b,label"), (2, "1,2,1"), (3, "3,4,0")]]
>>> print(policy.problem(ReadCounts(records=4, dead_letters=4), letters))
all 4 records (100%) are dead letters, more than --max-dead-letter-fraction 0.1 allows; the first reasons:
  x.csv line 1: label is not a number
  x.csv line 2: label is not a number
  x.csv line 3: label is not a number
likely cause: the records look like CSV, not LIBSVM: check --format (--format csv?). Every dead letter is in bad.jsonl
>>> print(policy.problem(ReadCounts(records=2, skipped=2), []))
no example was read: the 2 records read are all blank, comment or header lines; check --input, or pass --allow-empty to accept an empty input
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from polybeam.formats.formats import FORMAT_SPECS
from polybeam.formats.records import DeadLetter, ReadCounts

DEFAULT_MAX_DEAD_LETTER_FRACTION = 0.1
# How many dead letters a failure shows.
FIRST_REASONS = 3
# With at least this share of the records unreadable, the whole input is probably of another kind.
NEARLY_ALL = 0.9
# How many kinds of refused records a failure lists.
LISTED_REFUSALS = 10

FORMAT_NAMES = {name: spec.title for name, spec in FORMAT_SPECS.items()}
# How a message names the settings: to a user of the command (its flags), or of the Python API
# (ReadExamples' keyword arguments), so that each reads what to change where they set it.
SPELLINGS = ("command", "python")
_OPTION_NAMES = {
    "command": {
        "classes": "--class-names NEGATIVE,POSITIVE, or for more classes --loss softmax with --classes K or "
        "--class-names A,B,C",
        "max_dead_letter_fraction": "--max-dead-letter-fraction {value:g}",
        "raise_fraction": "--max-dead-letter-fraction",
        "allow_empty": "pass --allow-empty",
        "input": "--input",
        "format": "--format",
        "guess": "--format {value}",
        "task": "--loss, --classes, --class-names",
        "numbers": "--loss squared or quantile",
        **{name: spec.options for name, spec in FORMAT_SPECS.items() if spec.options},
    },
    "python": {
        "classes": "label_names=(NEGATIVE, POSITIVE), or for more classes labels='multiclass' with classes=K or "
        "label_names=(A, B, C)",
        "max_dead_letter_fraction": "max_dead_letter_fraction={value:g}",
        "raise_fraction": "max_dead_letter_fraction",
        "allow_empty": "pass allow_empty=True",
        "input": "the file pattern",
        "format": "format",
        "guess": "format={value!r}",
        "task": "labels, classes, label_names",
        "numbers": "labels='real' (for squared or quantile loss)",
        **{name: spec.python_options for name, spec in FORMAT_SPECS.items() if spec.python_options},
    },
}

_LIBSVM_LINE = re.compile(r"^\s*\S+(\s+(qid|\d+):\S+)+\s*(#.*)?$")
_QUOTED_OR_SEPARATED = re.compile(r"[,;\t]")
_JSON_OBJECT = re.compile(r"^\s*\{.*\}\s*$")


@dataclass
class Refusals:
    """The refused records of a read, by what they hold (``"label 2"``): ``kinds`` maps each to its count
    and the first such record's dead letter (by position), for :data:`LISTED_REFUSALS` kinds at most;
    ``more`` counts the records of kinds beyond those; ``total`` all of them.

    >>> letter = DeadLetter("a.csv", 3, 10, "2,1", "label 2 is not a class of this task", refused="label 2")
    >>> refusals = Refusals().add(letter).add(letter)
    >>> refusals.total, refusals.kinds["label 2"][0]
    (2, 2)
    """

    kinds: dict = field(default_factory=dict)
    more: int = 0
    total: int = 0

    def add(self, letter: DeadLetter) -> Refusals:
        return self.merge(Refusals({letter.refused: (1, letter)}, 0, 1))

    def merge(self, other: Refusals) -> Refusals:
        kinds = dict(self.kinds)
        more = self.more + other.more
        for held, (count, letter) in other.kinds.items():
            if held in kinds:
                known, first = kinds[held]
                kinds[held] = (known + count, min(first, letter, key=position))
            elif len(kinds) < LISTED_REFUSALS:
                kinds[held] = (count, letter)
            else:
                more += count
        return Refusals(kinds, more, self.total + other.total)


class InputRejected(Exception):
    """The input cannot be what the user meant (no example, or too many dead letters); the job fails."""


def guess_format(raw: str) -> str | None:
    """Which format a record looks like, from its text; None when it looks like none.

    >>> [guess_format(r) for r in ["1 3:0.5 7:1", "-1 |f a:1 b", "5.1,3.5,setosa", "PAR1...", '{"y": 1}']]
    ['libsvm', 'vw', 'csv', 'parquet', 'jsonl']
    >>> guess_format("hello") is None
    True
    """
    for name, spec in FORMAT_SPECS.items():
        if spec.magic and raw.startswith(spec.magic.decode("latin-1")):
            return name
    if _JSON_OBJECT.match(raw):
        return "jsonl"
    if "|" in raw:
        return "vw"
    if _LIBSVM_LINE.match(raw):
        return "libsvm"
    if _QUOTED_OR_SEPARATED.search(raw):
        return "csv"
    return None


def where(letter: DeadLetter) -> str:
    """``source line N`` (or ``offset N`` when the line is unknown)."""
    return (
        f"{letter.source} line {letter.line}" if letter.line is not None else f"{letter.source} offset {letter.offset}"
    )


def first_letters(letters, count: int = FIRST_REASONS) -> list[DeadLetter]:
    """The ``count`` dead letters that come first in their files (by file, then position)."""
    return sorted(letters, key=position)[:count]


def position(letter: DeadLetter) -> tuple:
    """A dead letter's place in the input: its file, then its byte offset (or row)."""
    return (letter.source or "", letter.offset if letter.offset is not None else -1, letter.line or 0)


@dataclass(frozen=True)
class InputPolicy:
    """What a job accepts from its read; :meth:`problem` says why a read is refused.

    Parameters
    ----------
    allow_empty : bool, default False
        Accept a read that produced no example.
    max_dead_letter_fraction : float, default 0.1
        Refuse a read whose dead letters are more than this share of the
        records that are not blank, comment or header lines (1 accepts all).
    format : str
        The format the records were read as (for the likely cause).
    dead_letter_file : str, optional
        Where the dead letters were written (named in the message).
    spelling : {"command", "python"}, default "command"
        How messages name the settings: the ``polybeam`` command's flags
        (``--max-dead-letter-fraction``) or ReadExamples' keyword arguments
        (``max_dead_letter_fraction=``).
    expected : str, optional
        What a model that reads the input says of its own input ("the model m.model was trained on CSV
        input (--format csv ...)"): the likely cause of records of another format names it.

    >>> print(InputPolicy(spelling="python").problem(ReadCounts(records=0), []))  # doctest: +NORMALIZE_WHITESPACE
    no example was read: the input holds no record; check the file pattern, or pass allow_empty=True
    to accept an empty input
    """

    allow_empty: bool = False
    max_dead_letter_fraction: float = DEFAULT_MAX_DEAD_LETTER_FRACTION
    format: str = "libsvm"
    dead_letter_file: str | None = None
    spelling: str = "command"
    expected: str | None = None

    def __post_init__(self):
        if self.spelling not in SPELLINGS:
            raise ValueError(f"spelling must be one of {', '.join(SPELLINGS)}; got {self.spelling!r}")
        fraction = self.max_dead_letter_fraction
        if isinstance(fraction, bool) or not (isinstance(fraction, (int, float)) and 0.0 <= fraction <= 1.0):
            raise ValueError(f"{self._name('raise_fraction')} must be a number from 0 to 1, got {fraction!r}")

    def _name(self, setting: str, value=None) -> str:
        """How this policy's messages name ``setting`` (with ``value``)."""
        return _OPTION_NAMES[self.spelling][setting].format(value=value)

    def problem(self, counts: ReadCounts, letters: list[DeadLetter], refusals: Refusals | None = None) -> str | None:
        """Why this read must fail, or None; ``letters`` are its first dead letters (:func:`first_letters`),
        ``refusals`` its refused records (:class:`Refusals`)."""
        if refusals is not None and refusals.total:
            return self._refused(counts, refusals)
        letters = first_letters(letters)
        readable = counts.examples + counts.dead_letters
        if readable and counts.dead_letters / readable > self.max_dead_letter_fraction:
            return self._too_many_dead_letters(counts, letters)
        if counts.examples == 0 and not self.allow_empty:
            return self._empty(counts, letters)
        return None

    def check(self, counts: ReadCounts, letters: list[DeadLetter]) -> None:
        """Raise :class:`InputRejected` with :meth:`problem`'s message when there is one."""
        message = self.problem(counts, letters)
        if message is not None:
            raise InputRejected(message)

    def _too_many_dead_letters(self, counts: ReadCounts, letters: list[DeadLetter]) -> str:
        readable = counts.examples + counts.dead_letters
        share = counts.dead_letters / readable
        # Floor the percentage so that 99.97% never reads as "100%" beside a count that is not all.
        percent = f"{math.floor(share * 1000) / 10:g}%" if share < 1 else "100%"
        counted = (
            f"all {readable} records"
            if counts.dead_letters == readable
            else f"{counts.dead_letters} of {readable} records"
        )
        lines = [
            f"{counted} ({percent}) are dead letters, more than "
            f"{self._name('max_dead_letter_fraction', self.max_dead_letter_fraction)} allows; "
            f"{self._reasons(letters)}"
        ]
        lines.append(f"likely cause: {self._cause(share, letters)}.{self._where_letters()}")
        return "\n".join(lines)

    def _refused(self, counts: ReadCounts, refusals: Refusals) -> str:
        readable = counts.examples + counts.dead_letters
        of = f" of {readable}" if readable else ""
        lines = [
            f"{refusals.total}{of} records hold what this task cannot take (a refused record is never dropped as "
            "damage: the model would not know what it holds):"
        ]
        for held, (count, letter) in sorted(refusals.kinds.items(), key=lambda item: -item[1][0]):
            why = "" if letter.reason == held else f": {letter.reason}"
            lines.append(f"  {held}: {count} record{'s' if count != 1 else ''}, first at {where(letter)}{why}")
        if refusals.more:
            lines.append(f"  ... and {refusals.more} records of other kinds")
        labels = [letter.reason for held, (_, letter) in refusals.kinds.items() if held.startswith("label")]
        if any(" is not a count" in reason for reason in labels):
            lines.append(f"likely cause: the labels are not counts; for any number, {self._name('numbers')}.")
        elif labels:
            lines.append(
                f"likely cause: the labels are not the task's classes: name the classes, {self._name('classes')}."
            )
        return "\n".join(lines) + self._where_letters()

    def _empty(self, counts: ReadCounts, letters: list[DeadLetter]) -> str:
        advice = f"check {self._name('input')}, or {self._name('allow_empty')} to accept an empty input"
        if counts.dead_letters:
            return (
                f"no example was read: all {counts.dead_letters} readable records are dead letters; "
                f"{self._reasons(letters)}\n{advice}.{self._where_letters()}"
            )
        if counts.records == 0:
            return f"no example was read: the input holds no record; {advice}"
        return (
            f"no example was read: the {counts.records} records read are all blank, comment or header lines; {advice}"
        )

    @staticmethod
    def _reasons(letters: list[DeadLetter]) -> str:
        heading = "the first reason:" if len(letters) == 1 else "the first reasons:"
        return "\n".join([heading] + [f"  {where(letter)}: {letter.reason}" for letter in letters])

    def _cause(self, share: float, letters: list[DeadLetter]) -> str:
        if share < NEARLY_ALL:
            return (
                "part of the input is damaged or of another kind: fix those records, or raise "
                f"{self._name('raise_fraction')} to go on without them"
            )
        named = FORMAT_NAMES.get(self.format, self.format)
        guess = guess_format(letters[0].raw) if letters and letters[0].raw else None
        if guess is not None and guess != self.format and self.expected:
            return f"the records look like {FORMAT_NAMES[guess]}, not {named}, and {self.expected}"
        if guess is not None and guess != self.format:
            return (
                f"the records look like {FORMAT_NAMES[guess]}, not {named}: check {self._name('format')} "
                f"({self._name('guess', guess)}?)"
            )
        if guess == self.format:
            options = _OPTION_NAMES[self.spelling].get(self.format)
            return (
                f"the records look like {named} but do not fit "
                + (f"its options ({options})" if options else "")
                + (" or " if options else "")
                + f"the task ({self._name('task')}): check the reasons"
            )
        return f"the input is not {named}: check {self._name('format')} and {self._name('input')}"

    def _where_letters(self) -> str:
        return f" Every dead letter is in {self.dead_letter_file}" if self.dead_letter_file else ""
