"""Shared fixtures for the parser tests."""

from __future__ import annotations

import gzip
from importlib import resources
from types import SimpleNamespace

import pytest


@pytest.fixture(scope="session")
def dataset_bytes():
    """``name -> decompressed bytes`` of the bundled LIBSVM datasets (read once)."""
    cache: dict[str, bytes] = {}

    def load(name: str) -> bytes:
        if name not in cache:
            path = resources.files("polybeam.datasets").joinpath(f"data/{name}.libsvm.gz")
            cache[name] = gzip.decompress(path.read_bytes())
        return cache[name]

    return load


@pytest.fixture(scope="session")
def vowpal():
    """A quiet 18-bit Vowpal Wabbit workspace (as ``vowpal.workspace``), for hashing comparisons.

    It is wrapped because hypothesis calls ``setup_example`` on a test's first
    argument when it has one, as VW's workspace does.
    """
    vowpalwabbit = pytest.importorskip("vowpalwabbit")
    workspace = vowpalwabbit.Workspace("--quiet -b 18")
    yield SimpleNamespace(workspace=workspace)
    workspace.finish()
