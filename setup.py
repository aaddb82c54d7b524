"""polybeam: scalable nonlinear online learning as an Apache Beam plugin."""

import glob
import os
import subprocess
import sys

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

# numba's versions whose private caching API polybeam.learners.kernel_cache was checked
# against (numba/core/caching.py); raise the bound after checking a new one (here and in
# build_backend/polybeam_build.py, which compiles the kernels with it at build time).
NUMBA = "numba>=0.60,<0.69"
# Environment variables that would send the build's kernel cache elsewhere or skip it.
CACHE_ENVIRONMENT = ("NUMBA_CACHE_DIR", "NUMBA_CACHE_LOCATOR_CLASSES", "NUMBA_DISABLE_JIT")


def warm_kernel_cache(build_lib: str) -> None:
    """Compile polybeam's numba kernels into the build tree, so the wheel ships them.

    Runs ``python -m polybeam.warm`` on the copy of the package in ``build_lib``
    (in a child process, without writing bytecode there); numba writes the
    compiled kernels next to that copy's sources (``__pycache__/*.nbi, *.nbc``),
    and the wheel takes everything in ``build_lib``. A failure only warns: the
    package then compiles its kernels on first use, as before.
    """
    package = os.path.join(build_lib, "polybeam")
    for stale in glob.glob(os.path.join(package, "**", "__pycache__", "*.nb[ic]"), recursive=True):
        os.remove(stale)  # from an earlier build of other sources
    environment = {key: value for key, value in os.environ.items() if key not in CACHE_ENVIRONMENT}
    # Keep what pip's isolated build environment put on the path (numba, numpy, ...).
    search_path = [os.path.abspath(build_lib), os.environ.get("PYTHONPATH")]
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, search_path))
    environment["PYTHONDONTWRITEBYTECODE"] = "1"
    command = [sys.executable, "-m", "polybeam.warm", "--expect-package", os.path.abspath(package)]
    result = subprocess.run(command, cwd=build_lib, env=environment)
    cached = glob.glob(os.path.join(package, "**", "__pycache__", "*.nbi"), recursive=True)
    if result.returncode != 0 or not cached:
        print(
            f"warning: polybeam's numba kernels were not compiled at build time ({' '.join(command)} "
            f"exited with {result.returncode}, {len(cached)} kernel cache files); they compile on first use",
            file=sys.stderr,
        )


class BuildPyWithKernels(build_py):
    """build_py that also compiles the numba kernels into the build tree (not for editable installs).

    ``POLYBEAM_NO_KERNEL_CACHE=1`` skips it (e.g. a wheel built for other CPUs,
    which could not use this machine's compiled code anyway).
    """

    def run(self):
        super().run()
        if not getattr(self, "editable_mode", False) and not os.environ.get("POLYBEAM_NO_KERNEL_CACHE"):
            warm_kernel_cache(self.build_lib)


setup(
    name="polybeam",
    version="0.1.0",
    description=("Apache Beam transforms for sparse, tuning-free online learning with adaptive polynomial expansion"),
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.11",
    packages=find_packages(include=["polybeam", "polybeam.*"]),
    package_data={
        "polybeam": ["yaml_providers.yaml"],
        "polybeam.datasets": ["data/*.libsvm.gz", "groups/*.json"],
        # The POMs Maven resolves Beam's Flink and Spark job servers from (polybeam engines fetch).
        "polybeam.engines": ["poms/*.xml"],
    },
    install_requires=[
        "apache-beam>=2.77,<3",
        "numpy>=1.26",
        "scipy>=1.11",
        NUMBA,
        "pyarrow>=14",
    ],
    extras_require={
        # mmh3 is the reference MurmurHash3 the tests check polybeam's numba
        # hashing against; it is never imported by the package.
        # The tests run a Beam YAML pipeline with Beam's own runner of them (apache-beam's yaml extra),
        # and draw the plots of polybeam plot and timeliness --plot (matplotlib).
        # The tests also run polybeam.sklearn's estimators through scikit-learn's own checks, and
        # learners and RunInference on pandas data (pandas is never required by the package).
        # pytest-xdist runs the quick run on both cores (-n 2); ruff is the linter and formatter a test holds the
        # tree to (tests/test_lint.py), pinned below its next minor release, whose new rules would fail CI unasked.
        "test": [
            "pytest>=8",
            "hypothesis>=6.100",
            "mmh3>=4",
            "apache-beam[yaml]>=2.77,<3",
            "matplotlib>=3.8",
            "scikit-learn>=1.4",
            "pandas>=2",
            "pytest-xdist>=3.5",
            "ruff>=0.17,<0.18",
        ],
        "plot": ["matplotlib>=3.8"],
        # polybeam.sklearn's estimators (PolybeamClassifier, PolybeamRegressor); only that module imports it.
        "sklearn": ["scikit-learn>=1.4"],
        # Beam YAML pipelines that call polybeam's transforms (polybeam/yaml_providers.yaml).
        "yaml": ["apache-beam[yaml]>=2.77,<3"],
        # Peers for side-by-side benchmarks only; never imported by the package.
        "bench": ["vowpalwabbit>=9.9", "scikit-learn>=1.4", "matplotlib>=3.8", "rdata>=1.0"],
    },
    entry_points={"console_scripts": ["polybeam=polybeam.pipelines.cli:main"]},
    cmdclass={"build_py": BuildPyWithKernels},
)
