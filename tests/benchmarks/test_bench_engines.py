"""benchmarks/bench_engines.py measures the tolerance of the engine suite's own training commands (it keeps
its copy of them, since nothing outside the tests imports from them), in shards of consecutive lines."""

from __future__ import annotations

from tests.benchmarks.scripts import load_benchmark
from tests.engines import runs, tolerance


def test_the_tolerance_is_measured_on_the_suites_training_commands():
    bench = load_benchmark("bench_engines")
    assert bench.TRAINS == runs.TRAINS
    assert bench.TRAINS.keys() == tolerance.MEASURED.keys()


def test_the_benchmark_shards_consecutive_lines(tmp_path):
    bench = load_benchmark("bench_engines")
    lines = [f"{index} 1:1\n".encode() for index in range(10)]
    pattern = bench.write_shards(lines, tmp_path / "spam", 4)
    assert pattern == str(tmp_path / "spam-*.libsvm")
    shards = [(tmp_path / f"spam-{index}.libsvm").read_bytes().splitlines(keepends=True) for index in range(4)]
    assert [len(shard) for shard in shards] == [2, 3, 2, 3] and sum(shards, []) == lines
