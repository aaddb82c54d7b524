"""Streaming training: a learner carried in Beam state from batch to batch, numbered model versions out.

:class:`TrainStream` takes a PCollection of :class:`~polybeam.learners.batch.ExampleBatch` (unbounded or
not; each element's timestamp is its arrival, as a watched file's or a message's) and learns it with one
online learner kept in Beam state (:class:`~polybeam.learners.model_stream.StreamLearner`). A new **model
version** is made when ``every_examples`` examples wait, or ``every_seconds`` after the first of them
arrived (an event-time timer: on a live source the watermark follows the clock), and once more when the
input ends (or a streaming job is drained). Each version is written to a model folder
(:mod:`polybeam.transforms.version_folder`) with the learner's state, and is an element of the output
PCollection (:class:`~polybeam.learners.model_stream.ModelVersion`); :class:`VersionsAsModelMetadata` turns
them into RunInference's ``model_metadata_pcoll``, so that one pipeline learns and serves.

Batches wait in a bag state until a version is due, so the learner's state is read and written once a
version, not once a batch; the learner itself stays in the worker's memory between versions (checked
against the version number in state, so a key moved to another worker reads its state instead).

A job started again with the same model folder continues from the latest version's learner state: its
version numbers follow on, and rows that version holds (by source and row id) are not learned again.
"""

from __future__ import annotations

import dataclasses
from urllib.parse import quote

import apache_beam as beam
from apache_beam.coders import BytesCoder, PickleCoder, VarIntCoder
from apache_beam.ml.inference.base import ModelMetadata
from apache_beam.transforms import trigger, window
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import BagStateSpec, ReadModifyWriteStateSpec, TimerSpec, on_timer
from apache_beam.utils.timestamp import MIN_TIMESTAMP, Duration

from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.model_stream import ModelVersion, StreamLearner
from polybeam.learners.polynomial import make_learner
from polybeam.transforms.provenance import origin, stamp
from polybeam.transforms.train import HASHING, config_for_read
from polybeam.transforms.version_folder import join, model_name, read_latest_state, write_version

# A version every this many seconds of arrival time, or every EVERY_EXAMPLES examples, by default.
EVERY_SECONDS = 5.0
EVERY_EXAMPLES = 1_000_000
# The key of the one model (Beam's state is per key); no parsed key holds a NUL (such lines are dead letters).
ONE_MODEL = "\x00"


def event_seconds(timestamp) -> float | None:
    """A Beam timestamp in seconds, None for an element without one (bounded input's minimum)."""
    return None if timestamp is None or timestamp <= MIN_TIMESTAMP else float(timestamp.micros) / 1e6


# The state and timers of LearnStream (module-level: Beam reads them from the parameters' defaults).
BUFFER = BagStateSpec("buffer", PickleCoder())  # (arrival seconds, batch) not learned yet
BUFFERED = ReadModifyWriteStateSpec("buffered", VarIntCoder())  # examples in the buffer
LEARNER = ReadModifyWriteStateSpec("learner", BytesCoder())  # StreamLearner.to_bytes() at the last version
NUMBER = ReadModifyWriteStateSpec("number", VarIntCoder())  # the last version's number
# (at the input's end the watermark passes every pending timer: the last examples make a last version)
EVERY = TimerSpec("every", TimeDomain.WATERMARK)
BUFFER_STATE = beam.DoFn.StateParam(BUFFER)
BUFFERED_STATE = beam.DoFn.StateParam(BUFFERED)
LEARNER_STATE = beam.DoFn.StateParam(LEARNER)
NUMBER_STATE = beam.DoFn.StateParam(NUMBER)
EVERY_TIMER = beam.DoFn.TimerParam(EVERY)


class LearnStream(beam.DoFn):
    """The stateful DoFn of :class:`TrainStream`: ``(key, batch)`` in, :class:`ModelVersion` out."""

    def __init__(
        self,
        config: LearnerConfig,
        folder: str | None,
        every_seconds: float,
        every_examples: int,
        known: dict | None = None,
    ):
        self.config = config
        self.folder = folder
        self.every_seconds = float(every_seconds)
        self.every_examples = int(every_examples)
        self.known = known  # how the input was read and the job's origin, recorded in every version's model
        self._learners: dict = {}

    def setup(self):
        self._learners = {}  # key -> StreamLearner as of its last version, in this worker's memory

    def process(
        self,
        element,
        timestamp=beam.DoFn.TimestampParam,
        window=beam.DoFn.WindowParam,
        buffer=BUFFER_STATE,
        buffered=BUFFERED_STATE,
        learner=LEARNER_STATE,
        number=NUMBER_STATE,
        every=EVERY_TIMER,
    ):
        key, batch = element
        if not len(batch):
            return
        buffer.add((event_seconds(timestamp), batch))
        waiting = (buffered.read() or 0) + len(batch)
        if waiting >= self.every_examples:
            yield from self._version(key, buffer, buffered, learner, number)
            return
        if waiting == len(batch):  # the first example since the last version starts the clock
            start = timestamp if timestamp > MIN_TIMESTAMP else window.start
            every.set(min(start + Duration(seconds=self.every_seconds), window.max_timestamp()))
        buffered.write(waiting)

    @on_timer(EVERY)
    def on_every(
        self,
        key=beam.DoFn.KeyParam,
        buffer=BUFFER_STATE,
        buffered=BUFFERED_STATE,
        learner=LEARNER_STATE,
        number=NUMBER_STATE,
    ):
        yield from self._version(key, buffer, buffered, learner, number)

    def _folder(self, key) -> str | None:
        """Where ``key``'s versions go: the folder itself for the one model, ``keys/<key>`` in it per key."""
        if self.folder is None or key == ONE_MODEL:
            return self.folder
        return key_folder(self.folder, key)

    def _stream(self, key, learner, number) -> StreamLearner:
        """The key's StreamLearner as of its last version: this worker's copy when it is that one, else from
        state, else (a new job) from the model folder's latest version, else a fresh learner."""
        last = number.read()
        cached = self._learners.get(key)
        if cached is not None and last is not None and cached.number == last:
            return cached
        data = learner.read()
        folder = self._folder(key)
        if data is None and folder is not None:
            data = read_latest_state(folder)
        return StreamLearner.from_bytes(data) if data is not None else self._fresh(key)

    def _fresh(self, key) -> StreamLearner:
        """A new learner: per key, one whose state holds the slots it touches (as batch training's per key)."""
        if key == ONE_MODEL:
            return StreamLearner(self.config)
        return StreamLearner(self.config, make_learner(self.config, sparse=True))

    def _version(self, key, buffer, buffered, learner, number):
        timed = list(buffer.read())
        if not timed:
            return
        buffer.clear()
        buffered.clear()
        stream = self._stream(key, learner, number)
        version = None
        # (rows a restarted job read again, that its last version holds, make no version)
        if stream.learn(timed) or stream.number == 0:
            version = stream.version(None if key == ONE_MODEL else key)
            if self.known is not None:  # (as a batch job's model records them: scoring reads its input alike)
                version = dataclasses.replace(version, model=stamp(version.model, self.known))
        data = stream.to_bytes()
        folder = self._folder(key)
        if version is not None and folder is not None:
            write_version(folder, version, data)
        learner.write(data)
        number.write(stream.number)
        self._learners[key] = stream
        if version is not None:
            yield version


class TrainStream(beam.PTransform):
    """ExampleBatch elements in (each timestamped at its arrival), :class:`ModelVersion` elements out: one
    online learner over the whole stream (see the module's docstring).

    Parameters
    ----------
    config : LearnerConfig
        The learner (one pass: a stream has no passes).
    folder : str, optional
        The model folder versions are written to, and continued from when it holds some.
    every_seconds, every_examples
        A version when this many seconds passed since the first example waiting arrived, or this many
        examples wait, whichever comes first (and one when the input ends).
    origin : dict, optional
        How the input was read and where the job came from (:func:`polybeam.transforms.provenance.origin`),
        recorded in every version's model; by default the read's settings when the batches come from a
        polybeam read (``ReadWatched``, ``ReadExamples``), whose hashing and class names the learner takes as
        ``Train`` does.
    key : str or callable, optional
        One model per key (``--key``'s spec, as :class:`~polybeam.transforms.keys.ParsedKeys` reads it, or
        anything with its ``split(batch)``): each key's learner in its own Beam state, its versions in
        ``FOLDER/keys/<key>`` (:func:`key_folder`) and out with ``ModelVersion.key`` set.
    """

    def __init__(
        self,
        config: LearnerConfig,
        folder: str | None = None,
        *,
        every_seconds: float = EVERY_SECONDS,
        every_examples: int = EVERY_EXAMPLES,
        key=None,
        origin: dict | None = None,
    ):
        super().__init__()
        if not every_seconds > 0:
            raise ValueError(f"every_seconds must be > 0; got {every_seconds}")
        if not every_examples >= 1:
            raise ValueError(f"every_examples must be >= 1; got {every_examples}")
        self.config = config
        self.folder = folder
        self.every_seconds = every_seconds
        self.every_examples = every_examples
        if isinstance(key, str):
            from polybeam.transforms.keys import ParsedKeys

            key = ParsedKeys(key)
        self.key = key
        self.origin = origin

    def expand(self, batches):
        # The read's hashing and class names, as Train takes them, and how it read, in every version's model.
        read = getattr(batches, "polybeam_input", None)
        config, known = self.config, self.origin
        if read is not None:
            config = config_for_read(config, read, hashing_given=HASHING)
            known = known if known is not None else origin(read, ())
        # (typed: a str key's coder is deterministic, as a stateful DoFn's key must be)
        if self.key is None:
            keying = beam.Map(lambda batch: (ONE_MODEL, batch))
            keyed = batches | "KeyTheModel" >> keying.with_output_types(tuple[str, ExampleBatch])
        else:
            split = self.key.split
            keying = beam.FlatMap(lambda batch: [(str(k), part) for k, part in split(batch)])
            keyed = batches | "SplitByKey" >> keying.with_output_types(tuple[str, ExampleBatch])
        return keyed | "LearnStream" >> beam.ParDo(
            LearnStream(config, self.folder, self.every_seconds, self.every_examples, known)
        )


def key_folder(folder: str, key: str) -> str:
    """The folder of ``key``'s versions in a per-key stream's ``folder``: ``keys/`` and the key with every
    character a file name cannot hold percent-encoded (``""`` is ``%``).

    >>> key_folder("out", "user/7"), key_folder("out", "")
    ('out/keys/user%2F7', 'out/keys/%')
    """
    return join(folder, "keys", quote(key, safe="") or "%")


class VersionsAsModelMetadata(beam.PTransform):
    """Model versions (written to ``folder``) as RunInference's ``model_metadata_pcoll``: each version's
    model file, named ``v<number>``, in the global window, fired as they come (as Beam's own
    ``WatchFilePattern`` hands RunInference its models), so that the scoring side swaps to each new version."""

    def __init__(self, folder: str):
        super().__init__()
        self.folder = folder

    def expand(self, versions):
        folder = self.folder

        def metadata(version: ModelVersion) -> ModelMetadata:
            where = folder if version.key is None else key_folder(folder, version.key)
            return ModelMetadata(model_id=join(where, model_name(version.number)), model_name=f"v{version.number}")

        return (
            versions
            | "VersionMetadata" >> beam.Map(metadata)
            | "AsTheySwap"
            >> beam.WindowInto(
                window.GlobalWindows(),
                trigger=trigger.Repeatedly(trigger.AfterProcessingTime(1)),
                accumulation_mode=trigger.AccumulationMode.DISCARDING,
            )
        )
