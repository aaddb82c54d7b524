"""Matrices as example batches: NumPy arrays, SciPy sparse matrices and pandas frames, by column.

Column ``j`` (from 0, as scikit-learn numbers them) is the feature of LIBSVM
index ``j + 1``: the slot the LIBSVM reader gives that index, so a matrix
from ``sklearn.datasets.load_svmlight_file`` learns into the same slots as
the file read by ``polybeam train``, and a model trained on one scores the
other. No column ever shares slot 0, the bias: columns up to ``2**bits - 2``
are their own slot ``j + 1``; larger ones are hashed as the LIBSVM reader
hashes large indices, and one hashed onto slot 0 moves to the last slot,
``2**bits - 1``.

Entries mean what cells of a CSV file mean: a zero is an absent feature; NaN
(a missing value, or pandas' ``NA``) is the feature with the value NaN, a
missing value, which the learners fill with the feature's mean over the
training examples that have one (a zero counts as one); an infinite value is
refused. In a SciPy sparse matrix the entries it leaves out are zeros, and a
NaN it stores is a missing value.

A pandas frame whose column names are all strings is a **table**, read as a
CSV file with that header is read (see :mod:`polybeam.formats.csv`), so that a
model fitted on the frame scores the frame written as CSV alike: a column of
numbers or booleans (True is 1) is the feature named after the column; a
column of text (``object``, ``string`` or ``category`` dtype) is categorical,
each value ``v`` of column ``c`` the feature ``c=v`` (blank space around a
value trimmed, as CSV trims cells); a missing or empty value is no category,
while a missing number is the value NaN, as in a matrix.
A frame with other column labels (pandas' default 0, 1, ...) is a matrix, by
column position, and must hold numbers or booleans. pandas is never imported
here: a frame is recognised by its ``to_numpy`` and ``columns``.

>>> import numpy as np
>>> batch = batch_from_arrays(np.array([[0.0, 2.0, np.nan], [5.0, 0.0, 1.0]]), [1, -1], bits=18)
>>> batch.indptr.tolist(), batch.indices.tolist(), batch.values.tolist()
([0, 2, 4], [2, 3, 1, 3], [2.0, nan, 5.0, 1.0])
>>> from scipy import sparse
>>> same = batch_from_arrays(sparse.csr_matrix(np.array([[0.0, 2.0, np.nan], [5.0, 0.0, 1.0]])), [1, -1], bits=18)
>>> same.indices.tolist() == batch.indices.tolist()
True
>>> column_slots(3, bits=18).tolist()   # never 0: that is the bias
[1, 2, 3]
"""

from __future__ import annotations

from collections.abc import Iterable

import numba
import numpy as np

from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernels below)
from polybeam.learners.batch import INDEX_DTYPE, VALUE_DTYPE, ExampleBatch
from polybeam.learners.hashing import (
    BIAS_SLOT,
    check_bits,
    feature_slot,
    hash_string,
    hash_token,
    libsvm_slot_kernel,
    slot_mask,
)
from polybeam.learners.values import LARGEST_VALUE, unlearnable


@numba.njit(cache=True)
def _column_slots(count, mask, seed):
    out = np.empty(count, dtype=np.int32)
    for column in range(count):
        slot = libsvm_slot_kernel(np.int64(column + 1), mask, seed)
        # Only a hashed column can land on the bias slot; it takes the last slot instead.
        out[column] = mask if slot == 0 else slot
    return out


def column_slots(columns: int, *, bits: int, seed: int = 0) -> np.ndarray:
    """The slot of each of ``columns`` matrix columns: column ``j`` is LIBSVM index ``j + 1``, never the bias."""
    assert BIAS_SLOT == 0  # the kernel keeps columns off slot 0
    return _column_slots(int(columns), np.int64(slot_mask(bits)), np.int64(seed))


def is_frame(data) -> bool:
    """Whether ``data`` looks like a pandas DataFrame (without importing pandas)."""
    return hasattr(data, "columns") and hasattr(data, "to_numpy") and getattr(data, "ndim", None) == 2


def is_sparse(data) -> bool:
    """Whether ``data`` is a SciPy sparse matrix or array (without importing SciPy when it is not)."""
    module = type(data).__module__ or ""
    if not module.startswith("scipy."):
        return False
    from scipy import sparse

    return sparse.issparse(data)


def is_matrix(data) -> bool:
    """Whether ``data`` is one matrix of examples (rather than a batch, or a sequence of batches)."""
    return isinstance(data, np.ndarray) or is_sparse(data) or is_frame(data)


def is_table(data) -> bool:
    """Whether ``data`` is a pandas frame of named columns (every column label a string): a table."""
    return is_frame(data) and len(data.columns) > 0 and all(isinstance(name, str) for name in data.columns)


def text_columns(frame) -> tuple[str, ...]:
    """The columns of a table that hold text (its categorical columns, as CSV's ``categorical_columns``)."""
    return tuple(
        str(name)
        for name, dtype in zip(frame.columns, frame.dtypes)
        if getattr(dtype, "kind", "O") not in "biufc" and str(dtype) != "boolean"
    )


def _category_slot(text: str, column_seed: int, mask: int) -> int:
    raw = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    return int(hash_token(raw, 0, len(raw), column_seed) & mask)


def _table_csr(frame, bits: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, str]]:
    """``(indptr, slots, values, names)`` of a table's rows, each row's features in column order, as CSV
    emits them. A text column's distinct values are hashed once each (pandas' ``factorize``)."""
    n = len(frame)
    categorical = set(text_columns(frame))
    mask = slot_mask(bits)
    rows, positions, slots, values, names = [], [], [], [], {}
    for position, name in enumerate(frame.columns):
        column = frame[name]
        if name in categorical:
            codes, uniques = column.astype(object).factorize(use_na_sentinel=True)
            texts = [str(value).strip() for value in uniques]
            column_seed = hash_string(name, seed)
            unique_slots = np.array([_category_slot(text, column_seed, mask) for text in texts], dtype=np.int64)
            usable = np.array([text != "" for text in texts], dtype=bool)
            present = codes >= 0
            present[present] = usable[codes[present]]
            for slot, text, use in zip(unique_slots.tolist(), texts, usable):
                if use:
                    names.setdefault(slot, f"{name}={text}")
            row_ids = np.flatnonzero(present)
            slots.append(unique_slots[codes[row_ids]])
            values.append(np.ones(len(row_ids)))
        else:
            data = column.to_numpy(dtype=np.float64, na_value=np.nan)
            row_ids = np.flatnonzero(data != 0)  # (NaN, a missing number, included)
            slot = feature_slot(name, bits, "", seed)
            names.setdefault(int(slot), name)
            slots.append(np.full(len(row_ids), slot, dtype=np.int64))
            values.append(data[row_ids])
        rows.append(row_ids)
        positions.append(np.full(len(row_ids), position, dtype=np.int64))
    row_of = np.concatenate(rows)
    order = np.lexsort((np.concatenate(positions), row_of))
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(row_of, minlength=n), out=indptr[1:])
    return indptr, np.concatenate(slots)[order], np.concatenate(values)[order], names


def _frame_values(frame) -> np.ndarray:
    not_numeric = [
        (name, str(dtype))
        for name, dtype in zip(frame.columns, frame.dtypes)
        if getattr(dtype, "kind", "O") not in "biufc"
    ]
    if not_numeric:
        shown = ", ".join(f"{name!r} ({dtype})" for name, dtype in not_numeric[:5])
        raise ValueError(
            f"pandas columns must hold numbers or booleans; {shown} do not: one-hot encode them "
            "(pandas.get_dummies), or write the frame as CSV and read it with categorical_columns"
        )
    return frame.to_numpy(dtype=np.float64, na_value=np.nan)


def _dense_csr(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(indptr, columns, values)`` of the entries that are features: not zero (NaN, a missing value, is one)."""
    present = matrix != 0
    rows, columns = np.nonzero(present)  # row-major: each row's columns ascending
    indptr = np.zeros(matrix.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=matrix.shape[0]), out=indptr[1:])
    return indptr, columns, matrix[rows, columns]


def _sparse_csr(matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    matrix = matrix.tocsr(copy=True)
    matrix.sum_duplicates()  # also sorts each row's columns
    values = np.asarray(matrix.data, dtype=np.float64)
    kept = values != 0  # (NaN, a missing value, kept)
    indptr = np.asarray(matrix.indptr, dtype=np.int64)
    if not kept.all():
        rows = np.repeat(np.arange(matrix.shape[0]), np.diff(indptr))
        indptr = np.zeros_like(indptr)
        np.cumsum(np.bincount(rows[kept], minlength=matrix.shape[0]), out=indptr[1:])
    return indptr, np.asarray(matrix.indices)[kept], values[kept]


def _as_vector(values, name: str, n: int) -> np.ndarray:
    if hasattr(values, "to_numpy"):  # a pandas Series
        values = values.to_numpy(dtype=np.float64, na_value=np.nan)
    try:
        vector = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numbers; got {np.asarray(values).dtype} values") from None
    if vector.ndim == 2 and vector.shape[1] == 1:
        vector = vector[:, 0]
    if vector.ndim != 1 or len(vector) != n:
        raise ValueError(f"{name} must hold one number per example: {n} of them, got shape {vector.shape}")
    return vector


def batch_from_arrays(features, labels=None, *, bits: int, seed: int = 0, weights=None) -> ExampleBatch:
    """One ExampleBatch of a matrix of examples (rows) by features (columns); see the module docstring.

    Parameters
    ----------
    features : array-like, SciPy sparse matrix or pandas DataFrame, shape (n, d)
    labels : array-like of shape (n,), optional
        The labels as the learner takes them (NaN when omitted: to be predicted).
    bits, seed : int
        The hashed feature space and hash seed (the learner's or model's).
    weights : array-like of shape (n,), optional
        Importance weights (non-negative; default 1).
    """
    check_bits(bits)
    names = None
    if is_table(features):
        return _table_batch(features, labels, bits=bits, seed=seed, weights=weights)
    if is_frame(features):
        names = [str(name) for name in features.columns]
        matrix = _frame_values(features)
    elif is_sparse(features):
        matrix = features
    else:
        try:
            matrix = np.asarray(features, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"features must be a matrix of numbers; got {np.asarray(features).dtype} values") from None
    if len(matrix.shape) != 2:
        raise ValueError(
            f"features must be a 2-d matrix (examples x features); got shape {matrix.shape}: "
            "reshape one example to (1, d) or one feature to (n, 1)"
        )
    n, d = matrix.shape
    indptr, columns, values = _sparse_csr(matrix) if is_sparse(matrix) else _dense_csr(matrix)
    refused = _refused(values)  # (the same rule as every parser's: polybeam.learners.values)
    if refused.any():
        entry = int(np.flatnonzero(refused)[0])
        row = int(np.searchsorted(indptr, entry, side="right") - 1)
        raise ValueError(
            f"row {row}, column {int(columns[entry])} is {values[entry]}: features must be finite "
            f"and within +-{LARGEST_VALUE:.2g} (NaN is a missing feature; rescale larger values)"
        )
    slots = column_slots(d, bits=bits, seed=seed)
    named = None if names is None else {int(slot): name for slot, name in zip(slots, names)}
    return _assembled(n, indptr, slots[columns], values, labels, weights, bits=bits, names=named)


def _table_batch(frame, labels, *, bits: int, seed: int, weights) -> ExampleBatch:
    """A table's rows as examples (see the module docstring)."""
    indptr, slots, values, names = _table_csr(frame, bits, seed)
    refused = _refused(values)
    if refused.any():
        entry = int(np.flatnonzero(refused)[0])
        row = int(np.searchsorted(indptr, entry, side="right") - 1)
        raise ValueError(
            f"row {row} holds {values[entry]}: features must be finite and within +-{LARGEST_VALUE:.2g} (NaN is a "
            "missing feature; rescale larger values)"
        )
    return _assembled(len(frame), indptr, slots, values, labels, weights, bits=bits, names=names)


def _refused(values: np.ndarray) -> np.ndarray:
    """The mask of the values no learner takes: infinite or too large (NaN is a missing value, kept)."""
    return unlearnable(values) & ~np.isnan(values)


def _assembled(n: int, indptr, slots, values, labels, weights, *, bits: int, names) -> ExampleBatch:
    """One ExampleBatch of ``n`` examples' features (CSR), labels (NaN: to be predicted) and weights (1)."""
    label_values = np.full(n, np.nan) if labels is None else _as_vector(labels, "labels", n)
    weight_values = np.ones(n) if weights is None else _as_vector(weights, "weights", n)
    if (weight_values < 0).any() or np.isnan(weight_values).any():
        raise ValueError("weights must be numbers >= 0 (an example of weight 0 teaches nothing)")
    return ExampleBatch(
        labels=label_values,
        weights=weight_values,
        indptr=indptr,
        indices=slots.astype(INDEX_DTYPE, copy=False),
        values=np.ascontiguousarray(values, dtype=VALUE_DTYPE),
        bits=bits,
        names=names,
    )


def as_batch(data, *, bits: int, seed: int = 0) -> ExampleBatch:
    """``data`` as one ExampleBatch: itself if it is one, else a matrix of examples (no labels)."""
    if isinstance(data, ExampleBatch):
        return data
    if is_matrix(data) or isinstance(data, list):
        return batch_from_arrays(data, bits=bits, seed=seed)
    raise TypeError(
        f"expected an ExampleBatch or a matrix of examples (NumPy, SciPy sparse, pandas); got {type(data).__name__}"
    )


def _labelled(data, bits: int, seed: int) -> ExampleBatch:
    if isinstance(data, ExampleBatch):
        return data
    if isinstance(data, tuple) and len(data) in (2, 3) and not isinstance(data[0], ExampleBatch):
        features, labels, *weights = data
        return batch_from_arrays(features, labels, bits=bits, seed=seed, weights=weights[0] if weights else None)
    raise TypeError(f"expected an ExampleBatch or a tuple (X, y) or (X, y, sample_weight); got {type(data).__name__}")


def training_batches(data, passes=None, *, bits: int, seed: int = 0) -> list[ExampleBatch]:
    """What a learner's ``fit`` learns from, as a list of batches: an ExampleBatch, a tuple ``(X, y)``
    or ``(X, y, sample_weight)`` of matrices (see :func:`batch_from_arrays`), or an iterable of either.

    ``passes`` is checked too: ``fit(X, y)`` would pass the labels as the passes.

    >>> import numpy as np
    >>> [len(b) for b in training_batches((np.eye(3), [1, -1, 1]), bits=10)]
    [3]
    >>> training_batches(np.eye(3), bits=10)
    Traceback (most recent call last):
    ...
    TypeError: fit learns from labelled examples: give (X, y) as one tuple, fit((X, y)), or ExampleBatches
    """
    if passes is not None and (isinstance(passes, bool) or not isinstance(passes, (int, np.integer)) or passes < 1):
        raise TypeError(
            f"passes must be a whole number >= 1; got {type(passes).__name__}: "
            "to learn from matrices, give (X, y) as one tuple, fit((X, y))"
        )
    if is_matrix(data):
        raise TypeError("fit learns from labelled examples: give (X, y) as one tuple, fit((X, y)), or ExampleBatches")
    if isinstance(data, (ExampleBatch, tuple)) and not (
        isinstance(data, tuple) and data and isinstance(data[0], ExampleBatch)
    ):
        return [_labelled(data, bits, seed)]
    if not isinstance(data, Iterable):
        raise TypeError(f"fit learns from ExampleBatches or (X, y); got {type(data).__name__}")
    return [_labelled(part, bits, seed) for part in data]
