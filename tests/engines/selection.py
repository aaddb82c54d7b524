"""Which engines the engine suite runs on: ``POLYBEAM_ENGINES`` (setups of ``polybeam.engines.running``,
comma-separated, ``all`` or ``none``), else the CI's :data:`DEFAULT_ENGINES`.

Starting an engine is the package's (``polybeam.engines.running``, also behind ``polybeam engines start``);
choosing which to test is the suite's.
"""

from __future__ import annotations

import os

import pytest

from polybeam.engines.running import SETUPS

# CI runs embedded Flink; the standalone cluster (POLYBEAM_ENGINES=flink-cluster, or all) adds several minutes
# that CI's time limit no longer leaves.
DEFAULT_ENGINES = ("flink-embedded",)


def selected() -> list[str]:
    """The engines to run: ``POLYBEAM_ENGINES`` (names, ``all``, or ``none``), else DEFAULT_ENGINES."""
    chosen = os.environ.get("POLYBEAM_ENGINES", ",".join(DEFAULT_ENGINES)).strip()
    if chosen == "none":
        return []
    names = list(SETUPS) if chosen == "all" else [name.strip() for name in chosen.split(",") if name.strip()]
    unknown = [name for name in names if name not in SETUPS]
    if unknown:
        raise ValueError(f"POLYBEAM_ENGINES: unknown engines {unknown}; known: {sorted(SETUPS)}")
    return names


def skip_unless_selected(*engines: str) -> None:
    """Skip the calling test unless one of ``engines`` is selected: a test that builds or starts an engine
    CI does not run (Prism's Go build, Spark's job-server jar) runs where that engine is asked for."""
    if not set(engines) & set(selected()):
        pytest.skip(f"{' or '.join(engines)} not selected (POLYBEAM_ENGINES={engines[0]}, or all, runs it)")
