"""Whether ``polybeam train`` keeps its input in one worker's memory across passes (``--in-memory``).

Each streaming pass is a Beam stage that re-reads its input and pays a fixed cost (about half a second
on the local runner whatever the data); an input that fits a worker's memory is better read and hashed
once, every pass then a loop over it (:mod:`polybeam.transforms.in_memory`): twenty passes over a
thousand rows take a fraction of a second instead of ten. ``auto`` does so when the job has passes to
save (more than one, or an L-BFGS stage), runs on the local runner (a distributed job keeps its
checkpoints between passes and its retries; ``--in-memory on`` asks there too) and has an input small
enough by its files' sizes, and nothing that needs the streaming passes asks otherwise: one model per key, windows, checkpoints between passes
(``--checkpoint-dir``, ``--resume``) or a merge tree. The decision is the launcher's, from the files'
sizes (no record is read), and is recorded in the report.

>>> from polybeam.learners.config import LearnerConfig
>>> in_memory_reason("on", LearnerConfig(passes=1), input_bytes=None, streaming_needs=[])
(True, '--in-memory on')
>>> in_memory_reason("auto", LearnerConfig(passes=20), input_bytes=2_000_000, streaming_needs=[])
(True, '20 passes over 2.0 MB of input (at most 64 MB)')
>>> in_memory_reason("auto", LearnerConfig(passes=20), input_bytes=2_000_000, streaming_needs=["--key"])
(False, 'streaming passes: --key needs them')
>>> in_memory_reason("auto", LearnerConfig(passes=1), input_bytes=2_000, streaming_needs=[])
(False, 'streaming: one pass has no passes to save')
"""

from __future__ import annotations

from polybeam.learners.config import LearnerConfig
from polybeam.pipelines.errors import OptionError
from polybeam.transforms.samples import is_compressed

# The largest input ``auto`` keeps in memory. Gathered ExampleBatches hold about twice the text's bytes
# (an index and a value per feature), so 64 MB of text is ~150 MB of a worker's memory.
AUTO_LIMIT_BYTES = 64 << 20
# A gzip file counts this many times its size (text compresses 4-10 times).
COMPRESSED_FACTOR = 8


def input_bytes(pattern: str) -> int | None:
    """The bytes of the files ``pattern`` matches, a compressed file counted :data:`COMPRESSED_FACTOR`
    times; None when they cannot be listed (standard input, a file system that says nothing)."""
    from apache_beam.io.filesystems import FileSystems

    try:
        matched = FileSystems.match([pattern])[0].metadata_list
    except Exception:  # Beam wraps file-system errors in its own types; the read reports them
        return None
    if not matched:
        return None
    return sum(m.size_in_bytes * (COMPRESSED_FACTOR if is_compressed(m.path) else 1) for m in matched)


def in_memory_reason(
    choice: str, config: LearnerConfig, *, input_bytes: int | None, streaming_needs: list[str], local: bool = True
) -> tuple[bool, str]:
    """``(in memory?, why)`` for ``--in-memory choice``; ``streaming_needs``: the options given that need the
    streaming passes (``on`` with any of them fails, naming them); ``local``: the job runs on the local
    runner (``auto`` keeps the streaming passes, their checkpoints and retries, on the others)."""
    if choice == "off":
        return False, "--in-memory off"
    if choice == "on":
        if streaming_needs:
            raise OptionError(
                f"--in-memory on trains one model in one worker without checkpoints between passes; "
                f"leave out {', '.join(streaming_needs)} (or --in-memory)"
            )
        return True, "--in-memory on"
    if streaming_needs:
        return False, f"streaming passes: {', '.join(streaming_needs)} needs them"
    if not local:
        return False, "streaming: auto keeps the input in memory on the local runner only (--in-memory on: here too)"
    if config.passes <= 1 and not config.lbfgs_passes:
        return False, "streaming: one pass has no passes to save"
    if input_bytes is None:
        return False, "streaming: the input's size is not known"
    if input_bytes > AUTO_LIMIT_BYTES:
        return False, f"streaming: {input_bytes / 1e6:.1f} MB of input is more than 64 MB"
    work = f"{config.passes} passes" if config.passes > 1 else f"{config.lbfgs_passes} L-BFGS passes"
    return True, f"{work} over {input_bytes / 1e6:.1f} MB of input (at most 64 MB)"
