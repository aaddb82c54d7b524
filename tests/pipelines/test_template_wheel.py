"""The wheel a flex template ships: built from a source tree (a clean copy: no stale build/ files, nothing
written into the tree), the installed wheel file, or packed again from the installed files; refused with a
way out otherwise."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from importlib import metadata

import pytest

import polybeam
from polybeam.pipelines import template_wheel
from polybeam.pipelines.cli import main
from polybeam.pipelines.template_wheel import WheelError, running_wheel

SETUP = 'from setuptools import setup\nsetup(name="polybeam", version="9.9", packages=["polybeam"])\n'


def contents(wheel: str) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A polybeam source tree with a stale build/ folder from an earlier build, and the wheel built from it."""
    root = tmp_path_factory.mktemp("checkout")
    (root / "setup.py").write_text(SETUP)
    (root / "polybeam").mkdir()
    (root / "polybeam" / "__init__.py").write_text('__version__ = "9.9"\n')
    (root / "polybeam" / "learn.py").write_text("STEP = 0.5\n")
    (root / "build" / "lib" / "polybeam").mkdir(parents=True)
    (root / "build" / "lib" / "polybeam" / "removed_since.py").write_text("OLD = True\n")
    before = sorted(str(path.relative_to(root)) for path in root.rglob("*"))
    wheel, origin = running_wheel(str(tmp_path_factory.mktemp("wheels")), package_dir=str(root / "polybeam"))
    return {"root": root, "before": before, "wheel": wheel, "origin": origin}


@pytest.fixture()
def installed(source, tmp_path):
    """The source's wheel installed by pip into a folder of its own (as site-packages would hold it)."""
    site = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--target",
            str(site),
            source["wheel"],
        ],
        check=True,
        capture_output=True,
    )
    return site


@pytest.mark.slow
def test_a_source_tree_builds_its_wheel_from_a_clean_copy(source):
    files = contents(source["wheel"])
    assert os.path.basename(source["wheel"]) == "polybeam-9.9-py3-none-any.whl"
    assert files["polybeam/learn.py"] == b"STEP = 0.5\n"
    assert "polybeam/removed_since.py" not in files  # setuptools would have packed it from the stale build/
    assert source["origin"] == f"a wheel built from the source tree {source['root']}"
    assert sorted(str(path.relative_to(source["root"])) for path in source["root"].rglob("*")) == source["before"]


@pytest.mark.subprocess
def test_an_installation_from_a_wheel_ships_that_wheel(source, installed, tmp_path):
    wheel, origin = running_wheel(str(tmp_path / "out"), package_dir=str(installed / "polybeam"))
    assert contents(wheel) == contents(source["wheel"]) and origin.startswith("the wheel it was installed from")


@pytest.mark.subprocess
def test_without_the_wheel_file_the_installed_files_are_packed_again(source, installed, tmp_path):
    dist_info = next(installed.glob("polybeam-9.9.dist-info"))
    origin = json.loads((dist_info / "direct_url.json").read_text())
    origin["url"] = (tmp_path / "gone" / "polybeam-9.9-py3-none-any.whl").as_uri()  # deleted since
    (dist_info / "direct_url.json").write_text(json.dumps(origin))
    assert any(path.suffix == ".pyc" for path in installed.rglob("*"))  # pip compiled these; not the wheel's
    wheel, origin = running_wheel(str(tmp_path / "out"), package_dir=str(installed / "polybeam"))
    original, repacked = contents(source["wheel"]), contents(wheel)
    assert origin.startswith("a wheel packed from the installed files")
    assert sorted(repacked) == sorted(original)
    assert {name: data for name, data in repacked.items() if not name.endswith("RECORD")} == {
        name: data for name, data in original.items() if not name.endswith("RECORD")
    }
    # pip takes it (it checks every file against RECORD's hashes) and installs the same package.
    again = tmp_path / "again"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--target", str(again), wheel],
        check=True,
        capture_output=True,
    )
    assert (again / "polybeam" / "learn.py").read_text() == "STEP = 0.5\n"


@pytest.mark.subprocess
def test_a_wheel_rebuilt_under_the_installed_name_is_not_taken_for_the_installed_one(source, installed, tmp_path):
    dist_info = next(installed.glob("polybeam-9.9.dist-info"))
    origin = json.loads((dist_info / "direct_url.json").read_text())
    other = tmp_path / "polybeam-9.9-py3-none-any.whl"
    other.write_bytes(b"another build")
    origin["url"] = other.as_uri()
    (dist_info / "direct_url.json").write_text(json.dumps(origin))
    assert template_wheel.installed_wheel(metadata.PathDistribution(dist_info)) is None


def test_a_polybeam_that_is_neither_source_nor_installed_is_refused_with_the_way_out(tmp_path, monkeypatch, capsys):
    loose = tmp_path / "copied" / "polybeam"
    loose.mkdir(parents=True)
    (loose / "__init__.py").write_text("")
    with pytest.raises(WheelError, match="pass --package"):
        running_wheel(str(tmp_path / "out"), package_dir=str(loose))
    monkeypatch.setattr(polybeam, "__file__", str(loose / "__init__.py"))
    assert main(["template", "--command", "train", "--output-dir", str(tmp_path / "tpl")]) == 2
    assert "neither a source tree nor an installed distribution; pass --package" in capsys.readouterr().err
    assert not (tmp_path / "tpl" / "Dockerfile").exists()
