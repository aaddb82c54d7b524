"""ParseLines: a PCollection of lines reads as the same lines in a file do (examples, dead letters, counts),
refuses what it cannot read, and feeds per-key training whose folder RunInference then serves."""

from __future__ import annotations

import json
import os

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.ml.inference.base import RunInference
from apache_beam.testing import test_stream
from apache_beam.transforms import window

from polybeam import datasets
from polybeam.datasets.per_key import PerKeyTask
from polybeam.formats.acceptance import InputRejected
from polybeam.formats.records import DeadLetter, ReadCounts
from polybeam.inference import keyed_model_handler
from polybeam.learners.batch import ExampleBatch
from polybeam.transforms.dead_letters import WriteDeadLetters
from polybeam.transforms.keyed_files import KeyedFolder
from polybeam.transforms.keys import ParsedKeys
from polybeam.transforms.lines import ParseLines, lines_block
from polybeam.transforms.provenance import RecordOrigin
from polybeam.transforms.read import ReadExamples
from polybeam.transforms.routing import WriteKeyedModels
from polybeam.transforms.train import Train

RUNNER = "FnApiRunner"
COLLECTED: dict[str, list] = {}


def _keep(element, name: str):
    COLLECTED[name].append(element)


def collect(pcoll, out: list) -> None:
    """Append ``pcoll``'s elements to ``out`` when the pipeline runs (the local runner runs in this process)."""
    name = f"collected{len(COLLECTED)}"
    COLLECTED[name] = out
    pcoll | f"Collect{name}" >> beam.Map(_keep, name)


def concat(batches) -> ExampleBatch:
    return ExampleBatch.concat(sorted(batches, key=lambda batch: int(batch.row_ids[0])))


def test_lines_read_as_the_same_lines_in_a_file(tmp_path):
    lines = datasets.lines("spam")[:3000]  # bytes with their newlines
    bad = [b"spam? 1:2\n", "1 -1:1"]  # a label that is no number; a str line with an index LIBSVM refuses
    path = tmp_path / "spam.libsvm"
    path.write_bytes(b"".join(lines))
    from_lines, from_file, letters, counts = [], [], [], []
    with beam.Pipeline(RUNNER) as p:
        read = p | beam.Create(lines + bad) | ParseLines("libsvm", labels="binary", block_lines=1000)
        collect(read.examples, from_lines)
        collect(read.dead_letters, letters)
        collect(read.counts, counts)
        read.dead_letters | WriteDeadLetters(str(tmp_path / "dead"), num_shards=1, shard_name_template="")
        collect((p | ReadExamples(str(path), labels="binary")).examples, from_file)
    assert counts == [ReadCounts(records=3002, examples=3000, dead_letters=2, skipped=0)]
    assert all(len(batch) <= 1000 for batch in from_lines) and len(from_lines) >= 3

    # The same examples, whatever the blocks (the labels and the sorted features of each example).
    def examples(batch):
        return sorted(
            (float(label), tuple(sorted(zip(batch.indices[a:b].tolist(), batch.values[a:b].tolist()))))
            for label, a, b in zip(batch.labels, batch.indptr[:-1], batch.indptr[1:])
        )

    assert examples(ExampleBatch.concat(from_lines)) == examples(concat(from_file))
    assert {batch.source for batch in from_lines} == {"<lines>"}
    assert sorted((letter.raw, letter.line, letter.offset) for letter in letters) == [
        ("1 -1:1", None, -1),
        ("spam? 1:2", None, -1),
    ]
    written = [DeadLetter.from_json(line) for line in (tmp_path / "dead.jsonl").read_text().splitlines()]
    assert sorted(letter.reason for letter in written) == sorted(letter.reason for letter in letters)
    assert "label is not a number" in " ".join(letter.reason for letter in written)


def test_vw_and_csv_lines_carry_tags_keys_and_ids():
    vw, csv = [], []
    with beam.Pipeline(RUNNER) as p:
        collect(
            (
                p
                | "VW" >> beam.Create([b"1 'a |f x:1", b"-1 'b |f y:2\r\n", "1 |f x:3\n-1 'c |f z:1"])
                | "ParseVW" >> ParseLines("vw", labels="binary", feature_names=True)
            ).examples,
            vw,
        )
        collect(
            (
                p
                | "CSV" >> beam.Create(["r1;1;eu;0.5", "r2;-1;;2"])
                | "ParseCSV"
                >> ParseLines(
                    "csv",
                    columns=["rid", "y", "store", "x"],
                    delimiter=";",
                    label_column="y",
                    key_column="store",
                    id_column="rid",
                    labels="binary",
                )
            ).examples,
            csv,
        )
    (batch,) = vw
    # An element of two lines is two records.
    assert batch.labels.tolist() == [1.0, -1.0, 1.0, -1.0] and batch.tags.tolist() == ["a", "b", None, "c"]
    (batch,) = csv
    assert batch.tags.tolist() == ["r1", "r2"] and batch.labels.tolist() == [1.0, -1.0]
    assert [batch.key_names[code] for code in batch.key_codes] == ["eu", ""]
    assert ParsedKeys("column:store")(batch).tolist() == ["eu", ""]


def test_what_cannot_be_parsed_as_lines_is_refused():
    with pytest.raises(ValueError, match="columns"):
        ParseLines("csv", label_column="y")  # CSV lines without their header's names
    with pytest.raises(ValueError, match="columns is for CSV"):
        ParseLines("libsvm", columns=["a"])
    with pytest.raises(ValueError, match="not parquet"):
        ParseLines("parquet")
    with pytest.raises(ValueError, match="block_lines"):
        ParseLines(block_lines=0)
    # Too many dead letters fail the job, as a file read does.
    with pytest.raises(InputRejected, match="dead letters"), beam.Pipeline(RUNNER) as p:
        _ = p | beam.Create(["1,2", "3,4", "1 1:1"]) | ParseLines("libsvm")
    with pytest.raises(InputRejected, match="no example"), beam.Pipeline(RUNNER) as p:
        _ = p | beam.Create(["# a comment"]) | ParseLines("libsvm")


def test_windowed_lines_count_per_window_and_need_no_global_check():
    timed = [
        window.TimestampedValue(line, second)
        for second, line in [(1, "1 1:1"), (2, "-1 2:1"), (61, "1 3:1"), (62, "x 1:1")]
    ]
    with pytest.raises(ValueError, match="check_input=False"), beam.Pipeline(RUNNER) as p:
        _ = p | beam.Create(timed) | beam.WindowInto(window.FixedWindows(60)) | ParseLines()
    counts, batches = [], []
    with beam.Pipeline(RUNNER) as p:
        read = p | beam.Create(timed) | beam.WindowInto(window.FixedWindows(60)) | ParseLines(check_input=False)
        collect(
            read.counts | beam.Map(lambda counts, w=beam.DoFn.WindowParam: (w.start.micros // 10**6, counts)), counts
        )
        collect(
            read.examples | beam.Map(lambda batch, w=beam.DoFn.WindowParam: (w.start.micros // 10**6, len(batch))),
            batches,
        )
    assert sorted(counts) == [(0, ReadCounts(2, 2, 0, 0)), (60, ReadCounts(2, 1, 1, 0))]
    assert sorted(batches) == [(0, 2), (60, 1)]


def test_a_stream_of_lines_parses_without_a_total():
    stream = (
        test_stream.TestStream()
        .advance_watermark_to(0)
        .add_elements(["1 1:1", "-1 2:1"])
        .advance_watermark_to(100)
        .add_elements(["1 3:1", "bad"])
        .advance_watermark_to_infinity()
    )
    examples, letters = [], []
    options = beam.options.pipeline_options.PipelineOptions(streaming=True)
    # The FnApiRunner runs no TestStream; Beam's bundle-based runner does, in this process.
    with beam.Pipeline("BundleBasedDirectRunner", options=options) as p:
        read = p | stream | ParseLines(check_input=False)
        assert read.counts is None and read.checked is None
        collect(read.examples | beam.Map(len), examples)
        collect(read.dead_letters, letters)
    assert sum(examples) == 3 and [letter.raw for letter in letters] == ["bad"]


def test_lines_block_strips_one_line_ending():
    assert lines_block(["a\r\n", b"b\n", "c"]).data == b"a\nb\nc\n"
    block = lines_block(["1,2"], header=b"y,x")
    assert (block.offset, block.first_line, block.header) == (4, 2, b"y,x")


@pytest.mark.slow
def test_per_key_models_from_lines_are_written_and_served_by_a_keyed_handler(tmp_path):
    rows = PerKeyTask(keys=3, features=5, seed=4).generate(examples_per_key=300, seed=1)
    text = rows.to_csv().decode().splitlines()
    columns, lines = text[0].split(","), text[1:]
    folder = str(tmp_path / "stores")
    parse = ParseLines("csv", columns=columns, label_column="label", key_column="key", labels="binary")
    with beam.Pipeline(RUNNER) as p:
        read = p | beam.Create(lines) | parse
        models = read | Train(loss="logistic", key=ParsedKeys("column:key"))
        _ = models | RecordOrigin(parse, counts=read.counts, keyed=True) | WriteKeyedModels(folder, key="column:key")
    with open(os.path.join(folder, "index.json")) as handle:
        index = json.load(handle)
    # The index knows how the models' input was read (from the stamped models), columns included.
    assert index["key"] == "column:key" and index["keys"] == 3
    assert index["input"]["format"] == "csv" and index["input"]["columns"] == columns
    assert index["input"]["key_column"] == "key"
    keyed = KeyedFolder(folder)
    results = []
    pairs = [(line.split(",")[1], line) for line in lines[:60]]
    with beam.Pipeline(RUNNER) as p:
        # CSV lines need no columns: the models recorded them.
        collect(p | beam.Create(pairs) | RunInference(keyed_model_handler(folder, input_format="csv")), results)
    assert len(results) == 60
    parse_format = parse.format
    for key, result in results:
        batch = parse_format.parse(f"{','.join(columns)}\n{result.example}\n".encode()).batch
        assert result.inference == pytest.approx(float(keyed.model(key).predict(batch)[0]), abs=1e-12)
        assert result.model_id == f"{folder}#{key}"
    # Each key's model learnt its own task: on its training rows it beats chance clearly.
    errors = {
        key: np.mean([(r.inference > 0.5) != (r.example.split(",")[0] == "1") for k, r in results if k == key])
        for key in {k for k, _ in results}
    }
    assert max(errors.values()) < 0.35
