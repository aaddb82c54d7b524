"""No half-written files: a reader polling a file while another process rewrites it sees only whole versions.

Models, per-key indexes, prefix files and reports are all written by
:func:`polybeam.transforms.files.write_atomically` (a temporary name in the
same folder, then a rename). Each test runs a writer in another process that
rewrites one file many times, alternating a small and a large version, while
this process reads it as fast as it can: every read must be one of the two
versions, byte for byte, and parse. A naive writer (the file opened in place
and written in two halves) fails the same check, which shows the check can
catch a torn read. The last test does the same with ``polybeam train``
rewriting a model.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from polybeam import datasets
from polybeam.learners.config import LearnerConfig
from polybeam.learners.model import Model
from polybeam.transforms.files import read_bytes, write_atomically, write_json
from polybeam.transforms.keyed_files import write_index
from polybeam.transforms.model_io import read_model, write_model
from polybeam.transforms.sequence import _write_lines

REWRITES = 60


def _model(size: int, seed: int) -> Model:
    rng = np.random.default_rng(seed)
    slots = np.unique(rng.integers(1, 2**20, size=size))
    return Model(LearnerConfig(bits=20), slots, rng.normal(size=len(slots)), metadata={"examples": size})


def _versions(kind: str) -> list:
    """Two versions of a file of ``kind``: a small one and a large one (hundreds of KB to MB)."""
    if kind == "model":
        return [_model(50, 1), _model(300_000, 2)]
    if kind == "report":
        return [{"examples": 1}, {"examples": 2, "curve": list(np.linspace(0, 1, 30_000))}]
    if kind == "index":
        return [
            {"a": {"file": "models/ka.model"}},
            {f"key{i}": {"file": f"models/kkey{i}.model"} for i in range(10_000)},
        ]
    if kind == "prefixes":
        return ['{"rank": 1}', "\n".join(json.dumps({"rank": i, "weights": [0.5] * 40}) for i in range(3000))]
    raise ValueError(kind)


def _write(kind: str, path: str, version) -> None:
    if kind == "model":
        write_model(version, path)
    elif kind == "report":
        write_json(path, version)
    elif kind == "index":
        write_index(os.path.dirname(path), version, kind="polybeam-keyed-models")
    else:
        _write_lines(version, path)


def _expected_bytes(kind: str, path: str) -> list[bytes]:
    """The bytes of each version, as the writer writes them (written once here, then removed)."""
    expected = []
    for version in _versions(kind):
        _write(kind, path, version)
        expected.append(read_bytes(path))
    os.remove(path)
    return expected


def _rewrite(kind: str, path: str, rewrites: int, naive: bool) -> None:
    """The writer process: rewrite ``path`` ``rewrites`` times, alternating the two versions."""
    versions = _versions(kind)
    blobs = _expected_bytes(kind, path + ".scratch") if naive else None
    for number in range(rewrites):
        if naive:  # in place, in two halves: the torn write the atomic one must never show
            data = blobs[number % 2]
            with open(path, "wb") as handle:
                handle.write(data[: len(data) // 2])
                handle.flush()
                time.sleep(0.002)
                handle.write(data[len(data) // 2 :])
        else:
            _write(kind, path, versions[number % 2])


def _target(kind: str, folder) -> str:
    return str(folder / ("index.json" if kind == "index" else f"file.{kind}"))


def _poll_while_rewritten(kind: str, folder, naive: bool = False) -> dict:
    """Read the file as fast as possible while another process rewrites it; what the reads saw."""
    path = _target(kind, folder)
    expected = _expected_bytes(kind, path)
    _write(kind, path, _versions(kind)[0])
    writer = multiprocessing.get_context("spawn").Process(target=_rewrite, args=(kind, path, REWRITES, naive))
    writer.start()
    seen = {"reads": 0, "torn": 0, "versions": set(), "missing": 0}
    try:
        while writer.is_alive() or seen["reads"] == 0:
            try:
                with open(path, "rb") as handle:
                    data = handle.read()
            except FileNotFoundError:
                seen["missing"] += 1
                continue
            seen["reads"] += 1
            if data in expected:
                seen["versions"].add(expected.index(data))
                if kind == "model":
                    Model.from_bytes(data)  # and it parses
                elif kind != "prefixes":
                    json.loads(data)
            else:
                seen["torn"] += 1
    finally:
        writer.join(timeout=120)
    assert writer.exitcode == 0
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["model", "report", "index", "prefixes"])
def test_a_reader_never_sees_half_a_file(tmp_path, kind):
    seen = _poll_while_rewritten(kind, tmp_path)
    assert seen["torn"] == 0 and seen["missing"] == 0
    assert seen["versions"] == {0, 1} and seen["reads"] > REWRITES  # both versions were read, many times
    assert sorted(os.listdir(tmp_path)) == [os.path.basename(_target(kind, tmp_path))]  # no temporary left


@pytest.mark.slow
def test_the_check_catches_a_torn_write(tmp_path):
    seen = _poll_while_rewritten("model", tmp_path, naive=True)
    assert seen["torn"] > 0


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = str(tmp_path / "m.model")
    write_model(_model(10, 1), path)
    before = read_bytes(path)

    class Unpicklable:
        def __len__(self):
            raise RuntimeError("the data could not be produced")

    with pytest.raises(TypeError):
        write_atomically(path, Unpicklable())
    assert read_bytes(path) == before and os.listdir(tmp_path) == ["m.model"]


@pytest.mark.slow
@pytest.mark.subprocess
def test_polybeam_train_rewriting_a_model_never_shows_a_partial_one(tmp_path):
    train, _ = datasets.write_split("spam", str(tmp_path / "data"))
    model = tmp_path / "m.model"
    command = [
        sys.executable,
        "-m",
        "polybeam.pipelines.cli",
        "train",
        "--input",
        train,
        "--model",
        str(model),
        "--loss",
        "logistic",
        "--quiet",
    ]
    subprocess.run(command, check=True, capture_output=True)
    reads, sizes = 0, set()
    # Rewrites alternate a linear and a quadratic model (a far larger file).
    runs = [command + (["--expand", "quadratic"] if number % 2 == 0 else []) for number in range(4)]
    for argv in runs:
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while process.poll() is None:
            sizes.add(read_model(str(model)).nonzero)  # raises on a partial or corrupt file
            reads += 1
        assert process.returncode == 0
    assert reads > 0 and len(sizes) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "data",
        "m.model",
        "m.model.dead_letters.jsonl",
        "m.model.report.json",
    ]
