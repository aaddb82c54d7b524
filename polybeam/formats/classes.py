"""Class labels given by name: ``label_names`` and ``classes`` of a multiclass task.

A multiclass task takes the labels 1 ... K. With ``label_names=("cat", "dog",
"bird")`` a format reads the label ``dog`` as class 2: the i-th name (0-based)
is class i + 1, and ``classes`` becomes 3. A label that reads as a number still
means that number, so ``3`` is class 3 and the files may mix the two. Any other
label is refused, naming the known classes. A binary task (logistic or hinge
loss) takes two names: the first is its negative class, the second its
positive one.

When **every** name reads as a number (``("0", "1", ..., "9")``, ``("1",
"2")``), labels are matched to the names by value instead (see
:mod:`polybeam.formats.labels`): ``0`` is then the class named ``0``. Otherwise,
so that the two readings never disagree, a name may read as a number only if
it is its own class number (``"3"`` may be the third name of ``("a", "b",
"3")``). Names are compared exactly, byte for byte in UTF-8: no case folding, and
blank space counts (CSV trims unquoted cells; quote a name with blanks around it).

The text kernels look names up without leaving numba: the MurmurHash3 of every
name sits in a sorted array, a label's hash is binary-searched there, and the
label's bytes are then compared with the name's, so that a hash collision can
never give a label the wrong class.

Examples
--------
>>> table = class_names(("cat", "dog", "bird"))
>>> table.class_of("dog"), table.class_of("cow"), table.class_of("Dog")
(2, 0, 0)
>>> table.unknown_reason("cow")
"unknown class label 'cow'; known classes are cat, dog, bird"
>>> check_label_names(["cat", "dog", "cat"])
Traceback (most recent call last):
...
ValueError: label names must be unique; 'cat' is given 2 times
>>> check_label_names(("one", "2")), check_classes(0, 2)
(('one', '2'), 2)
>>> check_label_names(("0", "1"))  # every name a number: labels are matched by value
('0', '1')
>>> check_label_names(("0", "dog"))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: label name '0' reads as the number 0 but would be class 1: a numeric label means its class number ...
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from dataclasses import dataclass

import numba
import numpy as np

from polybeam.formats.labels import LABEL_KINDS
from polybeam.formats.numbers import parse_number, scan_number
from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernels below)
from polybeam.learners.hashing import murmur3_32

# Class id for "no such name" (class ids start at 1).
NO_CLASS = 0
# Reasons list this many names, each cut to NAME_CHARS characters.
MAX_LISTED_NAMES = 10
NAME_CHARS = 40
# The kinds of label a task with classes or class names can have.
MULTICLASS_KINDS = ("multiclass", "any")


def sequence_of_texts(values, option: str, items: str) -> tuple:
    """``values`` (a sequence of ``items``, such as a list of strings) as a tuple; None gives ``()``. A single
    string is refused: it is a sequence of characters, never what the option means.

    >>> sequence_of_texts(["no", "yes"], "label_names", "class names")
    ('no', 'yes')
    >>> sequence_of_texts("no,yes", "label_names", "class names")
    Traceback (most recent call last):
    ...
    TypeError: label_names must be a sequence of class names, not a single string: 'no,yes'
    """
    if values is None:
        return ()
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{option} must be a sequence of {items}, not a single string: {values!r}")
    try:
        return tuple(values)
    except TypeError:
        raise TypeError(f"{option} must be a sequence of {items}, got {values!r}") from None


def check_label_names(label_names) -> tuple[str, ...]:
    """Validate ``label_names`` (distinct, non-empty strings); returns them as a tuple (None: no names)."""
    names = sequence_of_texts(label_names, "label_names", "class names")
    every_name_a_number = all(isinstance(name, str) and _number_or_none(name) is not None for name in names)
    for position, name in enumerate(names):
        if not isinstance(name, str):
            raise TypeError(f"label names must be strings, got {name!r} for class {position + 1}")
        if name == "":
            raise ValueError(f"label names cannot be empty (class {position + 1} is '')")
        if "\n" in name:
            raise ValueError(f"label names cannot contain a line break, got {name!r}")
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"label names must be valid Unicode text, got {name!r}") from None
        number = _number_or_none(name)
        if number is not None and not math.isfinite(number):
            raise ValueError(f"label name {name!r} reads as the number {number:g}, which no label can be")
        if number is not None and number != position + 1 and not every_name_a_number:
            raise ValueError(
                f"label name {name!r} reads as the number {number:g} but would be class {position + 1}: a numeric "
                "label means its class number when other names are words, so such a name may be a number only if "
                "it is its own class number (or every name is a number: labels are then matched by value)"
            )
    repeated = [(name, count) for name, count in Counter(names).items() if count > 1]
    if repeated:
        name, count = repeated[0]
        raise ValueError(f"label names must be unique; {name!r} is given {count} times")
    if every_name_a_number:
        values = Counter(_number_or_none(name) for name in names)
        same = [value for value, count in values.items() if count > 1]
        if same:
            raise ValueError(f"label names must be distinct numbers; several names read as {same[0]:g}")
    return tuple(str(name) for name in names)


def check_classes(classes, n_names: int = 0) -> int:
    """Validate ``classes`` (0 or the number of classes K); with ``n_names`` names, 0 becomes ``n_names``."""
    if isinstance(classes, bool) or not isinstance(classes, (int, np.integer)):
        raise TypeError(f"classes must be a whole number >= 0, got {classes!r}")
    if classes < 0:
        raise ValueError(f"classes must be >= 0 (0: not a multiclass task, or no bound), got {classes}")
    if n_names and classes not in (0, n_names):
        raise ValueError(
            f"classes is {classes} but {n_names} label_names are given; the i-th name is class i + 1, "
            f"so classes must be {n_names} (or 0, which means {n_names})"
        )
    return int(classes) or n_names


def check_multiclass_settings(labels: str, classes: int, label_names: tuple[str, ...]) -> None:
    """``classes`` and ``label_names`` only make sense for multiclass labels (or ``any``, for prediction);
    a binary task may name its two classes (negative, then positive)."""
    if labels == "binary" and label_names:
        if len(label_names) != 2:
            raise ValueError(
                f"a binary task names two classes (the negative, then the positive one); got {len(label_names)} "
                f"names: {', '.join(label_names)}"
            )
        return
    if (classes or label_names) and labels not in MULTICLASS_KINDS:
        option = "label_names" if label_names else "classes"
        raise ValueError(
            f"{option} describes a multiclass task, but labels is {labels!r}; use labels='multiclass' "
            f"(or 'any' to read prediction input); the label kinds are {LABEL_KINDS}"
        )


def _number_or_none(text: str) -> float | None:
    try:
        return parse_number(text)
    except ValueError:
        return None


def short_text(text: str, limit: int = NAME_CHARS) -> str:
    """``text`` cut to ``limit`` characters and "..." for a message."""
    return text if len(text) <= limit else text[:limit] + "..."


@dataclass(frozen=True, eq=False)
class ClassNames:
    """The lookup table of a format's class names (see :func:`class_names`).

    ``hashes`` holds the names' MurmurHash3 (seed 0) in increasing order and
    ``ids`` the class of each entry; name ``i`` (class ``i + 1``) is
    ``text[offsets[i]:offsets[i + 1]]`` in UTF-8.
    """

    names: tuple[str, ...]
    hashes: np.ndarray
    ids: np.ndarray
    text: np.ndarray
    offsets: np.ndarray

    @property
    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(hashes, ids, text, offsets)``, the arguments of the kernels."""
        return self.hashes, self.ids, self.text, self.offsets

    def class_of(self, label: str | bytes) -> int:
        """The class a label names, or 0 (a Python helper for tests and docs; kernels use :func:`find_class`)."""
        raw = np.frombuffer(label.encode("utf-8") if isinstance(label, str) else bytes(label), dtype=np.uint8)
        return int(find_class(raw, 0, len(raw), len(self.hashes), *self.arrays))

    def unknown_reason(self, label: str) -> str:
        """Why ``label`` (the label's text) is a dead letter: it is neither a number nor a name."""
        listed = ", ".join(short_text(name) for name in self.names[:MAX_LISTED_NAMES])
        if len(self.names) > MAX_LISTED_NAMES:
            listed += f", ... ({len(self.names)} in all)"
        return f"unknown class label {short_text(label)!r}; known classes are {listed}"


@functools.lru_cache(maxsize=64)
def class_names(label_names: tuple[str, ...]) -> ClassNames:
    """The lookup table of ``label_names`` (validated), built once per tuple of names."""
    names = check_label_names(label_names)
    encoded = [name.encode("utf-8") for name in names]
    text = np.frombuffer(b"".join(encoded), dtype=np.uint8).copy()
    offsets = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum([len(raw) for raw in encoded], out=offsets[1:])
    hashes = np.array([murmur3_32(text, offsets[i], offsets[i + 1], 0) for i in range(len(names))], dtype=np.int64)
    order = np.argsort(hashes, kind="stable")
    table = ClassNames(names, hashes[order], (order + 1).astype(np.int64), text, offsets)
    for array in table.arrays:
        array.setflags(write=False)
    return table


NO_NAMES = class_names(())


@numba.njit(cache=True)
def find_class(data, start, stop, count, hashes, ids, text, offsets):
    """The class whose name is exactly ``data[start:stop]``, or :data:`NO_CLASS`.

    ``count`` is the number of names, ``hashes``, ``ids``, ``text`` and
    ``offsets`` the arrays of a :class:`ClassNames` (or raw pointers to them).
    """
    if count == 0:
        return NO_CLASS
    key = murmur3_32(data, start, stop, 0)
    low = 0
    high = count
    while low < high:  # the first entry >= key
        middle = (low + high) // 2
        if hashes[middle] < key:
            low = middle + 1
        else:
            high = middle
    length = stop - start
    while low < count and hashes[low] == key:
        class_id = ids[low]
        name_start = offsets[class_id - 1]
        if offsets[class_id] - name_start == length:
            same = True
            for i in range(length):
                if data[start + i] != text[name_start + i]:
                    same = False
                    break
            if same:
                return class_id
        low += 1
    return NO_CLASS


# nogil: Beam runs several bundles per worker process in threads.
@numba.njit(cache=True, nogil=True)
def string_labels(data, starts, stops, hashes, ids, text, offsets):
    """Labels of strings ``data[starts[i]:stops[i]]`` (Arrow string columns): numbers or class names.

    Returns ``(labels, unknown, empty)``: an unknown label gets NaN and
    ``unknown``; an empty string gets NaN and ``empty`` (a missing label).
    """
    n = len(starts)
    labels = np.empty(n, dtype=np.float64)
    unknown = np.zeros(n, dtype=np.bool_)
    empty = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        start = starts[i]
        stop = stops[i]
        labels[i] = np.nan
        if stop == start:
            empty[i] = True
            continue
        value, end = scan_number(data, start, stop)
        if end == stop:
            labels[i] = value
            continue
        class_id = find_class(data, start, stop, len(hashes), hashes, ids, text, offsets)
        if class_id == NO_CLASS:
            unknown[i] = True
        else:
            labels[i] = class_id
    return labels, unknown, empty
