"""The speed benchmark's generated texts: VW lines polybeam and VW read alike, shaped as documented."""

from __future__ import annotations

import numpy as np

from polybeam.datasets import zipf_texts
from polybeam.datasets.zipf_texts import ZipfTexts
from polybeam.formats.vw import VWFormat


def test_rows_have_five_to_twenty_words_in_two_or_three_namespaces():
    lines = ZipfTexts(seed=3).lines(2000).decode().splitlines()
    assert len(lines) == 2000
    for line in lines:
        label, *spaces = line.split(" |")
        assert label in ("1", "-1")
        names = [space[0] for space in spaces]
        assert names == sorted(set(names)) and 2 <= len(names) <= 3 and set(names) <= set("abc")
        words = [word for space in spaces for word in space.split()[1:]]
        assert 5 <= len(words) <= 20 and all(word.startswith("w") and word[1:].isdigit() for word in words)


def test_every_line_parses_and_both_labels_come():
    text = ZipfTexts(seed=1).lines(3000)
    parsed = VWFormat(bits=18).parse(text)
    assert not parsed.dead_letters and len(parsed.batch) == 3000
    share = float(np.mean(parsed.batch.labels > 0))
    assert 0.3 < share < 0.7


def test_the_first_rows_do_not_depend_on_how_many_are_asked_for(tmp_path, monkeypatch):
    monkeypatch.setattr(zipf_texts, "BLOCK_ROWS", 100)  # (several blocks)
    task = ZipfTexts(seed=2)
    short, long = task.lines(250), task.lines(420)
    assert long.startswith(short) and short.count(b"\n") == 250
    assert open(task.write(str(tmp_path / "t.vw"), 420), "rb").read() == long


def test_the_words_follow_a_zipf_law():
    words = ZipfTexts(seed=0).lines(5000).split()
    counts = {}
    for word in words:
        if word.startswith(b"w"):
            counts[word] = counts.get(word, 0) + 1
    # The most frequent word comes about 2**1.05 times as often as the second, far more than the 100th.
    assert counts[b"w0"] > 1.5 * counts[b"w1"] > 1.5 * 1.5 * counts.get(b"w3", 0)
    assert counts[b"w0"] > 50 * counts.get(b"w100", 0)
