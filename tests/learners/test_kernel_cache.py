"""The kernel cache: content-based stamps, where cache files go, and that an installed polybeam starts warm."""

import ast
import glob
import importlib.util
import itertools
import os
import pickle
import subprocess
import sys

import numba
import pytest

from polybeam.learners import kernel_cache, kernels

KERNEL_SOURCE = """
import numba


@numba.njit(cache=True)
def double(x):
    return 2.0 * x
"""
_modules = itertools.count()


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A stand-in for polybeam's package folder holding one kernel module, with the locator in charge of it."""
    if kernel_cache.LOCATOR is None:
        pytest.skip("this numba has no caching API the locator can use: numba caches as usual")
    root = tmp_path / "package"
    root.mkdir()
    (root / "tiny.py").write_text(KERNEL_SOURCE)
    monkeypatch.setattr(kernel_cache, "PACKAGE_ROOT", str(root))
    monkeypatch.setattr(numba.config, "CACHE_DIR", "")  # a NUMBA_CACHE_DIR of the caller's would take over
    yield root
    kernel_cache._cache_dir_of.cache_clear()  # the folders chosen for the stand-in's files


def fresh_kernel(path):
    """``double`` from a new import of the module at ``path``: a new dispatcher, which looks at the cache afresh."""
    spec = importlib.util.spec_from_file_location(f"kernel_cache_test_{next(_modules)}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.double


def run(kernel) -> tuple[int, int]:
    """Call the kernel once; (cache hits, cache misses = compilations)."""
    assert kernel(1.5) == 3.0
    return sum(kernel.stats.cache_hits.values()), sum(kernel.stats.cache_misses.values())


def test_the_locator_comes_first_and_takes_polybeams_kernels_only():
    if kernel_cache.LOCATOR is None:
        pytest.skip("this numba has no caching API the locator can use")
    from numba.core.caching import CacheImpl

    assert CacheImpl._locator_classes[0] is kernel_cache.LOCATOR
    assert isinstance(kernels.learn_batch._cache._impl.locator, kernel_cache.LOCATOR)
    assert kernel_cache.LOCATOR.from_function(run, __file__) is None  # not polybeam's: numba's locators


def test_the_stamp_is_the_content_not_the_modification_time(tmp_path):
    source = tmp_path / "module.py"
    source.write_text("x = 1\n")
    stamp = kernel_cache.source_digest(str(source))
    os.utime(source, (1, 1))  # as pip gives every installed file the install time
    assert kernel_cache.source_digest(str(source)) == stamp
    source.write_text("x = 2\n")
    os.utime(source, (1, 1))
    assert kernel_cache.source_digest(str(source)) != stamp


def test_a_touched_source_keeps_its_cache_and_an_edited_one_compiles_again(package):
    path = package / "tiny.py"
    assert run(fresh_kernel(path)) == (0, 1)
    assert glob.glob(str(package / "__pycache__" / "tiny.double-*.nbi"))  # in-tree, next to the source
    os.utime(path, (1, 1))
    assert run(fresh_kernel(path)) == (1, 0)
    path.write_text(KERNEL_SOURCE + "# edited\n")  # same function, same line: only the stamp tells
    assert run(fresh_kernel(path)) == (0, 1)


def test_a_read_only_package_starts_from_a_copy_of_its_cache(package, tmp_path, monkeypatch):
    path = package / "tiny.py"
    run(fresh_kernel(path))  # the "shipped" cache, in the package's __pycache__
    packaged = kernel_cache.packaged_cache_dir(str(path))
    writable = kernel_cache.is_writable_dir
    monkeypatch.setattr(kernel_cache, "is_writable_dir", lambda folder: folder != packaged and writable(folder))
    monkeypatch.setattr(kernel_cache, "default_user_root", lambda: str(tmp_path / "user"))
    kernel_cache._cache_dir_of.cache_clear()  # the folder is chosen once per file and process
    kernel = fresh_kernel(path)
    assert run(kernel) == (1, 0)  # loaded, not compiled
    assert kernel.stats.cache_path == kernel_cache.user_cache_dir(str(path), str(tmp_path / "user"))


def test_the_cache_folder_falls_back_to_the_user_cache_when_the_package_is_not_writable(package, tmp_path):
    path = str(package / "tiny.py")
    assert kernel_cache.choose_cache_dir(path) == str(package / "__pycache__")
    os.rmdir(package / "__pycache__")
    (package / "__pycache__").write_text("")  # a file: no folder can be made there, even by root
    chosen = kernel_cache.choose_cache_dir(path, user_root=str(tmp_path / "user"))
    assert chosen == kernel_cache.user_cache_dir(path, str(tmp_path / "user"))
    assert os.path.basename(chosen).startswith("tiny-") and os.path.isdir(chosen)
    # NUMBA_CACHE_DIR (an explicit root) is used even when the package is writable.
    explicit = kernel_cache.choose_cache_dir(path, explicit_root=str(tmp_path / "numba"))
    assert explicit.startswith(str(tmp_path / "numba"))
    # Nothing writable: the locator steps aside and numba's own locators decide.
    blocked = tmp_path / "blocked"
    blocked.write_text("")
    assert kernel_cache.choose_cache_dir(path, user_root=str(blocked / "below")) is None


def test_seeding_copies_the_modules_cache_files_once_and_keeps_newer_ones(tmp_path):
    source = tmp_path / "tiny.py"
    source.write_text(KERNEL_SOURCE)
    packaged = tmp_path / "__pycache__"
    packaged.mkdir()
    for name in ("tiny.double-6.py311.nbi", "tiny.double-6.py311.1.nbc", "other.f-1.py311.nbi", "tiny.cpython-311.pyc"):
        (packaged / name).write_bytes(b"packaged")
    target = tmp_path / "user"
    target.mkdir()
    (target / "tiny.double-6.py311.nbi").write_bytes(b"compiled here")
    assert kernel_cache.seed_from_packaged(str(source), str(target)) == 1
    assert sorted(os.listdir(target)) == ["tiny.double-6.py311.1.nbc", "tiny.double-6.py311.nbi"]
    assert (target / "tiny.double-6.py311.nbi").read_bytes() == b"compiled here"
    assert kernel_cache.seed_from_packaged(str(source), str(target)) == 0


def _imports_kernel_cache(statement: ast.stmt) -> bool:
    """``from polybeam.learners import kernel_cache`` (alone or with other names)."""
    return (
        isinstance(statement, ast.ImportFrom)
        and statement.module == "polybeam.learners"
        and any(alias.name == "kernel_cache" for alias in statement.names)
    )


def test_every_kernel_module_sets_the_locator_up_before_its_kernels():
    late = []
    for path in glob.glob(os.path.join(kernel_cache.PACKAGE_ROOT, "**", "*.py"), recursive=True):
        text = open(path, encoding="utf-8").read()
        if "cache=True" in text and not path.endswith("kernel_cache.py"):
            first_kernel = text[: text.find("cache=True")].count("\n") + 1
            setup = [node.lineno for node in ast.parse(text).body if _imports_kernel_cache(node)]
            if not setup or setup[0] > first_kernel:
                late.append(os.path.relpath(path, kernel_cache.PACKAGE_ROOT))
    assert not late, f"import polybeam.learners.kernel_cache before the first @njit(cache=True) in {late}"


@pytest.mark.slow
def test_the_warm_up_runs_every_exercise():
    from polybeam import warm

    timings = warm.warm()
    assert set(warm.EXERCISES) <= set(timings)


def _installed_package(cwd) -> str | None:
    """Where a fresh interpreter started outside the repository imports polybeam from (None: nowhere)."""
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    found = subprocess.run(
        [sys.executable, "-c", "import os, polybeam; print(os.path.dirname(polybeam.__file__))"],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
    )
    return found.stdout.strip() if found.returncode == 0 else None


@pytest.mark.slow
@pytest.mark.subprocess
def test_an_installed_polybeam_loads_its_kernels_from_the_shipped_cache(tmp_path):
    source_tree = os.path.dirname(os.path.abspath(kernel_cache.PACKAGE_ROOT))
    installed = _installed_package(tmp_path)
    if installed is None or os.path.abspath(installed).startswith(os.path.join(source_tree, "")):
        pytest.skip(
            "polybeam is not installed from a wheel here (an editable install or the source tree): "
            "only `pip install .` builds the shipped kernel cache"
        )
    shipped = glob.glob(os.path.join(installed, "**", "__pycache__", "*.nbi"), recursive=True)
    assert shipped, f"the installed polybeam at {installed} ships no compiled kernels"
    with open(shipped[0], "rb") as index:
        built_with = pickle.load(index)
    if built_with != numba.__version__:
        pytest.skip(f"the shipped cache was built with numba {built_with}, this is numba {numba.__version__}")
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    # A scratch NUMBA_CACHE_DIR (seeded from the shipped cache) keeps the installation as
    # it is, so a kernel compiled here would show again in the next run.
    environment.update(NUMBA_DEBUG_CACHE="1", NUMBA_CACHE_DIR=str(tmp_path / "scratch"))
    result = subprocess.run(
        [sys.executable, "-m", "polybeam.warm", "--quiet"],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    compiled = [line for line in result.stdout.splitlines() if "data saved" in line]
    assert not compiled, "compiled instead of loaded from the shipped cache:\n" + "\n".join(compiled[:20])
    assert "data loaded" in result.stdout
