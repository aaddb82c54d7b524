"""RecordOrigin: models that know how their input was read and where they came from.

Every model polybeam writes records, in its metadata,

- ``input``: how its examples were read (see
  :class:`~polybeam.formats.input_settings.InputSettings`): format, label,
  weight, key, ID, categorical and ignored columns, delimiter and header,
  bits and hash seed, class names. ``evaluate``, ``predict``, the RunInference
  handlers and the Beam YAML steps read their input the same way unless told
  otherwise;
- ``provenance``: the versions of polybeam, Apache Beam, numba and Python
  that trained it, the input patterns, what the read counted (records,
  examples, dead letters, skipped lines), the options given, the runner and
  when the job started and the model was finished (UTC).

The read's counts exist only once the workers have read everything, so they
reach the model through the pipeline (a side input of the step that stamps
the models, run by a worker just before the model is written), never through
the launcher.

>>> import numpy as np
>>> from polybeam.learners.config import LearnerConfig
>>> from polybeam.learners.model import Model
>>> from polybeam.formats.formats import make_format
>>> from polybeam.formats.records import ReadCounts
>>> model = Model(LearnerConfig(), np.array([1]), np.array([2.0]))
>>> settings = InputSettings.of(make_format("csv", label_column="y"))
>>> stamped = stamp(model, origin(settings, ["data/*.csv"]), ReadCounts(records=11, examples=10, skipped=1))
>>> stamped.input["label_column"], stamped.provenance["read"]["examples"], stamped.provenance["inputs"]
('y', 10, ['data/*.csv'])
"""

from __future__ import annotations

import dataclasses
import time
from datetime import UTC, datetime

import apache_beam as beam

from polybeam.formats.input_settings import InputSettings
from polybeam.formats.records import ReadCounts
from polybeam.learners.model import Model
from polybeam.transforms.key_shards import KeyShard
from polybeam.versions import versions

__all__ = ["RecordOrigin", "origin", "provenance_record", "stamp", "utc"]


def utc(seconds: float | None) -> str | None:
    """A time as ISO 8601 in UTC, to the second (``2025-05-01T12:00:00Z``)."""
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def origin(
    settings: InputSettings | None,
    inputs,
    *,
    command: str | None = None,
    options: dict | None = None,
    runner: str | None = None,
    started: float | None = None,
) -> dict:
    """What the launcher knows of a model's origin: how and what it reads, the options, the runner, the start."""
    return {
        "input": None if settings is None else settings.to_dict(),
        "inputs": list(inputs),
        "command": command,
        "options": dict(options or {}),
        "runner": runner,
        "started": started,
    }


def provenance_record(known: dict, counts: ReadCounts | None = None, finished: float | None = None) -> dict:
    """The ``provenance`` of a model or report: versions (of this process: the worker that writes it), the
    command, input patterns, read counts, options, runner, start and end (UTC); unknown entries left out."""
    record = {
        **versions(),
        "command": known.get("command"),
        "inputs": known.get("inputs"),
        "read": None if counts is None else counts.to_dict(),
        "options": known.get("options") or {},
        "runner": known.get("runner"),
        "started": utc(known.get("started")),
        "finished": utc(time.time() if finished is None else finished),
    }
    return {name: value for name, value in record.items() if value is not None}


def stamp(model: Model, known: dict, counts: ReadCounts | None = None, finished: float | None = None) -> Model:
    """``model`` with ``input`` and ``provenance`` in its metadata (see the module docstring); what it had
    before stays, but for these two."""
    return _with_origin(model, known, provenance_record(known, counts, finished))


def _with_origin(model: Model, known: dict, record: dict) -> Model:
    metadata = dict(model.metadata)
    if known.get("input") is not None:
        metadata["input"] = known["input"]
    metadata["provenance"] = record
    return dataclasses.replace(model, metadata=metadata)


def _stamp_element(element, known: dict, keyed: bool, counts=None):
    if isinstance(element, KeyShard):  # one record for the shard's models, which share it
        shared = {"provenance": provenance_record(known, counts)}
        if known.get("input") is not None:
            shared["input"] = known["input"]
        return dataclasses.replace(element, shared={**element.shared, **shared})
    if keyed:
        key, model = element
        return key, stamp(model, known, counts)
    return stamp(element, known, counts)


class RecordOrigin(beam.PTransform):
    """Records in each model (or ``(key, Model)``) how its input was read and where it came from.

    Parameters
    ----------
    reading : ReadExamples, ParseLines or InputSettings
        The read the models learned from (its format and file pattern), or
        the settings of that read (then give ``inputs``).
    counts : PCollection, optional
        One :class:`~polybeam.formats.records.ReadCounts` (``ReadExamples(...).counts``):
        what the read counted, recorded in each model once the read is done.
    inputs : sequence of str
        The input patterns (default: the ReadExamples' pattern).
    command, options, runner, started
        The job's command, its options (as given), its runner and its start
        (seconds since the epoch), for the record.
    keyed : bool
        The models are ``(key, Model)`` pairs.

    Examples
    --------
    >>> import os, tempfile
    >>> from polybeam.transforms.read import ReadExamples
    >>> from polybeam.transforms.train import Train
    >>> path = os.path.join(tempfile.mkdtemp(), "rows.csv")
    >>> _ = open(path, "w").write("rid,y,x\\nr1,1,2\\nr2,-1,3\\n")
    >>> read_step = ReadExamples(path, format="csv", label_column="y", id_column="rid", labels="binary")
    >>> with beam.Pipeline(runner="FnApiRunner") as p:
    ...     read = p | read_step
    ...     models = read.examples | Train(loss="logistic") | RecordOrigin(read_step, counts=read.counts)
    ...     _ = models | beam.Map(lambda m: print(m.input["id_column"], m.provenance["read"]["examples"]))
    rid 2
    """

    def __init__(
        self,
        reading,
        *,
        counts=None,
        inputs=None,
        command: str | None = None,
        options: dict | None = None,
        runner: str | None = None,
        started: float | None = None,
        keyed: bool = False,
    ):
        super().__init__()
        if isinstance(reading, InputSettings) or reading is None:
            settings = reading
        else:  # a ReadExamples (or ParseLines) transform: its format object and pattern (or source name)
            settings = InputSettings.of(reading.format, columns=tuple(getattr(reading, "columns", None) or ()))
            where = getattr(reading, "file_pattern", None) or getattr(reading, "source", None)
            inputs = ([where] if where else []) if inputs is None else inputs
        self.known = origin(settings, inputs or (), command=command, options=options, runner=runner, started=started)
        self.counts = counts
        self.keyed = keyed

    def expand(self, models):
        if self.counts is None:
            return models | "Stamp" >> beam.Map(_stamp_element, self.known, self.keyed)
        return models | "Stamp" >> beam.Map(
            _stamp_element, self.known, self.keyed, beam.pvalue.AsSingleton(self.counts)
        )
