"""Choosing engines, and what a machine without Java, Maven or Go is told (no engine needs to run here)."""

from __future__ import annotations

import pytest

from polybeam.engines import running
from polybeam.engines.specs import ENGINE_SPECS
from tests.engines import selection


def test_the_default_engines_are_the_ci_ones(monkeypatch):
    monkeypatch.delenv("POLYBEAM_ENGINES", raising=False)
    assert selection.selected() == ["flink-embedded"]


@pytest.mark.parametrize(
    "chosen, expected",
    [("all", list(running.SETUPS)), ("none", []), (" prism , spark-cluster ", ["prism", "spark-cluster"])],
)
def test_engines_chosen_by_name(monkeypatch, chosen, expected):
    monkeypatch.setenv("POLYBEAM_ENGINES", chosen)
    assert selection.selected() == expected


def test_an_unknown_engine_is_refused_naming_the_known_ones(monkeypatch):
    monkeypatch.setenv("POLYBEAM_ENGINES", "flink-embeded")
    with pytest.raises(ValueError, match=r"unknown engines \['flink-embeded'\]; known: .*flink-embedded"):
        selection.selected()


def test_a_missing_program_skips_its_engines_saying_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on it
    assert running.missing_for("flink-cluster") == (
        "missing java, mvn (java: a Java 17 runtime (Debian: apt-get install openjdk-17-jre-headless); mvn: Apache "
        "Maven 3.8+ (Debian: apt-get install maven))"
    )
    assert "missing go" in running.missing_for("prism")


def test_every_engine_starts_embedded_and_those_with_a_cluster_as_one():
    assert list(running.SETUPS) == ["flink-embedded", "flink-cluster", "spark-embedded", "spark-cluster", "prism"]
    assert {spec.name for spec, _ in running.SETUPS.values()} == set(ENGINE_SPECS)
    with pytest.raises(ValueError, match="unknown engine setup 'flink'; the setups are flink-embedded, "):
        running.setup_of("flink")
    with pytest.raises(ValueError, match="Prism has no standalone cluster"):
        ENGINE_SPECS["prism"].setup(cluster=True)
