"""Cost-sensitive feature group sequencing, pure numpy/scipy/numba (no Beam).

``groups`` (the group specification), ``statistics`` (Gram statistics over
the groups' columns), ``standardize`` (the standardised problem),
``whitening`` (each group's basis), ``cholesky`` (the growing factor),
``sequencing`` (CS-G-OMP, CS-G-FR, Doubling and the comparison variants),
``group_lasso`` (the Sparse baseline), ``anytime`` (prefix records and the
anytime predictor) and ``timeliness`` (curves, alpha-timeliness, Oracle).
"""

from polybeam.selection.anytime import AnytimeModel, AnytimeModelError, prefix_records, sequence_statistics
from polybeam.selection.groups import FeatureGroup, GroupSpec, GroupSpecError
from polybeam.selection.sequencing import METHODS, SequenceResult, sequence
from polybeam.selection.statistics import GramStatistics

__all__ = [
    "METHODS",
    "AnytimeModel",
    "AnytimeModelError",
    "FeatureGroup",
    "GramStatistics",
    "GroupSpec",
    "GroupSpecError",
    "SequenceResult",
    "prefix_records",
    "sequence",
    "sequence_statistics",
]
