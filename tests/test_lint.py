"""The tree is held to ruff's lint rules and format (configured in pyproject.toml).

``ruff check --fix . && ruff format .`` from the project root makes these pass; the
rules and why two are off are in ``[tool.ruff]``.
"""

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def ruff(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", *arguments], cwd=ROOT, capture_output=True, text=True)


@pytest.fixture(scope="module", autouse=True)
def ruff_installed():
    if ruff("--version").returncode != 0:
        pytest.fail("ruff is not installed: pip install -e '.[test]'")


def test_the_tree_passes_ruffs_lint_rules():
    result = ruff("check", "--no-cache", "--output-format", "concise", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_tree_is_formatted_as_ruff_formats_it():
    result = ruff("format", "--no-cache", "--check", ".")
    assert result.returncode == 0, "run `ruff format .`:\n" + result.stdout + result.stderr
