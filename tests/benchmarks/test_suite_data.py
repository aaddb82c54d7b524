"""Smoke test of benchmarks/suite/suite_data.py: scikit-learn's bundled data sets only (no network)."""

from __future__ import annotations

import importlib.util
import json
import lzma
import math
import os
import sys
import zlib

import numpy as np
import pytest

# The assembler is a benchmark tool: it needs the bench extra (pandas, scikit-learn), not CI's test extra.
pd = pytest.importorskip("pandas")
pytest.importorskip("sklearn")

from tests.benchmarks.scripts import BENCHMARKS  # noqa: E402  (after the skips: it needs neither)


@pytest.fixture(scope="module")
def suite():
    """``benchmarks/suite/suite_data.py`` as a module (registered: its dataclass looks its module up)."""
    spec = importlib.util.spec_from_file_location("suite_data", os.path.join(BENCHMARKS, "suite", "suite_data.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def quick(suite, tmp_path_factory):
    """The quick suite assembled into a fresh cache: (cache, metas)."""
    cache = str(tmp_path_factory.mktemp("suite-cache"))
    return cache, suite.assemble(cache, quick=True)


def read_rows(path: str) -> list[tuple[str, list[int], list[float]]]:
    """A LIBSVM file as (label text, indices, values) per line."""
    rows = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            label, *pairs = line.split()
            indices = [int(pair.split(":")[0]) for pair in pairs]
            values = [float(pair.split(":")[1]) for pair in pairs]
            rows.append((label, indices, values))
    return rows


def test_catalog_spans_the_protocol(suite):
    names = [dataset.name for dataset in suite.CATALOG]
    assert len(names) == len(set(names)) >= 24
    assert {dataset.task for dataset in suite.CATALOG} == set(suite.TASKS)
    assert {dataset.kind for dataset in suite.CATALOG} >= {"numeric", "categorical", "mixed", "text"}
    # Kept out on purpose (PROTOCOL.md).
    left_out = {"shuttle", "vehicle", "income", "spam", "dna", "satellite", "letterrecognition"}
    assert not left_out & {dataset.source.rsplit("/", 1)[-1].lower() for dataset in suite.CATALOG}


def test_quick_assembly_writes_valid_libsvm(suite, quick):
    cache, metas = quick
    bases = [meta for meta in metas if meta["base"] is None]
    assert {meta["name"] for meta in bases} == {d.name for d in suite.CATALOG if d.source.startswith("sklearn:")}
    assert {meta["task"] for meta in bases} == set(suite.TASKS)
    for meta in metas:
        assert set(meta) == {
            "name",
            "task",
            "classes",
            "class_names",
            "rows",
            "features",
            "feature_names",
            "kind",
            "source",
            "description",
            "random_features",
            "base",
        }
        with open(os.path.join(cache, meta["name"], "meta.json"), encoding="utf-8") as handle:
            assert json.load(handle) == meta
        rows = read_rows(os.path.join(cache, meta["name"], "data.libsvm"))
        assert len(rows) == meta["rows"] and len(meta["feature_names"]) == meta["features"]
        for label, indices, values in rows:
            if meta["task"] == "binary":
                assert label in {"+1", "-1"}
            elif meta["task"] == "multiclass":
                assert 1 <= int(label) <= meta["classes"] == len(meta["class_names"])
            else:
                assert math.isfinite(float(label))
            assert indices == sorted(set(indices)) and all(1 <= i <= meta["features"] for i in indices)
            assert all(math.isfinite(v) and v != 0 for v in values)


def test_binary_labels_follow_the_catalog(quick):
    cache, metas = quick
    meta = next(meta for meta in metas if meta["name"] == "sk_breast_cancer")
    assert meta["class_names"] == ["benign", "malignant"]  # -1, +1
    labels = [label for label, _, _ in read_rows(os.path.join(cache, "sk_breast_cancer", "data.libsvm"))]
    assert labels.count("+1") == 212 and labels.count("-1") == 357  # scikit-learn's counts


def test_random_features_variant_is_reproducible(suite, quick, tmp_path):
    cache, metas = quick
    base = next(meta for meta in metas if meta["name"] == "sk_breast_cancer")
    variant = next(meta for meta in metas if meta["name"] == "sk_breast_cancer+random1000")
    assert variant["base"] == "sk_breast_cancer" and variant["random_features"] == 1000
    assert variant["features"] == base["features"] + 1000 and variant["rows"] == base["rows"]

    base_rows = read_rows(os.path.join(cache, base["name"], "data.libsvm"))
    ones = 0
    for (label, indices, values), (base_label, base_indices, base_values) in zip(
        read_rows(os.path.join(cache, variant["name"], "data.libsvm")), base_rows
    ):
        k = len(base_indices)
        assert (label, indices[:k], values[:k]) == (base_label, base_indices, base_values)
        assert all(base["features"] < i <= variant["features"] for i in indices[k:]) and set(values[k:]) <= {1.0}
        ones += len(indices) - k
    assert ones / (1000 * base["rows"]) == pytest.approx(0.05, abs=0.005)

    # The same bytes when written again elsewhere.
    os.makedirs(tmp_path / base["name"])
    with open(os.path.join(cache, base["name"], "data.libsvm"), "rb") as source:
        (tmp_path / base["name"] / "data.libsvm").write_bytes(source.read())
    suite.with_random_features(base, str(tmp_path))
    with open(os.path.join(cache, variant["name"], "data.libsvm"), "rb") as first:
        assert (tmp_path / variant["name"] / "data.libsvm").read_bytes() == first.read()


def test_second_assembly_reuses_the_cache(suite, quick):
    cache, metas = quick
    path = os.path.join(cache, "sk_iris", "data.libsvm")
    before = os.stat(path).st_mtime_ns
    assert suite.assemble(cache, names=["sk_iris"], quick=True) == [m for m in metas if m["name"] == "sk_iris"]
    assert os.stat(path).st_mtime_ns == before


def test_encoding_follows_the_protocol(suite):
    frame = pd.DataFrame(
        {
            "colour": pd.Categorical(["red", None, "blue", "red"], categories=["red", "green", "blue"]),
            "flag": pd.array([True, False, None, True], dtype="boolean"),
            "size": pd.Categorical(
                ["small", "large", None, "medium"], categories=["small", "medium", "large"], ordered=True
            ),
            "weight": [2.5, 0.0, np.nan, -1.0],
            "city": ["Paris", "Lyon", None, "Paris"],
        }
    )
    matrix, names = suite.encode_frame(frame)
    assert names == ["colour=red", "colour=green", "colour=blue", "flag", "size", "weight", "city=Lyon", "city=Paris"]
    nan = np.nan
    np.testing.assert_array_equal(
        matrix.toarray(),
        [
            [1, 0, 0, 1, 1, 2.5, 0, 1],
            [0, 0, 0, 0, 3, 0, 1, 0],  # missing colour: no feature; False and 0: omitted
            [0, 0, 1, nan, nan, nan, 0, 0],  # missing flag, size (ordered) and weight: NaN; city: absent
            [1, 0, 0, 1, 2, -1, 0, 1],
        ],
    )
    # Zeros absent, not stored; missing numbers stored as NaN.
    assert matrix.nnz == np.count_nonzero(matrix.toarray()) and np.isnan(matrix.data).sum() == 3
    lines = list(suite.libsvm_lines("multiclass", np.array([1.0, 2, 3, 1]), matrix))
    assert lines[1] == "2 5:3 7:1\n" and lines[3] == "1 1:1 4:1 5:2 6:-1 8:1\n"
    assert lines[2] == "3 3:1 4:nan 5:nan 6:nan\n"


def test_text_becomes_lower_cased_word_counts(suite):
    matrix, vocabulary = suite.encode_text(["The cat saw the dog's cat.", "A DOG -- _the_ end"])
    assert vocabulary == ["a", "cat", "dog", "dog's", "end", "saw", "the"]
    assert matrix.toarray().tolist() == [[0, 2, 0, 1, 0, 1, 2], [1, 0, 1, 0, 1, 0, 1]]


def test_lazy_load_chunks_decompress(suite):
    payload = b"R serialization bytes" * 50
    header = len(payload).to_bytes(4, "big")
    assert suite.lazy_load_chunk(header + zlib.compress(payload), 1) == payload
    xz = lzma.compress(payload, format=lzma.FORMAT_RAW, filters=[{"id": lzma.FILTER_LZMA2, "preset": 6}])
    assert suite.lazy_load_chunk(header + b"Z" + xz, 3) == payload
    assert suite.lazy_load_chunk(header + b"0" + payload, 3) == payload
