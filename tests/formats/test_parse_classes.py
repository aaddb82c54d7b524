"""Class names and class counts: validation, the numba lookup table, and label checks."""

from __future__ import annotations

import mmh3
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from parsing_strategies import PROPERTY_SETTINGS

from polybeam.formats import label_problems
from polybeam.formats.classes import (
    NO_CLASS,
    check_classes,
    check_label_names,
    class_names,
    string_labels,
)

# Two names with one MurmurHash3 (seed 0): the table must tell them apart by their bytes.
COLLIDING = ("k15599", "k97211")


def test_colliding_names_really_collide():
    assert mmh3.hash(COLLIDING[0], 0, signed=False) == mmh3.hash(COLLIDING[1], 0, signed=False)


def test_a_hash_collision_never_maps_a_token_to_the_wrong_class():
    first, second = COLLIDING
    assert class_names((first,)).class_of(second) == NO_CLASS
    assert class_names(("x", second)).class_of(first) == NO_CLASS
    both = class_names(("a", first, "b", second))
    assert (both.class_of(first), both.class_of(second), both.class_of("a"), both.class_of("b")) == (2, 4, 1, 3)


def test_names_match_exactly():
    table = class_names(("cat", "名前", " spaced ", 'say "hi"'))
    assert [table.class_of(name) for name in ("cat", "名前", " spaced ", 'say "hi"')] == [1, 2, 3, 4]
    for other in ("Cat", "ca", "cats", "spaced", " spaced", "名", "", 'say ""hi""'):
        assert table.class_of(other) == NO_CLASS, other
    assert class_names(()).class_of("cat") == NO_CLASS


@PROPERTY_SETTINGS
@given(st.lists(st.text(min_size=1, max_size=6).filter(lambda s: "\n" not in s), unique=True, max_size=40), st.data())
def test_every_name_finds_its_class_and_nothing_else_matches(names, data):
    names = [name for name in names if not _reads_as_number(name)]
    try:
        table = class_names(tuple(names))
    except ValueError:  # names a surrogate cannot encode
        return
    for position, name in enumerate(names):
        assert table.class_of(name) == position + 1
    other = data.draw(st.text(max_size=6))
    assert table.class_of(other) == (names.index(other) + 1 if other in names else NO_CLASS)


def _reads_as_number(text: str) -> bool:
    try:
        float(text.strip())
    except ValueError:
        return False
    return True


def test_unknown_reason_cuts_long_lists_and_long_names():
    table = class_names(tuple(f"class{i}" for i in range(25)))
    reason = table.unknown_reason("x")
    assert reason == (
        "unknown class label 'x'; known classes are class0, class1, class2, class3, class4, class5, "
        "class6, class7, class8, class9, ... (25 in all)"
    )
    long = class_names(("a" * 100,)).unknown_reason("b" * 100)
    assert long == f"unknown class label '{'b' * 40}...'; known classes are {'a' * 40}..."


@pytest.mark.slow
def test_string_labels_reads_numbers_names_and_empty_strings():
    table = class_names(("cat", "dog"))
    raw = b"dog3cow2.5cat"
    starts, stops = np.array([0, 3, 4, 7, 10, 13]), np.array([3, 4, 7, 10, 13, 13])
    labels, unknown, empty = string_labels(np.frombuffer(raw, np.uint8), starts, stops, *table.arrays)
    assert labels.tolist()[:2] == [2.0, 3.0] and labels.tolist()[3:5] == [2.5, 1.0]
    assert np.isnan(labels[[2, 5]]).all()
    assert unknown.tolist() == [False, False, True, False, False, False]
    assert empty.tolist() == [False] * 5 + [True]


@pytest.mark.parametrize(
    "names, error, message",
    [
        ("cat", TypeError, "not a single string"),
        (5, TypeError, "sequence of class names"),
        (("cat", 3), TypeError, "must be strings"),
        (("cat", ""), ValueError, r"cannot be empty \(class 2 is ''\)"),
        (("cat", "dog", "cat"), ValueError, "must be unique; 'cat' is given 2 times"),
        (("a\nb",), ValueError, "line break"),
        (("0", "one"), ValueError, "'0' reads as the number 0 but would be class 1"),
        (("one", "1"), ValueError, "'1' reads as the number 1 but would be class 2"),
        (("nan",), ValueError, "'nan' reads as the number nan"),
        (("\ud800",), ValueError, "valid Unicode"),
    ],
)
def test_bad_label_names_are_refused(names, error, message):
    with pytest.raises(error, match=message):
        check_label_names(names)


def test_a_name_may_be_its_own_class_number_and_none_means_no_names():
    assert check_label_names(["one", "2", "3.0"]) == ("one", "2", "3.0")
    assert check_label_names(None) == check_label_names([]) == ()


@pytest.mark.parametrize(
    "classes, names, error, message",
    [
        (-1, 0, ValueError, "classes must be >= 0"),
        (True, 0, TypeError, "whole number"),
        (2.0, 0, TypeError, "whole number"),
        (3, 2, ValueError, "classes is 3 but 2 label_names are given"),
    ],
)
def test_bad_classes_are_refused(classes, names, error, message):
    with pytest.raises(error, match=message):
        check_classes(classes, names)


def test_classes_default_to_the_number_of_names():
    assert (check_classes(0), check_classes(0, 4), check_classes(4, 4), check_classes(np.int64(7))) == (0, 4, 4, 7)


def test_label_problems_keeps_the_two_argument_call_and_bounds_classes():
    labels = np.array([1.0, 3.0, 4.0, 0.0, 2.5, np.nan])
    bad, reason = label_problems(labels, "multiclass")
    assert bad.tolist() == [False, False, False, True, True, True]
    assert reason == "class label must be a whole number >= 1"
    bad, reason = label_problems(labels, "multiclass", classes=3)
    assert bad.tolist() == [False, False, True, True, True, True]
    assert reason == "class label must be a whole number from 1 to 3"
    assert not label_problems(labels, "any", 3)[0].any()
    assert label_problems(labels, "real", 3)[0].tolist() == [False] * 5 + [True]
    with pytest.raises(ValueError, match="classes"):
        label_problems(labels, "multiclass", classes=-2)
