"""``polybeam train --watch S``: the streaming training job.

The job watches ``--input`` (:class:`~polybeam.transforms.watch.ReadWatched`), learns every file that
appears, in arrival order, and writes a model version to the ``--model`` folder every ``--model-every``
seconds or ``--model-every-examples`` examples (:class:`~polybeam.transforms.stream_train.TrainStream`;
the folder's layout: :mod:`polybeam.transforms.version_folder`). It runs until SIGTERM or SIGINT (the
launcher writes the folder's ``stop`` file, the watch sees it and ends, and the last examples make a last
version), or until ``--stop-after-idle`` seconds pass without a new file. Started again with the same
command, it continues from the latest version: its learner, its count of examples, and the rows it
learned (a file read again is not learned again).

What each file read gave (records, examples, dead letters, skipped lines) goes to ``MODEL/files/`` as the
file is read, its dead letters beside; the report sums them with the versions' index.

It needs a streaming runner: on this machine Prism (built by ``polybeam engines fetch prism``), which the
local default becomes; ``--runner FlinkRunner`` and Dataflow run it as they run any streaming job.
"""

from __future__ import annotations

import contextlib
import signal
import time

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from polybeam.formats.records import ReadCounts
from polybeam.pipelines.errors import OptionError
from polybeam.pipelines.launch import JobFailed
from polybeam.transforms.files import write_json
from polybeam.transforms.provenance import origin
from polybeam.transforms.stream_train import TrainStream
from polybeam.transforms.version_folder import join, read_index, read_latest
from polybeam.transforms.watch import ReadWatched, read_file_records

STOP = "stop"
FILES = "files"
REPORT = "report.json"
# The runners that run in this process and cannot stream: --watch moves them to Prism.
BATCH_ONLY = ("FnApiRunner", "DirectRunner", "BundleBasedDirectRunner", "SwitchingDirectRunner", None, "")


def streaming_options(options: PipelineOptions) -> PipelineOptions:
    """``options`` for a streaming job: ``--streaming``, and Prism instead of a local batch runner (a
    clear error when it is not built)."""
    from polybeam.engines import prism

    flags = options.get_all_options(drop_default=True, retain_unknown_options=True)
    runner = options.view_as(StandardOptions).runner
    runner = runner if isinstance(runner, str) or runner is None else type(runner).__name__
    argv = [f"--{name}={value}" for name, value in flags.items() if name not in ("runner", "streaming")]
    if runner in BATCH_ONLY:
        if not prism.fetched():
            raise OptionError(
                "--watch needs a streaming runner: build Prism with `polybeam engines fetch prism` (needs Go), "
                "or give one (--runner FlinkRunner, DataflowRunner)"
            )
        return PipelineOptions([*argv, "--streaming", *prism.polybeam_options()])
    return PipelineOptions([*argv, f"--runner={runner}", "--streaming"])


@contextlib.contextmanager
def stop_on_signals(stop_file: str):
    """While inside, SIGTERM and SIGINT write ``stop_file`` (the watch ends, a last version follows);
    a second one stops at once."""
    asked = []

    def ask(signum, frame):
        if asked:
            raise KeyboardInterrupt
        asked.append(signum)
        with FileSystems.create(stop_file) as handle:
            handle.write(f"signal {signum} at {time.time()}\n".encode())

    before = {sig: signal.signal(sig, ask) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield asked
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def stream_report(model_path: str, facts: dict) -> dict:
    """What the stream did, from its folder: the versions' index and the files' records."""
    index = read_index(model_path)
    records = read_file_records(join(model_path, FILES))
    counts = ReadCounts()
    for record in records:
        counts = counts + ReadCounts.from_dict(record)
    latest = read_latest(model_path)
    examples = index[-1]["examples"] if index else 0
    return {
        **facts,
        **counts.to_dict(),
        "reconciles": counts.reconciles,
        "files": len(records),
        "versions": len(index),
        "latest_version": latest["version"] if latest else None,
        "examples_learned": examples,
        "progressive_loss": index[-1]["progressive_loss"] if index else None,
        "dead_letter_folder": join(model_path, FILES),
    }


def run_stream_train(options, job, config, settings, facts: dict, started: float) -> dict:
    """Run the streaming job until it stops (see the module's docstring); its report."""
    model_path = job.model
    for name, value in (("watch", job.watch), ("model-every", job.model_every)):
        if not value > 0:
            raise OptionError(f"--{name} must be a number of seconds > 0, got {value}")
    if job.model_every_examples < 1:
        raise OptionError(f"--model-every-examples must be at least 1, got {job.model_every_examples}")
    if job.stop_after_idle is not None and not job.stop_after_idle >= 2 * job.watch:
        raise OptionError(
            f"--stop-after-idle must be at least two polls ({2 * job.watch:g} s with --watch {job.watch:g}): a file is "
            f"read once two polls saw it whole; got {job.stop_after_idle}"
        )
    if config.passes != 1 or config.lbfgs_passes:
        raise OptionError("--watch learns each example once as it arrives: leave out --passes and --lbfgs-passes")
    options = streaming_options(options)
    facts = {**facts, "runner": options.view_as(StandardOptions).runner}
    stop_file = join(model_path, STOP)
    if FileSystems.exists(stop_file):  # (the last run's: it would end this one at once)
        FileSystems.delete([stop_file])
    pipeline = beam.Pipeline(options=options)
    read = pipeline | "Read" >> ReadWatched(
        job.input,
        format=settings.format,
        interval=job.watch,
        stop_file=stop_file,
        stop_after_idle=job.stop_after_idle,
        records_folder=join(model_path, FILES),
        **settings.reader_options(config.label_kind),
    )
    known = facts["origin"]  # (the job's options, runner and start; with how its input is read)
    recorded = origin(settings, known["inputs"], command="train", options=known["options"], runner=facts["runner"],
                      started=known["started"])  # fmt: skip
    _ = read.examples | "Train" >> TrainStream(
        config, model_path, every_seconds=job.model_every, every_examples=job.model_every_examples, origin=recorded
    )
    result = pipeline.run()
    with stop_on_signals(stop_file) as asked:
        try:
            state = result.wait_until_finish()
        except KeyboardInterrupt:
            with contextlib.suppress(Exception):
                result.cancel()
            raise JobFailed(
                "polybeam train --watch: stopped at once (a second signal); the folder keeps the latest version written"
            ) from None
    if str(state) not in ("DONE", "PipelineState.DONE"):
        raise JobFailed(f"polybeam train --watch: the job ended in state {state}")
    report = {
        **stream_report(model_path, facts),
        "stopped_by": "signal" if asked else "idle" if job.stop_after_idle else "the input's end",
        "wall_seconds": time.perf_counter() - started,
    }
    write_json(facts["report"], report)
    return report


def input_matches(pattern: str) -> bool:
    """Whether any file matches ``pattern`` now (a watched input may have none yet)."""
    try:
        return bool(FileSystems.match([pattern], limits=[1])[0].metadata_list)
    except Exception:  # Beam raises its own error for a folder that does not exist yet
        return False
