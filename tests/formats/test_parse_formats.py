"""The format registry and what every format shares."""

from __future__ import annotations

import pickle

import pytest

from polybeam.formats import (
    FORMATS,
    AvroFormat,
    CsvFormat,
    JsonLinesFormat,
    LibsvmFormat,
    ParquetFormat,
    VWFormat,
    format_class,
    make_format,
)


def test_registry_names_match_the_classes():
    classes = {
        "libsvm": LibsvmFormat,
        "vw": VWFormat,
        "csv": CsvFormat,
        "parquet": ParquetFormat,
        "jsonl": JsonLinesFormat,
        "avro": AvroFormat,
    }
    assert set(FORMATS) == set(classes)
    for name in FORMATS:
        assert format_class(name) is classes[name]
        assert classes[name].name == name


def test_make_format_configures():
    assert make_format("csv", label_column="y", has_header=False) == CsvFormat(label_column="y", has_header=False)
    assert make_format("vw", bits=20).bits == 20


def test_make_format_rejects_unknown_names_and_options():
    with pytest.raises(
        ValueError, match="unknown input format 'svm'; known formats are avro, csv, jsonl, libsvm, parquet, vw"
    ):
        make_format("svm")
    with pytest.raises(ValueError, match="unknown option 'label_column' for format 'libsvm'"):
        make_format("libsvm", label_column="y")
    with pytest.raises(ValueError, match="bits"):
        make_format("libsvm", bits=0)


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_formats_are_frozen_picklable_and_hashable(name):
    fmt = make_format(name)
    assert pickle.loads(pickle.dumps(fmt)) == fmt
    hash(fmt)
    with pytest.raises(AttributeError):
        fmt.bits = 3


def test_header_lines():
    assert [make_format(name).header_lines for name in ("libsvm", "vw", "parquet")] == [0, 0, 0]
    assert CsvFormat().header_lines == 1 and CsvFormat(has_header=False).header_lines == 0


@pytest.mark.parametrize("name, data", [("libsvm", b"1 2:1\n"), ("vw", b"1 | a\n"), ("csv", b"y,a\n1,2\n")])
def test_text_formats_share_one_parse_signature(name, data):
    parsed = make_format(name).parse(data, source="x", offset=0, first_line=1, header=None)
    assert len(parsed.batch) == 1 and parsed.batch.source == "x" and parsed.batch.row_ids.tolist()[0] >= 0
    assert parsed.batch.bits == 18


# -- classes and class names ---------------------------------------------------------


def test_make_format_takes_class_names_and_counts():
    fmt = make_format("csv", label_names=("cat", "dog"), labels="multiclass")
    assert fmt == CsvFormat(label_names=["cat", "dog"], classes=2, labels="multiclass")
    assert (fmt.classes, fmt.label_names) == (2, ("cat", "dog"))
    assert make_format("libsvm", classes=5, labels="multiclass").classes == 5
    assert make_format("vw").classes == 0 and make_format("parquet").label_names == ()


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_formats_with_class_names_pickle_and_hash(name):
    fmt = make_format(name, labels="any", label_names=["a", "b", "c"])
    assert fmt.classes == 3 and fmt.label_names == ("a", "b", "c")
    copy = pickle.loads(pickle.dumps(fmt))
    assert copy == fmt and hash(copy) == hash(fmt)
    assert copy.class_names.class_of("c") == 3


@pytest.mark.parametrize("name", sorted(FORMATS))
@pytest.mark.parametrize(
    "options, error, message",
    [
        ({"labels": "multiclass", "label_names": ("a", "a")}, ValueError, "'a' is given 2 times"),
        ({"labels": "multiclass", "label_names": ("a", "")}, ValueError, "cannot be empty"),
        ({"labels": "multiclass", "label_names": "ab"}, TypeError, "not a single string"),
        ({"labels": "multiclass", "label_names": ("a", "b"), "classes": 3}, ValueError, "classes is 3 but 2"),
        ({"labels": "multiclass", "classes": -1}, ValueError, "classes must be >= 0"),
        ({"labels": "multiclass", "classes": "3"}, TypeError, "classes must be a whole number"),
        ({"label_names": ("a", "b")}, ValueError, "label_names describes a multiclass task, but labels is 'real'"),
        ({"labels": "binary", "classes": 2}, ValueError, "classes describes a multiclass task"),
    ],
)
def test_class_settings_are_validated_by_every_format(name, options, error, message):
    with pytest.raises(error, match=message):
        make_format(name, **options)


@pytest.mark.parametrize("label_name", ["a b", "a\tb", "a|b", "'tag", "#x"])
def test_vw_refuses_names_its_label_token_cannot_hold(label_name):
    with pytest.raises(ValueError, match="VW label names cannot hold blanks"):
        VWFormat(labels="multiclass", label_names=("ok", label_name))
    CsvFormat(labels="multiclass", label_names=("ok", label_name))  # a quoted CSV cell can
