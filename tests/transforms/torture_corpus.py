"""A corpus of hostile input files for every reader, and what each record of them must become.

Used by ``test_input_torture.py``. A text case is a list of lines, each with
its fate: an example (``GOOD``), a skipped line (``SKIP``) or a dead letter
with its exact reason. Files are written from the lines (plain or gzip, with
``\\n`` or ``\\r\\n`` endings, with or without a final newline), so the expected
line numbers, byte offsets and counts follow from the lines alone.

Nothing here is big: the 100 MB line is written by the memory test itself.
"""

from __future__ import annotations

import gzip
import math
import random
import zlib
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from polybeam.formats.records import ReadCounts
from polybeam.learners.hashing import feature_slot, hash_string, hash_token, slot_mask

GOOD = "example"
SKIP = "skipped"


def nul(position: int) -> str:
    """The reason of a line whose first NUL byte is at (1-based) ``position``."""
    return f"NUL byte at position {position} of the line (binary data, or a damaged file?)"


FINITE_LABEL = "label must be a finite number"
# A missing value (the entry NaN) among an example's values as the tests compare them (NaN != NaN).
MISSING = "missing"


def category_slot(column: str, value: bytes, bits: int = 18) -> int:
    """The slot of a CSV categorical cell (``column=value``), from its bytes."""
    text = np.frombuffer(value, dtype=np.uint8)
    return int(hash_token(text, 0, len(text), hash_string(column, 0)) & slot_mask(bits))


@dataclass(frozen=True)
class Line:
    """One line of a text case (without its line ending) and what it must become.

    ``label``, ``values`` and ``slots``, when given, are checked exactly on
    the example, on top of the comparison with a clean read of the line alone.
    """

    text: bytes
    fate: str  # GOOD, SKIP or the dead letter's reason
    label: float | None = None
    values: tuple[float, ...] | None = None
    slots: tuple[int, ...] | None = None


@dataclass
class TextCase:
    """A text file: its format and options, header, lines, line ending and final newline."""

    name: str
    format: str
    lines: list[Line]
    options: dict = field(default_factory=dict)
    header: bytes | None = None
    ending: bytes = b"\n"
    final_newline: bool = True
    read_options: dict = field(default_factory=dict)

    def content(self) -> bytes:
        rows = ([self.header] if self.header is not None else []) + [line.text for line in self.lines]
        text = self.ending.join(rows)
        return text + self.ending if self.final_newline else text

    def records(self) -> list[tuple[int, int, Line]]:
        """``(byte offset, line number, Line)`` of every line after the header."""
        offset, number, out = 0, 1, []
        if self.header is not None:
            offset, number = len(self.header) + len(self.ending), 2
        for line in self.lines:
            out.append((offset, number, line))
            offset += len(line.text) + len(self.ending)
            number += 1
        return out

    def counts(self) -> ReadCounts:
        fates = [line.fate for line in self.lines]
        header = 1 if self.header is not None else 0
        good, skipped = fates.count(GOOD), fates.count(SKIP) + header
        return ReadCounts(len(fates) + header, good, len(fates) + header - good - skipped, skipped)

    def clean_content(self, line: Line) -> bytes:
        """A file of this one line alone (with the header), ``\\n``-terminated: the reference reading."""
        return (self.header + b"\n" if self.header is not None else b"") + line.text + b"\n"


# -- the text cases ----------------------------------------------------------------

CSV_HEADER = b"y,a,b,c"
CSV_OPTIONS = {"label_column": "y", "categorical_columns": ("c",)}


def _libsvm_cases() -> list[TextCase]:
    return [
        TextCase(
            "nul",
            "libsvm",
            [
                Line(b"1 1:0.5 3:2", GOOD, label=1.0, values=(0.5, 2.0), slots=(1, 3)),
                Line(b"1 1:0.5 3:\x002", nul(11)),
                Line(b"-1 2:1.25", GOOD, label=-1.0, values=(1.25,)),
                Line(b"\x00" * 16, nul(1)),
                Line(b"# a comment \x00", nul(13)),
                Line(b"1 4:1 # a comment with a \x00 in it", nul(26)),
                Line(b"-1 5:2", GOOD),
            ],
        ),
        TextCase(
            "invalid_utf8",
            "libsvm",
            [
                Line(b"1 1:0.5", GOOD),
                Line(b"\xff\xfe 1:1", "label is not a number: '\ufffd\ufffd'"),
                Line(b"1 1:\xc3", "feature value is not a number: '1:\ufffd'"),
                Line(b"1 \xe9t\xe9:1", "feature must be index:value, got '\ufffdt\ufffd:1'"),
                Line(b"-1 2:2 # caf\xe9", GOOD, label=-1.0, values=(2.0,), slots=(2,)),
                Line(b"1 3:1", GOOD),
            ],
        ),
        TextCase(
            "crlf",
            "libsvm",
            ending=b"\r\n",
            lines=[
                Line(b"1 1:0.5 3:2", GOOD, values=(0.5, 2.0)),
                Line(b"", SKIP),
                Line(b"# comment", SKIP),
                Line(b"-1 2:1.25", GOOD, values=(1.25,)),
                Line(b"bad 1:1", "label is not a number: 'bad'"),
                Line(b"1 4:1", GOOD),
            ],
        ),
        TextCase(
            "no_final_newline",
            "libsvm",
            final_newline=False,
            lines=[
                Line(b"1 1:0.5", GOOD),
                Line(b"bad 1:1", "label is not a number: 'bad'"),
                Line(b"-1 2:0.25", GOOD, label=-1.0, values=(0.25,), slots=(2,)),
            ],
        ),
        TextCase(
            "labels",
            "libsvm",
            [
                *(Line(label + b" 1:1", FINITE_LABEL) for label in (b"nan", b"NaN", b"inf", b"-inf", b"+Infinity")),
                Line(b"1e309 1:1", FINITE_LABEL),
                Line(b"-1e309 1:1", FINITE_LABEL),
                Line(b"1 1:1", GOOD, label=1.0),
                Line(b"-1e308 2:1", GOOD, label=-1e308),
            ],
        ),
        TextCase(
            "values",
            "libsvm",
            [
                # Beyond the largest float32 a value's square would overflow an update (polybeam.learners.values).
                Line(b"1 1:1e308", "feature value beyond +-3.4e+38 (rescale it): '1:1e308'"),
                Line(b"1 1:-1e308 2:1.7976931348623157e308", "feature value beyond +-3.4e+38 (rescale it): '1:-1e308'"),
                Line(b"1 1:3.4e38 2:-1e-300", GOOD, values=(3.4e38, -1e-300)),
                Line(b"1 1:1e309", "non-finite feature value: '1:1e309'"),
                Line(b"1 1:-1e309", "non-finite feature value: '1:-1e309'"),
                Line(b"1 1:inf", "non-finite feature value: '1:inf'"),
                Line(b"1 1:nan", GOOD, values=(MISSING,)),  # a missing value
                Line(b"1 2:1e-400 3:1", GOOD, values=(1.0,), slots=(3,)),  # underflows to 0: dropped
                Line(b"1 4:4.9e-324", GOOD, values=(5e-324,)),
            ],
        ),
        TextCase(
            "duplicates",
            "libsvm",
            [
                Line(b"1 3:1 3:2 3:0.5", GOOD, values=(1.0, 2.0, 0.5), slots=(3, 3, 3)),
                Line(b"-1 7:1 2:1 7:-1", GOOD, values=(1.0, 1.0, -1.0), slots=(7, 2, 7)),
            ],
        ),
    ]


def _vw_cases() -> list[TextCase]:
    return [
        TextCase(
            "nul",
            "vw",
            [
                Line(b"1 |f a b:0.5", GOOD, values=(1.0, 0.5)),
                Line(b"1 |f a\x00b", nul(7)),
                Line(b"\x00" * 16, nul(1)),
                Line(b"-1 |g c", GOOD),
                Line(b"# \x00", nul(3)),
            ],
        ),
        TextCase(
            "invalid_utf8",
            "vw",
            [
                # Names are hashed byte for byte, as VW does.
                Line(
                    b"1 |f \xff\xfe c",
                    GOOD,
                    values=(1.0, 1.0),
                    slots=(feature_slot(b"\xff\xfe", 18, b"f"), feature_slot(b"c", 18, b"f")),
                ),
                Line(b"\xff |f a", "label is not a number: '\ufffd'"),
                Line(b"1 |f a:\xc3", "feature value is not a number: 'a:\ufffd'"),
                Line(b"1 '\xfftag|f a", GOOD),
                Line(b"-1 |\xe9 x", GOOD),
            ],
        ),
        TextCase(
            "crlf",
            "vw",
            ending=b"\r\n",
            lines=[
                Line(b"1 |f a b:0.5", GOOD, values=(1.0, 0.5)),
                Line(b"", SKIP),
                Line(b"# note", SKIP),
                Line(b"-1 2 'tag|g c:2", GOOD, label=-1.0, values=(2.0,)),
                Line(b"|f a", "missing label"),
                Line(b"1 |f a", GOOD),
            ],
        ),
        TextCase(
            "no_final_newline",
            "vw",
            final_newline=False,
            lines=[
                Line(b"1 |f a", GOOD),
                Line(b"nope", "no '|': VW features follow a '|' (use '|' alone for an example without features)"),
                Line(b"-1 |f b:0.25", GOOD, label=-1.0, values=(0.25,)),
            ],
        ),
        TextCase(
            "labels",
            "vw",
            [
                *(Line(label + b" |f a", FINITE_LABEL) for label in (b"nan", b"inf", b"-inf", b"1e309")),
                Line(b"1 inf |f a", "importance weight must be finite and >= 0, got 'inf'"),
                Line(b"1 nan |f a", "importance weight must be finite and >= 0, got 'nan'"),
                Line(b"1 -1 |f a", "importance weight must be finite and >= 0, got '-1'"),
                Line(b"1 |f a", GOOD, label=1.0),
                Line(b"-1 0.5 |f b", GOOD, label=-1.0),
            ],
        ),
        TextCase(
            "values",
            "vw",
            [
                Line(b"1 |f a:1e308", "feature value beyond +-3.4e+38 (rescale it): 'a:1e308'"),
                Line(b"1 |f a:3.4e38", GOOD, values=(3.4e38,)),
                Line(b"1 |f:1e30 a:1e10", "feature value beyond +-3.4e+38 (rescale it): 'a:1e10'"),  # scaled
                Line(b"1 |f a:1e309", "non-finite feature value: 'a:1e309'"),
                Line(b"1 |f:1e300 a:1e10", "non-finite feature value: 'a:1e10'"),  # the scale overflows it
                Line(b"1 |f:1e309 a", "non-finite namespace scale: 'f:1e309'"),
                Line(b"1 |f a:-1e30 b:1e-400", GOOD, values=(-1e30,)),  # b underflows to 0: dropped
            ],
        ),
        TextCase(
            "duplicates",
            "vw",
            [
                Line(b"1 |f a a:2 |f a:0.5", GOOD, values=(1.0, 2.0, 0.5), slots=(feature_slot("a", 18, "f"),) * 3),
                Line(b"1 |f a |g a", GOOD, values=(1.0, 1.0)),
            ],
        ),
    ]


def _csv_cases() -> list[TextCase]:
    def case(name, lines, **options):
        return TextCase(name, "csv", lines, options=dict(CSV_OPTIONS), header=CSV_HEADER, **options)

    return [
        case(
            "nul",
            [
                Line(b"1,0.5,2,red", GOOD, values=(0.5, 2.0, 1.0)),
                Line(b"1,0.5,2,r\x00d", nul(10)),
                Line(b"0,1,\x00,blue", nul(5)),
                Line(b"\x00\x00\x00", nul(1)),
                Line(b"0,,1.25,blue", GOOD, label=0.0, values=(MISSING, 1.25, 1.0)),  # the empty cell: missing
            ],
        ),
        case(
            "invalid_utf8",
            [
                Line(
                    b"1,0.5,2,\xffred",
                    GOOD,
                    slots=(feature_slot("a"), feature_slot("b"), category_slot("c", b"\xffred")),
                ),
                Line(b"1,\xc3,2,red", "column 'a': not a number: '\ufffd'"),
                Line(b"\xff,1,2,red", "label column 'y': not a number: '\ufffd'"),
                Line(b'0,1,2,"caf\xe9"', GOOD),
            ],
        ),
        case(
            "crlf",
            ending=b"\r\n",
            lines=[
                Line(b"1,0.5,2,red", GOOD, values=(0.5, 2.0, 1.0)),
                Line(b"", SKIP),
                Line(b"0,,1.25,blue", GOOD),
                Line(b"1,x,2,red", "column 'a': not a number: 'x'"),
                Line(b"1,2,3", "expected 4 columns, found 3"),
                Line(b'0,1,1,"dark, blue"', GOOD),
            ],
        ),
        case(
            "no_final_newline",
            final_newline=False,
            lines=[
                Line(b"1,0.5,2,red", GOOD),
                Line(b"1,zz,2,red", "column 'a': not a number: 'zz'"),
                Line(b"0,0.25,1,blue", GOOD, label=0.0, values=(0.25, 1.0, 1.0)),
            ],
        ),
        case(
            "labels",
            [
                *(Line(label + b",1,2,red", FINITE_LABEL) for label in (b"NAN", b"inf", b"-inf", b"1e309")),
                Line(b",1,2,red", "missing label"),
                *(Line(label + b",1,2,red", "missing label") for label in (b"nan", b"NA", b'"?"', b"#N/A")),
                Line(b"1,1,2,red", GOOD, label=1.0),
            ],
        ),
        case(
            "values",
            [
                Line(b"1,1e308,-1e308,red", "column 'a': feature value beyond +-3.4e+38 (rescale it): '1e308'"),
                Line(b"1,3.4e38,-3.4e38,red", GOOD, values=(3.4e38, -3.4e38, 1.0)),
                Line(b"1,1e309,1,red", "column 'a': non-finite value: '1e309'"),
                Line(b"1,1,-1e309,red", "column 'b': non-finite value: '-1e309'"),
                Line(b"1,NAN,1,red", GOOD, values=(MISSING, 1.0, 1.0)),  # a NaN number (no spelling): missing
                Line(b"1,nan,NA,?", GOOD, values=(MISSING, MISSING)),  # missing: a number, a number, a category
                Line(b"1,1e-400,1,red", GOOD, values=(1.0, 1.0)),  # a underflows to 0: dropped
            ],
        ),
        TextCase(
            "duplicates",
            "csv",
            header=b"y,a,a,c",
            options=dict(CSV_OPTIONS),
            lines=[
                # two features named a, in one slot (the learners add them up)
                Line(
                    b"1,1,2,red",
                    GOOD,
                    values=(1.0, 2.0, 1.0),
                    slots=(feature_slot("a"), feature_slot("a"), category_slot("c", b"red")),
                ),
                Line(b"0,0,3,blue", GOOD, values=(3.0, 1.0)),
            ],
        ),
        # Without a header the file's first record sets the number of columns for
        # every block: a short line starting a block (block_lines=3) is one dead
        # letter, not a reason to refuse the good lines after it.
        TextCase(
            "headerless_bad_line_starts_a_block",
            "csv",
            options={"has_header": False},
            read_options={"block_lines": 3},
            lines=[
                Line(b"1,2,3", GOOD),
                Line(b"0,4,5", GOOD),
                Line(b"1,6,7", GOOD),
                Line(b"1,2", "expected 3 columns, found 2"),
                Line(b"0,8,9", GOOD, label=0.0, values=(8.0, 9.0)),
                Line(b"1,10,11", GOOD),
                Line(b"0,12,13", GOOD),
            ],
        ),
    ]


def long_line_cases() -> list[TextCase]:
    """Lines longer than ``max_line_bytes``: dead letters, read past, whatever they hold."""
    limit = 64
    long_valid = b"1 " + b" ".join(b"%d:1" % i for i in range(1, 30))  # a good example, but too long
    assert len(long_valid) > limit
    at_limit = b"1 1:0." + b"1" * (limit - 6)  # (a value within polybeam.learners.values' bound)
    giant = b"1 1:0.5 " + b"x" * (3 << 20)  # far longer than a read: streamed past
    return [
        TextCase(
            "long_lines",
            "libsvm",
            read_options={"max_line_bytes": limit},
            final_newline=False,
            lines=[
                Line(b"1 1:1", GOOD),
                Line(long_valid, too_long(len(long_valid), limit)),
                Line(at_limit, GOOD),  # exactly at the limit: read
                Line(at_limit + b"1", too_long(limit + 1, limit)),
                Line(b"-1 2:1", GOOD),
                Line(long_valid + b" 1:2", too_long(len(long_valid) + 4, limit)),  # the last, unterminated
            ],
        ),
        *(
            # (small blocks: the good line before it goes out, and the giant line is streamed past)
            TextCase(
                "giant_line",
                fmt,
                options=options,
                header=header,
                read_options={"max_line_bytes": 1 << 20, "block_bytes": 1 << 16},
                lines=[Line(good, GOOD), Line(giant, too_long(len(giant), 1 << 20)), Line(good, GOOD)],
            )
            for fmt, good, header, options in (
                ("libsvm", b"1 1:0.5", None, {}),
                ("vw", b"1 |f a", None, {}),
                ("csv", b"1,0.5,2,red", CSV_HEADER, CSV_OPTIONS),
            )
        ),
    ]


def too_long(length: int, limit: int) -> str:
    return (
        f"line of {length} bytes is longer than max_line_bytes ({limit}): not parsed "
        "(a file without line breaks, or binary data? raise max_line_bytes to read such lines)"
    )


def text_cases() -> list[TextCase]:
    return _libsvm_cases() + _vw_cases() + _csv_cases() + long_line_cases()


# -- gzip files cut short, and gzip containers ---------------------------------------

TRUNCATED = "truncated gzip file: the compressed data stops mid-stream after"


def many_lines(fmt: str, count: int, seed: int = 0) -> bytes:
    """``count`` good lines of ``fmt`` with random values (so that gzip cannot shrink them much)."""
    rnd = random.Random(seed)
    rows = []
    for i in range(count):
        label, x, z = i % 2, rnd.random(), rnd.randint(1, 10**6)
        if fmt == "libsvm":
            rows.append(b"%d 1:%.6f 3:%d 9:%.4f" % (2 * label - 1, x, z, rnd.random()))
        elif fmt == "vw":
            rows.append(b"%d |f a:%.6f b%d |g c:%.4f" % (2 * label - 1, x, z, rnd.random()))
        else:
            rows.append(b"%d,%.6f,%d,color%d" % (label, x, z, z % 7))
    header = CSV_HEADER + b"\n" if fmt == "csv" else b""
    return header + b"\n".join(rows) + b"\n"


def readable_prefix(compressed: bytes) -> bytes:
    """All the text a gzip stream cut short still gives (what any gzip reader can recover)."""
    decompressor = zlib.decompressobj(zlib.MAX_WBITS | 16)
    return decompressor.decompress(compressed) + decompressor.flush()


@dataclass
class GzipCase:
    """A ``.gz`` file's bytes and the text a reader must get: ``text`` then, when ``truncated``,
    one dead letter for the text after its last newline."""

    name: str
    format: str
    data: bytes
    text: bytes
    truncated: bool
    options: dict = field(default_factory=dict)
    read_options: dict = field(default_factory=dict)


def gzip_cases() -> list[GzipCase]:
    cases = []
    for fmt in ("libsvm", "vw", "csv"):
        content = many_lines(fmt, 14000)
        full = gzip.compress(content, mtime=0)
        assert len(full) * 3 // 5 > 64 << 10  # the cut in the middle falls after more than one compressed read
        options = CSV_OPTIONS if fmt == "csv" else {}
        for where, cut in (("middle", len(full) * 3 // 5), ("trailer", len(full) - 4), ("header", 5)):
            data = full[:cut]
            cases.append(GzipCase(f"{fmt}_cut_in_{where}", fmt, data, readable_prefix(data), True, options))
    a, b = many_lines("libsvm", 50, seed=1), many_lines("libsvm", 70, seed=2)
    giant = b"1 1:0.5 " + b"x" * (3 << 20)
    cut_giant = gzip.compress(a + giant, mtime=0)
    cut_giant = cut_giant[: len(cut_giant) - 100]
    return cases + [
        GzipCase("concatenated_members", "libsvm", gzip.compress(a) + gzip.compress(b), a + b, False),
        GzipCase("zero_padding", "libsvm", gzip.compress(a) + b"\0" * 1000, a, False),
        GzipCase("empty_file", "libsvm", b"", b"", False),
        GzipCase("empty_member", "libsvm", gzip.compress(b""), b"", False),
        # Cut inside a line longer than max_line_bytes: one dead letter saying both.
        GzipCase(
            "cut_in_a_long_line",
            "libsvm",
            cut_giant,
            readable_prefix(cut_giant),
            True,
            read_options={"max_line_bytes": 1 << 20, "block_bytes": 1 << 16},
        ),
    ]


def corrupt_gzip(content: bytes) -> bytes:
    """A gzip file with one byte flipped in the middle of its deflate data."""
    data = bytearray(gzip.compress(content, mtime=0))
    data[len(data) // 2] ^= 0x55
    return bytes(data)


# -- Parquet -------------------------------------------------------------------------


@dataclass
class Row:
    """What a Parquet row must become: an example (``fate`` GOOD) or a dead letter's reason."""

    fate: str
    label: float | None = None
    values: tuple[float, ...] | None = None
    slots: tuple[int, ...] | None = None


@dataclass
class ParquetCase:
    name: str
    table: pa.Table
    rows: list[Row]
    options: dict = field(default_factory=dict)

    def counts(self) -> ReadCounts:
        good = sum(row.fate == GOOD for row in self.rows)
        return ReadCounts(len(self.rows), good, len(self.rows) - good, 0)


NON_FINITE_SPARSE = "non-finite feature value"


def parquet_cases() -> list[ParquetCase]:
    from decimal import Decimal

    nan, inf = math.nan, math.inf
    sparse_labels = pa.table(
        {
            "label": [nan, inf, -inf, 1.0, None, 0.0],
            "indices": [[1], [2], [3], [4], [5], [6, 6]],
            "values": [[1.0], [1.0], [1.0], [2.5], [1.0], [1.0, 2.0]],
        }
    )
    sparse_values = pa.table(
        {
            "label": [1.0, 1.0, 1.0, 1.0, 0.0, 1.0],
            "indices": [[1, 2], [1], [3, 3, 5], [1], [2, 4], [7]],
            "values": [[1e308, -1e308], [inf], [1.0, 2.0, 0.5], [nan], [1e-320, 0.0], [-inf]],
        }
    )
    # Named columns: two called "a" (two features of that name), a decimal one, strings (categories),
    # and columns no feature can come from (a struct, a list), ignored (else the file is refused).
    named = pa.Table.from_arrays(
        [
            pa.array([1.0, 0.0, nan, 1.0]),
            pa.array([0.5, inf, 1.0, 1e308]),
            pa.array([2, 3, 4, 5]),
            pa.array([Decimal("1.25"), Decimal("0"), Decimal("2"), None], type=pa.decimal128(6, 2)),
            pa.array([{"x": 1.0}] * 4),
            pa.array([[1.0, 2.0]] * 4),
            pa.array(["id1", "id2", "id3", "id4"]),
        ],
        names=["label", "a", "a", "d", "meta", "tags", "id"],
    )
    null_labels = pa.table({"label": pa.nulls(3), "indices": [[1], [2], [3]]})
    return [
        ParquetCase(
            "labels",
            sparse_labels,
            [
                Row("missing label"),  # NaN, as null
                Row(FINITE_LABEL),
                Row(FINITE_LABEL),
                Row(GOOD, label=1.0, values=(2.5,), slots=(4,)),
                Row("missing label"),
                Row(GOOD, label=0.0, values=(1.0, 2.0), slots=(6, 6)),  # a repeated index is kept
            ],
        ),
        ParquetCase(
            "values",
            sparse_values,
            [
                Row("feature value beyond +-3.4e+38 (rescale it)"),
                Row(NON_FINITE_SPARSE),
                Row(GOOD, values=(1.0, 2.0, 0.5), slots=(3, 3, 5)),
                Row(GOOD, values=(MISSING,), slots=(1,)),  # NaN: a missing value
                Row(GOOD, label=0.0, values=(1e-320,), slots=(2,)),  # the 0 is dropped
                Row(NON_FINITE_SPARSE),
            ],
        ),
        ParquetCase(
            "named_columns",
            named,
            [
                Row(GOOD, label=1.0, values=(0.5, 2.0, 1.25, 1.0)),
                Row("non-finite value in column 'a'"),
                Row("missing label"),  # NaN, as null
                Row("column 'a': feature value beyond +-3.4e+38 (rescale it)"),
            ],
            options={"ignore_columns": ("meta", "tags")},
        ),
        ParquetCase("null_typed_label_column", null_labels, [Row("missing label")] * 3),
    ]


def parquet_error_cases() -> list[tuple[str, pa.Table | bytes, dict, str]]:
    """``(name, table or raw file bytes, options, what the error must say)``: files no row of which can be read."""
    good = pa.table({"label": [1.0, 0.0], "indices": [[1], [2]]})
    return [
        ("no_label_column", pa.table({"a": [1.0, 2.0]}), {}, "label column 'label' not found"),
        (
            "string_labels",
            pa.table({"label": ["1", "0"], "a": [1.0, 2.0]}),
            {},
            "label column 'label' must be numeric, got string; to read class names, pass label_names",
        ),
        (
            "list_labels",
            pa.table({"label": [[1.0], [0.0]], "a": [1.0, 2.0]}),
            {},
            "label column 'label' must be numeric, got list<element: double>",
        ),
        (
            "struct_features",
            pa.table({"label": [1.0, 0.0], "x": [1.0, 2.0], "s": [{"x": 1.0}, {"x": 2.0}]}),
            {},
            "column 's' holds struct<x: double>: it is no feature; leave it out with --ignore-columns s",
        ),
        (
            "list_features_under_another_name",
            pa.table({"label": [1.0, 0.0], "feats": [[1.0], [2.0]]}),
            {},
            "column 'feats' holds list<element: double>: it is no feature; leave it out with --ignore-columns "
            "feats (ignore_columns=), or give sparse features as the list columns 'indices' and 'values'",
        ),
        ("nothing_but_the_label", pa.table({"label": [1.0, 0.0], "s": pa.nulls(2)}), {}, "no feature columns"),
        ("string_indices", pa.table({"label": [1.0], "indices": [["a"]]}), {}, "must hold lists of integers"),
        ("struct_indices", pa.table({"label": [1.0], "indices": [[{"i": 1}]]}), {}, "must hold lists of integers"),
        (
            "string_values",
            pa.table({"label": [1.0], "indices": [[1]], "values": [["a"]]}),
            {},
            "must hold lists of numbers",
        ),
        (
            "label_column_twice",
            pa.Table.from_arrays(
                [pa.array([1.0]), pa.array([0.0]), pa.array([[1]])], names=["label", "label", "indices"]
            ),
            {},
            "column 'label' appears 2 times",
        ),
        ("not_parquet", b"1 1:0.5\n-1 2:1\n", {}, "not a readable Parquet file"),
        ("empty_file", b"", {}, "not a readable Parquet file"),
        ("truncated", good, {"truncate": True}, "not a readable Parquet file"),
    ]
