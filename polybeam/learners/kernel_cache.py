"""Where numba caches polybeam's compiled kernels, so that an installed polybeam starts warm.

Every ``@numba.njit(cache=True)`` function of polybeam is compiled once and its
machine code kept in a cache directory; a later process loads it instead of
compiling (which takes seconds). Building the wheel runs :mod:`polybeam.warm`,
so the package ships that cache in the ``__pycache__`` folders next to its
kernel modules, and the first run after ``pip install .`` compiles nothing.

numba (0.68) finds a function's cache with the first of its *locators* that
accepts the function, and its own in-tree locator accepts only a writable
``__pycache__``: a read-only site-packages (a container image run as another
user) would fall through to an empty per-user directory and compile again. So
this module puts :class:`PolybeamCacheLocator` first, for polybeam's own files
only (every other file keeps numba's locators):

- the cache directory is the packaged ``__pycache__`` when it is writable;
  otherwise, or when ``NUMBA_CACHE_DIR`` is set, a directory of its own per
  source file under ``NUMBA_CACHE_DIR`` or the per-user cache
  (``~/.cache/polybeam/kernels``), named by the file's content hash and first
  filled with a copy of the packaged cache, so it starts warm too;
- the source stamp a cache entry is checked against is the SHA-256 of the source
  file's content, as in numba 0.68 (older numba used the file's mtime, which pip
  sets to the install time). The digest is the same bytes numba 0.68 computes,
  so its own locator and this one read each other's cache files.

numba still checks the rest of each entry: its own version, the Python version,
the function's bytecode and the CPU (an entry compiled for another CPU is not
used; that machine compiles once and adds its own entry). The module relies on
numba's private caching classes; without them it changes nothing and numba
caches as usual. Each kernel module imports it before defining its kernels.

Why not numba's own cache, warmed by ``python -m polybeam.warm`` after install:
numba skips any cache folder it cannot write, even to read it, so in a read-only
site-packages it compiles again and the first command was 5-10 times slower
(``benchmarks/bench_kernel_cache.py``, ``benchmarks/results/kernel_cache.md``).

>>> is_polybeam_source(os.path.join(PACKAGE_ROOT, "learners", "kernels.py"))
True
>>> is_polybeam_source(os.__file__)
False
>>> len(source_digest(__file__))   # SHA-256, as numba 0.68's own stamp
32
"""

from __future__ import annotations

import functools
import glob
import hashlib
import os
import shutil
import tempfile
import uuid

# polybeam's package folder: the locator takes charge of the files under it.
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The in-tree cache folder numba uses too, so a development checkout keeps its cache.
PACKAGED_FOLDER = "__pycache__"
CACHE_PATTERNS = ("*.nbi", "*.nbc")  # numba's index and data files


def is_polybeam_source(path: str, package_root: str | None = None) -> bool:
    """Whether ``path`` is a source file inside ``package_root`` (default: polybeam's)."""
    return os.path.abspath(path).startswith(os.path.join(package_root or PACKAGE_ROOT, ""))


@functools.cache
def _digest(path: str, status_key: tuple) -> bytes:
    # The file's status is only the memo key, so that a file edited while the process
    # runs is hashed again (ctime too: a write changes it, and utime cannot set it);
    # the stamp itself depends on the content alone.
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).digest()


def source_digest(path: str) -> bytes:
    """The SHA-256 of the file's content: the source stamp of its cache entries.

    Touching the file (a new mtime, as every file pip installs gets) keeps the
    stamp; changing a byte changes it.
    """
    status = os.stat(path)
    return _digest(path, (status.st_mtime_ns, status.st_ctime_ns, status.st_size, status.st_ino))


def packaged_cache_dir(source_path: str) -> str:
    """The ``__pycache__`` folder next to ``source_path``: where the wheel ships its kernels."""
    return os.path.join(os.path.dirname(os.path.abspath(source_path)), PACKAGED_FOLDER)


def default_user_root() -> str:
    """The per-user cache root: ``$XDG_CACHE_HOME/polybeam/kernels`` (``~/.cache`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "polybeam", "kernels")


def user_cache_dir(source_path: str, root: str, package_root: str | None = None) -> str:
    """A cache folder of ``source_path``'s own under ``root``, named by module and content.

    The content hash in the name means a folder only ever holds entries for one
    version of the file, so copying the packaged cache into it never mixes
    versions, and an upgrade starts from the new packaged cache.

    >>> user_cache_dir(os.path.join(PACKAGE_ROOT, "learners", "kernel_cache.py"), "/cache")  # doctest: +ELLIPSIS
    '/cache/learners.kernel_cache-...'
    """
    relative = os.path.relpath(os.path.abspath(source_path), package_root or PACKAGE_ROOT)
    module = os.path.splitext(relative)[0].replace(os.sep, ".")
    return os.path.join(root, f"{module}-{source_digest(source_path).hex()[:16]}")


def is_writable_dir(path: str) -> bool:
    """Whether ``path`` exists or can be made, and a file can be written in it (numba's test)."""
    try:
        os.makedirs(path, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return False
    return True


def seed_from_packaged(source_path: str, target: str) -> int:
    """Copy the packaged cache files of ``source_path``'s module into ``target``; returns how many.

    Files already in ``target`` are kept (they may hold entries compiled here,
    e.g. for this CPU). Data files are copied before index files, each through a
    temporary name, so a concurrent process never sees an index whose data is
    missing or a half-written file.
    """
    stem = os.path.splitext(os.path.basename(source_path))[0]
    packaged = packaged_cache_dir(source_path)
    copied = 0
    for pattern in reversed(CACHE_PATTERNS):  # data (.nbc) first, then the index (.nbi)
        for source in sorted(glob.glob(os.path.join(glob.escape(packaged), f"{stem}.{pattern}"))):
            destination = os.path.join(target, os.path.basename(source))
            if os.path.exists(destination):
                continue
            partial = f"{destination}.tmp.{uuid.uuid4().hex[:16]}"
            try:
                shutil.copyfile(source, partial)
                os.replace(partial, destination)
                copied += 1
            except OSError:
                # The cache is an optimisation: a file that cannot be copied gets compiled.
                try:
                    os.unlink(partial)
                except OSError:
                    pass
    return copied


def choose_cache_dir(source_path: str, *, explicit_root: str | None = None, user_root: str | None = None) -> str | None:
    """The cache folder for the kernels of ``source_path`` (None: leave the file to numba).

    ``explicit_root`` (``NUMBA_CACHE_DIR`` when it is set) is always used, seeded
    from the packaged cache; without it the packaged ``__pycache__`` is used when
    writable, else a seeded folder under ``user_root`` (default:
    :func:`default_user_root`). None when nothing is writable.
    """
    if explicit_root is None:
        packaged = packaged_cache_dir(source_path)
        if is_writable_dir(packaged):
            return packaged
    root = explicit_root if explicit_root is not None else (user_root or default_user_root())
    target = user_cache_dir(source_path, root)
    if not is_writable_dir(target):
        return None
    seed_from_packaged(source_path, target)
    return target


@functools.cache
def _cache_dir_of(source_path: str, explicit_root: str | None) -> str | None:
    # Once per source file (it holds several kernels), not once per kernel.
    return choose_cache_dir(source_path, explicit_root=explicit_root)


def _locator_class(caching):
    """The locator class, built on numba's private base class from ``caching``."""

    class PolybeamCacheLocator(caching._CacheLocator):
        """Caches polybeam's kernels in the packaged ``__pycache__`` (see the module docstring)."""

        def __init__(self, py_func, py_file: str, cache_path: str):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._cache_path = cache_path

        def get_cache_path(self) -> str:
            return self._cache_path

        def get_source_stamp(self) -> bytes:
            return source_digest(self._py_file)

        def get_disambiguator(self) -> str:
            # numba's own choice: the line number, so cache file names match its locators'.
            return str(self._lineno)

        @classmethod
        def from_function(cls, py_func, py_file: str):
            if not is_polybeam_source(py_file) or not os.path.isfile(py_file):
                return None
            explicit_root = getattr(caching.config, "CACHE_DIR", "") or None
            cache_path = _cache_dir_of(os.path.abspath(py_file), explicit_root)
            return None if cache_path is None else cls(py_func, py_file, cache_path)

    return PolybeamCacheLocator


def install() -> type | None:
    """Put :class:`PolybeamCacheLocator` first in numba's locators and return it (None: numba lacks the API).

    Idempotent. Kernels defined before this call keep numba's locators.
    """
    try:
        from numba.core import caching

        implementation = getattr(caching, "CacheImpl", None) or caching._CacheImpl
        locators = implementation._locator_classes
        for locator in locators:
            if getattr(locator, "__name__", "") == "PolybeamCacheLocator":
                return locator
        locator = _locator_class(caching)
        locators.insert(0, locator)
    except (ImportError, AttributeError, TypeError):
        # numba's private caching API changed: its own locators still cache (in-tree).
        return None
    return locator


# The locator class in use (None when numba's private API is missing).
LOCATOR = install()
