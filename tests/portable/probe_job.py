"""A tiny Beam job that reports which SDK worker processes ran it and what they could see.

Run as a script with portable-runner options::

    python tests/portable/probe_job.py --output DIR/probe --marker /tmp/FILE \\
        --runner PortableRunner --job_endpoint localhost:P --environment_type EXTERNAL --environment_config localhost:Q

Each element is handled by a DoFn that records the worker's process id, its
working directory and whether ``--marker`` (a file the launcher created) exists
for it. The records are written by the workers to ``--output`` (which must be on
a disk they share with the launcher) and printed by this launcher as one JSON
object on the last line of stdout: ``{"pids": [...], "marker_seen": [...],
"cwds": [...], "records": N}``.

It runs as ``__main__`` on purpose: cloudpickle pickles ``__main__``'s functions
by value, so workers need not import this file (the tests folder is not
installed, and a remote worker could not import it).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

ELEMENTS = 32


def observe(element, marker):
    """What the worker handling ``element`` sees."""
    return json.dumps(
        {"element": element, "pid": os.getpid(), "cwd": os.getcwd(), "marker_seen": os.path.exists(marker)}
    )


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", required=True, help="output prefix, on a disk the workers share")
    parser.add_argument("--marker", required=True, help="a file the launcher created (e.g. in its /tmp)")
    args, beam_args = parser.parse_known_args(argv)

    with beam.Pipeline(options=PipelineOptions(beam_args)) as pipeline:
        (
            pipeline
            | beam.Create(range(ELEMENTS))
            # A shuffle in front of the probe: the runner splits a stage's shuffled
            # input across its workers, so with several workers each gets a share.
            | beam.Reshuffle()
            | beam.Map(observe, args.marker)
            | beam.io.WriteToText(args.output, file_name_suffix=".jsonl")
        )
    records = [json.loads(line) for path in glob.glob(args.output + "*.jsonl") for line in open(path)]
    print(
        json.dumps(
            {
                "records": len(records),
                "pids": sorted({record["pid"] for record in records}),
                "cwds": sorted({record["cwd"] for record in records}),
                "marker_seen": sorted({record["marker_seen"] for record in records}),
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1:])
