"""Synthetic sparse binary examples whose label hides a planted polynomial.

Each example has about ``nonzeros`` binary features out of ``features``, drawn
with a Zipf-Mandelbrot frequency (feature index ``i`` is drawn with probability
proportional to ``(i - 1 + zipf_offset) ** -zipf_exponent``, so index 1 is the
most frequent). The label is the sign of a planted score::

    score = sum_i w_i x_i  +  sum_m v_m prod_{i in m} x_i  -  offset  +  noise

where the monomials ``m`` are distinct pairs (and optionally triples) of the
``frequent`` most frequent features. Those features appear in a large share of
the examples (about 20-40% each with the defaults), so every planted pair
co-occurs in a few percent of the examples: enough for an online learner to
see a product's weight, and for adaptive polynomial expansion to find it. The
products are left uncentred on purpose: like interactions in real data they
have main effects, which give their features large linear weights (the parents
that adaptive expansion starts from); about half of each product's variance
still lies outside every linear model, so a polynomial model beats a linear one
by a clear margin: with the defaults, one pass of logistic regression over
800k examples errs on about 22% of held-out examples, the same learner handed
the planted products on about 14%, and the Bayes rate is about 11%.

Generation is vectorised numpy in blocks of :data:`BLOCK_ROWS` rows, each block
seeded by ``(seed, block number)``: the same task and seed always give the same
examples, and the first ``n`` examples do not depend on how many are asked for.
The writers format whole blocks with one compiled kernel, so a million examples
generate and write in seconds.

Examples
--------
>>> task = PlantedPolynomial(features=1000, nonzeros=8, seed=3)
>>> examples = task.generate(2)
>>> print(examples.to_libsvm().decode(), end="")
-1 2:1 8:1 9:1 74:1 254:1 342:1 408:1 428:1
1 2:1 7:1 16:1 30:1 93:1 275:1 288:1 587:1
>>> print(examples.to_vw().decode(), end="")
-1 |f 2 8 9 74 254 342 408 428
1 |f 2 7 16 30 93 275 288 587
>>> task.planted.monomials[:3]
[(1, 2), (1, 4), (1, 12)]
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import combinations

import numba
import numpy as np

from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernels below)
from polybeam.learners.batch import INDEX_DTYPE, ExampleBatch

# Rows per generated block: the unit of seeding (so results do not depend on
# how many rows are asked for) and of writing (about 20 MB of text).
BLOCK_ROWS = 1 << 16
# The VW namespace all features are written in.
VW_NAMESPACE = "f"
FORMATS = ("libsvm", "vw")
EXTENSIONS = {"libsvm": "libsvm", "vw": "vw"}

_NEWLINE, _SPACE, _MINUS, _ONE, _ZERO = 10, 32, 45, 49, 48


@dataclass(frozen=True, eq=False)
class PlantedTarget:
    """The planted score of a :class:`PlantedPolynomial` task.

    Parameters
    ----------
    linear_weights : float array, shape (features + 1,)
        ``w_i`` for feature index ``i`` (entry 0 is unused and zero).
    monomials : list of tuples of int
        The planted products, as tuples of feature indices (pairs first, then triples).
    monomial_weights : float array
        ``v_m`` of each monomial.
    offset : float
        Subtracted from the score so that it has mean about zero (balanced labels).
    noise : float
        Standard deviation of the Gaussian noise added before taking the sign.
    """

    linear_weights: np.ndarray
    monomials: list[tuple[int, ...]]
    monomial_weights: np.ndarray
    offset: float
    noise: float


@dataclass(frozen=True, eq=False)
class SyntheticExamples:
    """Generated examples: ``+-1`` labels and the sorted feature indices of each row.

    Parameters
    ----------
    labels : float array, shape (n,)
        +1 or -1.
    indptr : int64 array, shape (n + 1,)
        Row ``r`` has the features ``indices[indptr[r]:indptr[r + 1]]``, all of value 1.
    indices : int32 array
        1-based feature indices (the LIBSVM index and the VW feature name), ascending per row.
    scores : float array, shape (n,)
        The noiseless planted score of each row (its sign is the Bayes-optimal prediction).
    """

    labels: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    scores: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    @classmethod
    def concat(cls, parts: Iterable[SyntheticExamples]) -> SyntheticExamples:
        """Join blocks of examples in order."""
        parts = list(parts)
        offsets = np.cumsum([0] + [part.nnz for part in parts[:-1]])
        return cls(
            labels=np.concatenate([part.labels for part in parts]),
            indptr=np.concatenate(
                [np.zeros(1, dtype=np.int64)] + [part.indptr[1:] + off for part, off in zip(parts, offsets)]
            ),
            indices=np.concatenate([part.indices for part in parts]),
            scores=np.concatenate([part.scores for part in parts]),
        )

    def slice(self, start: int, stop: int) -> SyntheticExamples:
        """Rows ``start:stop``."""
        first, last = self.indptr[start], self.indptr[stop]
        return SyntheticExamples(
            labels=self.labels[start:stop],
            indptr=self.indptr[start : stop + 1] - first,
            indices=self.indices[first:last],
            scores=self.scores[start:stop],
        )

    def rows_of_entries(self) -> np.ndarray:
        """The row of each stored feature."""
        return np.repeat(np.arange(len(self), dtype=np.int64), np.diff(self.indptr))

    def present(self, columns: Sequence[int]) -> np.ndarray:
        """Bool matrix ``(n, len(columns))``: does row ``r`` have feature ``columns[c]``?

        >>> SyntheticExamples(np.ones(2), np.array([0, 2, 3]), np.array([1, 4, 4]), np.zeros(2)).present([4, 1])
        array([[ True,  True],
               [ True, False]])
        """
        columns = np.asarray(columns, dtype=np.int64)
        lookup = np.full(int(self.indices.max(initial=0)) + 1, -1, dtype=np.int64)
        wanted = columns[columns < len(lookup)]
        lookup[wanted] = np.flatnonzero(columns < len(lookup))
        column_of_entry = lookup[self.indices]
        hit = column_of_entry >= 0
        present = np.zeros((len(self), len(columns)), dtype=bool)
        present[self.rows_of_entries()[hit], column_of_entry[hit]] = True
        return present

    def monomial_values(self, monomials: Sequence[Sequence[int]]) -> np.ndarray:
        """Bool matrix ``(n, len(monomials))``: is every feature of monomial ``m`` in row ``r``?"""
        if not len(monomials):
            return np.zeros((len(self), 0), dtype=bool)
        columns = sorted({int(i) for monomial in monomials for i in monomial})
        position = {index: c for c, index in enumerate(columns)}
        present = self.present(columns)
        values = np.ones((len(self), len(monomials)), dtype=bool)
        for m, monomial in enumerate(monomials):
            for index in monomial:
                values[:, m] &= present[:, position[int(index)]]
        return values

    def to_batch(self, bits: int = 18, *, monomials: Sequence[Sequence[int]] = ()) -> ExampleBatch:
        """The examples as an ExampleBatch, slot = feature index, as LIBSVM parsing gives them.

        ``monomials`` (tuples of feature indices) become extra binary features in
        slots ``max index + 1, + 2, ...``, e.g. to train an oracle model that is
        handed the planted products.

        >>> task = PlantedPolynomial(features=50, nonzeros=5, frequent=4, pairs=2)
        >>> task.generate(3).to_batch(monomials=task.planted.monomials).bits
        18
        """
        base = int(self.indices.max(initial=0))
        if monomials and base + len(monomials) >= 1 << bits:
            raise ValueError(f"{base + len(monomials)} slots do not fit in 2**{bits}; use more bits")
        if not len(monomials):
            return ExampleBatch(
                labels=self.labels.astype(np.float64),
                weights=np.ones(len(self)),
                indptr=self.indptr.astype(np.int64),
                indices=self.indices.astype(INDEX_DTYPE),
                values=np.ones(self.nnz),
                bits=bits,
            )
        row_of_extra, monomial_of_extra = np.nonzero(self.monomial_values(monomials))
        rows = np.concatenate([self.rows_of_entries(), row_of_extra])
        slots = np.concatenate([self.indices.astype(np.int64), base + 1 + monomial_of_extra])
        order = np.argsort(rows, kind="stable")
        indptr = np.zeros(len(self) + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=len(self)), out=indptr[1:])
        return ExampleBatch(
            labels=self.labels.astype(np.float64),
            weights=np.ones(len(self)),
            indptr=indptr,
            indices=slots[order].astype(INDEX_DTYPE),
            values=np.ones(len(slots)),
            bits=bits,
        )

    def to_libsvm(self) -> bytes:
        """LIBSVM text: ``label index:1 index:1 ...`` per line (indices 1-based, ascending)."""
        return _format(self, vw=False)

    def to_vw(self) -> bytes:
        """Vowpal Wabbit text: ``label |f index index ...`` per line (bare names, value 1)."""
        return _format(self, vw=True)


@dataclass(frozen=True)
class PlantedPolynomial:
    """A seeded generator of sparse binary examples with a planted polynomial target.

    See the module docstring for the model. Configuration only: the planted
    target is drawn from ``seed`` when first needed, and every call of
    :meth:`generate` with the same arguments returns the same examples.

    Parameters
    ----------
    features : int
        Number of distinct features; indices run from 1 to ``features``.
    nonzeros : int
        Features drawn per example (with replacement, so a few repeat and the
        example keeps about ``nonzeros - 1.4`` distinct ones with the defaults).
    zipf_exponent, zipf_offset : float
        Feature ``i`` is drawn with probability proportional to
        ``(i - 1 + zipf_offset) ** -zipf_exponent``. The offset keeps the most
        frequent features from being present in (nearly) every example, which
        would make them constants.
    frequent : int
        The planted monomials are products of the ``frequent`` most frequent features.
    pairs, triples : int
        How many distinct pairs and triples of frequent features are planted.
    linear_strength, pair_strength, triple_strength : float
        Standard deviation of the linear part, of the sum of pair products and of
        the sum of triple products (assuming independent features).
    noise : float
        Standard deviation of the Gaussian noise added to the score.
    seed : int
        Seeds the planted target and the examples.

    Examples
    --------
    >>> task = PlantedPolynomial(seed=1)
    >>> examples = task.generate(20000)
    >>> round(examples.nnz / len(examples), 1)
    48.6
    >>> 0.4 < float((examples.labels > 0).mean()) < 0.6
    True
    >>> float(np.mean(np.sign(examples.scores) == examples.labels)) > 0.85   # the Bayes rate
    True
    """

    features: int = 100_000
    nonzeros: int = 50
    zipf_exponent: float = 1.0
    zipf_offset: float = 10.0
    frequent: int = 16
    pairs: int = 24
    triples: int = 0
    linear_strength: float = 1.0
    pair_strength: float = 1.0
    triple_strength: float = 1.0
    noise: float = 0.5
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("features", "nonzeros", "frequent"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a whole number >= 1; got {value!r}")
        if self.frequent > self.features:
            raise ValueError(f"frequent ({self.frequent}) cannot exceed features ({self.features})")
        if self.features >= 1 << 31:
            raise ValueError(f"features must be below 2**31; got {self.features}")
        for name, degree in (("pairs", 2), ("triples", 3)):
            value, most = getattr(self, name), math.comb(self.frequent, degree)
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= most:
                raise ValueError(
                    f"{name} must be a whole number between 0 and {most} (distinct products of "
                    f"{self.frequent} frequent features); got {value!r}"
                )
        for name in ("zipf_exponent", "linear_strength", "pair_strength", "triple_strength", "noise"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0; got {value!r}")
        if not math.isfinite(self.zipf_offset) or self.zipf_offset <= 0:
            raise ValueError(f"zipf_offset must be a finite number > 0; got {self.zipf_offset!r}")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or self.seed < 0:
            raise ValueError(f"seed must be a whole number >= 0; got {self.seed!r}")

    # -- the distribution -----------------------------------------------------

    @cached_property
    def draw_probability(self) -> np.ndarray:
        """Probability that one draw picks feature index ``i`` (entry 0 unused)."""
        ranks = np.arange(self.features, dtype=np.float64)
        weights = (ranks + self.zipf_offset) ** -self.zipf_exponent
        return np.concatenate([[0.0], weights / weights.sum()])

    @cached_property
    def presence(self) -> np.ndarray:
        """Probability that feature index ``i`` is present in an example (entry 0 unused)."""
        # 1 - (1 - p)**nonzeros, accurate for tiny p; p = 1 (a single feature) gives log(0) = -inf and 1.
        with np.errstate(divide="ignore"):
            return -np.expm1(self.nonzeros * np.log1p(-self.draw_probability))

    @cached_property
    def _alias_table(self) -> tuple[np.ndarray, np.ndarray]:
        return _alias_table(self.draw_probability[1:])

    @cached_property
    def planted(self) -> PlantedTarget:
        """The planted linear weights and monomials (drawn from ``seed``)."""
        rng = np.random.default_rng([self.seed, 0])
        presence = self.presence
        spread = presence * (1.0 - presence)
        linear = np.concatenate([[0.0], rng.standard_normal(self.features)])
        linear *= _scale_to(self.linear_strength, float(linear**2 @ spread))
        frequent = range(1, self.frequent + 1)
        monomials: list[tuple[int, ...]] = []
        weights = []
        for count, degree, strength in ((self.pairs, 2, self.pair_strength), (self.triples, 3, self.triple_strength)):
            if count == 0:
                continue
            candidates = list(combinations(frequent, degree))
            chosen = [candidates[i] for i in sorted(rng.choice(len(candidates), size=count, replace=False))]
            magnitude = rng.uniform(0.5, 1.5, size=count) * rng.choice([-1.0, 1.0], size=count)
            # Variance of a product of independent binary features: P(all) (1 - P(all)).
            all_present = np.array([np.prod(presence[list(m)]) for m in chosen])
            magnitude *= _scale_to(strength, float(magnitude**2 @ (all_present * (1 - all_present))))
            monomials += chosen
            weights.append(magnitude)
        monomial_weights = np.concatenate(weights) if weights else np.zeros(0)
        offset = float(linear @ presence) + float(
            sum(v * np.prod(presence[list(m)]) for m, v in zip(monomials, monomial_weights))
        )
        return PlantedTarget(linear, monomials, monomial_weights, offset, float(self.noise))

    # -- generating -----------------------------------------------------------

    def score(self, examples: SyntheticExamples) -> np.ndarray:
        """The noiseless planted score of each example."""
        planted = self.planted
        linear = np.bincount(
            examples.rows_of_entries(), weights=planted.linear_weights[examples.indices], minlength=len(examples)
        )
        products = examples.monomial_values(planted.monomials).astype(np.float64) @ planted.monomial_weights
        return linear + products - planted.offset

    def _block(self, number: int, rows: int) -> SyntheticExamples:
        rng = np.random.default_rng([self.seed, 1, number])
        probability, alias = self._alias_table
        # Alias method: one uniform picks a column and, from its fraction, the column or its alias.
        spot = rng.random((rows, self.nonzeros)) * self.features
        column = spot.astype(np.int32)
        np.minimum(column, self.features - 1, out=column)
        drawn = np.where(spot - column < probability[column], column, alias[column]) + 1
        drawn.sort(axis=1)
        keep = np.ones(drawn.shape, dtype=bool)
        keep[:, 1:] = drawn[:, 1:] != drawn[:, :-1]
        indptr = np.zeros(rows + 1, dtype=np.int64)
        np.cumsum(keep.sum(axis=1), out=indptr[1:])
        examples = SyntheticExamples(
            labels=np.zeros(rows), indptr=indptr, indices=drawn[keep].astype(np.int32), scores=np.zeros(rows)
        )
        scores = self.score(examples)
        noisy = scores + self.noise * rng.standard_normal(rows)
        labels = np.where(noisy > 0, 1.0, -1.0)
        return SyntheticExamples(labels=labels, indptr=indptr, indices=examples.indices, scores=scores)

    def blocks(self, n: int) -> Iterator[SyntheticExamples]:
        """The first ``n`` examples, :data:`BLOCK_ROWS` at a time."""
        if not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"n must be a whole number >= 0; got {n!r}")
        for number in range(-(-int(n) // BLOCK_ROWS)):
            rows = min(BLOCK_ROWS, int(n) - number * BLOCK_ROWS)
            block = self._block(number, BLOCK_ROWS)
            yield block if rows == BLOCK_ROWS else block.slice(0, rows)

    def generate(self, n: int) -> SyntheticExamples:
        """The first ``n`` examples, all at once."""
        parts = list(self.blocks(n))
        if not parts:
            empty = np.zeros(0)
            return SyntheticExamples(empty, np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int32), empty)
        return parts[0] if len(parts) == 1 else SyntheticExamples.concat(parts)

    # -- writing --------------------------------------------------------------

    def write(self, path: str, n: int, format: str = "libsvm") -> str:
        """Write the first ``n`` examples to ``path`` in ``format`` (``libsvm`` or ``vw``); returns ``path``."""
        return self.write_formats({format: path}, n)[format]

    def write_formats(self, paths: dict[str, str], n: int) -> dict[str, str]:
        """Write the same first ``n`` examples to several files at once, ``{format: path}``.

        Each block is generated once and formatted for every file.

        >>> import tempfile
        >>> from pathlib import Path
        >>> task = PlantedPolynomial(features=100, nonzeros=5, frequent=4, pairs=2)
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     paths = task.write_formats({f: os.path.join(folder, "d." + f) for f in FORMATS}, 3)
        ...     print(Path(paths["vw"]).read_text().count("|f"), Path(paths["libsvm"]).read_text().count(":1"))
        3 15
        """
        for format in paths:
            if format not in FORMATS:
                raise ValueError(f"format must be one of {', '.join(FORMATS)}; got {format!r}")
        for path in paths.values():
            folder = os.path.dirname(os.path.abspath(path))
            os.makedirs(folder, exist_ok=True)
        handles = {format: open(path, "wb") for format, path in paths.items()}
        try:
            for block in self.blocks(n):
                for format, handle in handles.items():
                    handle.write(_format(block, vw=format == "vw"))
        finally:
            for handle in handles.values():
                handle.close()
        return dict(paths)


def write_dataset(
    directory: str,
    n: int,
    task: PlantedPolynomial | None = None,
    *,
    stem: str = "synthetic",
    formats: Sequence[str] = FORMATS,
) -> dict[str, str]:
    """Write ``n`` examples of ``task`` (default: ``PlantedPolynomial()``) as ``<stem>.libsvm`` and ``<stem>.vw``.

    Returns ``{format: path}``.
    """
    task = task or PlantedPolynomial()
    paths = {format: os.path.join(directory, f"{stem}.{EXTENSIONS[format]}") for format in formats}
    return task.write_formats(paths, n)


def _scale_to(strength: float, variance: float) -> float:
    return strength / math.sqrt(variance) if variance > 0 else 0.0


@numba.njit(cache=True)
def _alias_kernel(scaled):
    """Vose's alias method: for column j, keep j with probability ``probability[j]``, else take ``alias[j]``."""
    size = len(scaled)
    probability = np.ones(size)
    alias = np.arange(size).astype(np.int32)
    small = np.empty(size, dtype=np.int64)
    large = np.empty(size, dtype=np.int64)
    n_small = 0
    n_large = 0
    work = scaled.copy()
    for j in range(size):
        if work[j] < 1.0:
            small[n_small] = j
            n_small += 1
        else:
            large[n_large] = j
            n_large += 1
    while n_small > 0 and n_large > 0:
        n_small -= 1
        less = small[n_small]
        more = large[n_large - 1]
        probability[less] = work[less]
        alias[less] = more
        work[more] = (work[more] + work[less]) - 1.0
        if work[more] < 1.0:
            n_large -= 1
            small[n_small] = more
            n_small += 1
    # Whatever is left is 1 up to rounding.
    return probability, alias


def _alias_table(probability: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return _alias_kernel(probability * len(probability))


@numba.njit(cache=True)
def write_number(out, pos, value):
    digits = 1
    rest = value // 10
    while rest > 0:
        digits += 1
        rest //= 10
    end = pos + digits
    for k in range(digits):
        out[end - 1 - k] = _ZERO + value % 10
        value //= 10
    return end


@numba.njit(cache=True)
def write_sign(out, pos, label):
    """Write a +-1 label as ``1`` or ``-1`` at ``pos``; return the position after it."""
    if label < 0:
        out[pos] = _MINUS
        pos += 1
    out[pos] = _ONE
    return pos + 1


@numba.njit(cache=True)
def _format_kernel(labels, indptr, indices, row_prefix, feature_suffix, out):
    pos = 0
    for row in range(len(labels)):
        pos = write_sign(out, pos, labels[row])
        for byte in row_prefix:
            out[pos] = byte
            pos += 1
        for entry in range(indptr[row], indptr[row + 1]):
            out[pos] = _SPACE
            pos = write_number(out, pos + 1, indices[entry])
            for byte in feature_suffix:
                out[pos] = byte
                pos += 1
        out[pos] = _NEWLINE
        pos += 1
    return pos


# What follows the label of a row, and each feature index, in each format.
_ROW_PREFIX = {"libsvm": b"", "vw": b" |" + VW_NAMESPACE.encode()}
_FEATURE_SUFFIX = {"libsvm": b":1", "vw": b""}


def _format(examples: SyntheticExamples, *, vw: bool) -> bytes:
    format = "vw" if vw else "libsvm"
    row_prefix = np.frombuffer(_ROW_PREFIX[format], dtype=np.uint8)
    feature_suffix = np.frombuffer(_FEATURE_SUFFIX[format], dtype=np.uint8)
    widest = len(str(int(examples.indices.max(initial=1))))
    # Per row: sign, digit, prefix, newline; per feature: space, digits, suffix.
    size = (3 + len(row_prefix)) * len(examples) + (1 + widest + len(feature_suffix)) * examples.nnz
    out = np.empty(size, dtype=np.uint8)
    used = _format_kernel(examples.labels, examples.indptr, examples.indices, row_prefix, feature_suffix, out)
    return out[:used].tobytes()


@dataclass(frozen=True)
class ShortTexts:
    """Short texts with binary labels, in many keys of a few rows each (like package descriptions).

    Each text is a few words of a Zipf vocabulary (word ``t{i}`` drawn with probability proportional
    to ``(i + 1) ** -zipf_exponent``); each key (a family of packages, say) has a uniform number of
    training rows in ``rows_per_key`` and one test row more, and with ``key_word`` every row of a key
    names the key's own word (``k12name``), as every description of a family names it. A row's
    label is a logistic draw of its key's offset (normal, ``offset_mean`` and ``offset_scale``) plus
    its words' weights (normal, ``word_scale``) over the square root of their count. ``always`` puts that word in every row; ``repeat`` is the share of rows that say a
    word twice (the ``always`` word, else the key's word, else the first word): VW text counts each
    as a feature of value 1, so the word's slot appears twice in the example (``always always``).

    Examples
    --------
    >>> train, test = ShortTexts(keys=2, rows_per_key=(1, 3), seed=1).generate()
    >>> len(test), sorted({key for key, _ in test})
    (2, ['k0', 'k1'])
    >>> print(test[0][1])
    1 'k0 |w k0name t8 t7 t2 t1051 t0 t7
    """

    keys: int = 1500
    vocabulary: int = 3000
    zipf_exponent: float = 1.05
    words: tuple[int, int] = (2, 10)
    rows_per_key: tuple[int, int] = (1, 20)
    key_word: bool = True
    always: str | None = None
    repeat: float = 0.0
    offset_mean: float = -0.5
    offset_scale: float = 1.5
    word_scale: float = 1.0
    seed: int = 0

    def generate(self) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        """``(train, test)``: lists of ``(key, VW text line)``, the training rows shuffled, the test
        rows one per key (the tag is the key)."""
        rng = np.random.default_rng(self.seed)
        frequency = 1.0 / np.arange(1, self.vocabulary + 1) ** self.zipf_exponent
        frequency /= frequency.sum()
        word_weights = rng.normal(0.0, self.word_scale, self.vocabulary)
        offsets = rng.normal(self.offset_mean, self.offset_scale, self.keys)
        rows = rng.integers(self.rows_per_key[0], self.rows_per_key[1], self.keys) + 1  # (+ the test row)
        train, test = [], []
        for key in range(self.keys):
            for row in range(rows[key]):
                drawn = rng.choice(self.vocabulary, size=rng.integers(*self.words), p=frequency)
                score = offsets[key] + word_weights[drawn].sum() / np.sqrt(len(drawn))
                label = 1 if rng.random() < 1.0 / (1.0 + np.exp(-score)) else -1
                tokens = [f"t{word}" for word in drawn]
                if self.key_word:
                    tokens.insert(0, f"k{key}name")
                if self.always is not None:
                    tokens.insert(0, self.always)
                if rng.random() < self.repeat:
                    tokens.append(tokens[0])
                line = f"{label} 'k{key} |w " + " ".join(tokens)
                (test if row == rows[key] - 1 else train).append((f"k{key}", line))
        order = rng.permutation(len(train))
        return [train[i] for i in order], test

    @classmethod
    def repeated_word(cls, seed: int = 0, repeat: float = 0.03) -> ShortTexts:
        """One stream of 20,000 texts of 3-12 words from 300, the word ``always`` in every row and said twice
        in ``repeat`` of them (``always always``): the case where a word's two occurrences stepping at their
        own rates once made a centred text model worse than the base rate.

        >>> rows, _ = ShortTexts.repeated_word(seed=1).generate()
        >>> len(rows), all("always" in line for _, line in rows[:50])
        (20000, True)
        """
        return cls(
            keys=1,
            vocabulary=300,
            words=(3, 12),
            rows_per_key=(20000, 20001),
            key_word=False,
            always="always",
            repeat=repeat,
            offset_mean=-1.5,
            offset_scale=0.0,
            word_scale=1.5,
            seed=seed,
        )

    @staticmethod
    def to_vw(rows: Sequence[tuple[str, str]]) -> bytes:
        """The rows' lines as a VW text file."""
        return ("\n".join(line for _, line in rows) + "\n").encode()
