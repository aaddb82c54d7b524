"""Peak memory of reading files with giant lines, measured in a fresh process.

``python -m tests.transforms.torture_memory SPEC.json`` reads small warm-up
files (so that Beam and the numba kernels are loaded), takes the peak resident
set size as the baseline, reads the files of the spec in one FnApiRunner
pipeline and writes the new peak and what each read produced to
``spec["out"]`` as JSON. ``test_input_torture.py`` runs it.

SPEC: ``{"warm": [[path, format, options], ...], "reads": [[name, path, format, options], ...], "out": path}``
"""

from __future__ import annotations

import json
import pickle
import resource
import sys
import time


def _peak_bytes() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB on Linux


def _read_all(reads, dump_path: str) -> dict:
    import apache_beam as beam

    from polybeam.transforms.read import ReadExamples

    def dump(items):
        with open(dump_path, "wb") as f:
            pickle.dump(items, f)

    def letter_summary(letter):
        return letter.source, letter.line, letter.offset, len(letter.raw), letter.raw[:60], letter.reason

    pipeline = beam.Pipeline(runner="FnApiRunner")
    parts = []
    for name, path, fmt, options in reads:
        read = pipeline | name >> ReadExamples(
            path, fmt, check_input=False, **options
        )  # (the records' fates, not the job's)
        parts += [
            read.examples | f"{name}Rows" >> beam.Map(lambda batch, name: (name, "examples", len(batch)), name),
            read.dead_letters
            | f"{name}Dead" >> beam.Map(lambda letter, name: (name, "dead", letter_summary(letter)), name),
            read.counts
            | f"{name}Counts" >> beam.Map(lambda c, name: (name, "counts", tuple(c.to_dict().values())), name),
        ]
    _ = parts | beam.Flatten() | beam.combiners.ToList() | beam.Map(dump)
    pipeline.run().wait_until_finish()
    with open(dump_path, "rb") as f:
        items = pickle.load(f)
    out: dict = {name: {"examples": 0, "dead": [], "counts": []} for name, *_ in reads}
    for name, kind, value in items:
        if kind == "examples":
            out[name]["examples"] += value
        else:
            out[name][kind].append(value)
    return out


def main(spec_path: str) -> None:
    with open(spec_path) as f:
        spec = json.load(f)
    warm = [[f"Warm{i}", path, fmt, options] for i, (path, fmt, options) in enumerate(spec["warm"])]
    _read_all(warm, spec["out"] + ".warm.pickle")
    baseline = _peak_bytes()
    started = time.perf_counter()
    results = _read_all(spec["reads"], spec["out"] + ".pickle")
    seconds = time.perf_counter() - started
    with open(spec["out"], "w") as f:
        json.dump({"baseline": baseline, "peak": _peak_bytes(), "seconds": seconds, "reads": results}, f)


if __name__ == "__main__":
    main(sys.argv[1])
