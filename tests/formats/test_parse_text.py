"""The helpers the line-oriented parsers share."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polybeam.formats.text import LineBlock, count_lines, decode_spans, is_skippable, line_spans, newline_ends


@pytest.mark.parametrize(
    "data, lines",
    [(b"", 0), (b"\n", 1), (b"a", 1), (b"a\n", 1), (b"a\nb", 2), (b"\n\n\n", 3), (b"a\r\nb\r\n", 2)],
)
def test_count_lines(data, lines):
    assert count_lines(np.frombuffer(data, np.uint8)) == lines == len(line_spans(np.frombuffer(data, np.uint8))[0])


def test_line_spans_exclude_the_newline():
    starts, stops = line_spans(np.frombuffer(b"ab\n\ncd\r\nef", np.uint8))
    assert starts.tolist() == [0, 3, 4, 8] and stops.tolist() == [2, 3, 7, 10]


@pytest.mark.parametrize(
    "line, skippable",
    [(b"", True), (b" \t\r\x0b\x0c", True), (b"# x", True), (b"  #", True), (b"1 #", False), (b"\x00", False)],
)
def test_is_skippable(line, skippable):
    assert is_skippable(np.frombuffer(line, np.uint8), 0, len(line)) == skippable


def test_line_block_locates_lines_and_rows():
    block = LineBlock.scan(b"a\nbb\n\nccc", source="s", offset=10, first_line=None)
    assert block.records == 4
    assert [block.raw(i) for i in range(4)] == [b"a", b"bb", b"", b"ccc"]
    assert [block.offset_of(i) for i in range(4)] == [10, 12, 15, 16]
    assert block.line_number(3) is None
    assert block.line_of_row_id(16) == 3
    letter = block.dead_letter(1, "why")
    assert (letter.source, letter.line, letter.offset, letter.raw, letter.reason) == ("s", None, 12, "bb", "why")


def test_decode_spans_replaces_invalid_utf8():
    buffer = np.frombuffer("é\xff".encode() + b"\xff" + "名".encode(), np.uint8)
    assert decode_spans(buffer, np.array([0, 4, 4, 5]), np.array([4, 4, 5, 8])) == ["é\xff", "", "\ufffd", "名"]
    assert decode_spans(np.frombuffer(b"\xffa", np.uint8), np.array([0]), np.array([2])) == ["\ufffda"]
    assert decode_spans(buffer, np.array([], dtype=np.int64), np.array([], dtype=np.int64)) == []


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.integers(0, 10**9), st.booleans())
def test_newline_ends_are_where_numpy_finds_them(data, base, as_bytearray):
    """The readers' compiled scan for line ends, against numpy's mask of the newline bytes."""
    chunk = bytearray(data) if as_bytearray else data
    expected = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == ord("\n")) + base + 1
    found = newline_ends(chunk, base)
    assert found.dtype == np.int64 and found.tolist() == expected.tolist()
