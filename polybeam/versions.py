"""The versions of polybeam and of what it runs on, without importing any of them (``polybeam --version``
answers at once; a worker records them in every model it writes).

>>> sorted(versions())
['apache_beam', 'numba', 'polybeam', 'python']
>>> version_line().startswith("polybeam ")
True
"""

from __future__ import annotations

import functools
import platform
from importlib import metadata

import polybeam

# Distribution name -> the key a provenance record uses.
_PACKAGES = {"apache-beam": "apache_beam", "numba": "numba"}


@functools.cache  # a process's packages do not change, and reading their metadata is slow
def _installed(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def versions() -> dict[str, str | None]:
    """polybeam's version, Apache Beam's, numba's and Python's (None for a package that is not installed)."""
    found = {"polybeam": polybeam.__version__}
    found.update({key: _installed(distribution) for distribution, key in _PACKAGES.items()})
    found["python"] = platform.python_version()
    return found


def version_line(found: dict | None = None) -> str:
    """``polybeam 0.1.0 (Apache Beam 2.77.0, numba 0.61.2, Python 3.11.7)``."""
    found = versions() if found is None else found
    return (
        f"polybeam {found.get('polybeam')} (Apache Beam {found.get('apache_beam')}, numba {found.get('numba')}, "
        f"Python {found.get('python')})"
    )
