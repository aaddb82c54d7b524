"""Smoke test of benchmarks/bench_speed.py: its report's targets and verdicts from measured runs."""

from __future__ import annotations

import pytest

from tests.benchmarks.scripts import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_speed")


def run(seconds, job=None, examples=1_000_000, loss=0.5):
    return {"seconds": seconds, "job_seconds": job or seconds, "examples": examples, "progressive_loss": loss}


def report(text_job=0.5, two_job=1.0):
    return {
        "machine": {"cpus": 2},
        "repeats": 1,
        "load_start": None,
        "load_end": None,
        "work": {
            "text": {"vw": run(1.5), "polybeam": {**run(3.0, text_job), "peak_rss_bytes": 2**20}},
            "text, -q ab": {"vw": run(2.0), "polybeam": {**run(5.0, 4.0), "peak_rss_bytes": 2**20}},
            "LIBSVM numbers": {"vw": run(1.6), "polybeam": {**run(3.0, 2.0), "peak_rss_bytes": 2**20}},
        },
        "cores": {"two workers": run(2.0, two_job, loss=0.503), "one worker, one core": run(3.0, 2.0)},
        "startup": {
            name: {"median": seconds}
            for name, seconds in (("import apache_beam", 0.9), ("train", 1.2), ("evaluate", 2.0), ("predict", 1.3))
        },
    }


def test_each_target_is_judged_from_the_runs(bench):
    _, targets = bench.summarise(report())
    verdicts = {row[0]: (row[1], row[3]) for row in targets}
    # text: 1M in a 0.5 s job is 2.0M/s against VW's 0.67M/s whole run.
    assert verdicts["text: job examples/s / VW whole-run examples/s"] == ("3.00", "met")
    assert verdicts["text: whole command / VW"] == ("2.00", "met")
    assert verdicts["text, -q ab: job examples/s / VW whole-run examples/s"] == ("0.50", "not met")
    assert verdicts["LIBSVM numbers: whole command / VW"] == ("1.88", "met")
    assert verdicts["two workers / one worker on one core (job)"] == ("2.00", "met")
    assert verdicts["two workers' progressive loss, change"] == ("0.60%", "met")
    assert verdicts["train on 10 rows, beyond import apache_beam"] == ("+0.30 s", "met")
    assert verdicts["evaluate on 10 rows, beyond import apache_beam"][1] == "not met"


def test_the_report_renders_every_run(bench):
    text = bench.render(report(text_job=2.0, two_job=1.9), "--rows 10")
    assert "| text | 1,000,000 | 1.50 |" in text and "| two workers | 2.00 | 1.90 |" in text
    assert "two workers / one worker on one core (job) | 1.05 | >= 1.8 | not met" in text


@pytest.mark.slow
def test_a_small_run_measures_vw_and_polybeam_side_by_side(bench, tmp_path):
    pytest.importorskip("vowpalwabbit")
    inputs = bench.write_inputs(str(tmp_path), 2000)
    measured = bench.time_work(inputs, str(tmp_path), repeats=1)
    for name, pair in measured.items():
        assert pair["vw"]["examples"] == pair["polybeam"]["examples"] == 2000, name
        assert 0.3 < pair["polybeam"]["progressive_loss"] < 1.0, name
    parts = bench.time_parts(inputs)
    assert {name: part["examples"] for name, part in parts.items()} == {"text": 2000, "LIBSVM numbers": 2000}
    assert all(part["parse_seconds"] > 0 and part["learn_seconds"] > 0 for part in parts.values())
    text = bench.render({**report(), "work": {**report()["work"], **measured}, "parts": parts}, "--rows 2000")
    assert "| text | " in text.split("The parts alone")[1]
    # The same examples, the same update (adaptive, normalised) and VW's rate: polybeam learns as VW.
    assert (
        abs(
            measured["LIBSVM numbers"]["polybeam"]["progressive_loss"]
            - measured["LIBSVM numbers"]["vw"]["progressive_loss"]
        )
        < 0.05
    )
