"""The format registry and what every format shares."""

from __future__ import annotations

import pickle

import pytest

from polybeam.learners.parsing import (
    FORMATS,
    CsvFormat,
    LibsvmFormat,
    ParquetFormat,
    VWFormat,
    format_class,
    make_format,
)


def test_registry_names_match_the_classes():
    classes = {"libsvm": LibsvmFormat, "vw": VWFormat, "csv": CsvFormat, "parquet": ParquetFormat}
    assert set(FORMATS) == set(classes)
    for name in FORMATS:
        assert format_class(name) is classes[name]
        assert classes[name].name == name


def test_make_format_configures():
    assert make_format("csv", label_column="y", has_header=False) == CsvFormat(label_column="y", has_header=False)
    assert make_format("vw", bits=20).bits == 20


def test_make_format_rejects_unknown_names_and_options():
    with pytest.raises(ValueError, match="unknown input format 'svm'; known formats are csv, libsvm, parquet, vw"):
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
