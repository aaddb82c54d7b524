"""Small real datasets bundled with polybeam, and train/test splits of them.

The UCI datasets below ship gzipped in LIBSVM format (1-based indices, rows
shuffled once with a fixed seed); see ``data/README.md`` for their origin.

========== ====== ======== ===================================================
name       rows   features labels
========== ====== ======== ===================================================
spam       4601   57       +1 spam / -1 mail (UCI Spambase)
letter     20000  16       1..26 for A..Z (UCI Letter Recognition)
satellite  6435   36       1..6 (UCI Statlog Landsat)
dna        3186   180      1..3 (UCI/StatLog splice junctions)
========== ====== ======== ===================================================

Feature groups with costs for cost-sensitive group sequencing ship as group
specifications (:mod:`polybeam.selection.groups`); :data:`GROUP_SPECS` maps
each to its dataset and :func:`group_spec_path` finds the file.

>>> batch = load("spam")
>>> len(batch), sorted(set(batch.labels.tolist()))
(4601, [-1.0, 1.0])
>>> int(load("letter", binary=True).labels.max())
1
"""

from __future__ import annotations

import gzip
import os
from importlib import resources

import numpy as np

from polybeam.learners.batch import ExampleBatch

ROWS = {"spam": 4601, "letter": 20000, "satellite": 6435, "dna": 3186}
# Bundled group specifications (groups/<name>.json) and the dataset each covers.
GROUP_SPECS = {"spam": "spam", "satellite_band": "satellite", "satellite_pixel": "satellite", "dna": "dna"}


def path(name: str) -> str:
    """Filesystem path of a bundled dataset's gzipped LIBSVM file."""
    if name not in ROWS:
        raise ValueError(f"no bundled dataset {name!r}; choose one of {', '.join(ROWS)}")
    return str(resources.files("polybeam.datasets") / "data" / f"{name}.libsvm.gz")


def group_spec_path(name: str) -> str:
    """Filesystem path of a bundled group specification (JSON with a ``description`` of its costs).

    >>> os.path.basename(group_spec_path("satellite_band"))
    'satellite_band.json'
    >>> group_spec_path("letter")
    Traceback (most recent call last):
    ...
    ValueError: no bundled group specification 'letter'; choose one of spam, satellite_band, satellite_pixel, dna
    """
    if name not in GROUP_SPECS:
        raise ValueError(f"no bundled group specification {name!r}; choose one of {', '.join(GROUP_SPECS)}")
    return str(resources.files("polybeam.datasets") / "groups" / f"{name}.json")


def lines(name: str, *, binary: bool = False) -> list[bytes]:
    """The dataset's LIBSVM lines (with newlines); ``binary`` relabels it as a +-1 task."""
    with gzip.open(path(name), "rb") as handle:
        rows = handle.read().splitlines(keepends=True)
    if binary:
        rows = [binary_line(name, row) for row in rows]
    return rows


def binary_label(name: str, label: float) -> float:
    """The binary task of each dataset: letter A-M (+1) vs N-Z; the first class vs the rest otherwise."""
    if name == "spam":
        return label
    if name == "letter":
        return 1.0 if label <= 13 else -1.0
    return 1.0 if label == 1 else -1.0


def binary_line(name: str, line: bytes) -> bytes:
    label, _, rest = line.partition(b" ")
    return b"%+d %s" % (binary_label(name, float(label)), rest)


def load(name: str, *, bits: int = 18, binary: bool = False) -> ExampleBatch:
    """The whole dataset as one ExampleBatch (slots = the file's feature indices)."""
    from polybeam.formats.libsvm import LibsvmFormat

    parsed = LibsvmFormat(bits=bits).parse(b"".join(lines(name, binary=binary)), source=path(name))
    if parsed.dead_letters:
        raise ValueError(f"bundled dataset {name} has unreadable rows: {parsed.dead_letters[:3]}")
    return parsed.batch


def write_split(
    name: str,
    directory: str,
    *,
    test_fraction: float = 0.2,
    seed: int | None = None,
    binary: bool = False,
) -> tuple[str, str]:
    """Write a train/test split of a bundled dataset as LIBSVM files.

    The bundled files are already shuffled, so by default (``seed=None``) the
    last ``test_fraction`` of the rows is the test set; a ``seed`` draws the test
    rows at random instead (e.g. to average over several splits). Returns the
    two paths (``<name>[.binary].train.libsvm``, ``...test.libsvm``). The same
    arguments always give the same files, so that peers (e.g. Vowpal Wabbit) can
    be measured on exactly the same split.
    """
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be between 0 and 1, got {test_fraction}")
    rows = lines(name, binary=binary)
    n_test = int(round(test_fraction * len(rows)))
    if seed is None:
        order = np.roll(np.arange(len(rows)), n_test)  # the last n_test rows first
    else:
        order = np.random.default_rng(seed).permutation(len(rows))
    os.makedirs(directory, exist_ok=True)
    stem = os.path.join(directory, f"{name}{'.binary' if binary else ''}")
    paths = (f"{stem}.train.libsvm", f"{stem}.test.libsvm")
    for target, chosen in zip(paths, (order[n_test:], order[:n_test])):
        with open(target, "wb") as handle:
            handle.writelines(rows[i] for i in sorted(chosen))
    return paths
