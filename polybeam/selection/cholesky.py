"""A Cholesky factor that grows by blocks: ``L L' = A_S`` as columns join the selected set S.

Greedy sequencing adds a group at a time. With ``K = L^-1 A_{S,g}`` the new
factor is ``[[L, 0], [K', chol(A_g - K'K)]]`` (the block form of the update
scikit-learn's Gram OMP makes one atom at a time), so each step costs
triangular solves against the current factor, never a refactorisation.
The factor lives in a preallocated Fortran-ordered array; the triangular
solves are numba kernels that work on its leading block in place (LAPACK
would need that block copied out first, which costs more than the solve).

>>> import numpy as np
>>> a = np.array([[4.0, 2.0, 0.4], [2.0, 5.0, 1.0], [0.4, 1.0, 3.0]])
>>> factor = GrowingCholesky(3)
>>> factor.append(factor.forward(a[:0, :1]), np.linalg.cholesky(a[:1, :1]))
>>> projection = factor.forward(a[:1, 1:])
>>> factor.append(projection, np.linalg.cholesky(a[1:, 1:] - projection.T @ projection))
>>> np.allclose(factor.lower @ factor.lower.T, a)
True
>>> np.allclose(factor.backward(factor.forward(np.eye(3))), np.linalg.inv(a))
True
"""

from __future__ import annotations

import numba
import numpy as np

from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernels below)


class GrowingCholesky:
    """The lower factor of the selected block, grown by :meth:`append`."""

    def __init__(self, capacity: int):
        self._factor = np.zeros((capacity, capacity), order="F")
        self.size = 0

    @property
    def lower(self) -> np.ndarray:
        """A view of the current factor (size x size)."""
        return self._factor[: self.size, : self.size]

    def block_rows(self, start: int, stop: int) -> np.ndarray:
        """Rows ``start:stop`` of the factor left of the diagonal block (a view)."""
        return self._factor[start:stop, :start]

    def diagonal_block(self, start: int, stop: int) -> np.ndarray:
        return self._factor[start:stop, start:stop]

    def forward(self, right: np.ndarray) -> np.ndarray:
        """``L^-1 right`` for a (size x m) or (size,) ``right`` (a new array)."""
        return _solved(_forward_substitution, self._factor, self.size, right)

    def backward(self, right: np.ndarray) -> np.ndarray:
        """``L'^-1 right`` for a (size x m) or (size,) ``right`` (a new array)."""
        return _solved(_backward_substitution, self._factor, self.size, right)

    def append(self, projection: np.ndarray, block: np.ndarray) -> None:
        """Grow by ``m`` columns: ``projection = L^-1 A_{S,new}`` (size x m), ``block`` = chol of their Schur complement."""
        k, m = self.size, block.shape[0]
        self._factor[k : k + m, :k] = projection.T
        self._factor[k : k + m, k : k + m] = block
        self.size = k + m


def _solved(kernel, factor: np.ndarray, size: int, right: np.ndarray) -> np.ndarray:
    vector = np.ndim(right) == 1
    out = (
        np.array(right, dtype=np.float64, order="C").reshape(size, 1)
        if vector
        else np.array(right, dtype=np.float64, order="C")
    )
    kernel(factor, size, out)
    return out[:, 0] if vector else out


@numba.njit(cache=True, nogil=True)
def _forward_substitution(factor, size, right):
    """In place ``right <- L^-1 right``, column-oriented so that the Fortran-ordered factor is read contiguously."""
    columns = right.shape[1]
    for j in range(size):
        pivot = factor[j, j]
        for c in range(columns):
            right[j, c] /= pivot
        for i in range(j + 1, size):
            entry = factor[i, j]
            if entry != 0.0:
                for c in range(columns):
                    right[i, c] -= entry * right[j, c]


@numba.njit(cache=True, nogil=True)
def _backward_substitution(factor, size, right):
    """In place ``right <- L'^-1 right`` (column j of L is row j of L')."""
    columns = right.shape[1]
    for j in range(size - 1, -1, -1):
        for c in range(columns):
            total = right[j, c]
            for i in range(j + 1, size):
                total -= factor[i, j] * right[i, c]
            right[j, c] = total / factor[j, j]
