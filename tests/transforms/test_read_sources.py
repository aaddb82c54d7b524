"""Splitting TextBlockSource: every line is read exactly once, whatever the splits.

These tests drive the source directly (``split``, ``get_range_tracker``,
``read``, ``try_split``) without running a pipeline, so they can try every
split position.
"""

from __future__ import annotations

import bz2
import gzip
import pickle

import numpy as np
import pytest
from apache_beam.io.range_trackers import OffsetRangeTracker
from hypothesis import given, settings
from hypothesis import strategies as st

from polybeam.transforms.sources import TextBlock, TextBlockSource

# Line bookkeeping, independent of the code under test (this module stands alone
# on purpose; test_read.py gets the same helpers from conftest.py).


def split_lines(data: bytes) -> list[bytes]:
    """Lines ending at ``\\n`` (kept), plus a non-empty unterminated last line."""
    parts = data.split(b"\n")
    return [part + b"\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def expected_lines(content: bytes) -> list[tuple[int, int, bytes]]:
    """``(offset, line number, line)`` of every line of a file's content."""
    offsets = np.cumsum([0] + [len(line) for line in split_lines(content)])
    return [(int(offsets[i]), i + 1, line) for i, line in enumerate(split_lines(content))]


def block_lines(blocks) -> list[tuple[int, int | None, bytes]]:
    """Flatten TextBlocks into ``(offset, line number or None, line)`` per line."""
    out = []
    for block in blocks:
        offset = block.offset
        for i, line in enumerate(split_lines(block.data)):
            out.append((offset, None if block.first_line is None else block.first_line + i, line))
            offset += len(line)
    return out


CONTENTS = {
    "trailing_newline": b"1 a\n22 bb\n333 ccc\n4\n",
    "no_trailing_newline": b"1 a\n22 bb\n333 ccc\n4",
    "empty_lines": b"\n\n1\n\n\n22\n\n",
    "crlf": b"1 a\r\n22 b\r\n\r\n333 c\r\n4",
    "long_lines": b"1\n" + b"x" * 40 + b"\n2\n" + b"y" * 25 + b"\n3",
    "one_line": b"hello",
    "one_newline": b"\n",
    "lone_cr": b"a\rb\nc\r\n\r",
}

# (block_lines, block_bytes): tiny blocks make many blocks per range.
BLOCKINGS = [(1, 1 << 20), (2, 1 << 20), (3, 8), (4096, 16)]


def single_file_source(path, **options):
    """The one-file sub-source of a TextBlockSource, which reads byte ranges."""
    (bundle,) = TextBlockSource(str(path), **options).split(desired_bundle_size=1 << 40)
    return bundle.source


def read_range(source, start, stop):
    return list(source.read(source.get_range_tracker(start, stop)))


def check_blocks(blocks, *, block_lines_limit, block_bytes):
    for block in blocks:
        lines = split_lines(block.data)
        assert 1 <= len(lines) <= block_lines_limit
        assert len(block.data) <= block_bytes or len(lines) == 1
        # Blocks hold complete lines: only the file's last line may lack "\n".
        assert all(line.endswith(b"\n") for line in lines[:-1])


def strip_numbers(lines):
    return [(offset, line) for offset, _, line in lines]


@pytest.fixture(params=sorted(CONTENTS))
def text_file(request, tmp_path):
    content = CONTENTS[request.param]
    path = tmp_path / f"{request.param}.txt"
    path.write_bytes(content)
    return path, content


@pytest.mark.parametrize("blocking", BLOCKINGS)
def test_whole_file_reads_every_line_with_its_number(text_file, blocking):
    path, content = text_file
    block_count, block_bytes = blocking
    source = TextBlockSource(str(path), block_lines=block_count, block_bytes=block_bytes)
    blocks = list(source.read(source.get_range_tracker(None, None)))
    check_blocks(blocks, block_lines_limit=block_count, block_bytes=block_bytes)
    assert block_lines(blocks) == expected_lines(content)


@pytest.mark.parametrize("blocking", BLOCKINGS)
def test_every_pair_of_initial_splits_reads_each_line_once(text_file, blocking):
    path, content = text_file
    block_count, block_bytes = blocking
    source = single_file_source(path, block_lines=block_count, block_bytes=block_bytes)
    size = len(content)
    expected = expected_lines(content)
    for first in range(1, size + 1):
        for second in range(first, size + 1):
            ranges = [(0, first), (first, second), (second, size)]
            lines = []
            for start, stop in ranges:
                if start < stop:
                    blocks = read_range(source, start, stop)
                    check_blocks(blocks, block_lines_limit=block_count, block_bytes=block_bytes)
                    got = block_lines(blocks)
                    # Line numbers are exact from offset 0 and unknown elsewhere.
                    if start == 0:
                        assert got == expected[: len(got)]
                    else:
                        assert all(number is None for _, number, _ in got)
                    assert all(start <= offset < stop for offset, _, _ in got)
                    lines += got
            assert strip_numbers(lines) == strip_numbers(expected), (first, second)


@pytest.mark.parametrize("blocking", BLOCKINGS)
def test_dynamic_split_after_any_number_of_blocks_reads_each_line_once(text_file, blocking):
    path, content = text_file
    block_count, block_bytes = blocking
    source = single_file_source(path, block_lines=block_count, block_bytes=block_bytes)
    size = len(content)
    expected = strip_numbers(expected_lines(content))
    for start in sorted({0, 1, size // 2}):
        if start >= size:
            continue
        in_range = [line for line in expected if line[0] >= first_line_start(expected, start)]
        total_blocks = len(read_range(source, start, size))
        for blocks_before in range(total_blocks + 1):
            for split_at in range(start, size + 2):
                tracker = source.get_range_tracker(start, size)
                reader = iter(source.read(tracker))
                primary = [next(reader) for _ in range(blocks_before)]
                split = tracker.try_split(split_at)
                primary += list(reader)
                residual = read_range(source, split_at, size) if split else []
                if split:
                    assert split[0] == split_at and tracker.stop_position() == split_at
                got = strip_numbers(block_lines(primary)) + strip_numbers(block_lines(residual))
                assert got == in_range, (start, blocks_before, split_at, split)


def first_line_start(lines, start):
    """Offset of the first line starting at or after ``start``."""
    return next((offset for offset, _ in lines if offset >= start), float("inf"))


class RacingTracker(OffsetRangeTracker):
    """Splits itself the way another thread could, at the worst moments for a block claim.

    Right before the ``claim``-th claim it splits at ``split_at``. If that
    makes the claim fail, the ``race_on``-th ``stop_position()`` call after
    the failure splits again at ``second_split_at`` just after reading the
    stop position, so the reader holds a stale value.
    """

    def __init__(self, start, stop, *, claim, split_at, second_split_at=None, race_on=1):
        super().__init__(start, stop)
        self.claims = 0
        self.claim = claim
        self.split_at = split_at
        self.second_split_at = second_split_at
        self.race_on = race_on
        self.stop_reads_after_failure = None
        self.splits = []

    def try_claim(self, record_start):
        self.claims += 1
        if self.claims == self.claim:
            self.splits.append(self.try_split(self.split_at))
        claimed = super().try_claim(record_start)
        if not claimed and self.claims == self.claim and self.stop_reads_after_failure is None:
            self.stop_reads_after_failure = 0
        return claimed

    def stop_position(self):
        stop = super().stop_position()
        if self.stop_reads_after_failure is not None and self.second_split_at is not None:
            self.stop_reads_after_failure += 1
            if self.stop_reads_after_failure == self.race_on:
                self.splits.append(self.try_split(self.second_split_at))
        return stop


@pytest.mark.parametrize("race_on", [None, 1, 2])
def test_split_racing_a_block_claim_reads_each_line_once(tmp_path, race_on):
    content = b"".join(b"%d line\n" % i for i in range(30))
    path = tmp_path / "race.txt"
    path.write_bytes(content)
    source = single_file_source(path, block_lines=5)
    expected = strip_numbers(expected_lines(content))
    size = len(content)
    raced = 0
    for claim in range(2, 7):  # claim 1 cannot race: an unstarted range refuses splits
        for split_at in range(30, 220):
            for back in (1, 4, 9, 15) if race_on else (None,):
                tracker = RacingTracker(
                    0,
                    size,
                    claim=claim,
                    split_at=split_at,
                    second_split_at=None if back is None else split_at - back,
                    race_on=race_on,
                )
                primary = list(source.read(tracker))
                stop = tracker.stop_position()
                residual = read_range(source, stop, size) if stop < size else []
                got = strip_numbers(block_lines(primary)) + strip_numbers(block_lines(residual))
                assert got == expected, (claim, split_at, back, tracker.splits)
                raced += sum(split is not None for split in tracker.splits[1:])
    # The second split must have happened in some runs for the test to mean anything.
    assert raced > 0 or race_on is None


def test_header_is_carried_by_every_block_of_every_split(tmp_path):
    content = b"label,a,b\r\n" + b"".join(b"%d,%d,%d\n" % (i, i, i) for i in range(30))
    path = tmp_path / "h.csv"
    path.write_bytes(content)
    source = single_file_source(path, block_lines=4, header_lines=1)
    for split_at in range(1, len(content)):
        blocks = read_range(source, 0, split_at) + read_range(source, split_at, len(content))
        assert blocks and all(block.header == b"label,a,b" for block in blocks)
        assert strip_numbers(block_lines(blocks)) == strip_numbers(expected_lines(content))


def write_compressed(path, content):
    opener = {".gz": gzip.open, ".bz2": bz2.open}.get(path.suffix, open)
    with opener(path, "wb") as f:
        f.write(content)


@pytest.fixture
def shard_dir(tmp_path):
    """Several shards of one data set: plain, gzip and bzip2, one empty, one without a final newline."""
    contents = {
        "part-0.txt": b"".join(b"%d 0:%d\n" % (i, i) for i in range(0, 50)),
        "part-1.txt.gz": b"".join(b"%d 1:%d\r\n" % (i, i) for i in range(50, 120)),
        "part-2.txt": b"",
        "part-3.txt.bz2": b"".join(b"%d 3:%d\n" % (i, i) for i in range(120, 130)) + b"\n\n",
        "part-4.txt": b"".join(b"%d 4:%d\n" % (i, i) for i in range(130, 200)).rstrip(b"\n"),
    }
    for name, content in contents.items():
        write_compressed(tmp_path / name, content)
    return tmp_path, contents


@pytest.mark.parametrize("desired_bundle_size", [1, 7, 64, 300, 1 << 30])
@pytest.mark.parametrize("min_bundle_size", [0, 100])
def test_split_of_a_glob_reads_each_line_of_each_file_once(shard_dir, desired_bundle_size, min_bundle_size):
    directory, contents = shard_dir
    source = TextBlockSource(str(directory / "part-*"), block_lines=7, block_bytes=50, min_bundle_size=min_bundle_size)
    bundles = list(source.split(desired_bundle_size=desired_bundle_size))
    by_file: dict[str, list] = {}
    for bundle in bundles:
        tracker = bundle.source.get_range_tracker(bundle.start_position, bundle.stop_position)
        for block in bundle.source.read(tracker):
            assert isinstance(block, TextBlock)
            by_file.setdefault(block.source.rsplit("/", 1)[-1], []).append(block)
    assert set(by_file) == {name for name, content in contents.items() if content}
    for name, blocks in by_file.items():
        blocks.sort(key=lambda block: block.offset)
        got = block_lines(blocks)
        assert strip_numbers(got) == strip_numbers(expected_lines(contents[name]))
        if not name.endswith(".txt"):
            # Compressed files are read whole by one reader: numbers are exact.
            assert got == expected_lines(contents[name])
    # Compressed files cannot be split, plain ones can.
    if desired_bundle_size < 64 and min_bundle_size == 0:
        assert len(bundles) > len(by_file)


def test_unsplit_glob_reads_every_file(shard_dir):
    directory, contents = shard_dir
    source = TextBlockSource(str(directory / "part-*"), block_lines=16)
    blocks = list(source.read(source.get_range_tracker(None, None)))
    for name, content in contents.items():
        mine = [block for block in blocks if block.source.endswith(name)]
        assert block_lines(mine) == expected_lines(content)


def test_blocks_and_source_pickle(tmp_path):
    path = tmp_path / "p.txt"
    path.write_bytes(b"1\n2\n")
    source = TextBlockSource(str(path), block_lines=1, header_lines=0)
    clone = pickle.loads(pickle.dumps(source))
    blocks = list(clone.read(clone.get_range_tracker(None, None)))
    assert pickle.loads(pickle.dumps(blocks)) == blocks
    assert [block.lines() for block in blocks] == [[b"1\n"], [b"2\n"]]


def test_no_match_names_the_pattern(tmp_path):
    with pytest.raises(IOError, match="nothing-here"):
        TextBlockSource(str(tmp_path / "nothing-here-*"))


@pytest.mark.parametrize("option", ["block_lines", "block_bytes"])
def test_block_sizes_must_be_positive(tmp_path, option):
    with pytest.raises(ValueError, match=option):
        TextBlockSource(str(tmp_path / "x"), validate=False, **{option: 0})


line_text = st.binary(max_size=6).map(lambda b: b.replace(b"\n", b"."))


@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(line_text, max_size=8),
    final_newline=st.booleans(),
    block_count=st.integers(1, 4),
    block_bytes=st.integers(1, 12),
    cuts=st.lists(st.integers(0, 60), max_size=4),
)
def test_random_files_and_splits(tmp_path_factory, lines, final_newline, block_count, block_bytes, cuts):
    content = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    if not content:
        return
    path = tmp_path_factory.mktemp("random") / "r.txt"
    path.write_bytes(content)
    source = single_file_source(path, block_lines=block_count, block_bytes=block_bytes)
    edges = sorted({0, len(content), *(min(cut, len(content)) for cut in cuts)})
    got = []
    for start, stop in zip(edges, edges[1:]):
        blocks = read_range(source, start, stop)
        check_blocks(blocks, block_lines_limit=block_count, block_bytes=block_bytes)
        got += block_lines(blocks)
    assert strip_numbers(got) == strip_numbers(expected_lines(content))
