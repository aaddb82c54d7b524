"""polybeam: scalable nonlinear online learning as an Apache Beam plugin."""

from setuptools import find_packages, setup

setup(
    name="polybeam",
    version="0.1.0",
    description=(
        "Apache Beam transforms for sparse, tuning-free online learning with "
        "adaptive polynomial expansion"
    ),
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.11",
    packages=find_packages(include=["polybeam", "polybeam.*"]),
    package_data={"polybeam.datasets": ["data/*.libsvm.gz", "groups/*.json"]},
    install_requires=[
        "apache-beam>=2.77,<3",
        "numpy>=1.26",
        "scipy>=1.11",
        "numba>=0.60",
        "pyarrow>=14",
    ],
    extras_require={
        # mmh3 is the reference MurmurHash3 the tests check polybeam's numba
        # hashing against; it is never imported by the package.
        "test": ["pytest>=8", "hypothesis>=6.100", "mmh3>=4"],
        "plot": ["matplotlib>=3.8"],
        # Peers for side-by-side benchmarks only; never imported by the package.
        "bench": ["vowpalwabbit>=9.9", "scikit-learn>=1.4", "matplotlib>=3.8"],
    },
    entry_points={"console_scripts": ["polybeam=polybeam.pipelines.cli:main"]},
)
