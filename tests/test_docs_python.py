"""The "From Python" page (docs/python.md) runs as written: its Python blocks, in order, in an empty folder,
print what their comments say, and leave files the command line reads as the page claims."""

from __future__ import annotations

import json
import os
import re

import pytest

from polybeam.pipelines.cli import main

PAGE = os.path.join(os.path.dirname(__file__), "..", "docs", "python.md")


def page_code() -> list[str]:
    """The ```python blocks of the page, in order."""
    with open(PAGE, encoding="utf-8") as handle:
        return re.findall(r"```python\n(.*?)```", handle.read(), re.DOTALL)


@pytest.mark.slow
def test_the_from_python_blocks_run_and_print_what_they_say(tmp_path, monkeypatch, capsys):
    blocks = page_code()
    assert len(blocks) == 6
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for number, code in enumerate(blocks, 1):
        exec(compile(code, f"docs/python.md (block {number})", "exec"), namespace)  # noqa: S102 (the page's own code)
    printed = capsys.readouterr().out.splitlines()
    said = {line.rsplit(" ", 1)[0]: line.rsplit(" ", 1)[1] for line in printed if line.count(" ") and "{" not in line}

    # Block 1: the held-out error its comment gives.
    assert float(said["spam error"]) == pytest.approx(0.077, abs=0.005)
    # Block 2: the model knows its input, so evaluate needs no --format.
    assert main(["evaluate", "--input", "data/spam.test.libsvm", "--model", "m.model", "--quiet"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["examples"] == 920
    # Block 3: per-key errors as its comment gives them, each key and all keys well under one model's.
    per_key = {key: float(said[key]) for key in ("key0", "key1", "key2", "key3", "all keys")}
    assert per_key == pytest.approx(
        {"key0": 0.216, "key1": 0.296, "key2": 0.34, "key3": 0.152, "all keys": 0.251}, abs=0.005
    )
    assert float(said["one model"]) == pytest.approx(0.405, abs=0.005)
    assert per_key["all keys"] < float(said["one model"]) - 0.1
    # The folder is polybeam train --key's: evaluate reads it (keys and input as the index records them).
    assert main(["evaluate", "--input", "stores/test.csv", "--model", "store-models", "--quiet"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["error"] == pytest.approx(per_key["all keys"], abs=0.0005) and len(report["keys"]) == 4
    # Block 4: one key's model from the folder.
    assert "column:key key 4000" in printed
    # Block 5: lines from a PCollection, with their dead letters kept and written.
    assert "ReadCounts(records=3002, examples=3000, dead_letters=2, skipped=0)" in printed
    letter = json.loads(next(line for line in printed if line.startswith("{")))
    assert (letter["source"], letter["line"], letter["offset"]) == ("<lines>", None, -1)
    assert len((tmp_path / "from-lines.dead.jsonl").read_text().splitlines()) == 2
    assert os.path.exists(tmp_path / "from-lines.model")
    # Block 6: each example scored by its key's model, through Beam's KeyedModelHandler.
    scored = [line.split() for line in printed if line.endswith(tuple(f"store-models#key{k}" for k in range(4)))]
    assert len(scored) == 4
    assert all(label in ("1", "-1") and model_id == f"store-models#{key}" for key, label, model_id in scored)
