"""RunInference with polybeam's model handler, as a Beam user's own pipeline: score LIBSVM lines, write them.

    python tests/engines/inference_job.py --model M --input 'test-*.libsvm' --output DIR/scored [Beam options]

Each input line is scored by ``RunInference(PolybeamModelHandler(M,
input_format="libsvm"))``; the workers write ``line<TAB>P(y=+1)`` (17
significant digits) to one text shard; the launcher prints one JSON object,
``{"output": FILE}``, on the last line. It runs as ``__main__`` so that
cloudpickle sends its functions by value: the workers need not import the
tests folder.
"""

from __future__ import annotations

import argparse
import glob
import json

import apache_beam as beam
from apache_beam.ml.inference.base import RunInference
from apache_beam.options.pipeline_options import PipelineOptions

from polybeam.inference import PolybeamModelHandler


def scored_line(result) -> str:
    line = result.example.decode() if isinstance(result.example, bytes) else result.example
    return f"{line}\t{float(result.inference):.17g}"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    known, beam_args = parser.parse_known_args(argv)
    with beam.Pipeline(options=PipelineOptions(beam_args)) as pipeline:
        _ = (
            pipeline
            | beam.io.ReadFromText(known.input)
            | RunInference(PolybeamModelHandler(known.model, input_format="libsvm"))
            | beam.Map(scored_line)
            | beam.io.WriteToText(known.output, num_shards=1)
        )
    (written,) = glob.glob(f"{known.output}*")
    print(json.dumps({"output": written}))


if __name__ == "__main__":
    main()
