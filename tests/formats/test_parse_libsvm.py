"""LIBSVM parsing: examples, dead letters, counts, and agreement with the reference parser."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from parsing_reference import ZERO_INDEX_REASON, assert_matches, ref_libsvm, split_lines
from parsing_strategies import FUZZ_SETTINGS, PROPERTY_SETTINGS, blocks, fuzzed, libsvm_line, multiclass_options

from polybeam.formats import LibsvmFormat
from polybeam.learners.hashing import libsvm_slot


def parse(data: bytes, **options):
    return LibsvmFormat(**options).parse(data)


def test_reads_labels_features_and_row_ids():
    data = b"1 3:0.5 7:2\n-1\t2:1\t\t9:-3.5 # trailing\n0.5 qid:12 4:1e-3\n"
    parsed = parse(data)
    batch = parsed.batch
    assert (parsed.records, len(batch), parsed.skipped, parsed.dead_letters) == (3, 3, 0, [])
    assert batch.labels.tolist() == [1.0, -1.0, 0.5]
    assert batch.weights.tolist() == [1.0, 1.0, 1.0]
    assert batch.indptr.tolist() == [0, 2, 4, 5]
    assert batch.indices.tolist() == [3, 7, 2, 9, 4]
    assert batch.values.tolist() == [0.5, 2.0, 1.0, -3.5, 1e-3]
    assert batch.row_ids.tolist() == [0, 12, data.index(b"0.5 qid")]
    assert batch.bits == 18 and batch.source == "<memory>"
    assert batch.namespaces is None and batch.tags is None and batch.names is None


def test_zero_values_are_dropped_and_duplicates_kept():
    batch = parse(b"1 3:0 4:-0.0 5:1 5:2 3:0e10\n").batch
    assert batch.indices.tolist() == [5, 5]
    assert batch.values.tolist() == [1.0, 2.0]


def test_crlf_tabs_and_missing_final_newline():
    data = b"1 2:1\r\n\r\n-1\t3:2\r\n  \t\r\n# comment\r\n1 4:3"
    parsed = parse(data)
    assert parsed.records == 6 and parsed.skipped == 3 and len(parsed.batch) == 3
    assert parsed.batch.values.tolist() == [1.0, 2.0, 3.0]
    assert parsed.batch.row_ids.tolist() == [0, 9, data.index(b"1 4:3")]


def test_empty_block():
    parsed = parse(b"")
    assert parsed.records == 0 and len(parsed.batch) == 0 and parsed.batch.indptr.tolist() == [0]


def test_large_indices_are_hashed_small_ones_kept():
    parsed = parse(b"1 15:1 16:1 123456789:1\n", bits=4, seed=3)
    assert parsed.batch.indices.tolist() == [15, libsvm_slot(16, 4, 3), libsvm_slot(123456789, 4, 3)]
    assert parsed.batch.bits == 4
    assert (parsed.batch.indices < 16).all()


@pytest.mark.parametrize(
    "line, reason",
    [
        (b"1:1 2:1", "missing label"),
        (b"abc 2:1", "label is not a number: 'abc'"),
        (b"1 -3:1", "feature index must be >= 1"),
        (b"1 0:1", ZERO_INDEX_REASON),
        (b"1 -4:1", "feature index must be >= 1"),
        (b"1 -0:1", "feature index must be >= 1"),
        (b"1 1234567890123456789:1", "feature index has more than 18 digits"),
        (b"1 2:x", "feature value is not a number: '2:x'"),
        (b"1 2:", "feature value is not a number: '2:'"),
        (b"1 2:1:3", "feature value is not a number: '2:1:3'"),
        (b"1 2", "feature must be index:value, got '2'"),
        (b"1 a:2", "feature must be index:value, got 'a:2'"),
        (b"1 :2", "feature must be index:value, got ':2'"),
        (b"1 2:inf", "non-finite feature value: '2:inf'"),  # (NaN is a missing value)
        (b"1 2:-inf", "non-finite feature value: '2:-inf'"),
        (b"1 2:1e999", "non-finite feature value: '2:1e999'"),
        (b"1 qid:x 2:1", "qid must be a non-negative integer, got 'qid:x'"),
        (b"1 qid:", "qid must be a non-negative integer, got 'qid:'"),
        (b"1 2:1 qid:3", "feature must be index:value, got 'qid:3'"),
        (b"nan 2:1", "label must be a finite number"),
        (b"1e999 2:1", "label must be a finite number"),
    ],
)
def test_dead_letters_say_why(line, reason):
    data = b"1 1:1\n" + line + b"\r\n-1 2:2\n"
    parsed = LibsvmFormat().parse(data, source="f.txt", offset=1000, first_line=10)
    assert len(parsed.batch) == 2 and parsed.records == 3
    assert parsed.batch.row_ids.tolist() == [1000, 1000 + data.index(b"-1 2:2")]
    (letter,) = parsed.dead_letters
    assert (letter.source, letter.line, letter.offset, letter.reason) == ("f.txt", 11, 1006, reason)
    assert letter.raw == line.decode()


def test_leading_zeros_do_not_count_as_index_digits():
    assert parse(b"1 000000000000000000000000007:1\n").batch.indices.tolist() == [7]


@pytest.mark.parametrize(
    "labels, accepted",
    [("real", [1, -1, 0, 2.5, 3]), ("binary", [1, -1, 0]), ("multiclass", [1, 3]), ("any", [1, -1, 0, 2.5, 3])],
)
def test_label_kinds(labels, accepted):
    parsed = parse(b"1 1:1\n-1 1:1\n0 1:1\n2.5 1:1\n3 1:1\n", labels=labels)
    assert parsed.batch.labels.tolist() == accepted
    assert len(parsed.dead_letters) == 5 - len(accepted)
    assert [letter.line for letter in parsed.dead_letters] == sorted(letter.line for letter in parsed.dead_letters)


def test_classes_bound_labels_and_names_only_count_them():
    data = b"1 1:1\n3 1:1\n4 1:1\ncat 1:1\n"
    parsed = parse(data, labels="multiclass", classes=3)
    assert parsed.batch.labels.tolist() == [1.0, 3.0]
    assert [letter.reason for letter in parsed.dead_letters] == [
        "label 4 is not a class of this task: the classes are 1 to 3",
        "label is not a number: 'cat'",
    ]
    assert [letter.refused for letter in parsed.dead_letters] == ["label 4", None]
    named = LibsvmFormat(labels="multiclass", label_names=("cat", "dog", "bird"))
    assert named.classes == 3
    assert [letter.reason for letter in named.parse(data).dead_letters] == [
        "label 4 is not a class of this task: the classes are cat, dog, bird",
        "label is not a number: 'cat'",
    ]
    assert parse(data, labels="any", classes=3).batch.labels.tolist() == [1.0, 3.0, 4.0]


def test_unknown_first_line_gives_no_line_numbers():
    parsed = LibsvmFormat().parse(b"1 0:1\nx\n", offset=77, first_line=None)
    assert [(letter.line, letter.offset) for letter in parsed.dead_letters] == [(None, 77), (None, 83)]


def test_long_dead_lines_are_cut():
    parsed = parse(b"1 " + b"x" * 5000 + b"\n")
    (letter,) = parsed.dead_letters
    assert letter.raw.endswith("...") and len(letter.raw) == 1003


def test_non_utf8_bytes_become_replacement_characters():
    parsed = parse(b"1 2:\xff\xfe\n")
    assert parsed.dead_letters[0].raw == "1 2:\ufffd\ufffd"


def test_validates_configuration_and_position():
    with pytest.raises(ValueError, match="bits"):
        LibsvmFormat(bits=40)
    with pytest.raises(ValueError, match="labels"):
        LibsvmFormat(labels="ordinal")
    with pytest.raises(ValueError, match="seed"):
        LibsvmFormat(seed=-1)
    with pytest.raises(ValueError, match="offset"):
        LibsvmFormat().parse(b"1 1:1", offset=-1)
    with pytest.raises(ValueError, match="first_line"):
        LibsvmFormat().parse(b"1 1:1", first_line=0)


def test_format_pickles_and_compares():
    fmt = LibsvmFormat(bits=20, seed=4, labels="binary")
    assert pickle.loads(pickle.dumps(fmt)) == fmt
    assert (fmt.name, fmt.header_lines) == ("libsvm", 0)


def test_accepts_memoryview_and_bytearray():
    data = b"1 3:1\n"
    assert parse(bytearray(data)).batch.indices.tolist() == [3]
    assert LibsvmFormat().parse(memoryview(data)).batch.indices.tolist() == [3]


positions = st.tuples(st.integers(0, 10**12), st.one_of(st.none(), st.integers(1, 10**6)))
options = st.fixed_dictionaries(
    {
        "bits": st.sampled_from([4, 18, 30]),
        "seed": st.integers(0, 2**32 - 1),
        "labels": st.sampled_from(["real", "binary", "any", "multiclass"]),
        "classes": st.sampled_from([0, 0, 3]),
        "zero_based": st.booleans(),
    }
).map(lambda options: multiclass_options(options, (), options["classes"]))


@pytest.mark.slow
@PROPERTY_SETTINGS
@given(blocks(libsvm_line), options, positions)
def test_matches_reference_on_well_formed_blocks(data, options, position):
    offset, first_line = position
    parsed = LibsvmFormat(**options).parse(data, source="s", offset=offset, first_line=first_line)
    reference = ref_libsvm(data, options["bits"], options["seed"], options["zero_based"])
    assert all(line.kind != "dead" for line in reference)
    assert_matches(
        parsed,
        reference,
        labels=options["labels"],
        source="s",
        offset=offset,
        first_line=first_line,
        classes=options["classes"],
    )


@pytest.mark.slow
@FUZZ_SETTINGS
@given(fuzzed(libsvm_line), options, positions)
def test_fuzzed_input_never_raises_and_accounts_for_every_line(data, options, position):
    offset, first_line = position
    parsed = LibsvmFormat(**options).parse(data, source="s", offset=offset, first_line=first_line)
    assert parsed.records == len(split_lines(data))
    assert parsed.records == len(parsed.batch) + len(parsed.dead_letters) + parsed.skipped
    assert len(parsed.batch.indices) == parsed.batch.nnz and (parsed.batch.indices < (1 << options["bits"])).all()
    values = parsed.batch.values  # (NaN: a missing value)
    assert not np.isinf(values).any() and (values != 0).all()
    reference = ref_libsvm(data, options["bits"], options["seed"], options["zero_based"])
    assert_matches(
        parsed,
        reference,
        labels=options["labels"],
        source="s",
        offset=offset,
        first_line=first_line,
        classes=options["classes"],
    )
