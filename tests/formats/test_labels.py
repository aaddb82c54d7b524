"""The label part of the input contract: targets, refused labels, class names and what train infers."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from polybeam.formats.classes import check_label_names
from polybeam.formats.csv import CsvFormat
from polybeam.formats.labels import LabelEncodingError, infer_classes, read_labels
from polybeam.formats.libsvm import LibsvmFormat
from polybeam.formats.parquet import ParquetFormat
from polybeam.formats.vw import VWFormat


def reference_target(value: float, kind: str, classes: int, names: tuple[str, ...]):
    """``(target, refused)`` by the documented rules, one label at a time (None: not usable)."""
    if kind == "any" or math.isnan(value):
        return (value if kind == "any" else None), False
    if not math.isfinite(value):
        return None, False
    if kind == "real":
        return value, False
    numbers = None
    if names:
        try:
            numbers = [float(name) for name in names]
        except ValueError:
            numbers = None
    class_id = (numbers.index(value) + 1 if value in numbers else None) if numbers is not None else value
    count = len(names) or classes
    if names or kind == "multiclass":
        ok = class_id is not None and class_id == int(class_id) and 1 <= class_id and (not count or class_id <= count)
    else:
        ok = value in (-1.0, 0.0, 1.0)
    if not ok:
        return None, True
    if kind == "binary" and names:
        return (-1.0 if class_id == 1 else 1.0), False
    return float(class_id), False


label_values = st.sampled_from([-2.0, -1.0, 0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 9.0, 10.0, math.nan, math.inf])
tasks = st.sampled_from(
    [
        ("binary", 0, ()),
        ("binary", 0, ("1", "2")),
        ("binary", 0, ("-1", "4")),
        ("binary", 0, ("no", "yes")),
        ("multiclass", 3, ()),
        ("multiclass", 0, ()),
        ("multiclass", 10, tuple(str(i) for i in range(10))),
        ("multiclass", 3, ("cat", "dog", "3")),
        ("real", 0, ()),
    ]
)


@given(st.lists(label_values, max_size=30), tasks)
def test_targets_and_refusals_follow_the_documented_rules(values, task):
    kind, classes, names = task
    read = read_labels(np.array(values, dtype=np.float64), kind, classes, names)
    for i, value in enumerate(values):
        target, refused = reference_target(value, kind, classes, names)
        assert bool(read.refused[i]) == refused, (value, task)
        if target is None:
            assert not read.good[i]
        else:
            assert read.good[i] and read.targets[i] == target, (value, task)
        if refused:
            assert read.refused_label(i).startswith("label ") and "is not a class of this task" in read.reason(i)


def test_binary_class_names_map_to_the_negative_and_the_positive_class():
    read = read_labels(np.array([2.0, 1.0, 2.0]), "binary", names=("1", "2"))
    assert read.targets.tolist() == [1.0, -1.0, 1.0]
    read = read_labels(np.array([0.0, 9.0]), "multiclass", 10, tuple(map(str, range(10))))
    assert read.targets.tolist() == [1.0, 10.0]


@pytest.mark.parametrize(
    "kind, classes, texts, names",
    [
        ("binary", 0, ["1", "2", "2"], ("1", "2")),
        ("binary", 0, ["2.0", "1"], ("1", "2")),
        ("binary", 0, ["-1", "1"], ()),
        ("binary", 0, ["0", "1"], ()),
        ("binary", 0, ["1"], ()),
        ("binary", 0, ["yes", "no", "no"], ("no", "yes")),
        ("binary", 0, ["malignant", "benign"], ("benign", "malignant")),
        ("binary", 0, ["1", "2"] * 20 + ["oops"], ("1", "2")),  # a damaged label among numbers
        ("multiclass", 10, ["0", "9", "3"], tuple(str(i) for i in range(10))),
        ("multiclass", 10, ["1", "10", "3"], ()),
        ("multiclass", 3, ["setosa", "virginica", "versicolor"], ("setosa", "versicolor", "virginica")),
        ("real", 0, ["0.5", "yes"], ()),
    ],
)
def test_train_reads_the_labels_it_sees_as_a_person_means_them(kind, classes, texts, names):
    assert infer_classes(kind, classes, (), texts).names == names


@pytest.mark.parametrize(
    "kind, classes, texts, message",
    [
        ("binary", 0, ["1", "2", "3"], "the labels hold 3 values (1, 2, 3), but a binary loss takes two classes"),
        ("binary", 0, ["yes"], "the labels seen are all 'yes', and a binary loss needs two classes"),
        ("binary", 0, ["yes", "no", "1", "2"], "the labels mix numbers (1, 2) and words ('no', 'yes')"),
        ("multiclass", 3, ["a", "b"], "the labels are names ('a', 'b') and 3 classes are asked for"),
        ("multiclass", 3, ["1", "7"], "the labels hold 1, 7, which are not the class numbers 1 to 3"),
    ],
)
def test_labels_that_need_telling_are_refused_saying_what_was_seen(kind, classes, texts, message):
    with pytest.raises(LabelEncodingError, match=message.replace("(", r"\(").replace(")", r"\)")):
        infer_classes(kind, classes, (), texts)


def test_every_name_a_number_is_allowed_and_matched_by_value():
    assert check_label_names(tuple(str(i) for i in range(10)))[0] == "0"
    with pytest.raises(ValueError, match="several names read as 1"):
        check_label_names(("1", "1.0"))
    with pytest.raises(ValueError, match="which no label can be"):
        check_label_names(("1", "nan"))


# -- every format reads the same labels alike, and marks the same records refused --------------------------


def test_every_format_maps_class_names_and_refuses_the_same_labels():
    import pyarrow as pa

    names = ("1", "2")
    csv = CsvFormat(label_column="y", labels="binary", label_names=names).parse(b"y,x\n2,1\n1,1\n3,1\n")
    libsvm = LibsvmFormat(labels="binary", label_names=names).parse(b"2 1:1\n1 1:1\n3 1:1\n")
    vw = VWFormat(labels="binary", label_names=names).parse(b"2 | x\n1 | x\n3 | x\n")
    parquet = ParquetFormat(labels="binary", label_names=names).parse_table(
        pa.table({"label": [2, 1, 3], "x": [1.0, 1.0, 1.0]})
    )
    for parsed in (csv, libsvm, vw, parquet):
        assert parsed.batch.labels.tolist() == [1.0, -1.0]
        (letter,) = parsed.dead_letters
        assert (
            letter.refused == "label 3" and letter.reason == "label 3 is not a class of this task: the classes are 1, 2"
        )


def test_damaged_labels_are_not_refusals_but_unknown_class_names_are():
    parsed = CsvFormat(label_column="y", labels="multiclass", label_names=("cat", "dog")).parse(
        b"y,x\ncat,1\ncow,1\n,1\n"
    )
    refused = {letter.reason: letter.refused for letter in parsed.dead_letters}
    assert refused["missing label"] is None
    assert refused["label column 'y': unknown class label 'cow'; known classes are cat, dog"] is not None
    parsed = LibsvmFormat(labels="binary").parse(b"abc 1:1\n2 1:1\n")
    assert [(letter.reason.split(":")[0], letter.refused) for letter in parsed.dead_letters] == [
        ("label is not a number", None),
        ("label 2 is not a class of this task", "label 2"),
    ]


def test_a_libsvm_index_zero_is_refused_unless_the_file_counts_from_zero():
    (letter,) = LibsvmFormat().parse(b"1 0:1 2:3\n").dead_letters
    assert letter.refused == "feature index 0" and "--zero-based" in letter.reason
    zero = LibsvmFormat(zero_based=True).parse(b"1 0:1 2:3\n").batch
    one = LibsvmFormat().parse(b"1 1:1 3:3\n").batch
    assert zero.indices.tolist() == one.indices.tolist() == [1, 3]
