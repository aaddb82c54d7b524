"""Cost-sensitive feature group sequencing, pure numpy/scipy/numba (no Beam).

``groups`` (the group specification), ``statistics`` (Gram statistics over
the groups' columns), ``standardize`` (the standardised problem),
``whitening`` (each group's basis), ``cholesky`` (the growing factor),
``sequencing`` (CS-G-OMP, CS-G-FR, Doubling and the comparison variants),
``group_lasso`` (the Sparse baseline), ``anytime`` (prefix records and the
anytime predictor) and ``timeliness`` (curves, alpha-timeliness, Oracle).

The names below are imported on first use (PEP 562): ``polybeam.selection.methods``
(the methods' names, for option parsing) loads without SciPy.
"""

from __future__ import annotations

from polybeam.lazy_exports import lazy_exports

# Public name -> the module that defines it.
_EXPORTS = {
    "AnytimeModel": "anytime",
    "AnytimeModelError": "anytime",
    "prefix_records": "anytime",
    "sequence_statistics": "anytime",
    "FeatureGroup": "groups",
    "GroupSpec": "groups",
    "GroupSpecError": "groups",
    "METHODS": "methods",
    "SequenceResult": "sequencing",
    "sequence": "sequencing",
    "GramStatistics": "statistics",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
