"""What truncated gradient costs the learner kernel: the paper's form and the cumulative penalty.

Run ``python benchmarks/bench_truncation_cost.py [--examples N] [--repeats R]``. It writes
``N`` (default 300,000) of the spine benchmark's synthetic examples (about 49
binary non-zeros each), parses them once, and times the learner kernel alone
(squared loss, 4096-row batches) with and without truncation, for each step
rule and each form of truncated gradient: ``truncate`` (the paper's, theta =
infinity) and ``cumulative`` (the default for a gravity). Gravity is tiny
(1e-6) so that the models stay comparable, and K = 1, truncation's most
expensive setting. The figure is the median over interleaved rounds of the
paired ratio (see ``bench_spine.time_overheads``), against the budget of 20%
over the untruncated learner.

It writes ``benchmarks/results/truncation_cost.{json,md}``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_spine  # noqa: E402
from harness import machine_info, write_report  # noqa: E402

from polybeam.formats.vw import VWFormat  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BUDGET = 0.20  # truncation may cost at most this much over the untruncated learner
FORMS = ("truncate", "cumulative")
STEP_RULES = {
    "adaptive": {"step": "adaptive"},
    "constant": {"step": "constant", "learning_rate": 0.01},
    "gsa": {"step": "gsa"},
}


def pairs() -> dict:
    """``form, step`` -> (the untruncated learner's settings, the same with truncation)."""
    return {
        f"{form}, {step}": (settings, {**settings, "gravity": bench_spine.GRAVITY, "sparsity": form})
        for form in FORMS
        for step, settings in STEP_RULES.items()
    }


def render(report: dict) -> str:
    lines = [
        "# What truncated gradient costs the learner kernel",
        "",
        f"Measured {report['started']} by `benchmarks/bench_truncation_cost.py`: {report['examples']:,} synthetic "
        f"examples, squared loss, gravity {bench_spine.GRAVITY:g}, K = 1; median over {report['repeats']} interleaved "
        f"rounds of the paired ratio truncated / untruncated (load {report['machine'].get('load_average')}).",
        "",
        f"| step rule | form | untruncated (s) | truncated (s) | overhead (quartiles) | budget {BUDGET:.0%} |",
        "|---|---|---|---|---|---|",
    ]
    for name, entry in report["overheads"].items():
        form, step = name.split(", ")
        low, high = entry["overhead_quartiles"]
        verdict = "met" if entry["overhead"] <= BUDGET else "MISSED"
        lines.append(
            f"| {step} | {form} | {entry['base_seconds']:.3f} | {entry['changed_seconds']:.3f} | "
            f"{entry['overhead']:+.0%} ({low:+.0%}, {high:+.0%}) | {verdict} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=300_000, help="synthetic examples (default: 300,000)")
    parser.add_argument(
        "--repeats", type=int, default=bench_spine.OVERHEAD_REPEATS, help="interleaved rounds (at least the spine's 15)"
    )
    parser.add_argument("--results", default=os.path.join(HERE, "results"), help="where truncation_cost.{json,md} go")
    args = parser.parse_args(argv)
    rounds = max(args.repeats, bench_spine.OVERHEAD_REPEATS)  # time_overheads' floor
    report = {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "examples": args.examples, "repeats": rounds}
    with tempfile.TemporaryDirectory() as scratch:
        paths = bench_spine.write_synthetic(scratch, args.examples, 0)["paths"]
        batches = bench_spine.parse_batches(paths["vw"], VWFormat(bits=bench_spine.BITS), 4 << 20, 4096)
    report["machine"] = machine_info()
    report["overheads"] = bench_spine.time_overheads(batches, args.repeats, pairs())
    markdown = render(report)
    write_report(args.results, "truncation_cost", report, markdown)
    print(markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
