"""Benchmark scripts are files, not a package: load one as a module for its smoke test."""

from __future__ import annotations

import importlib.util
import os
import sys
from types import ModuleType

BENCHMARKS = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks")


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as a module (registered, since dataclasses look their module up)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(BENCHMARKS, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
