"""A seeded synthetic regression whose features come in groups with costs.

The benchmark problem of cost-sensitive group sequencing (CS-G-OMP / CS-G-FR):
dense Gaussian features in ``groups`` groups, each with a cost, and a label
that is linear in a few of the groups. Every feature has mean 0 and variance 1.

Features. Group ``g`` of an ordinary (informative or irrelevant) kind shares a
factor ``z_g``; its feature ``k`` is ::

    x_gk = sqrt(rho) * z_g + sqrt(1 - rho) * e_gk

so features within a group correlate by ``rho`` and groups are independent.
A *redundant* group ``r`` copies a *source* informative group ``s`` through a
random mixing matrix ``B_r`` (columns scaled so each mixture has variance 1)::

    x_r = c * x_s @ B_r + sqrt(1 - c**2) * e_r,      c = redundant_correlation

so each of its features correlates with a combination of the source's by ``c``,
and given the source it carries no information about the label at all.

Label. With ``informative`` groups ``I`` and coefficients ``beta``::

    y = sum_{g in I} x_g @ beta_g  +  noise * eps,      eps ~ N(0, 1)

Only informative groups have non-zero coefficients. Each ``beta_g`` is a random
direction scaled so that group ``g`` contributes variance ``share_g``, with
``share_g`` proportional to ``cost_g ** effect_exponent`` and the shares
summing to 1. So the signal has variance 1, ``y`` has variance ``1 + noise**2``
and the full model explains ``1 / (1 + noise**2)`` of it. With the default
exponent 0.5 expensive groups have the larger effects but cheap ones the larger
effect per unit of cost: a cost-blind ordering starts with the expensive groups,
a cost-sensitive one with the cheap ones. Redundant groups may be cheaper than
their sources (cheap proxies) or dearer; irrelevant groups cost like the rest.

Layout. Costs are log-uniform between ``min_cost`` and ``max_cost`` (rounded to
3 decimals, as written in the group specification). Which groups are
informative, redundant (and their sources) or irrelevant is a seeded random
permutation, so the column order gives nothing away. Columns are group after
group: group ``g`` holds columns ``offsets[g]:offsets[g + 1]``, LIBSVM indices
``offsets[g] + 1 ... offsets[g + 1]``.

Rows are generated in blocks of :data:`BLOCK_ROWS`, each seeded by ``(seed,
stream, block)``: the first ``n`` rows do not depend on how many are asked for,
and stream 1 (the test file of :meth:`GroupedRegression.write`) is independent of
stream 0 (the train file).

Examples
--------
>>> problem = GroupedRegression(groups=6, group_size=3, informative=2, redundant=1, seed=1)
>>> X, y = problem.generate(4)
>>> X.shape, y.shape, X.dtype
((4, 18), (4,), dtype('float64'))
>>> problem.costs
array([ 4.633, 17.242,  1.54 , 17.148,  2.545,  3.554])
>>> problem.informative_groups, problem.redundant_sources, problem.signal_shares.round(3)
((1, 5), {0: 5}, array([0.   , 0.688, 0.   , 0.   , 0.   , 0.312]))

Group 1 explains the most, group 5 the most per unit of cost, and group 0 is a
proxy of group 5 (population shares of ``Var(y)`` explained):

>>> [round(problem.explained_variance([g]), 3) for g in range(6)]
[0.202, 0.55, 0.0, 0.0, 0.0, 0.25]
>>> round(problem.explained_variance([0, 5]), 3), round(problem.explained_variance(), 3)
(0.25, 0.8)
>>> from polybeam.selection.groups import GroupSpec
>>> spec = GroupSpec.from_json(problem.group_spec_json())
>>> [group.name for group in spec.groups][:3], spec.slots[:4].tolist()
(['g1', 'g2', 'g3'], [1, 2, 3, 4])
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property

import numba
import numpy as np

from polybeam.datasets.synthetic import write_number
from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernels below)

# Rows per generated block: the unit of seeding and of writing.
BLOCK_ROWS = 1 << 13
# The streams of :meth:`GroupedRegression.write`'s files.
TRAIN_STREAM, TEST_STREAM = 0, 1

_NEWLINE, _SPACE, _MINUS, _COLON, _DOT, _ZERO = 10, 32, 45, 58, 46, 48


@dataclass(frozen=True)
class GroupedRegression:
    """A seeded grouped regression problem (see the module docstring for the model).

    Configuration only: the layout (costs, roles, coefficients, mixing) is drawn
    from ``seed`` when first needed.

    Parameters
    ----------
    groups : int
        Number of feature groups.
    group_size : int or tuple of int
        Features per group: one size for all, or one per group.
    informative : int
        Groups with non-zero coefficients.
    redundant : int
        Groups that are noisy mixtures of an informative group's features.
    rho : float
        Correlation of two features of the same (non-redundant) group, in [0, 1).
    redundant_correlation : float
        Correlation of each redundant feature with its mixture of the source group, in [0, 1].
    min_cost, max_cost : float
        Group costs are log-uniform between these.
    effect_exponent : float
        An informative group's share of the signal variance is proportional to ``cost ** effect_exponent``.
    noise : float
        Standard deviation of the label noise; the signal has variance 1.
    seed : int
        Seeds the layout and the rows.
    """

    groups: int = 40
    group_size: int | tuple[int, ...] = 5
    informative: int = 10
    redundant: int = 8
    rho: float = 0.8
    redundant_correlation: float = 0.9
    min_cost: float = 1.0
    max_cost: float = 20.0
    effect_exponent: float = 0.5
    noise: float = 0.5
    seed: int = 0

    def __post_init__(self) -> None:
        if not _whole(self.groups) or self.groups < 1:
            raise ValueError(f"groups must be a whole number >= 1; got {self.groups!r}")
        if isinstance(self.group_size, (list, tuple)):
            sizes = tuple(self.group_size)
            if len(sizes) != self.groups:
                raise ValueError(f"group_size has {len(sizes)} sizes for {self.groups} groups")
            object.__setattr__(self, "group_size", sizes)
        else:
            sizes = (self.group_size,)
        if not all(_whole(size) and size >= 1 for size in sizes):
            raise ValueError(f"group sizes must be whole numbers >= 1; got {self.group_size!r}")
        if not _whole(self.informative) or not 0 <= self.informative <= self.groups:
            raise ValueError(
                f"informative must be a whole number between 0 and groups ({self.groups}); got {self.informative!r}"
            )
        room = self.groups - self.informative
        if not _whole(self.redundant) or not 0 <= self.redundant <= room:
            raise ValueError(
                f"redundant must be a whole number between 0 and groups - informative ({room}); got {self.redundant!r}"
            )
        if self.redundant and not self.informative:
            raise ValueError("redundant groups copy informative groups; with informative=0 there is none to copy")
        if not (math.isfinite(self.rho) and 0 <= self.rho < 1):
            raise ValueError(f"rho must be in [0, 1); got {self.rho!r}")
        if not (math.isfinite(self.redundant_correlation) and 0 <= self.redundant_correlation <= 1):
            raise ValueError(f"redundant_correlation must be in [0, 1]; got {self.redundant_correlation!r}")
        if not (math.isfinite(self.min_cost) and math.isfinite(self.max_cost) and 0 < self.min_cost <= self.max_cost):
            raise ValueError(
                f"costs need 0 < min_cost <= max_cost, both finite; got {self.min_cost!r}, {self.max_cost!r}"
            )
        if not math.isfinite(self.effect_exponent):
            raise ValueError(f"effect_exponent must be finite; got {self.effect_exponent!r}")
        if not (math.isfinite(self.noise) and self.noise >= 0):
            raise ValueError(f"noise must be a finite number >= 0; got {self.noise!r}")
        if not _whole(self.seed) or self.seed < 0:
            raise ValueError(f"seed must be a whole number >= 0; got {self.seed!r}")

    # -- the layout -----------------------------------------------------------

    @property
    def sizes(self) -> tuple[int, ...]:
        """Features per group."""
        if isinstance(self.group_size, tuple):
            return self.group_size
        return (self.group_size,) * self.groups

    @cached_property
    def offsets(self) -> np.ndarray:
        """Group ``g`` holds columns ``offsets[g]:offsets[g + 1]``."""
        return np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64)

    @property
    def features(self) -> int:
        """Number of columns D."""
        return int(self.offsets[-1])

    @cached_property
    def group_of_column(self) -> np.ndarray:
        return np.repeat(np.arange(self.groups), self.sizes)

    @cached_property
    def _layout(self) -> dict:
        rng = np.random.default_rng([self.seed, 0])
        costs = np.round(np.exp(rng.uniform(math.log(self.min_cost), math.log(self.max_cost), self.groups)), 3)
        costs = np.clip(costs, self.min_cost, self.max_cost)
        order = rng.permutation(self.groups)
        informative = tuple(sorted(int(g) for g in order[: self.informative]))
        redundant = sorted(int(g) for g in order[self.informative : self.informative + self.redundant])
        # Sources cycle through the informative groups in a random order: distinct while there are enough.
        cycle = rng.permutation(informative) if informative else np.zeros(0, dtype=np.int64)
        sources = {r: int(cycle[k % len(cycle)]) for k, r in enumerate(redundant)}

        covariance = self._ordinary_covariance
        mixing = {}
        for r, s in sources.items():
            block = rng.standard_normal((self.sizes[s], self.sizes[r]))
            source_cov = covariance(s)
            block /= np.sqrt(np.einsum("ik,ij,jk->k", block, source_cov, block))
            mixing[r] = block

        weights = costs[list(informative)] ** self.effect_exponent
        shares = np.zeros(self.groups)
        shares[list(informative)] = weights / weights.sum() if len(weights) else 0.0
        coefficients = np.zeros(self.features)
        for g in informative:
            direction = rng.standard_normal(self.sizes[g])
            direction *= math.sqrt(shares[g] / float(direction @ covariance(g) @ direction))
            coefficients[self.offsets[g] : self.offsets[g + 1]] = direction
        return dict(
            costs=costs,
            informative=informative,
            sources=sources,
            mixing=mixing,
            shares=shares,
            coefficients=coefficients,
        )

    def _ordinary_covariance(self, group: int) -> np.ndarray:
        size = self.sizes[group]
        return (1 - self.rho) * np.eye(size) + self.rho * np.ones((size, size))

    @property
    def costs(self) -> np.ndarray:
        """Each group's cost."""
        return self._layout["costs"].copy()

    @property
    def informative_groups(self) -> tuple[int, ...]:
        """The groups with non-zero coefficients, ascending."""
        return self._layout["informative"]

    @property
    def redundant_sources(self) -> dict[int, int]:
        """Each redundant group's source (an informative group)."""
        return dict(self._layout["sources"])

    @property
    def signal_shares(self) -> np.ndarray:
        """Each group's contribution to the signal variance (0 but for informative groups; sums to 1)."""
        return self._layout["shares"].copy()

    @property
    def coefficients(self) -> np.ndarray:
        """The true coefficient of each column (``y = X @ coefficients + noise``)."""
        return self._layout["coefficients"].copy()

    @cached_property
    def _loadings(self) -> np.ndarray:
        """``T`` with ``x = T @ (z, e)``: each column's loadings on the group factors and the D own noises."""
        loadings = np.zeros((self.features, self.groups + self.features))
        columns = np.arange(self.features)
        loadings[columns, self.group_of_column] = math.sqrt(self.rho)
        loadings[columns, self.groups + columns] = math.sqrt(1 - self.rho)
        c = self.redundant_correlation
        for r, s in self._layout["sources"].items():
            rows = slice(self.offsets[r], self.offsets[r + 1])
            loadings[rows] = c * self._layout["mixing"][r].T @ loadings[self.offsets[s] : self.offsets[s + 1]]
            loadings[columns[rows], self.groups + columns[rows]] += math.sqrt(1 - c * c)
        return loadings

    def covariance(self) -> tuple[np.ndarray, np.ndarray, float]:
        """The population moments: ``Cov(x)`` (D x D), ``Cov(x, y)`` (D) and ``Var(y)``."""
        loadings = self._loadings
        features = loadings @ loadings.T
        return features, features @ self._layout["coefficients"], 1.0 + self.noise**2

    def explained_variance(self, groups: Iterable[int] | None = None) -> float:
        """Population share of ``Var(y)`` the best linear model on ``groups`` (default: all) explains."""
        chosen = range(self.groups) if groups is None else sorted({int(g) for g in groups})
        if any(not 0 <= g < self.groups for g in chosen):
            raise ValueError(f"groups are numbered 0 to {self.groups - 1}; got {list(chosen)}")
        columns = np.concatenate([np.arange(self.offsets[g], self.offsets[g + 1]) for g in chosen] or [[]]).astype(int)
        if not len(columns):
            return 0.0
        features, with_label, label_variance = self.covariance()
        b = with_label[columns]
        return float(b @ np.linalg.solve(features[np.ix_(columns, columns)], b)) / label_variance

    # -- generating -----------------------------------------------------------

    def _block(self, stream: int, number: int) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng([self.seed, 1 + stream, number])
        factors = rng.standard_normal((BLOCK_ROWS, self.groups))
        own = rng.standard_normal((BLOCK_ROWS, self.features))
        label_noise = rng.standard_normal(BLOCK_ROWS)
        X = math.sqrt(self.rho) * factors[:, self.group_of_column]
        X += math.sqrt(1 - self.rho) * own
        c = self.redundant_correlation
        for r, s in self._layout["sources"].items():
            rows = slice(self.offsets[r], self.offsets[r + 1])
            X[:, rows] = c * (X[:, self.offsets[s] : self.offsets[s + 1]] @ self._layout["mixing"][r])
            X[:, rows] += math.sqrt(1 - c * c) * own[:, rows]
        y = X @ self._layout["coefficients"] + self.noise * label_noise
        return X, y

    def blocks(self, n: int, *, stream: int = TRAIN_STREAM) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The first ``n`` rows of ``stream``, :data:`BLOCK_ROWS` at a time."""
        if not _whole(n) or n < 0:
            raise ValueError(f"n must be a whole number >= 0; got {n!r}")
        if not _whole(stream) or stream < 0:
            raise ValueError(f"stream must be a whole number >= 0; got {stream!r}")
        for number in range(-(-int(n) // BLOCK_ROWS)):
            rows = min(BLOCK_ROWS, int(n) - number * BLOCK_ROWS)
            X, y = self._block(int(stream), number)
            yield X[:rows], y[:rows]

    def generate(self, n: int, *, stream: int = TRAIN_STREAM) -> tuple[np.ndarray, np.ndarray]:
        """The first ``n`` rows: ``X`` (n x D float64) and ``y`` (n float64).

        Stream 0 is what :meth:`write` puts in the train file, stream 1 the test file.
        """
        parts = list(self.blocks(n, stream=stream))
        if not parts:
            return np.zeros((0, self.features)), np.zeros(0)
        return np.concatenate([X for X, _ in parts]), np.concatenate([y for _, y in parts])

    # -- writing --------------------------------------------------------------

    def group_names(self) -> list[str]:
        width = len(str(self.groups))
        return [f"g{g + 1:0{width}d}" for g in range(self.groups)]

    def group_spec_json(self) -> str:
        """The group specification (:mod:`polybeam.selection.groups`): LIBSVM ranges ``"a-b"`` and costs.

        Besides ``groups`` it records the configuration and, under ``truth``, the
        roles of the groups (the sequencers read neither).
        """
        names = self.group_names()
        layout = self._layout
        groups = [
            {
                "name": names[g],
                "features": [f"{self.offsets[g] + 1}-{self.offsets[g + 1]}"],
                "cost": float(layout["costs"][g]),
            }
            for g in range(self.groups)
        ]
        truth = {
            "informative": {names[g]: round(float(layout["shares"][g]), 6) for g in layout["informative"]},
            "redundant": {names[r]: names[s] for r, s in layout["sources"].items()},
            "explained_variance": round(self.explained_variance(), 6),
        }
        description = (
            f"Synthetic grouped regression {self!r}: {self.features} Gaussian features in {self.groups} groups; "
            "y is linear in the informative groups (values: share of the signal variance); "
            "redundant groups are noisy mixtures of their source and add nothing given it."
        )
        lines = [
            "{",
            f'  "description": {json.dumps(description)},',
            f'  "truth": {json.dumps(truth)},',
            '  "groups": [',
        ]
        lines.append(",\n".join(f"    {json.dumps(group)}" for group in groups))
        lines += ["  ]", "}"]
        return "\n".join(lines) + "\n"

    def write(
        self, directory: str, n_train: int, n_test: int, *, stem: str = "grouped", decimals: int = 6
    ) -> dict[str, str]:
        """Write ``<stem>.train.libsvm``, ``<stem>.test.libsvm`` and ``<stem>.groups.json`` to ``directory``.

        The LIBSVM files hold ``label index:value ...`` lines, indices 1-based,
        values rounded to ``decimals`` decimals (a value that rounds to 0 is left
        out, as sparse formats do). The train file has the first ``n_train`` rows
        of stream 0, the test file the first ``n_test`` of stream 1. Returns
        ``{"train": path, "test": path, "groups": path}``.

        >>> import tempfile
        >>> problem = GroupedRegression(groups=2, group_size=2, informative=1, redundant=0)
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     paths = problem.write(folder, 2, 1, decimals=2)
        ...     print(open(paths["train"]).read(), end="")
        1.3 1:0.19 2:0.25 3:-0.88 4:-1.4
        0 1:-0.53 2:-0.36 3:-1.58 4:-0.41
        """
        if not _whole(decimals) or not 0 <= decimals <= 15:
            raise ValueError(f"decimals must be a whole number between 0 and 15; got {decimals!r}")
        os.makedirs(directory, exist_ok=True)
        paths = {part: os.path.join(directory, f"{stem}.{part}.libsvm") for part in ("train", "test")}
        paths["groups"] = os.path.join(directory, f"{stem}.groups.json")
        for part, n, stream in (("train", n_train, TRAIN_STREAM), ("test", n_test, TEST_STREAM)):
            with open(paths[part], "wb") as handle:
                for X, y in self.blocks(n, stream=stream):
                    handle.write(format_libsvm(X, y, decimals=decimals))
        with open(paths["groups"], "w", encoding="utf-8") as handle:
            handle.write(self.group_spec_json())
        return paths


def format_libsvm(X: np.ndarray, y: np.ndarray, *, decimals: int = 6) -> bytes:
    """Dense rows as LIBSVM text, values rounded to ``decimals`` decimals, zeros (after rounding) left out.

    >>> format_libsvm(np.array([[0.5, 0.0, -2.25], [1e-9, 3.0, 0.125]]), np.array([1.0, -0.5]), decimals=2)
    b'1 1:0.5 3:-2.25\\n-0.5 2:3 3:0.13\\n'
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    if X.ndim != 2 or y.shape != (len(X),):
        raise ValueError(f"X must be n x D and y of length n; got shapes {X.shape} and {y.shape}")
    if not len(X):
        return b""
    largest = max(float(np.abs(X).max(initial=0.0)), float(np.abs(y).max()))
    if not math.isfinite(largest) or largest * 10.0**decimals >= 2.0**62:
        raise ValueError(f"values up to {largest} do not fit {decimals} decimals in 64-bit fixed point")
    whole_digits = len(str(int(largest) + 1))
    number = 1 + whole_digits + 1 + decimals  # sign, whole part, point, fraction
    per_row = number + 1 + X.shape[1] * (1 + len(str(X.shape[1])) + 1 + number)
    out = np.empty(per_row * len(X), dtype=np.uint8)
    used = _format_kernel(X, y, np.int64(decimals), out)
    return out[:used].tobytes()


@numba.njit(cache=True)
def _write_fixed(out, pos, quantum, negative, unit, decimals):
    """Write ``quantum / unit`` (``unit = 10**decimals``) with trailing zeros of the fraction dropped."""
    if negative and quantum > 0:
        out[pos] = _MINUS
        pos += 1
    pos = write_number(out, pos, quantum // unit)
    fraction = quantum % unit
    if fraction > 0:
        digits = decimals
        while fraction % 10 == 0:
            fraction //= 10
            digits -= 1
        out[pos] = _DOT
        pos += 1
        for k in range(digits):
            out[pos + digits - 1 - k] = _ZERO + fraction % 10
            fraction //= 10
        pos += digits
    return pos


@numba.njit(cache=True)
def _format_kernel(X, y, decimals, out):
    unit = np.int64(1)
    for _ in range(decimals):
        unit *= 10
    scale = float(unit)
    pos = 0
    for row in range(X.shape[0]):
        label = y[row]
        pos = _write_fixed(out, pos, np.int64(np.floor(abs(label) * scale + 0.5)), label < 0, unit, decimals)
        for column in range(X.shape[1]):
            value = X[row, column]
            quantum = np.int64(np.floor(abs(value) * scale + 0.5))
            if quantum == 0:
                continue
            out[pos] = _SPACE
            pos = write_number(out, pos + 1, column + 1)
            out[pos] = _COLON
            pos = _write_fixed(out, pos + 1, quantum, value < 0, unit, decimals)
        out[pos] = _NEWLINE
        pos += 1
    return pos


def _whole(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)
