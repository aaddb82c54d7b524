"""Group whitening: a basis of each group in which its features are uncorrelated with unit variance.

Cost-sensitive group OMP scores a group by its whitened gradient
``b_g' C_g^-1 b_g`` (Hu et al., section 2): the squared norm of the gradient
in a basis where ``C_g = I``. With ``C_g = V diag(e) V'`` (eigenvalues ``e``),
the transform ``T_g = V diag(e)^-1/2`` maps the group's standardised features
``x_g`` to whitened ones ``T_g' x_g``, whose covariance is the identity; the
whole problem becomes ``C~ = T' C T`` and ``b~ = T' b`` with ``T`` block
diagonal, and a model ``w~`` over whitened features is ``T w~`` over the
standardised ones. Least squares is the same in every basis; a ridge penalty
``||w~||^2`` is too, among whitening bases, because they differ by rotations.

Directions with eigenvalue below ``tolerance`` (features that repeat or
combine others of the group, or constant ones) are dropped: the group keeps
its rank, not its size. A group of constant features only keeps nothing and
is reported by the sequencers as skipped. Without whitening (the paper's
"no-whiten" comparison) the basis is the standardised features themselves,
constant ones dropped.

>>> import numpy as np
>>> gram = np.array([[1.0, 0.5, 0.0], [0.5, 1.0, 0.0], [0.0, 0.0, 1.0]])
>>> basis = GroupBasis.build(gram, np.array([0.5, 0.4, 0.1]), np.array([0, 0, 1]))
>>> np.allclose(basis.gram, np.eye(3)), basis.ranks.tolist()
(True, [2, 1])
>>> weights = np.linalg.solve(basis.gram, basis.correlations)   # least squares, whitened
>>> np.allclose(basis.to_columns(weights), np.linalg.solve(gram, [0.5, 0.4, 0.1]))
True
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
from scipy import sparse

# Directions whose variance is below this (features have unit variance) count as absent.
DEFAULT_TOLERANCE = 1e-9


@dataclasses.dataclass(frozen=True)
class GroupBasis:
    """The problem in each group's basis: ``gram`` (R x R), ``correlations`` (R) over R basis columns.

    ``columns[g]`` are group g's columns of the original problem and
    ``transforms[g]`` (``len(columns[g])`` x ``ranks[g]``) maps its basis
    weights to weights over those columns; basis columns are group after group
    (``offsets[g]:offsets[g + 1]``).
    """

    gram: np.ndarray
    correlations: np.ndarray
    columns: tuple[np.ndarray, ...]
    transforms: tuple[np.ndarray, ...]
    offsets: np.ndarray
    dimension: int  # D, the original problem's number of columns
    whitened: bool

    @classmethod
    def build(
        cls,
        gram: np.ndarray,
        correlations: np.ndarray,
        group_of_column: np.ndarray,
        *,
        whiten: bool = True,
        constant: np.ndarray | None = None,
        tolerance: float = DEFAULT_TOLERANCE,
    ) -> GroupBasis:
        """Each group's basis of ``gram`` / ``correlations`` (whitened, or the non-constant columns)."""
        gram = np.asarray(gram, dtype=np.float64)
        group_of_column = np.asarray(group_of_column)
        groups = int(group_of_column.max()) + 1 if len(group_of_column) else 0
        if constant is None:
            constant = np.diag(gram) <= tolerance
        columns, transforms = [], []
        for group in range(groups):
            own = np.flatnonzero((group_of_column == group) & ~constant)
            columns.append(own)
            transforms.append(_whitening(gram[np.ix_(own, own)], tolerance) if whiten else np.eye(len(own)))
        ranks = np.array([transform.shape[1] for transform in transforms], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(ranks)])
        kept = np.concatenate(columns) if columns else np.zeros(0, dtype=np.int64)
        if whiten:
            # C~ = T' C T one group at a time: T is block diagonal, so never form it.
            right = np.empty((len(kept), offsets[-1]))
            start = 0
            for own, transform, first, last in zip(columns, transforms, offsets[:-1], offsets[1:]):
                right[:, first:last] = gram[np.ix_(kept, own)] @ transform
            basis_gram = np.empty((offsets[-1], offsets[-1]))
            basis_correlations = np.empty(offsets[-1])
            for own, transform, first, last in zip(columns, transforms, offsets[:-1], offsets[1:]):
                rows = slice(start, start + len(own))
                basis_gram[first:last] = transform.T @ right[rows]
                basis_correlations[first:last] = transform.T @ correlations[own]
                start += len(own)
            basis_gram = (basis_gram + basis_gram.T) / 2  # exactly symmetric for the Cholesky updates
        else:
            basis_gram = gram[np.ix_(kept, kept)]
            basis_correlations = np.asarray(correlations, dtype=np.float64)[kept]
        return cls(
            np.asfortranarray(basis_gram),
            basis_correlations,
            tuple(columns),
            tuple(transforms),
            offsets,
            len(group_of_column),
            whiten,
        )

    @property
    def ranks(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def group_of_basis(self) -> np.ndarray:
        return np.repeat(np.arange(len(self.columns)), self.ranks)

    @functools.cached_property
    def transform(self) -> sparse.csr_matrix:
        """The block-diagonal T (D x R) as a sparse matrix: weights over columns = T @ basis weights."""
        rows, cols, values = [], [], []
        for own, transform, first in zip(self.columns, self.transforms, self.offsets[:-1]):
            grid_rows, grid_cols = np.meshgrid(own, first + np.arange(transform.shape[1]), indexing="ij")
            rows.append(grid_rows.ravel())
            cols.append(grid_cols.ravel())
            values.append(transform.ravel())
        shape = (self.dimension, int(self.offsets[-1]))
        if not rows:
            return sparse.csr_matrix(shape)
        return sparse.csr_matrix((np.concatenate(values), (np.concatenate(rows), np.concatenate(cols))), shape=shape)

    def to_columns(self, weights: np.ndarray, basis_columns: np.ndarray | None = None) -> np.ndarray:
        """Weights over the original D columns of basis weights (over ``basis_columns``, default all)."""
        full = np.zeros(self.offsets[-1])
        if basis_columns is None:
            full[:] = weights
        else:
            full[basis_columns] = weights
        return self.transform @ full


def _whitening(block: np.ndarray, tolerance: float) -> np.ndarray:
    """``V diag(e)^-1/2`` over the eigenpairs of ``block`` above ``tolerance`` (largest first)."""
    if len(block) == 0:
        return np.zeros((0, 0))
    values, vectors = np.linalg.eigh(block)
    keep = values > tolerance * max(1.0, float(values[-1]))
    return (vectors[:, keep] / np.sqrt(values[keep]))[:, ::-1]
