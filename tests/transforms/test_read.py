"""ReadExamples end to end on the FnApiRunner, and the DoFns it is made of.

Pipelines cost 1-3 s each here, so each one checks several things at once.
"""

from __future__ import annotations

import glob
import gzip
import os

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.io.iobase import Read
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.testing.util import assert_that, equal_to

from polybeam.formats.csv import CsvFormat
from polybeam.formats.libsvm import LibsvmFormat
from polybeam.formats.parquet import ParquetFormat
from polybeam.formats.records import DeadLetter, ReadCounts
from polybeam.learners.batch import ExampleBatch
from polybeam.transforms import dead_letters as dead_letter_module
from polybeam.transforms.dead_letters import FillLineNumbers, LineIndex, WriteDeadLetters
from polybeam.transforms.read import (
    COUNTER_NAMESPACE,
    ParseBlocks,
    ReadExamples,
    ReadResult,
    ReadTableFiles,
)
from polybeam.transforms.sources import TextBlockSource

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "polybeam", "datasets", "data")


def run(pipeline):
    result = pipeline.run()
    result.wait_until_finish()
    return result


def read_counters(result, step: str) -> dict[str, int]:
    """The ``polybeam.read`` counters of the transforms under ``step``."""
    query = result.metrics().query(MetricsFilter().with_namespace(COUNTER_NAMESPACE).with_step(step))
    totals: dict[str, int] = {}
    for counter in query["counters"]:
        totals[counter.key.metric.name] = totals.get(counter.key.metric.name, 0) + counter.committed
    return totals


def count_examples(batches, label: str = "Count"):
    return batches | f"{label}Len" >> beam.Map(len) | f"{label}Sum" >> beam.CombineGlobally(sum)


def assert_all(pcoll, predicate, label: str) -> None:
    """Assert that ``predicate`` holds for every element (and that there is at least one)."""
    flags = pcoll | f"{label}Check" >> beam.Map(predicate) | f"{label}All" >> beam.CombineGlobally(all)
    assert_that(flags, equal_to([True]), label=label)


def gunzip(name: str, target) -> bytes:
    with gzip.open(os.path.join(DATA, name), "rb") as f:
        content = f.read()
    target.write_bytes(content)
    return content


def write_shards(content: bytes, directory, stem: str, shards: int, *, compress: bool = False) -> None:
    """Cut ``content`` at line boundaries into ``shards`` files."""
    lines = content.splitlines(keepends=True)
    directory.mkdir(parents=True, exist_ok=True)
    for i, part in enumerate(np.array_split(np.arange(len(lines)), shards)):
        data = b"".join(lines[j] for j in part)
        if compress:
            with gzip.open(directory / f"{stem}-{i}.gz", "wb") as f:
                f.write(data)
        else:
            (directory / f"{stem}-{i}").write_bytes(data)


# -- (c) the bundled data sets, split into shards and compressed ----------------


def summarize(reads: dict[str, ReadResult], limits: dict[str, int]):
    """One ``(name, (examples, batches within the size limit, dead letters, label sum, value sum))`` per read.

    Summing inside the pipeline and asserting once keeps the pipeline small:
    each ``assert_that`` adds about 0.2 s of graph building.
    """

    def of_batch(batch, name):
        within = 0 < len(batch) <= limits[name]
        return name, np.array([len(batch), not within, 0, batch.labels.sum(), batch.values.sum()])

    parts = []
    for name, read in reads.items():
        parts.append(read.examples | f"{name}Batches" >> beam.Map(of_batch, name))
        parts.append(read.dead_letters | f"{name}Letters" >> beam.Map(lambda _, name=name: (name, np.eye(5)[2])))
    return (
        parts
        | "AllReads" >> beam.Flatten()
        | "SumPerRead" >> beam.CombinePerKey(lambda rows: np.sum(list(rows), axis=0))
        | "Round" >> beam.MapTuple(lambda name, sums: (name, tuple(float(v) for v in sums.round(6))))
    )


@pytest.mark.slow
def test_bundled_data_sets_read_completely_and_counters_reconcile(tmp_path):
    spam = gunzip("spam.libsvm.gz", tmp_path / "spam.libsvm")
    letter = gunzip("letter.libsvm.gz", tmp_path / "letter.libsvm")
    write_shards(spam, tmp_path / "spam-shards", "part", 5)
    write_shards(letter, tmp_path / "letter-gz", "part", 3, compress=True)

    reads = {  # name: (pattern, content, options)
        "Spam": (str(tmp_path / "spam-shards" / "part-*"), spam, {}),
        "SpamGzip": (os.path.join(DATA, "spam.libsvm.gz"), spam, {"block_lines": 500}),
        "Letter": (str(tmp_path / "letter.libsvm"), letter, {"block_lines": 1000}),
        "LetterGzip": (str(tmp_path / "letter-gz" / "part-*.gz"), letter, {"block_bytes": 64 << 10}),
    }
    pipeline = beam.Pipeline(runner="FnApiRunner")
    results = {
        name: pipeline | name >> ReadExamples(pattern, LibsvmFormat(labels="real"), **options)
        for name, (pattern, _, options) in reads.items()
    }
    assert all(isinstance(read, ReadResult) for read in results.values())
    limits = {name: options.get("block_lines", 4096) for name, (_, _, options) in reads.items()}
    expected = []
    for name, (_, content, _) in reads.items():
        whole = LibsvmFormat().parse(content, source=name).batch
        sums = np.array([len(whole), 0, 0, whole.labels.sum(), whole.values.sum()])
        expected.append((name, tuple(float(v) for v in sums.round(6))))
    assert_that(summarize(results, limits), equal_to(expected))
    for name, read in results.items():  # the counts as data, for reports that workers write
        rows = {"spam": 4601, "letter": 20000}[name.replace("Gzip", "").lower()]
        assert_that(read.counts, equal_to([ReadCounts(rows, rows, 0, 0)]), label=f"{name}Counts")
    result = run(pipeline)

    for name in reads:
        rows = {"spam": 4601, "letter": 20000}[name.replace("Gzip", "").lower()]
        counters = read_counters(result, name)
        assert counters["records"] == counters["examples"] + counters["dead_letters"] + counters["skipped"]
        assert (counters["examples"], counters["dead_letters"]) == (rows, 0), name


# -- (d) dead letters with correct line numbers, also from mid-file readers -----


def bad_line_file(path, *, lines: int, bad_every: int) -> list[int]:
    """A LIBSVM file whose every ``bad_every``-th line is broken; returns the bad line numbers."""
    rows, bad = [], []
    for number in range(1, lines + 1):
        if number % bad_every == 0:
            rows.append(b"oops 1:2 this line is broken\n")
            bad.append(number)
        elif number % 101 == 0:
            rows.append(b"# a comment line, skipped\n")
        else:
            rows.append(b"%d 1:%d 2:0.5 3:1 7:2 11:0.25 13:0.125 17:8 19:0.0625 23:1e-3\n" % (number % 2, number))
    path.write_bytes(b"".join(rows))
    return bad


def bad_csv_file(path, *, rows: int, bad_every: int) -> list[int]:
    """A CSV file with a header whose every ``bad_every``-th line is broken; returns the bad line numbers."""
    lines, bad = [b"label,a,b,c\r\n"], []
    for number in range(2, rows + 2):
        if number % bad_every == 0:
            lines.append(b"1,zz,2,3\r\n")
            bad.append(number)
        else:
            lines.append(b"%d,%d,0.5,%d\r\n" % (number % 2, number, number % 7))
    path.write_bytes(b"".join(lines))
    return bad


def assert_split_by_beam(path) -> None:
    """Beam's own initial split cuts the file into byte ranges, so some readers start mid-file."""
    size = os.path.getsize(path)
    bundles = list(TextBlockSource(str(path)).split(Read.get_desired_chunk_size(size)))
    assert len(bundles) > 1 and bundles[-1].start_position > size // 3


def test_dead_letters_have_line_numbers_when_beam_splits_the_file(tmp_path):
    libsvm_path, csv_path = tmp_path / "bad.libsvm", tmp_path / "bad.csv"
    bad = {"Libsvm": bad_line_file(libsvm_path, lines=40000, bad_every=1999)}
    bad["Csv"] = bad_csv_file(csv_path, rows=150000, bad_every=4999)
    assert_split_by_beam(libsvm_path)
    assert_split_by_beam(csv_path)
    prefix = str(tmp_path / "out" / "dead")

    pipeline = beam.Pipeline(runner="FnApiRunner")
    reads = {
        "Libsvm": pipeline | "Libsvm" >> ReadExamples(str(libsvm_path), "libsvm", block_lines=1000),
        "Csv": pipeline | "Csv" >> ReadExamples(str(csv_path), CsvFormat(labels="binary")),
    }
    letters = (reads["Libsvm"].dead_letters, reads["Csv"].dead_letters) | beam.Flatten()
    assert_that(
        letters | beam.Map(lambda letter: (letter.source, letter.line)),
        equal_to([(str(libsvm_path), n) for n in bad["Libsvm"]] + [(str(csv_path), n) for n in bad["Csv"]]),
    )
    _ = letters | WriteDeadLetters(prefix, num_shards=1)
    result = run(pipeline)

    comments = len([n for n in range(101, 40001, 101) if n % 1999])
    expected = {
        "Libsvm": {"records": 40000, "dead_letters": len(bad["Libsvm"]), "skipped": comments},
        "Csv": {"records": 150001, "dead_letters": len(bad["Csv"]), "skipped": 1},  # the header
    }
    for name, counts in expected.items():
        counts["examples"] = counts["records"] - counts["dead_letters"] - counts["skipped"]
        assert read_counters(result, name) == counts, name

    (written,) = glob.glob(prefix + "*.jsonl")
    contents = {str(libsvm_path): libsvm_path.read_bytes(), str(csv_path): csv_path.read_bytes()}
    for line in open(written):
        letter = DeadLetter.from_json(line)
        content = contents[letter.source]
        assert content[: letter.offset].count(b"\n") + 1 == letter.line
        assert content[letter.offset :].startswith(letter.raw.encode())
        assert letter.raw.startswith(("oops", "1,zz")) and letter.reason


def test_mid_file_reader_leaves_line_numbers_to_the_dead_letter_path(tmp_path):
    content = b"".join(b"%d 1:%d\n" % (i, i) if i % 7 else b"bad %d\n" % i for i in range(1, 200))
    path = tmp_path / "mid.txt"
    path.write_bytes(content)
    (bundle,) = TextBlockSource(str(path), block_lines=9).split(1 << 30)
    start = len(content) // 2
    parse = ParseBlocks(LibsvmFormat(), prefetch=False)
    letters = []
    for block in bundle.source.read(bundle.source.get_range_tracker(start, len(content))):
        assert block.first_line is None
        letters += [out.value for out in parse.process(block) if getattr(out, "tag", None) == "dead_letters"]
    assert letters and all(letter.line is None for letter in letters)
    fill = FillLineNumbers()
    fill.setup()
    filled = [next(fill.process(letter)) for letter in reversed(letters)]  # backwards on purpose
    fill.finish_bundle()
    lines = content.split(b"\n")
    for letter in filled:
        assert lines[letter.line - 1] == letter.raw.encode() and letter.raw.startswith("bad")
        assert content[: letter.offset].count(b"\n") + 1 == letter.line


@pytest.mark.parametrize("compressed", [False, True])
def test_line_index_counts_in_any_order(tmp_path, monkeypatch, compressed):
    monkeypatch.setattr(dead_letter_module, "_READ_SIZE", 5)  # many checkpoints
    content = b"".join(b"x" * (i % 4) + b"\n" for i in range(300))
    path = tmp_path / ("f.txt.gz" if compressed else "f.txt")
    with (gzip.open if compressed else open)(path, "wb") as f:
        f.write(content)
    starts = [0] + [i + 1 for i, byte in enumerate(content[:-1]) if byte == ord("\n")]
    order = np.random.default_rng(0).permutation(len(starts))
    index = LineIndex(str(path))
    for k, i in enumerate(order):
        assert index.line_at(starts[i]) == i + 1
        if k % 50 == 0:
            index.close()  # reopening resumes from the checkpoints
    with pytest.raises(ValueError, match="offset"):
        index.line_at(len(content) + 10)
    index.close()


def test_fill_line_numbers_keeps_known_lines_and_evicts_files(tmp_path):
    paths = []
    for i in range(3):
        paths.append(tmp_path / f"{i}.txt")
        paths[-1].write_bytes(b"a\nb\nc\n")
    fill = FillLineNumbers(max_files=2)
    fill.setup()
    known = DeadLetter(str(paths[0]), 7, 4, "c", "r")
    assert list(fill.process(known)) == [known]
    for path in paths * 2:
        (letter,) = fill.process(DeadLetter(str(path), None, 4, "c", "r"))
        assert letter.line == 3
    assert len(fill._indexes) == 2
    fill.teardown()


# -- headers, errors and options -------------------------------------------------


def test_csv_header_is_skipped_once_per_file_and_reaches_every_block(tmp_path):
    # CsvFormat refuses a block after the first without the header, and finds
    # its columns by the header's names: blocks of 7 lines check both.
    directory = tmp_path / "csv"
    directory.mkdir()
    for i in range(3):
        body = b"".join(b"%d,%d,%d\n" % (j, j % 2, 7 * j) for j in range(40))
        (directory / f"f{i}.csv").write_bytes(b"b,label,a\n" + body)
    (directory / "g.csv.gz").write_bytes(gzip.compress(b"b,label,a\r\n1,0,2\n1,1,2\n"))

    pipeline = beam.Pipeline(runner="FnApiRunner")
    read = pipeline | "Read" >> ReadExamples(str(directory / "*"), "csv", label_column="label", block_lines=7)
    labels = read.examples | beam.FlatMap(lambda batch: batch.labels.tolist()) | beam.CombineGlobally(sum)
    assert_that(labels, equal_to([3 * 20 + 1]))
    counters = read_counters(run(pipeline), "Read")
    assert counters == {"records": 126, "examples": 122, "dead_letters": 0, "skipped": 4}


def test_no_match_is_an_error_naming_the_pattern(tmp_path):
    pattern = str(tmp_path / "missing-*.libsvm")
    with pytest.raises(FileNotFoundError, match="missing-"):
        beam.Pipeline(runner="FnApiRunner") | ReadExamples(pattern, LibsvmFormat())


def test_format_options_need_a_format_name(tmp_path):
    with pytest.raises(TypeError, match="bits"):
        ReadExamples(str(tmp_path / "x"), LibsvmFormat(), bits=10)


def test_format_by_name_gets_its_options(tmp_path):
    read = ReadExamples(str(tmp_path / "x"), "libsvm", bits=12, labels="binary")
    assert (read.format.name, read.format.bits, read.format.labels) == ("libsvm", 12, "binary")


def test_read_result_is_indexed_like_do_outputs():
    result = ReadResult("e", "d", "c", "k")
    assert (
        result["examples"],
        result["dead_letters"],
        result["counts"],
        result["checked"],
        result[0],
        tuple(result),
    ) == ("e", "d", "c", "k", "e", ("e", "d", "c", "k"))


# -- (e) Parquet -----------------------------------------------------------------


def test_parquet_files_read_by_record_batches(tmp_path):
    rng = np.random.default_rng(1)
    directory = tmp_path / "pq"
    directory.mkdir()
    total, missing, label_sum, value_sum = 0, 0, 0.0, 0.0
    for i, rows in enumerate([1000, 2500, 7]):
        labels = rng.integers(0, 2, rows).astype(float)
        missing_label = rng.random(rows) < 0.01
        missing += int(missing_label.sum())
        total += rows
        columns = {"a": rng.random(rows), "b": rng.integers(0, 3, rows).astype(float)}
        table = pa.table({"label": pa.array(labels, mask=missing_label), **columns})
        good = ~missing_label
        label_sum += labels[good].sum()
        value_sum += table.column("a").to_numpy()[good].sum() + table.column("b").to_numpy()[good].sum()
        pq.write_table(table, directory / f"part-{i}.parquet", row_group_size=600)
    expected = tuple(float(v) for v in np.round([total - missing, 0, missing, label_sum, value_sum], 6))

    pipeline = beam.Pipeline(runner="FnApiRunner")
    read = pipeline | "Read" >> ReadExamples(str(directory / "*.parquet"), "parquet", labels="binary", block_lines=256)
    assert_that(summarize({"Read": read}, {"Read": 256}), equal_to([("Read", expected)]))
    counters = read_counters(run(pipeline), "Read")
    assert counters["records"] == total
    assert counters["records"] == counters["examples"] + counters["dead_letters"] + counters["skipped"]
    assert counters["dead_letters"] == missing


def test_parquet_batches_number_their_rows(tmp_path):
    path = tmp_path / "one.parquet"
    pq.write_table(pa.table({"label": [1.0, None, 0.0, None, 1.0], "a": [1.0, 2.0, 3.0, 4.0, 5.0]}), path)
    outputs = list(ReadTableFiles(ParquetFormat(), batch_rows=2).process(str(path)))
    batches = [out for out in outputs if isinstance(out, ExampleBatch)]
    letters = [out.value for out in outputs if getattr(out, "tag", None) == "dead_letters"]
    counts = [out.value for out in outputs if getattr(out, "tag", None) == "counts"]
    assert [b.row_ids.tolist() for b in batches] == [[0], [2], [4]]  # 0-based row numbers
    assert [(letter.line, letter.offset) for letter in letters] == [(2, 1), (4, 3)]  # 1-based lines
    assert sum(counts, ReadCounts()) == ReadCounts(records=5, examples=3, dead_letters=2, skipped=0)


def test_prefetching_parse_emits_what_plain_parse_emits_with_each_blocks_window(tmp_path):
    from apache_beam.transforms.window import IntervalWindow
    from apache_beam.utils.windowed_value import WindowedValue

    content = b"".join(b"%d 1:%d\n" % (i % 2, i) if i % 5 else b"bad %d\n" % i for i in range(1, 100))
    path = tmp_path / "pre.txt"
    path.write_bytes(content)
    (bundle,) = TextBlockSource(str(path), block_lines=7).split(1 << 30)
    blocks = list(bundle.source.read(bundle.source.get_range_tracker(0, len(content))))
    windows = [IntervalWindow(i, i + 1) for i in range(len(blocks))]

    plain = ParseBlocks(LibsvmFormat(), prefetch=False)
    expected = []
    for block, window in zip(blocks, windows):
        for out in plain.process(block):
            tag, value = (out.tag, out.value) if isinstance(out, beam.pvalue.TaggedOutput) else ("main", out)
            expected.append((tag, window, value.row_ids.tolist() if tag == "main" else value))

    fetching = ParseBlocks(LibsvmFormat())
    fetching.setup()
    fetching.start_bundle()
    found = []
    outputs = []
    for block, window in zip(blocks, windows):
        outputs += list(fetching.process(block, timestamp=window.start, window=window))
    outputs += list(fetching.finish_bundle())
    fetching.teardown()
    for out in outputs:
        tag, value = (out.tag, out.value) if isinstance(out, beam.pvalue.TaggedOutput) else ("main", out)
        assert isinstance(value, WindowedValue)
        (window,) = value.windows
        inner = value.value
        found.append((tag, window, inner.row_ids.tolist() if tag == "main" else inner))
    assert found == expected
