"""The wheel of the running polybeam, for a flex template's image to install (``polybeam template`` without
``--package``).

A template's Dockerfile cannot ``pip install polybeam==VERSION`` when no index serves that version (a
checkout, a fork, a release not yet published), so the template ships the code that writes it:

- run from a source tree (a checkout on ``PYTHONPATH`` or an editable install): ``pip wheel --no-deps`` of a
  clean copy of that tree, so that neither the tree gets a ``build/`` folder nor the wheel takes stale files
  from an old one;
- installed from a wheel: that wheel file if the installation recorded where it came from and it is still
  there, else the wheel packed again from the installed files (its ``RECORD`` lists them, with hashes);
- anything else (the package's files do not belong to the distribution that is installed): refused, with
  ``--package`` as the way out.

>>> source_tree(os.path.dirname(polybeam.__file__)) is None or os.path.isfile(
...     os.path.join(source_tree(os.path.dirname(polybeam.__file__)), "setup.py"))
True
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from importlib import metadata
from urllib.parse import unquote, urlparse

import polybeam

DISTRIBUTION = "polybeam"
# What a build needs no copy of: version control, earlier builds, caches, compiled code of this machine.
NOT_SOURCES = (
    ".git",
    ".hg",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    "*.pyc",
    "*.nbi",
    "*.nbc",
    ".pytest_cache",
    ".hypothesis",
    ".ruff_cache",
    ".venv",
    "venv",
    ".tox",
    "node_modules",
)
# Files an installer writes into a distribution's .dist-info; a wheel has none of them (RECORD is rewritten).
INSTALLER_FILES = ("INSTALLER", "REQUESTED", "direct_url.json", "RECORD")


class WheelError(ValueError):
    """No wheel of the running polybeam can be had here."""


REFUSAL = "pass --package with a wheel file (pip wheel --no-deps -w DIR SOURCE) or a requirement an index serves"


def source_tree(package_dir: str) -> str | None:
    """The source tree ``package_dir`` (the ``polybeam`` folder) was imported from, or None when it was
    installed: the folder above it, if that holds polybeam's ``setup.py`` or ``pyproject.toml``."""
    root = os.path.dirname(os.path.abspath(package_dir))
    for name in ("setup.py", "pyproject.toml"):
        path = os.path.join(root, name)
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as handle:
                if f'name="{DISTRIBUTION}"' in handle.read().replace("'", '"').replace(" ", ""):
                    return root
    return None


def build_from_source(root: str, wheel_dir: str) -> str:
    """``pip wheel --no-deps`` of a clean copy of the source tree ``root``; the wheel's path in ``wheel_dir``.

    The kernels are not compiled into it (``POLYBEAM_NO_KERNEL_CACHE``): numba's cache is for this machine's
    CPU, and the template's workers are other machines."""
    with tempfile.TemporaryDirectory(prefix="polybeam-wheel-") as scratch:
        copy = os.path.join(scratch, "source")
        shutil.copytree(root, copy, ignore=shutil.ignore_patterns(*NOT_SOURCES))
        built = os.path.join(scratch, "wheel")
        environment = {**os.environ, "POLYBEAM_NO_KERNEL_CACHE": "1"}
        command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", built, copy]
        done = subprocess.run(command, env=environment, capture_output=True, text=True, check=False)
        wheels = [name for name in os.listdir(built) if name.endswith(".whl")] if os.path.isdir(built) else []
        if done.returncode != 0 or len(wheels) != 1:
            detail = (done.stderr or done.stdout).strip().splitlines()[-5:]
            raise WheelError(
                f"could not build a wheel of the polybeam source tree {root} ({' '.join(command[:6])} "
                f"exited with {done.returncode}: {' / '.join(detail)}); {REFUSAL}"
            )
        return copy_into(os.path.join(built, wheels[0]), wheel_dir)


def copy_into(path: str, folder: str) -> str:
    """``path`` copied into ``folder`` (unless it is there already); the copy's path."""
    os.makedirs(folder, exist_ok=True)
    target = os.path.join(folder, os.path.basename(path))
    if not (os.path.exists(target) and os.path.samefile(path, target)):
        shutil.copy(path, target)
    return target


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return f"sha256={digest}"


def _wheel_name(distribution: metadata.Distribution) -> str:
    """``NAME-VERSION-TAG.whl`` from the installed ``WHEEL`` file's first tag."""
    tags = [
        line.split(":", 1)[1].strip()
        for line in (distribution.read_text("WHEEL") or "").splitlines()
        if line.startswith("Tag:")
    ]
    if not tags:
        raise WheelError(f"the installed {DISTRIBUTION} records no wheel tag; {REFUSAL}")
    name = distribution.metadata["Name"].replace("-", "_")
    return f"{name}-{distribution.version}-{tags[0]}.whl"


def repack_installed(distribution: metadata.Distribution, wheel_dir: str) -> str:
    """The wheel an installed distribution came from, packed again from its installed files.

    Takes the files its ``RECORD`` lists with a hash (what the wheel held; an installer's byte code has none),
    except those outside the installation folder (scripts, which the installer writes from
    ``entry_points.txt``) and the installer's own files, and writes a new ``RECORD``."""
    site = distribution.locate_file("")
    dist_info = None
    files = []
    for entry in distribution.files or ():
        if entry.parts[0].endswith(".dist-info"):
            dist_info = entry.parts[0]
            if entry.name in INSTALLER_FILES:
                continue
        if not entry.hash or entry.parts[0] == "..":
            continue
        files.append(str(entry).replace(os.sep, "/"))
    if dist_info is None or not files:
        raise WheelError(f"the installed {DISTRIBUTION} lists no files to pack; {REFUSAL}")
    os.makedirs(wheel_dir, exist_ok=True)
    path = os.path.join(wheel_dir, _wheel_name(distribution))
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as wheel:
        # The .dist-info goes last, as the wheel format recommends (its RECORD last of all).
        for name in sorted(files, key=lambda name: (name.startswith(dist_info), name)):
            with open(os.path.join(site, name), "rb") as handle:
                data = handle.read()
            wheel.writestr(name, data)
            writer.writerow([name, _record_hash(data), len(data)])
        writer.writerow([f"{dist_info}/RECORD", "", ""])
        wheel.writestr(f"{dist_info}/RECORD", record.getvalue())
    return path


def installed_wheel(distribution: metadata.Distribution) -> str | None:
    """The wheel file the installation was made from, if it recorded one (``direct_url.json``) that is still
    there with the content it had (a wheel rebuilt since under the same name is not the installed one)."""
    try:
        origin = json.loads(distribution.read_text("direct_url.json") or "null")
    except json.JSONDecodeError:
        return None
    if not origin or "archive_info" not in origin:
        return None
    url = urlparse(origin.get("url", ""))
    path = unquote(url.path)
    if url.scheme != "file" or not path.endswith(".whl") or not os.path.isfile(path):
        return None
    archive = origin["archive_info"]
    expected = archive.get("hashes", {}).get("sha256") or archive.get("hash", "").partition("sha256=")[2]
    if not expected:
        return None
    with open(path, "rb") as handle:
        return path if hashlib.sha256(handle.read()).hexdigest() == expected else None


def _installed_distribution(package_dir: str) -> metadata.Distribution | None:
    """The installed distribution whose files are the running package (not another copy on the path)."""
    site = os.path.dirname(os.path.abspath(package_dir))
    for distribution in metadata.distributions(name=DISTRIBUTION, path=[site]):
        installed = str(distribution.locate_file(os.path.join("polybeam", "__init__.py")))
        if os.path.isfile(installed) and os.path.samefile(installed, os.path.join(package_dir, "__init__.py")):
            return distribution
    return None


def running_wheel(wheel_dir: str, package_dir: str | None = None) -> tuple[str, str]:
    """A wheel of the running polybeam (``package_dir``: the imported ``polybeam`` folder) in ``wheel_dir``:
    its path, and where it came from. Raises :class:`WheelError`, saying to pass ``--package``, when there is
    none to be had."""
    package_dir = package_dir or os.path.dirname(os.path.abspath(polybeam.__file__))
    root = source_tree(package_dir)
    if root is not None:
        return build_from_source(root, wheel_dir), f"a wheel built from the source tree {root}"
    distribution = _installed_distribution(package_dir)
    if distribution is None:
        raise WheelError(
            f"the running polybeam ({package_dir}) is neither a source tree nor an installed distribution; {REFUSAL}"
        )
    original = installed_wheel(distribution)
    if original is not None:
        return copy_into(original, wheel_dir), f"the wheel it was installed from, {original}"
    site = str(distribution.locate_file(""))
    return repack_installed(distribution, wheel_dir), f"a wheel packed from the installed files in {site}"
