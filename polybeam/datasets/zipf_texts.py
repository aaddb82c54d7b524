"""Short texts in VW format, generated fast: the speed benchmark's text input.

Each row has 5 to 20 words of a Zipf vocabulary (word ``w{i}`` drawn with
probability proportional to ``(i + 1) ** -zipf_exponent``) spread over 2 or
3 namespaces (``a``, ``b``, ``c``), as package names, summaries and keywords
are. Its label is a logistic draw of its words' weights (normal, one per
namespace and word) over the square root of their count, plus a weight for the
pair of its first ``a`` word and first ``b`` word, which only a model with the
``ab`` interaction (VW's ``-q ab``, polybeam's ``--interactions ab``) can learn.

Rows are drawn in blocks of :data:`BLOCK_ROWS`, each seeded by ``(seed, block
number)`` (the first ``n`` rows do not depend on how many are asked for), and
formatted by one compiled kernel, so that ten million rows write in seconds
rather than the minutes a loop over Python strings takes.

Examples
--------
>>> print(ZipfTexts(seed=1).lines(3).decode(), end="")
1 |a w1022 w0 w10 w23 |b w92 w3 w4 w23720 w139 w335 |c w4 w106 w28
1 |a w119 w754 w1 w1794 |b w1448 w12676 w193 w3 w11071 w441
-1 |a w177 w0 w1705 w3713 |b w1683 w5683 w8508 w0 w462 w0
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numba
import numpy as np

from polybeam.datasets.synthetic import write_number, write_sign
from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernel below)

BLOCK_ROWS = 100_000
NAMESPACES = b"abc"
_SPACE, _BAR, _W, _NEWLINE = (ord(c) for c in " |w\n")


@dataclass(frozen=True)
class ZipfTexts:
    """Short VW texts of a Zipf vocabulary in 2-3 namespaces, with binary labels (see the module)."""

    vocabulary: int = 50_000
    zipf_exponent: float = 1.05
    words: tuple[int, int] = (5, 20)
    pair_scale: float = 1.0
    seed: int = 0

    def lines(self, rows: int) -> bytes:
        """The first ``rows`` rows as VW text, one line each."""
        return b"".join(self._block(number, min(BLOCK_ROWS, rows - start)) for number, start in _blocks(rows))

    def write(self, path: str, rows: int) -> str:
        """Write the first ``rows`` rows to ``path``; return ``path``."""
        with open(path, "wb") as handle:
            for number, start in _blocks(rows):
                handle.write(self._block(number, min(BLOCK_ROWS, rows - start)))
        return path

    @cached_property
    def _task(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(word_weights, pair_weights, probability)``: the task, the same in every block."""
        weights = np.random.default_rng((self.seed, 0))
        word_weights = weights.normal(0.0, 1.0, (len(NAMESPACES), self.vocabulary))
        pair_weights = weights.normal(0.0, self.pair_scale, 97 * 89)
        frequency = 1.0 / np.arange(1, self.vocabulary + 1) ** self.zipf_exponent
        return word_weights, pair_weights, frequency / frequency.sum()

    def _block(self, number: int, rows: int) -> bytes:
        """Block ``number``'s first ``rows`` rows (each block draws all its rows: a block's first rows are
        the same however many of them are asked for)."""
        word_weights, pair_weights, probability = self._task
        rng = np.random.default_rng((self.seed, number + 1))
        counts = rng.integers(self.words[0], self.words[1] + 1, BLOCK_ROWS)
        spaces = rng.integers(2, len(NAMESPACES) + 1, BLOCK_ROWS)
        indptr = np.zeros(BLOCK_ROWS + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        row_of = np.repeat(np.arange(BLOCK_ROWS), counts)
        words = rng.choice(self.vocabulary, size=len(row_of), p=probability).astype(np.int64)
        # A row's first words go one to each of its namespaces (every one of them is used), the rest at random.
        position = np.arange(len(row_of)) - indptr[row_of]
        drawn = (rng.random(len(row_of)) * spaces[row_of]).astype(np.int64)
        namespaces = np.where(position < spaces[row_of], position, drawn)
        order = np.lexsort((namespaces, row_of))  # stable: each namespace's words in drawn order
        words, namespaces = words[order], namespaces[order]
        scores = _scores(indptr, words, namespaces, word_weights, pair_weights)
        labels = np.where(rng.random(BLOCK_ROWS) < 1.0 / (1.0 + np.exp(-scores)), 1, -1).astype(np.int8)
        out = np.empty(int(rows * 16 + indptr[rows] * (3 + len(str(self.vocabulary)))), dtype=np.uint8)
        letters = np.frombuffer(NAMESPACES, np.uint8)
        used = _format_texts(labels[:rows], indptr[: rows + 1], words, namespaces, letters, out)
        return out[:used].tobytes()


def _blocks(rows: int):
    return ((number, start) for number, start in enumerate(range(0, rows, BLOCK_ROWS)))


@numba.njit(cache=True)
def _scores(indptr, words, namespaces, word_weights, pair_weights):
    """Each row's words' weights over the square root of their count, plus its first a-b pair's weight."""
    scores = np.zeros(len(indptr) - 1)
    for row in range(len(indptr) - 1):
        start, stop = indptr[row], indptr[row + 1]
        first_a = first_b = -1
        for k in range(start, stop):
            scores[row] += word_weights[namespaces[k], words[k]]
            if namespaces[k] == 0 and first_a < 0:
                first_a = words[k]
            if namespaces[k] == 1 and first_b < 0:
                first_b = words[k]
        scores[row] /= np.sqrt(stop - start)
        if first_a >= 0 and first_b >= 0:
            scores[row] += pair_weights[(first_a % 97) * 89 + first_b % 89]
    return scores


@numba.njit(cache=True)
def _format_texts(labels, indptr, words, namespaces, letters, out):
    pos = 0
    for row in range(len(labels)):
        pos = write_sign(out, pos, labels[row])
        previous = -1
        for k in range(indptr[row], indptr[row + 1]):
            if namespaces[k] != previous:
                previous = namespaces[k]
                out[pos] = _SPACE
                out[pos + 1] = _BAR
                out[pos + 2] = letters[previous]
                pos += 3
            out[pos] = _SPACE
            out[pos + 1] = _W
            pos = write_number(out, pos + 2, words[k])
        out[pos] = _NEWLINE
        pos += 1
    return pos
