"""The input checks' rule and messages (polybeam.formats.acceptance), without Beam."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from polybeam.formats.acceptance import InputPolicy, InputRejected, first_letters, guess_format
from polybeam.formats.records import DeadLetter, ReadCounts


@given(
    examples=st.integers(0, 1000),
    dead=st.integers(0, 1000),
    skipped=st.integers(0, 50),
    fraction=st.floats(0, 1),
    allow_empty=st.booleans(),
)
def test_a_read_is_refused_exactly_when_it_breaks_a_rule(examples, dead, skipped, fraction, allow_empty):
    counts = ReadCounts(examples + dead + skipped, examples, dead, skipped)
    policy = InputPolicy(allow_empty=allow_empty, max_dead_letter_fraction=fraction)
    too_many = examples + dead > 0 and dead / (examples + dead) > fraction
    empty = examples == 0 and not allow_empty
    problem = policy.problem(counts, [DeadLetter("f", 1, 0, "x", "bad")] * min(dead, 3))
    assert (problem is not None) == (too_many or empty)
    if too_many:
        assert problem.startswith(f"{'all ' if examples == 0 else f'{dead} of '}{examples + dead} records")
        assert problem.count("\n  f line 1: bad") == min(dead, 3)
    elif empty:
        assert problem.startswith("no example was read") and "--allow-empty" in problem


def test_check_raises_the_problem():
    with pytest.raises(InputRejected, match="^no example was read: the input holds no record"):
        InputPolicy().check(ReadCounts(), [])
    InputPolicy(allow_empty=True).check(ReadCounts(), [])


@pytest.mark.parametrize("fraction", [-0.01, 1.01, float("nan"), "0.5"])
def test_the_fraction_must_be_a_share(fraction):
    with pytest.raises(ValueError, match="--max-dead-letter-fraction must be a number from 0 to 1"):
        InputPolicy(max_dead_letter_fraction=fraction)


def test_a_share_just_under_all_never_reads_as_all():
    problem = InputPolicy().problem(ReadCounts(10_000, 3, 9_997), [])
    assert problem.startswith("9997 of 10000 records (99.9%) are dead letters")


@pytest.mark.parametrize(
    "raw, guess",
    [
        ("1 3:0.5 7:1", "libsvm"),
        ("-1 qid:3 1:2 # note", "libsvm"),
        ("0.5 1:1e-3", "libsvm"),
        ("1 2 'tag|ns a:1 b", "vw"),
        ("|f x", "vw"),
        ("5.1,3.5,setosa", "csv"),
        ("a;b;c", "csv"),
        ("1\t2\t3", "csv"),
        ("PAR1\x15\x04", "parquet"),
        ("hello", None),
        ("", None),
    ],
)
def test_the_format_a_record_looks_like(raw, guess):
    assert guess_format(raw) == guess


@pytest.mark.parametrize(
    "fmt, raw, cause",
    [
        ("libsvm", "5.1,3.5,1", "the records look like CSV, not LIBSVM: check --format (--format csv?)"),
        ("csv", "1 |f a b", "the records look like VW text, not CSV: check --format (--format vw?)"),
        ("vw", "1 3:1 4:1", "the records look like LIBSVM, not VW text: check --format (--format libsvm?)"),
        ("csv", "1,x,2", "the records look like CSV but do not fit its options (--label-column, --categorical-columns"),
        ("libsvm", "7 1:1", "the records look like LIBSVM but do not fit the task (--loss, --classes, --class-names)"),
        ("libsvm", "hello", "the input is not LIBSVM: check --format and --input"),
    ],
)
def test_the_likely_cause_of_nearly_all_records_failing(fmt, raw, cause):
    letters = [DeadLetter("f", 1, 0, raw, "bad")]
    assert f"likely cause: {cause}" in InputPolicy(format=fmt).problem(ReadCounts(10, 0, 10), letters)


def test_the_first_letters_are_the_first_in_the_input():
    letters = [
        DeadLetter("b", None, 5, "", "r"),
        DeadLetter("a", 9, 90, "", "r"),
        DeadLetter("a", 2, 10, "", "r"),
        DeadLetter("b", None, 1, "", "r"),
    ]
    assert [(letter.source, letter.offset) for letter in first_letters(letters)] == [("a", 10), ("a", 90), ("b", 1)]
