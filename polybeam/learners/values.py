"""The feature values polybeam learns from: finite numbers no larger in magnitude than ``LARGEST_VALUE``.

Every door reads values through this module (the LIBSVM, VW, CSV and Parquet
parsers, NumPy/SciPy/pandas arrays, RunInference's dicts) and the learners
check each batch against it, so that a value is refused the same way whatever
door it came through: a row of the parsers becomes a dead letter with the
reason :func:`value_problem` gives, and the other doors raise one line.

Why a bound and not just finiteness: a learner squares its values (AdaGrad's
sums of squared gradients, centring's sums of squares, greedy steps' ``x . x``)
and multiplies them (apple's products). A value of 1e308 is finite, but its
square is not: its example's update made the bias NaN and every later
prediction the same (issue 31: a third of the rows at 1e308 gave a model that
evaluated at error 0.5; 1e155 to 1e307 one constant prediction, through
centring's sums of squares). The bound is the largest float32,
about 3.4e38, the largest feature value Vowpal Wabbit can hold (its features
are float32): its square (1.2e77), the product of three such values (4e115)
and sums of squares of such products over any number of examples stay finite.
Data beyond it is in the wrong unit for learning: rescale the column.

>>> learnable(1e38), learnable(-3.5e38), learnable(float("nan")), learnable(float("inf"))
(True, False, False, False)
>>> value_problem(1e308)
'feature value beyond +-3.4e+38 (rescale it): 1e+308'
>>> value_problem(float("nan")), value_problem(2.5) is None
('non-finite feature value: nan', True)
>>> unlearnable(np.array([1.0, np.inf, 1e39, -2.0])).tolist()
[False, True, True, False]
"""

from __future__ import annotations

import numba
import numpy as np

from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernels below)

LARGEST_VALUE = float(np.finfo(np.float32).max)
# How the parsers' reasons name the bound (their messages quote the offending token after it).
TOO_LARGE_REASON = f"feature value beyond +-{LARGEST_VALUE:.2g} (rescale it): "
NON_FINITE_REASON = "non-finite feature value: "


@numba.njit(cache=True, inline="always")
def learnable(value):
    """Whether a learner can take ``value``: finite and ``|value| <= LARGEST_VALUE`` (NaN is not)."""
    return abs(value) <= LARGEST_VALUE


def unlearnable(values: np.ndarray) -> np.ndarray:
    """The mask of ``values`` a learner cannot take (NaN, infinite, or beyond ``LARGEST_VALUE``)."""
    with np.errstate(invalid="ignore"):
        return ~(np.abs(np.asarray(values, dtype=np.float64)) <= LARGEST_VALUE)


def value_problem(value: float) -> str | None:
    """Why ``value`` cannot be learned (the reason a dead letter or an error gives), or None."""
    if learnable(value):
        return None
    if np.isfinite(value):
        return f"{TOO_LARGE_REASON}{value:g}"
    return f"{NON_FINITE_REASON}{value}"


def first_unlearnable(indptr: np.ndarray, values: np.ndarray, *, missing_ok: bool = False) -> tuple[int, float] | None:
    """``(row, value)`` of the first value of a CSR batch a learner cannot take, or None. ``missing_ok``:
    NaN is a missing value, which learners fill (see polybeam.learners.missing), not a bad one.

    >>> first_unlearnable(np.array([0, 1, 3]), np.array([1.0, 2.0, 1e300]))
    (1, 1e+300)
    >>> first_unlearnable(np.array([0, 1, 3]), np.array([np.nan, 2.0, 1.0]), missing_ok=True) is None
    True
    """
    values = np.asarray(values, dtype=np.float64)
    entry = _first_unlearnable_entry(values, missing_ok)
    if entry < 0:
        return None
    return int(np.searchsorted(indptr, entry, side="right") - 1), float(values[entry])


# No temporary arrays, and a first pass without an early exit, which the compiler vectorises: every batch
# a learner learns is checked (numpy's masks cost a tenth of the learning on a million rows of 49 non-zeros).
@numba.njit(cache=True, nogil=True)
def _first_unlearnable_entry(values, missing_ok):
    """The index of the first value a learner cannot take (NaN allowed when ``missing_ok``), or -1."""
    bad = 0
    for entry in range(values.shape[0]):
        value = values[entry]
        bad += not (learnable(value) or (missing_ok and value != value))
    if bad == 0:
        return -1
    for entry in range(values.shape[0]):
        value = values[entry]
        if not (learnable(value) or (missing_ok and value != value)):
            return entry
    return -1


class NonFiniteModel(ValueError):
    """A learner's state or a model whose weights are not all finite: it is neither written nor reported
    as a success (a one-line error of the command that trained it)."""


def check_finite_weights(
    weights: np.ndarray, *, label_range: tuple[float, float] | None = None, statistics: np.ndarray | None = None
) -> None:
    """Raise :class:`NonFiniteModel` when ``weights`` are not all finite, naming the likely cause.

    The parsers and :func:`learnable` keep overflowing feature values out, so what is left is labels
    too large to square (squared loss scales by their spread) or steps that diverged.

    >>> check_finite_weights(np.array([0.5, np.nan, 1.0]), label_range=(0.0, 1e300))
    Traceback (most recent call last):
    ...
    polybeam.learners.values.NonFiniteModel: 1 of 3 weights are not finite (the first at row 1): the learner's state overflowed, and no model is written; likely cause: labels as large as 1e+300 (rescale them)
    """
    finite = np.isfinite(weights)
    state_finite = statistics is None or bool(np.isfinite(statistics).all())
    if finite.all() and state_finite:
        return
    cause = "a step that diverged (lower --learning-rate, or rescale the features)"
    largest = 0.0 if label_range is None else max(abs(label_range[0]), abs(label_range[1]))
    if largest > 1e150:
        cause = f"labels as large as {largest:g} (rescale them)"
    if finite.all():
        what = "its losses or label statistics are not finite"
    else:
        bad = ~finite.reshape(len(weights), -1).all(axis=1)
        what = f"{int(bad.sum())} of {len(bad)} weights are not finite (the first at row {int(np.argmax(bad))})"
    raise NonFiniteModel(f"{what}: the learner's state overflowed, and no model is written; likely cause: {cause}")
