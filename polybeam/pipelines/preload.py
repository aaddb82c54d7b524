"""Load the numba kernels a job will call, in the launcher, before workers are forked from it.

A numba kernel is loaded (from the cache, or compiled) on its first call in a
process. Forked workers (:mod:`polybeam.pipelines.forked_workers`) inherit
whatever the launcher has loaded, so the launcher runs the job's own code
path once on a few records of its own input: the reader's parser, the
learner (with its expansion and sparsity), model extraction, prediction and
evaluation. That costs what one worker would pay anyway, once instead of once
per worker.
"""

from __future__ import annotations

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from polybeam.formats.formats import format_spec, make_format
from polybeam.learners.config import LearnerConfig
from polybeam.learners.evaluation import Evaluation
from polybeam.learners.polynomial import make_learner

# Bytes read from the start of the first input file: a few records are enough.
SAMPLE_BYTES = 64 << 10


def _sample(pattern: str) -> tuple[bytes, str]:
    """The first whole lines of the first file matching ``pattern``, and its path."""
    path = FileSystems.match([pattern], limits=[1])[0].metadata_list[0].path
    with FileSystems.open(path, compression_type=CompressionTypes.AUTO) as handle:
        data = handle.read(SAMPLE_BYTES)
    end = data.rfind(b"\n")
    return (data[: end + 1] if end >= 0 else data), path


def preload_kernels(pattern: str, format_name: str, format_options: dict, config: LearnerConfig) -> None:
    """Run parse, learn, extract, predict and evaluate once on a sample of the input (text formats)."""
    if format_spec(format_name).layout != "lines":
        return  # read by record batches, not lines: workers load the kernels on first use
    fmt = make_format(format_name, **format_options)
    data, path = _sample(pattern)
    header = None
    if getattr(fmt, "header_lines", 0):
        header = data.split(b"\n", 1)[0].rstrip(b"\r")
    batch = fmt.parse(data, source=path, offset=0, first_line=1, header=header).batch
    if not len(batch):
        return
    learner = make_learner(config.replace(passes=1))
    try:
        learner.learn(batch)
    except ValueError:  # prediction input may hold labels a learner cannot take: predicting is what matters
        pass
    model = learner.to_model()
    model.predict(batch)
    Evaluation.for_model(model).add_batch(model, batch).result()
