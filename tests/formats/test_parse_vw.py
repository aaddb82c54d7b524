"""VW parsing: VW's hashing and label rules, dead letters, names, and the reference parser."""

from __future__ import annotations

import pickle
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from parsing_reference import assert_matches, expected_outcome, ref_vw, split_lines
from parsing_strategies import FUZZ_SETTINGS, PROPERTY_SETTINGS, blocks, multiclass_options, vw_cases, vw_line, vw_name

from polybeam.formats import VWFormat
from polybeam.learners.hashing import feature_slot

VW_CONSTANT_FEATURE = 11650396  # VW's bias feature, which polybeam does not add at parse time


def parse(data: bytes, **options):
    return VWFormat(**options).parse(data)


def test_reads_labels_weights_tags_and_namespaces():
    data = b"1 2 'a|f x y:0.5 |g:2 z\n-1 |f x\n|  w\n"
    parsed = parse(data, labels="any")
    batch = parsed.batch
    assert batch.labels[:2].tolist() == [1.0, -1.0] and np.isnan(batch.labels[2])
    assert batch.weights.tolist() == [2.0, 1.0, 1.0]
    assert batch.tags.tolist() == ["a", None, None]
    assert batch.indptr.tolist() == [0, 3, 4, 5]
    assert batch.indices.tolist() == [
        feature_slot("x", 18, "f"),
        feature_slot("y", 18, "f"),
        feature_slot("z", 18, "g"),
        feature_slot("x", 18, "f"),
        feature_slot("w", 18),
    ]
    assert batch.values.tolist() == [1.0, 0.5, 2.0, 1.0, 1.0]
    assert bytes(batch.namespaces) == b"ffgf "
    assert batch.row_ids.tolist() == [0, data.index(b"-1"), data.index(b"|  w")]
    assert batch.names is None


def test_tags_only_when_some_line_has_one():
    assert parse(b"1 |f a\n").batch.tags is None


@pytest.mark.parametrize(
    "line, label, weight, tag",
    [
        (b"1 abc|f x", 1.0, 1.0, "abc"),  # a token touching the bar is the tag
        (b"1|f x", None, 1.0, "1"),  # ... even when it looks like a label (VW's rule)
        (b"1 'abc |f x", 1.0, 1.0, "abc"),
        (b"1 0.5 'abc|f x", 1.0, 0.5, "abc"),
        (b"1 ' |f x", 1.0, 1.0, ""),
        (b"'t |f x", None, 1.0, "t"),
        (b"|f x", None, 1.0, None),
        (b"  3  |f x", 3.0, 1.0, None),
    ],
)
def test_label_part_follows_vw(line, label, weight, tag):
    batch = parse(line, labels="any").batch
    assert len(batch) == 1
    assert np.isnan(batch.labels[0]) if label is None else batch.labels[0] == label
    assert batch.weights[0] == weight
    assert (batch.tags is None and tag is None) or batch.tags[0] == tag


@pytest.mark.parametrize(
    "line, reason",
    [
        (b"1 x y", "no '|'"),
        (b"abc |f x", "label is not a number: 'abc'"),
        (b"1 abc |f x", "importance weight is not a number: 'abc'"),
        (b"1 -2 |f x", "importance weight must be finite and >= 0, got '-2'"),
        (b"1 nan |f x", "importance weight must be finite and >= 0, got 'nan'"),
        (b"1 1 0.5 |f x", "VW initial prediction (third label token) is not supported"),
        (b"1 1 zz |f x", "too many tokens before the first '|'"),
        (b"1 1 0.5 7 |f x", "too many tokens before the first '|'"),
        (b"'t 1 |f x", "the 'tag must be the last token before the first '|': \"'t\""),
        (b"|:2 x", "':' right after '|'"),
        (b"|f:two x", "namespace scale is not a number"),
        (b"|f:inf x", "non-finite namespace scale"),
        (b"|f :2", "feature value without a feature name"),
        (b"|f x:", "feature value is not a number: 'x:'"),
        (b"|f x:1:2", "feature value is not a number: 'x:1:2'"),
        (b"|f x:nan", "non-finite feature value: 'x:nan'"),
        (b"|f:1e300 x:1e300", "non-finite feature value"),
        (b"|f x", "missing label"),
        (b"inf |f x", "label must be a finite number"),
    ],
)
def test_dead_letters_say_why(line, reason):
    data = b"1 |a b\n" + line + b"\n-1 |a c\n"
    parsed = VWFormat().parse(data, source="v", offset=5, first_line=3)
    assert len(parsed.batch) == 2
    (letter,) = parsed.dead_letters
    assert letter.reason.startswith(reason), letter.reason
    assert (letter.source, letter.line, letter.offset, letter.raw) == ("v", 4, 12, line.decode())


def test_missing_label_is_accepted_for_prediction():
    parsed = parse(b"|f x\n'tag|f y\n", labels="any")
    assert len(parsed.batch) == 2 and np.isnan(parsed.batch.labels).all()
    assert parsed.batch.tags.tolist() == [None, "tag"]


def test_namespace_scale_and_zero_values():
    batch = parse(b"1 |f:0.5 a b:4 c:0 |g:0 d |h e:-0\n").batch
    assert batch.values.tolist() == [0.5, 2.0]
    assert bytes(batch.namespaces) == b"ff"


def test_feature_names_first_name_wins_and_bad_lines_leave_none():
    fmt = VWFormat(bits=1, feature_names=True)  # two slots: names must collide
    parsed = fmt.parse(b"1 |f a b c |g d\n1 |f zz:nan\n1 | e\n")
    names = parsed.batch.names
    assert set(names) == set(parsed.batch.indices.tolist())
    seen = {}
    for slot, name in zip(parsed.batch.indices.tolist(), ["f^a", "f^b", "f^c", "g^d", "e"]):
        seen.setdefault(slot, name)
    assert names == seen
    assert "f^zz" not in names.values()


def test_feature_names_decode_utf8_and_survive_rejection():
    fmt = VWFormat(feature_names=True, labels="binary")
    parsed = fmt.parse("1 |名 é x\n5 |f only_here\n".encode())
    assert sorted(parsed.batch.names.values()) == ["名^x", "名^é"]


def test_namespace_bytes_are_the_first_byte():
    batch = parse("1 |éa x |b y | z\n".encode()).batch
    assert batch.namespaces.tolist() == ["é".encode()[0], ord("b"), 32]


def test_unknown_first_line_gives_no_line_numbers():
    parsed = VWFormat().parse(b"x\n", offset=9, first_line=None)
    assert (parsed.dead_letters[0].line, parsed.dead_letters[0].offset) == (None, 9)


def test_class_names_as_labels():
    fmt = VWFormat(labels="multiclass", label_names=("cat", "dog", "名前", "a:b", "k15599"))
    data = "dog |f a\n名前 2 'tag|f b\n 1 |f c\na:b 0.5 |f d\n3 |f e\nk15599 |f g\n".encode()
    parsed = fmt.parse(data)
    assert parsed.dead_letters == []
    batch = parsed.batch
    assert batch.labels.tolist() == [2.0, 3.0, 1.0, 4.0, 3.0, 5.0]
    assert batch.weights.tolist() == [1.0, 2.0, 1.0, 0.5, 1.0, 1.0]
    assert batch.tags.tolist() == [None, "tag", None, None, None, None]
    assert batch.indices.tolist() == [feature_slot(name, 18, "f") for name in "abcdeg"]


@pytest.mark.parametrize(
    "line, reason",
    [
        (b"cow |f x", "unknown class label 'cow'; known classes are cat, dog"),
        (b"Cat |f x", "unknown class label 'Cat'; known classes are cat, dog"),
        (b"k97211 |f x", "unknown class label 'k97211'; known classes are cat, dog"),
        (b"cat cat |f x", "importance weight is not a number: 'cat'"),
        (b"cat 1 0.5 |f x", "VW initial prediction (third label token) is not supported"),
        (b"3 |f x", "label 3 is not a class of this task: the classes are cat, dog"),
        (b"-1 |f x", "label -1 is not a class of this task: the classes are cat, dog"),
        (b"cat|f x", "missing label"),  # a token touching the bar is the tag
    ],
)
def test_class_label_dead_letters(line, reason):
    parsed = VWFormat(labels="multiclass", label_names=("cat", "dog")).parse(b"dog |a b\n" + line + b"\n1 |a c\n")
    assert parsed.batch.labels.tolist() == [2.0, 1.0]
    (letter,) = parsed.dead_letters
    assert (letter.reason, letter.line, letter.raw) == (reason, 2, line.decode())


def test_classes_bound_numeric_labels():
    parsed = VWFormat(labels="multiclass", classes=3).parse(b"1 | a\n3 | a\n4 | a\ncat | a\n")
    assert parsed.batch.labels.tolist() == [1.0, 3.0]
    assert [letter.reason for letter in parsed.dead_letters] == [
        "label 4 is not a class of this task: the classes are 1 to 3",
        "label is not a number: 'cat'",
    ]


def test_format_pickles():
    fmt = VWFormat(bits=12, seed=3, labels="multiclass", feature_names=True)
    assert pickle.loads(pickle.dumps(fmt)) == fmt
    assert (fmt.name, fmt.header_lines) == ("vw", 0)


# -- against Vowpal Wabbit itself ---------------------------------------------------


@PROPERTY_SETTINGS
@given(st.lists(st.tuples(st.randoms(use_true_random=False), st.booleans()), min_size=1, max_size=20))
def test_slots_match_vowpal_wabbit_hash_feature(vowpal, pairs):
    vw_workspace = vowpal.workspace
    mask = (1 << 18) - 1
    for rnd, default_namespace in pairs:
        name = vw_name(rnd).replace(b"'", b"q").replace(b"#", b"h")
        namespace = b" " if default_namespace else vw_name(rnd)
        line = b"1 |" + (b" " if default_namespace else namespace + b" ") + name
        (slot,) = parse(line).batch.indices.tolist()
        expected = vw_workspace.hash_feature(name.decode(), vw_workspace.hash_space(namespace.decode())) & mask
        assert slot == expected, line


def vw_reads_numbers_alike(raw: bytes) -> bool:
    """Whether VW's own number reading agrees with float() on every value and scale of a line.

    VW keeps float32 values (inf * 0 is a NaN feature there) and its parser
    loses long mantissas, neither of which is about hashing.
    """
    for text in re.findall(rb":([^\s|:]+)", raw):
        value = abs(float(text))
        if value > 1e30 or 0 < value < 1e-30 or len(re.findall(rb"\d", text.split(b"e")[0].split(b"E")[0])) > 15:
            return False
    return True


@PROPERTY_SETTINGS
@given(blocks(vw_line, max_lines=4))
def test_whole_lines_match_vowpal_wabbit(vowpal, data):
    vw_workspace = vowpal.workspace
    mask = (1 << 18) - 1
    parsed = parse(data, labels="any")
    examples = [line for line in expected_outcome(ref_vw(data), "any") if line.kind == "example"]
    assert len(parsed.batch) == len(examples)
    for i, (_offset, raw) in enumerate(
        (offset, raw) for offset, raw in split_lines(data) if offset in set(parsed.batch.row_ids.tolist())
    ):
        example = vw_workspace.example(raw.decode("utf-8").rstrip("\r"))
        vw_features = sorted((int(s) & mask, v) for s, v in example.iter_features() if s != VW_CONSTANT_FEATURE)
        slots, values = parsed.batch.row(i)
        if not vw_reads_numbers_alike(raw):
            continue
        if b"\t" in raw.partition(b"|")[0]:
            continue  # VW splits the label part on spaces only; polybeam on any blank
        ours = sorted(zip(slots.tolist(), values.tolist()))
        assert [s for s, _ in ours] == [s for s, _ in vw_features], raw
        # VW keeps values as float32, parsed by its own routine.
        np.testing.assert_allclose([v for _, v in ours], [v for _, v in vw_features], rtol=1e-6)
        tag = "" if parsed.batch.tags is None or parsed.batch.tags[i] is None else parsed.batch.tags[i]
        assert example.get_tag() == tag


def test_default_namespace_with_seed_matches_vowpal_wabbit():
    vowpalwabbit = pytest.importorskip("vowpalwabbit")
    workspace = vowpalwabbit.Workspace("--quiet -b 18 --hash_seed 5")
    try:
        example = workspace.example("1 | a")
        vw_slots = [int(s) for s, _ in example.iter_features() if s != VW_CONSTANT_FEATURE]
        assert VWFormat(seed=5).parse(b"1 | a").batch.indices.tolist() == vw_slots
    finally:
        workspace.finish()


def test_named_namespaces_with_seed_match_vowpal_wabbit():
    vowpalwabbit = pytest.importorskip("vowpalwabbit")
    workspace = vowpalwabbit.Workspace("--quiet -b 18 --hash_seed 5")
    try:
        example = workspace.example("1 |f a 12 |g b")
        vw_slots = sorted(int(s) for s, _ in example.iter_features() if s != VW_CONSTANT_FEATURE)
        assert sorted(VWFormat(seed=5).parse(b"1 |f a 12 |g b").batch.indices.tolist()) == vw_slots
    finally:
        workspace.finish()


# -- against the reference parser -------------------------------------------------

options = st.fixed_dictionaries(
    {
        "bits": st.sampled_from([2, 18, 30]),
        "seed": st.integers(0, 2**32 - 1),
        "labels": st.sampled_from(["real", "any", "binary", "multiclass"]),
        "feature_names": st.booleans(),
        "classes": st.sampled_from([0, 0, 3]),
    }
)
positions = st.tuples(st.integers(0, 10**12), st.one_of(st.none(), st.integers(1, 10**6)))


def check_against_reference(data, options, position, label_names=()):
    offset, first_line = position
    options = multiclass_options(options, label_names, options["classes"])
    fmt = VWFormat(**options)
    assert fmt.classes == (len(label_names) or options["classes"])
    parsed = fmt.parse(data, source="s", offset=offset, first_line=first_line)
    reference = ref_vw(data, options["bits"], options["seed"], label_names)
    examples = assert_matches(
        parsed,
        reference,
        labels=options["labels"],
        source="s",
        offset=offset,
        first_line=first_line,
        exact_reasons=False,
        classes=fmt.classes,
        label_names=fmt.label_names,
    )
    batch = parsed.batch
    assert batch.namespaces.tolist() == [ns for line in examples for ns in line.namespaces]
    tags = [line.tag for line in examples]
    assert (batch.tags is None and all(t is None for t in tags)) or batch.tags.tolist() == tags
    if options["feature_names"]:
        expected = {}
        for line in examples:
            for slot, name in zip(line.slots, line.names):
                expected.setdefault(slot, name)
        assert (batch.names or {}) == expected  # ExampleBatch.take turns an empty dict into None
    else:
        assert batch.names is None
    return parsed


@pytest.mark.slow
@PROPERTY_SETTINGS
@given(vw_cases(), options, positions)
def test_matches_reference_on_well_formed_blocks(case, options, position):
    label_names, data = case
    reference = ref_vw(data, options["bits"], options["seed"], label_names)
    assert all(line.kind != "dead" or line.reason.startswith("unknown class label") for line in reference), data
    check_against_reference(data, options, position, label_names)


@pytest.mark.slow
@FUZZ_SETTINGS
@given(vw_cases(fuzz=True), options, positions)
def test_fuzzed_input_never_raises_and_accounts_for_every_line(case, options, position):
    label_names, data = case
    parsed = check_against_reference(data, options, position, label_names)
    assert parsed.records == len(split_lines(data))
    assert parsed.records == len(parsed.batch) + len(parsed.dead_letters) + parsed.skipped
    assert np.isfinite(parsed.batch.values).all() and (parsed.batch.values != 0).all()
    assert (parsed.batch.indices < (1 << options["bits"])).all()
