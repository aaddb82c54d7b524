"""Beam's Prism runner, built from the Go module proxy, where Beam's Python SDK looks for it.

``--runner PrismRunner`` (and the ``DirectRunner`` name, which tries Prism
first) download a Prism binary from GitHub's release pages, which this
machine cannot reach. :func:`binary` builds the same program with ``go
install`` at the installed Beam's version; :func:`install_for_beam` puts it
in Beam's download cache exactly as a download would have left it (the
release zip, holding the binary under the zip's own name), so both runner
names find it offline with no option. ``--prism_location PATH`` also takes
the binary directly.
"""

from __future__ import annotations

import os
import platform
import subprocess
import zipfile
from pathlib import Path

from polybeam.engines import processes
from polybeam.engines.tools import EngineUnavailable, cache_dir, require

MODULE = "github.com/apache/beam/sdks/v2/go/cmd/prism"
# Where apache_beam.runners.portability.prism_runner keeps downloaded binaries (its BIN_CACHE).
BEAM_PRISM_CACHE = Path.home() / ".apache_beam" / "cache" / "prism" / "bin"
GOARCH = {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


def beam_version() -> str:
    from apache_beam.version import __version__

    return __version__


def binary(version: str | None = None, *, force: bool = False) -> Path:
    """Prism at Beam ``version`` (the installed one by default), built into the cache on first use."""
    version = version or beam_version()
    folder = cache_dir() / f"prism-v{version}"
    built = folder / "prism"
    if built.exists() and not force:
        return built
    go = require("go")["go"]
    folder.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [go, "install", f"{MODULE}@v{version}"],
        env={**os.environ, "GOBIN": str(folder)},
        capture_output=True,
        text=True,
    )
    if result.returncode != 0 or not built.exists():
        raise EngineUnavailable(f"go install {MODULE}@v{version} failed:\n{result.stderr[-1500:]}")
    return built


def release_name(version: str) -> str:
    """The name Beam gives the release zip of ``version`` for this machine (and the binary inside it).

    >>> release_name("2.77.0") in {"apache_beam-v2.77.0-prism-linux-amd64", "apache_beam-v2.77.0-prism-darwin-arm64"}
    True
    """
    system = platform.system().lower()
    arch = GOARCH.get(platform.machine(), platform.machine())
    return f"apache_beam-v{version}-prism-{system}-{arch}"


def install_for_beam(version: str | None = None) -> Path:
    """Build Prism and leave it in Beam's download cache; the zip's path."""
    version = version or beam_version()
    built = binary(version)
    name = release_name(version)
    BEAM_PRISM_CACHE.mkdir(parents=True, exist_ok=True)
    archive = BEAM_PRISM_CACHE / f"{name}.zip"
    partial = archive.with_suffix(".partial")
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as release:
        release.write(built, arcname=name)
    partial.replace(archive)
    (BEAM_PRISM_CACHE / name).unlink(missing_ok=True)  # an older extraction: Beam extracts the new zip
    return archive


def versions() -> str:
    """What a started Prism runs (:mod:`polybeam.engines.running`)."""
    return f"Prism v{beam_version()} (go install)"


def serve(workdir: Path, master: None = None, *, version: str | None = None) -> processes.Service:
    """Prism as a job service for many jobs (``--runner PortableRunner --job_endpoint localhost:PORT``), at
    Beam ``version`` (the installed one by default); it has no master."""
    port = processes.free_port()
    argv = [str(binary(version)), "--job_port", str(port), "--serve_http=false", "--log_level", "warn"]
    service = processes.start("prism", argv, port, workdir / "prism")
    processes.wait_until_listening(service)
    return service


def served_options(master: None, parallelism: int) -> list[str]:
    """What a job sent to :func:`serve`'s Prism adds to the portable runner's options: nothing (the engine
    suite's jobs ran on Prism with the portable runner's defaults)."""
    return []


def fetched() -> bool:
    """Whether Prism for the installed Beam is built (``polybeam engines fetch prism``)."""
    return (cache_dir() / f"prism-v{beam_version()}" / "prism").exists()


def polybeam_options(master: str | None = None) -> list[str]:
    """The options that run a polybeam command on Prism built before (``polybeam engines options prism``)."""
    if not fetched():
        raise EngineUnavailable(
            f"Prism v{beam_version()} is not fetched: run polybeam engines fetch prism (needs Go 1.22+)"
        )
    return ["--runner=PrismRunner", f"--prism_location={binary()}"]


def fetch() -> list[Path]:
    """Prism built for the installed Beam, and left where Beam's runner looks for a downloaded one."""
    return [binary(), install_for_beam()]
