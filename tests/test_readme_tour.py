"""The README's tour runs as written: its command lines after `polybeam demo` print what its comments say, and
its Python blocks, in order, in an empty folder, print what theirs say. The README stays a README: short, its
links reaching real pages."""

from __future__ import annotations

import pathlib
import re
import shlex

import pytest

from polybeam.pipelines.cli import main

ROOT = pathlib.Path(__file__).parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def tour_section(title: str) -> str:
    start = README.index(f"### {title}\n")
    end = README.find("\n### ", start + 1)
    return README[start : end if end > 0 else None]


def test_the_readme_is_short_and_its_links_reach_real_pages():
    assert len(README.splitlines()) <= 300
    targets = re.findall(r"\]\(([^)#]+)\)", README)
    assert "docs/cli.md" in targets and len(targets) > 15
    for target in targets:
        if not target.startswith("http"):
            assert (ROOT / target).exists(), target
    for page in (ROOT / "docs").glob("*.md"):
        for target in re.findall(r"\]\(([^)#]+)\)", page.read_text(encoding="utf-8")):
            if not target.startswith("http"):
                assert (page.parent / target).exists(), f"{page.name}: {target}"


@pytest.mark.slow
def test_the_command_line_tour_prints_what_it_says(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["demo"]) == 0
    blocks = re.findall(r"```sh\n(.*?)```", tour_section("Train, evaluate, predict"), re.DOTALL)
    commands = [line for block in blocks[:2] for line in block.splitlines() if line.startswith("polybeam ")]
    assert [shlex.split(line)[1] for line in commands] == ["train", "evaluate", "predict", "inspect"]
    printed = {}
    for line in commands:
        capsys.readouterr()
        assert main(shlex.split(line)[1:]) == 0, line
        printed[shlex.split(line)[1]] = capsys.readouterr().out
    said = re.search(r"# (scored 920 examples with spam.model: .*)", blocks[1]).group(1)
    scored = next(line for line in printed["evaluate"].splitlines() if line.startswith("scored"))
    assert scored.replace(str(tmp_path / "spam.model"), "spam.model") == said
    assert "3681 records = 3681 examples + 0 dead letters + 0 skipped" in printed["inspect"]
    assert len((tmp_path / "preds.tsv").read_text().splitlines()) == 921  # a header and 920 predictions


@pytest.mark.slow
def test_the_python_tour_prints_what_it_says(tmp_path, monkeypatch, capsys):
    pytest.importorskip("sklearn")
    blocks = [
        code
        for title in ("From Python", "Inside a Beam pipeline")
        for code in re.findall(r"```python\n(.*?)```", tour_section(title), re.DOTALL)
    ]
    assert len(blocks) == 3
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for number, code in enumerate(blocks, 1):
        capsys.readouterr()
        exec(compile(code, f"README.md (tour, block {number})", "exec"), namespace)  # noqa: S102 (the README's own code)
        printed = capsys.readouterr().out.strip()
        said = "\n".join(line[2:] for line in code.splitlines() if line.startswith("# "))
        assert printed == said, f"block {number}"


@pytest.mark.slow
def test_the_streaming_tour_learns_and_serves_in_one_pipeline(tmp_path, monkeypatch, capsys):
    from polybeam.engines import prism

    if not prism.fetched():
        pytest.skip("Prism is not built: polybeam engines fetch prism")
    (code,) = re.findall(r"```python\n(.*?)```", tour_section("Learning while serving"), re.DOTALL)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md (streaming tour)", "exec"), {})  # noqa: S102 (the README's own code)
    printed = capsys.readouterr().out.strip()
    assert printed == "\n".join(line[2:] for line in code.splitlines() if line.startswith("# "))
