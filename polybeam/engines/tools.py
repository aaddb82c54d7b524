"""Where engine artifacts are cached, and the programs building them need.

>>> cache_dir().name
'polybeam-engines'
>>> joined_options(["--runner", "SparkRunner", "--x=1", "--flag", "--spark_master_url", "local[2]"])
['--runner=SparkRunner', '--x=1', '--flag', '--spark_master_url=local[2]']
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

# What to install when a program is missing (this machine's kind has all three).
INSTALL_HINTS = {
    "java": "a Java 17 runtime (Debian: apt-get install openjdk-17-jre-headless)",
    "mvn": "Apache Maven 3.8+ (Debian: apt-get install maven)",
    "go": "Go 1.22+ (https://go.dev/doc/install)",
}


class EngineUnavailable(RuntimeError):
    """An engine cannot be fetched or started here; the message says what is missing."""


def cache_dir() -> Path:
    """The cache of built engine artifacts: ``$POLYBEAM_ENGINE_CACHE`` or ``~/.cache/polybeam-engines``."""
    configured = os.environ.get("POLYBEAM_ENGINE_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "polybeam-engines"


def require(*programs: str) -> dict[str, str]:
    """The paths of ``programs`` on PATH; raise EngineUnavailable naming every missing one and how to get it."""
    found = {program: shutil.which(program) for program in programs}
    missing = [program for program, path in found.items() if path is None]
    if missing:
        needs = "; ".join(f"{program}: {INSTALL_HINTS.get(program, 'not on PATH')}" for program in missing)
        raise EngineUnavailable(f"missing {', '.join(missing)} ({needs})")
    return found


def joined_options(words: list[str]) -> list[str]:
    """Options as ``--name=value`` words (``--name value`` pairs joined), so that each is one shell word."""
    joined: list[str] = []
    for word in words:
        if joined and not word.startswith("--") and joined[-1].startswith("--") and "=" not in joined[-1]:
            joined[-1] = f"{joined[-1]}={word}"
        else:
            joined.append(word)
    return joined
