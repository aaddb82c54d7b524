"""Input torture (issue 13, item 4): every reader through a corpus of hostile files.

Every text format (LIBSVM, VW, CSV; plain and gzip) and Parquet read files
with NUL bytes, invalid UTF-8, CRLF line endings, no final newline, labels of
NaN and +-inf, feature values of 1e308 and 1e309, repeated features, lines
longer than ``max_line_bytes`` and gzip files cut short (the corpus is in
``torture_corpus.py``). For each file:

* nothing crashes: the pipeline completes, and where a file cannot be read as
  a whole the error is specific and names the file;
* every bad record is a dead letter with its source, line, byte offset (row
  for Parquet) and a readable reason, which survives a JSON round trip;
* the counts reconcile exactly: records == examples + dead letters + skipped;
* the good records around the bad ones are read with the values a clean file
  of them alone gives (and, where stated, the exact label, values and slots);
* memory stays bounded: a 100 MB line costs a fraction of its size with the
  default ``max_line_bytes`` and at most a few times its size when it is
  parsed (measured in a fresh process, ``torture_memory.py``).

What each hostile input becomes:

============================  =============================================================
NUL byte in a line            dead letter "NUL byte at position P of the line (binary data,
                              or a damaged file?)", even in a comment
invalid UTF-8                 numbers that are not numbers: dead letters quoting U+FFFD;
                              VW names and CSV categories: hashed byte for byte (as VW does)
CRLF line endings             read exactly as LF ("\\r" is blank space)
no final newline              the last line is read
labels NaN, inf, -inf, 1e309  dead letter "label must be a finite number" (the VW importance
                              weight: "importance weight must be finite and >= 0, got ...")
values 3.4e38                 read exactly; 1e308: dead letter "feature value beyond +-3.4e+38"
                              (its square overflows an update); 1e309, inf: dead letter
                              "non-finite ..."; nan (LIBSVM, a CSV or Parquet number): a missing
                              value, the entry NaN; 1e-400 underflows to 0 and is dropped, as zeros are
repeated feature index/name   kept, each entry with its value (the learners add them up)
line > max_line_bytes         dead letter "line of N bytes is longer than max_line_bytes
(default 64 MiB)              (M): not parsed ...", read past without holding it whole
gzip file cut mid-stream      the complete lines before the cut are read; the cut-off end is
                              one dead letter "truncated gzip file: ..." (empty raw when the
                              cut falls on a line break); nothing after it can be read
corrupt gzip data             CorruptInputError naming the file (lines already read may be
                              wrong, so the job stops)
Parquet, wrong schema         ValueError naming the file and the problem (no label column,
                              labels of strings or lists, no feature column, ...)
Parquet, not Parquet or cut   CorruptInputError naming the file
============================  =============================================================

All the files that can be read run in one pipeline (a module fixture); the
tests below check its outputs case by case.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import os
import pickle
import random
import subprocess
import sys

import apache_beam as beam
import numpy as np
import pyarrow.parquet as pq
import pytest
from apache_beam.io.range_trackers import OffsetRangeTracker
from hypothesis import given, settings
from hypothesis import strategies as st

from polybeam.formats.formats import make_format
from polybeam.formats.records import MAX_RAW_CHARS, DeadLetter, ReadCounts
from polybeam.learners.hashing import feature_slot, hash_string
from polybeam.transforms.read import ReadExamples
from polybeam.transforms.sources import CorruptInputError, GzipStream, TextBlockSource
from tests.transforms.torture_corpus import (
    CSV_HEADER,
    CSV_OPTIONS,
    GOOD,
    MISSING,
    SKIP,
    TRUNCATED,
    corrupt_gzip,
    gzip_cases,
    many_lines,
    parquet_cases,
    parquet_error_cases,
    readable_prefix,
    text_cases,
    too_long,
)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TEXT_CASES = {f"{case.format}-{case.name}": case for case in text_cases()}
GZIP_CASES = {case.name: case for case in gzip_cases()}
PARQUET_CASES = {case.name: case for case in parquet_cases()}


# -- running the corpus ----------------------------------------------------------------


def expected_raw(raw: bytes) -> str:
    """What a dead letter keeps of a record: its start, decoded, without the line ending."""
    text = raw[: MAX_RAW_CHARS * 4].decode("utf-8", errors="replace").rstrip("\r\n")
    return text if len(text) <= MAX_RAW_CHARS else text[:MAX_RAW_CHARS] + "..."


def comparable(values) -> tuple:
    """Values as a tuple that compares equal when they are equal, a missing value (NaN) as MISSING."""
    return tuple(MISSING if math.isnan(value) else value for value in values.tolist())


def example_rows(batch, key):
    for i in range(len(batch)):
        slots, values = batch.row(i)
        tag = None if batch.tags is None else batch.tags[i]
        row = (
            int(batch.row_ids[i]),
            float(batch.labels[i]),
            float(batch.weights[i]),
            tuple(slots.tolist()),
            comparable(values),
            tag,
        )
        yield key, "examples", row


def collect(read, key: str) -> list:
    """The read's examples (as rows), dead letters and counts, tagged with ``key``."""
    return [
        read.examples | f"{key}/Rows" >> beam.FlatMap(example_rows, key),
        read.dead_letters | f"{key}/Dead" >> beam.Map(lambda letter, key: (key, "dead", letter), key),
        read.counts | f"{key}/Counts" >> beam.Map(lambda counts, key: (key, "counts", counts), key),
    ]


def write_text(path, content: bytes, compressed: bool) -> str:
    with gzip.open(path, "wb") if compressed else open(path, "wb") as f:
        f.write(content)
    return str(path)


# The whole torture corpus is read at module set-up (about 15 s): every test here is slow.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Write every readable hostile file, read them all in one pipeline; ``key -> (path, outputs)``."""
    directory = tmp_path_factory.mktemp("torture")
    reads = {}  # key -> (path, format, options)
    for key, case in TEXT_CASES.items():
        for compressed in (False, True):
            name = f"{key}{'.gz' if compressed else ''}"
            path = write_text(directory / name, case.content(), compressed)
            # Small blocks: hostile lines fall at block starts and ends too.
            options = {"block_lines": 3, **case.options, **case.read_options}
            reads[name] = (path, case.format, options)
    for key, case in GZIP_CASES.items():
        path = directory / f"gzip-{key}.gz"
        path.write_bytes(case.data)
        reads[f"gzip-{key}"] = (str(path), case.format, {**case.options, **case.read_options})
    for key, case in PARQUET_CASES.items():
        path = directory / f"parquet-{key}.parquet"
        pq.write_table(case.table, path)
        reads[f"parquet-{key}"] = (str(path), "parquet", {"block_lines": 2, **case.options})

    pipeline = beam.Pipeline(runner="FnApiRunner")
    parts = []
    for key, (path, fmt, options) in reads.items():
        # Every record's fate is the point here, not whether a job should go on (tests/pipelines/test_input_checks.py).
        parts += collect(pipeline | key >> ReadExamples(path, fmt, check_input=False, **options), key)
    dump = directory / "outputs.pickle"
    _ = parts | beam.Flatten() | beam.combiners.ToList() | beam.Map(lambda items: dump.write_bytes(pickle.dumps(items)))
    pipeline.run().wait_until_finish()

    outputs = {key: {"examples": [], "dead": [], "counts": []} for key in reads}
    for key, kind, value in pickle.loads(dump.read_bytes()):
        outputs[key][kind].append(value)
    for got in outputs.values():
        got["examples"].sort()
        got["dead"].sort(key=lambda letter: letter.offset)
    return {key: (reads[key][0], outputs[key]) for key in reads}


def check_letter(letter: DeadLetter, *, source: str, line: int, offset: int, raw: bytes, reason: str) -> None:
    assert (letter.source, letter.line, letter.offset) == (source, line, offset), letter
    assert letter.reason == reason, letter
    assert letter.raw == expected_raw(raw)
    assert DeadLetter.from_json(letter.to_json()) == letter  # JSON-safe, whatever the bytes were


def check_counts(got, expected: ReadCounts) -> None:
    assert got["counts"] == [expected]
    assert expected.reconciles


# -- text files: plain and gzip ---------------------------------------------------------


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("key", list(TEXT_CASES))
def test_text_file(corpus, key, compressed):
    case = TEXT_CASES[key]
    source, got = corpus[key + (".gz" if compressed else "")]
    records = case.records()
    fmt = make_format(case.format, **case.options)

    good = [(offset, line) for offset, _, line in records if line.fate == GOOD]
    assert [row[0] for row in got["examples"]] == [offset for offset, _ in good]
    for (_row_id, label, weight, slots, values, tag), (_, line) in zip(got["examples"], good):
        # Read as a clean file of this line alone is read...
        clean = fmt.parse(case.clean_content(line)).batch
        assert len(clean) == 1
        clean_slots, clean_values = clean.row(0)
        clean_tag = None if clean.tags is None else clean.tags[0]
        assert (label, weight, slots, values, tag) == (
            clean.labels[0],
            clean.weights[0],
            tuple(clean_slots.tolist()),
            comparable(clean_values),
            clean_tag,
        )
        # ...and as stated, where the corpus states it.
        assert line.label is None or label == line.label
        assert line.values is None or values == line.values
        assert line.slots is None or slots == line.slots

    bad = [(offset, number, line) for offset, number, line in records if line.fate not in (GOOD, SKIP)]
    assert len(got["dead"]) == len(bad)
    for letter, (offset, number, line) in zip(got["dead"], bad):
        check_letter(letter, source=source, line=number, offset=offset, raw=line.text, reason=line.fate)
    check_counts(got, case.counts())


def test_crlf_files_read_as_lf_files(corpus):
    for fmt in ("libsvm", "vw", "csv"):
        crlf = TEXT_CASES[f"{fmt}-crlf"]
        lf = make_format(fmt, **crlf.options).parse(crlf.content().replace(b"\r\n", b"\n"))
        _, got = corpus[f"{fmt}-crlf"]
        assert [row[1:5] for row in got["examples"]] == [
            (
                lf.batch.labels[i],
                lf.batch.weights[i],
                tuple(lf.batch.row(i)[0].tolist()),
                comparable(lf.batch.row(i)[1]),
            )
            for i in range(len(lf.batch))
        ]


# -- gzip files cut short, concatenated, padded, empty ------------------------------------


@pytest.mark.parametrize("key", list(GZIP_CASES))
def test_gzip_file(corpus, key):
    """A cut file keeps every complete line before the cut; the cut-off end is one dead letter."""
    case = GZIP_CASES[key]
    source, got = corpus[f"gzip-{key}"]
    complete = case.text[: case.text.rfind(b"\n") + 1] if case.truncated else case.text
    tail = case.text[len(complete) :]
    expected = make_format(case.format, **case.options).parse(complete)  # the complete lines, in memory

    batch = expected.batch
    assert [row[0] for row in got["examples"]] == batch.row_ids.tolist()
    assert [row[1:5] for row in got["examples"]] == [
        (batch.labels[i], batch.weights[i], *(tuple(a.tolist()) for a in batch.row(i))) for i in range(len(batch))
    ]
    assert not expected.dead_letters
    counts = expected.counts
    if case.truncated:
        (letter,) = got["dead"]
        assert letter.reason.startswith(TRUNCATED), letter.reason
        if key == "cut_in_a_long_line":
            assert letter.reason.endswith("(the line was already longer than max_line_bytes)")
        else:
            assert f"after {len(case.text)} bytes of text" in letter.reason
        check_letter(
            letter, source=source, line=complete.count(b"\n") + 1, offset=len(complete), raw=tail, reason=letter.reason
        )
        counts = counts + ReadCounts(1, 0, 1, 0)
    else:
        assert got["dead"] == []
    check_counts(got, counts)
    if key.endswith("_cut_in_middle"):
        assert len(batch) > 1000 and tail  # a real cut: many lines kept, one cut in two


@pytest.mark.parametrize(
    "name, data",
    [
        ("flipped_byte", corrupt_gzip(many_lines("libsvm", 2000))),
        ("trailing_garbage", gzip.compress(many_lines("libsvm", 20)) + b"not gzip at all"),
    ],
    ids=["flipped_byte", "trailing_garbage"],
)
def test_corrupt_gzip_is_an_error_naming_the_file(tmp_path, name, data):
    """Corrupt data may already have been read as wrong lines: the job stops, saying which file."""
    path = tmp_path / f"{name}.libsvm.gz"
    path.write_bytes(data)
    with pytest.raises(CorruptInputError, match="corrupt gzip data") as error:
        with beam.Pipeline(runner="FnApiRunner") as pipeline:
            _ = pipeline | ReadExamples(str(path), "libsvm")
    assert str(path) in str(error.value) and "numba" not in str(error.value)


# -- Parquet -----------------------------------------------------------------------------


@pytest.mark.parametrize("key", list(PARQUET_CASES))
def test_parquet_file(corpus, key):
    case = PARQUET_CASES[key]
    source, got = corpus[f"parquet-{key}"]
    good = [(i, row) for i, row in enumerate(case.rows) if row.fate == GOOD]
    assert [row[0] for row in got["examples"]] == [i for i, _ in good]
    for (_, label, _, slots, values, _), (_, row) in zip(got["examples"], good):
        assert row.label is None or label == row.label
        assert row.values is None or values == row.values
        assert row.slots is None or slots == row.slots
    bad = [(i, row) for i, row in enumerate(case.rows) if row.fate != GOOD]
    assert len(got["dead"]) == len(bad)
    for letter, (i, row) in zip(got["dead"], bad):
        assert (letter.source, letter.line, letter.offset, letter.reason) == (source, i + 1, i, row.fate)
        assert isinstance(json.loads(letter.raw), dict)  # the row, as JSON
        assert DeadLetter.from_json(letter.to_json()) == letter
    check_counts(got, case.counts())


def test_parquet_named_columns_of_one_name_are_two_features(corpus):
    _, got = corpus["parquet-named_columns"]
    slots = got["examples"][0][3]
    identity = hash_string("id1", hash_string("id", 0)) & ((1 << 18) - 1)  # a string column is a category
    assert slots == (feature_slot("a"), feature_slot("a"), feature_slot("d"), identity)


PARQUET_ERRORS = parquet_error_cases()


@pytest.mark.parametrize("name, table, options, message", PARQUET_ERRORS, ids=[case[0] for case in PARQUET_ERRORS])
def test_unreadable_parquet_file_is_an_error_naming_the_file(tmp_path, name, table, options, message):
    path = tmp_path / f"{name}.parquet"
    options = dict(options)
    if isinstance(table, bytes):
        path.write_bytes(table)
    else:
        pq.write_table(table, path)
        if options.pop("truncate", False):
            path.write_bytes(path.read_bytes()[: os.path.getsize(path) // 2])
    expected = CorruptInputError if "not a readable Parquet file" in message else ValueError
    with pytest.raises(expected) as error:
        with beam.Pipeline(runner="FnApiRunner") as pipeline:
            _ = pipeline | ReadExamples(str(path), "parquet", **options)
    text = str(error.value)
    assert f"{path}: " in text and message in text and "numba" not in text, text


# -- CSV files whose header makes them unreadable ---------------------------------------


@pytest.mark.parametrize(
    "content, options, message",
    [
        (b"a,b\n1,2\n", {"label_column": "y"}, "label_column 'y' is not a column; the columns are ['a', 'b']"),
        (b"y," + b"x" * 5000 + b"\n1,2\n", {"max_line_bytes": 1000}, "is longer than max_line_bytes (1000)"),
    ],
    ids=["no_label_column", "header_longer_than_max_line_bytes"],
)
def test_unusable_csv_header_is_an_error_naming_the_file(tmp_path, content, options, message):
    path = tmp_path / "bad.csv"
    path.write_bytes(content)
    with pytest.raises(ValueError) as error:
        with beam.Pipeline(runner="FnApiRunner") as pipeline:
            _ = pipeline | ReadExamples(str(path), "csv", **options)
    assert str(path) in str(error.value) and message in str(error.value), str(error.value)


# -- the reading machinery alone, on random input ----------------------------------------


@settings(max_examples=60)
@given(
    lengths=st.lists(st.integers(0, 90), min_size=1, max_size=25),
    final_newline=st.booleans(),
    limit=st.integers(1, 60),
    block_lines=st.integers(1, 4),
    block_bytes=st.integers(1, 120),
    cut=st.floats(0, 1),
    seed=st.integers(0, 2**16),
)
def test_long_lines_come_out_alone_and_every_line_once(
    tmp_path_factory, lengths, final_newline, limit, block_lines, block_bytes, cut, seed
):
    """A line over the limit is a block of its own with its start and an error; the others are read as
    usual; every line comes out once, in order, with its offset and number, whatever the split."""
    rnd = random.Random(seed)
    lines = [bytes(rnd.choice(b"ab \r") for _ in range(n)) for n in lengths]
    content = b"\n".join(lines) + (b"\n" if final_newline else b"")
    if not final_newline and lines[-1] == b"":
        lines.pop()  # an empty unterminated tail is no line
    path = tmp_path_factory.mktemp("lines") / "f.txt"
    path.write_bytes(content)
    source = TextBlockSource(str(path), block_lines=block_lines, block_bytes=block_bytes, max_line_bytes=limit)
    middle = int(cut * len(content))
    blocks = []
    for bundle in source.split(1 << 40):  # (none for an empty file)
        for start, stop in ((0, middle), (middle, len(content))):
            blocks += bundle.source.read(OffsetRangeTracker(start, stop))

    got = []  # (offset, line number or None, text or None, error or None) per line
    for block in blocks:
        if block.error is None:
            position = block.offset
            for i, piece in enumerate(block.lines()):
                number = None if block.first_line is None else block.first_line + i
                got.append((position, number, piece.rstrip(b"\n"), None))
                position += len(piece)
        else:
            assert len(block.data) <= MAX_RAW_CHARS * 4
            got.append((block.offset, block.first_line, block.data, block.error))
    offsets = np.cumsum([0] + [len(line) + 1 for line in lines]).tolist()
    assert [offset for offset, *_ in got] == offsets[: len(lines)]
    for i, ((_, number, text, error), line) in enumerate(zip(got, lines)):
        assert number in (None, i + 1)
        if len(line) <= limit:
            assert (text, error) == (line, None)
        else:
            assert (text, error) == (line[: MAX_RAW_CHARS * 4], too_long(len(line), limit))


@settings(max_examples=60)
@given(
    data=st.binary(max_size=3000) | st.text("ab\n", max_size=20000).map(str.encode),
    members=st.integers(1, 3),
    cut=st.floats(0, 1),
    read_size=st.integers(1, 5000),
)
def test_gzip_stream_reads_what_a_cut_file_holds_and_says_it_is_cut(data, members, cut, read_size):
    texts = [data[i::members] for i in range(members)]
    compressed = [gzip.compress(text, mtime=0) for text in texts]
    full = b"".join(compressed)
    boundaries = np.cumsum([0] + [len(member) for member in compressed]).tolist()
    end = int(cut * len(full))
    stream = GzipStream(io.BytesIO(full[:end]), "f.gz")
    parts = []
    while part := stream.read(read_size):
        assert len(part) <= read_size
        parts.append(part)
    got = b"".join(parts)
    whole = sum(boundary <= end for boundary in boundaries) - 1  # members read to their end
    expected = b"".join(texts[:whole])
    if end in boundaries:
        assert stream.damage is None  # (a file may well end after any member)
    else:
        # The cut member gives what any gzip reader can get of it, and the stream says it is cut.
        expected += readable_prefix(full[boundaries[whole] : end])
        assert stream.damage is not None and f"after {len(expected)} bytes of text" in stream.damage
    assert got == expected


# -- memory: a 100 MB line -----------------------------------------------------------------

GIANT = 100 << 20  # bytes of the giant line


def write_giant(path, giant: tuple[bytes, bytes, bytes], good: bytes, header: bytes, compressed: bool) -> int:
    """A file of 1000 good lines, a GIANT-byte line (``head``, ``filler`` repeated, ``tail``) and 1000
    good lines, written in pieces (the test process never holds it). Returns the giant line's offset."""
    head, filler, tail = giant
    before = header + good * 1000
    chunk = filler * ((1 << 20) // len(filler))
    with gzip.open(path, "wb", compresslevel=1) if compressed else open(path, "wb") as f:
        f.write(before + head)
        written = len(head) + len(tail)
        while written < GIANT:
            piece = chunk[: GIANT - written]
            f.write(piece)
            written += len(piece)
        f.write(tail + b"\n" + good * 1000)
    return len(before)


@pytest.mark.subprocess
def test_a_100_mb_line_costs_bounded_memory(tmp_path):
    """Peak RSS above a warm baseline, in fresh processes: with the default max_line_bytes the giant line
    is read past (a fraction of its size), and parsed (max_line_bytes raised) it costs at most 4x its size.

    Run alone: ``python -m pytest -q tests/transforms/test_input_torture.py -k 100_mb -s`` prints the figures.
    """
    files = {  # name: (format, options, giant line (head, filler, tail), good line, header, compressed)
        "libsvm": ("libsvm", {}, (b"1 1:0.5 ", b"x", b""), b"1 1:0.5 2:1\n", b"", False),
        "libsvm_gz": ("libsvm", {}, (b"1 1:0.5 ", b"x", b""), b"1 1:0.5 2:1\n", b"", True),
        "vw": ("vw", {}, (b"1 |f a b:", b"\xff", b""), b"1 |f a b:0.5\n", b"", False),  # invalid UTF-8
        "csv": ("csv", CSV_OPTIONS, (b"1,0.5,", "é".encode(), b",red"), b"1,0.5,2,red\n", CSV_HEADER + b"\n", False),
    }
    reads, warm, where, paths = [], [], {}, []
    try:
        for name, (fmt, options, giant, good, header, compressed) in files.items():
            paths.append(tmp_path / (name + (".gz" if compressed else "")))
            where[name] = write_giant(paths[-1], giant, good, header, compressed)
            reads.append([name, str(paths[-1]), fmt, options])
            small = tmp_path / f"small-{name}"
            small.write_bytes(header + good * 10)
            warm.append([str(small), fmt, options])
        check_giant_line_reads(tmp_path, files, reads, warm, where)
    finally:  # 400 MB: not for pytest's kept temporary folders
        for path in paths:
            path.unlink(missing_ok=True)


def check_giant_line_reads(tmp_path, files, reads, warm, where):
    runs = {}
    for run, limit in (("default", None), ("parsed", 3 * GIANT)):
        spec = {
            "warm": warm,
            "reads": [
                [name, path, fmt, {**options, **({"max_line_bytes": limit} if limit else {})}]
                for name, path, fmt, options in reads
            ],
            "out": str(tmp_path / f"{run}.json"),
        }
        (tmp_path / f"{run}-spec.json").write_text(json.dumps(spec))
        command = [sys.executable, "-m", "tests.transforms.torture_memory", str(tmp_path / f"{run}-spec.json")]
        runs[run] = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    for run, process in runs.items():
        output = process.communicate(timeout=300)[0].decode(errors="replace")
        assert process.returncode == 0, output[-3000:]
        result = json.loads((tmp_path / f"{run}.json").read_text())
        growth = (result["peak"] - result["baseline"]) / GIANT
        print(
            f"\n{run}: peak RSS {result['peak'] / 2**20:.0f} MiB, {growth:.2f}x the line above the baseline "
            f"({result['baseline'] / 2**20:.0f} MiB), {result['seconds']:.1f} s"
        )
        assert growth < (1.0 if run == "default" else 4.0), (run, growth)
        for name, got in result["reads"].items():
            fmt, _, (head, _, _), _, header, _ = files[name]
            records, examples, dead, skipped, reconciles = got["counts"][0]
            assert (records, examples, dead, skipped, reconciles) == (2001 + bool(header), 2000, 1, bool(header), True)
            assert got["examples"] == 2000
            ((source, line, offset, raw_length, raw_start, reason),) = got["dead"]
            assert (line, offset) == (1001 + bool(header), where[name])
            assert raw_length == MAX_RAW_CHARS + 3 and raw_start.startswith(head.decode()[:5])
            if run == "default":
                assert reason == too_long(GIANT, 64 << 20), reason
            else:
                assert reason.startswith(
                    ("feature must be index:value", "feature value is not a number", "column 'b': not a number")
                ), reason
