"""Predict: score ExampleBatches with a model and write the predictions.

Each batch becomes one :class:`ScoredBatch` (predictions plus where each example
came from), and :class:`WritePredictions` writes them as tab-separated text,
one line per example after a header line: by default as one file named exactly
as asked, published only once the job's input check passed (see
docs/predict.md for the columns and the choice of label, probability or score).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import uuid
from dataclasses import dataclass

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.util import WaitOn

from polybeam.learners.choices import PREDICTION_KINDS
from polybeam.learners.predictions import model_values
from polybeam.transforms.keys import KeyFn, split_by_key
from polybeam.transforms.model_io import model_argument, model_for

PREDICTION_HEADER = "prediction\tlabel\tsource\trow\ttag"
# The last column holds each example's ID: its VW tag, or the value of its CSV/Parquet ID column.
ID_COLUMN = "tag"
_BLANK_SEPARATORS = str.maketrans("\t\r\n", "   ")


def id_column_name(settings=None) -> str:
    """The header of the predictions' ID column: the input's ID column's name (``id`` for a column given by
    position), else ``tag`` (VW's tags, when there are any).

    >>> from polybeam.formats.input_settings import InputSettings
    >>> id_column_name(InputSettings("csv", {"id_column": "user"})), id_column_name(InputSettings("vw"))
    ('user', 'tag')
    """
    column = None if settings is None else settings.options.get("id_column")
    if column is None:
        return ID_COLUMN
    return column if isinstance(column, str) and column.strip() and "\t" not in column and "\n" not in column else "id"


@dataclass(frozen=True, eq=False)
class ScoredBatch:
    """Predictions for one batch: ``row_ids`` are byte offsets (text) or row numbers (Parquet).

    ``predictions`` are what :meth:`Model.predict <polybeam.learners.model.Model.predict>` gives (``kind``
    empty): for softmax models the class probabilities (n x K), written as the most probable class (by name
    when the model has class names). With a ``kind`` (see :mod:`polybeam.learners.predictions`) they are
    what is written: numbers (n, or n x K: one column each) or labels (an object array of names).
    """

    predictions: np.ndarray
    labels: np.ndarray
    source: str | None
    row_ids: np.ndarray | None
    tags: np.ndarray | None
    key: object = None  # the examples' key, or an object array of each example's
    class_names: tuple[str, ...] = ()
    # Columns after the usual ones, the same for every example of the batch (an anytime prefix's size and cost).
    extra: tuple = ()
    kind: str = ""

    def _class(self, class_id) -> str:
        class_id = int(class_id)
        if self.class_names and 1 <= class_id <= len(self.class_names):
            return self.class_names[class_id - 1]
        return str(class_id)

    def to_text(self, with_key: bool = False) -> str:
        """The batch's lines of prediction output (no trailing newline); ``with_key`` adds the key column."""
        n = len(self.predictions)
        rows = self.row_ids if self.row_ids is not None else np.full(n, -1)
        # An ID may hold a tab or a line break (a quoted CSV cell): as blanks, so that every line keeps its columns.
        tags = (
            [None if tag is None else tag.translate(_BLANK_SEPARATORS) for tag in self.tags.tolist()]
            if self.tags is not None
            else [None] * n
        )
        source = self.source or ""
        if self.predictions.ndim == 2 and self.kind:  # a column per class
            predicted = ["\t".join(f"{value:.9g}" for value in row) for row in self.predictions.tolist()]
        elif self.predictions.ndim == 2:
            predicted = [self._class(k + 1) for k in np.argmax(self.predictions, axis=1)]
        elif self.predictions.dtype == object:  # labels by name
            predicted = [str(value).translate(_BLANK_SEPARATORS) for value in self.predictions.tolist()]
        else:
            predicted = [f"{value:.9g}" for value in self.predictions.tolist()]
        # A missing label (input without one) is an empty cell.
        if self.class_names or self.predictions.ndim == 2:
            labels = [self._class(label) if label == label else "" for label in self.labels.tolist()]
        else:
            labels = [f"{value:.9g}" if value == value else "" for value in self.labels.tolist()]
        extra = "".join(f"\t{value:.9g}" if isinstance(value, float) else f"\t{value}" for value in self.extra)
        if with_key and isinstance(self.key, np.ndarray):  # each example's own key
            keys = [f"\t{key}{extra}" for key in self.key.tolist()]
        else:
            keys = [(f"\t{self.key}" if with_key else "") + extra] * n
        return "\n".join(
            f"{prediction}\t{label}\t{source}\t{row}\t{tag or ''}{key}"
            for prediction, label, row, tag, key in zip(predicted, labels, rows.tolist(), tags, keys)
        )


def renamed_source(scored: ScoredBatch, source: str, name: str) -> ScoredBatch:
    """``scored`` with its source ``name`` when it is ``source`` (a temporary copy of standard input, say)."""
    return dataclasses.replace(scored, source=name) if scored.source == source else scored


class _PredictFn(beam.DoFn):
    def __init__(self, keyed: bool, kind: str | None):
        self.keyed = keyed
        self.kind = kind

    def process(self, element, models):
        key, batch, model = model_for(element, models, self.keyed)
        if self.kind is None:
            predictions = model.predict(batch)
        else:
            predictions = model_values(model, batch, self.kind)
        yield ScoredBatch(
            predictions,
            batch.labels,
            batch.source,
            batch.row_ids,
            batch.tags,
            key,
            model.config.class_names,
            kind=self.kind or "",
        )


class Predict(beam.PTransform):
    """Scores each ExampleBatch with ``model``, emitting one :class:`ScoredBatch` per batch.

    ``model`` is a Model, or a PCollection holding one Model (e.g. from
    ``ReadModel`` or ``Train``); with ``key``, a PCollection of ``(key, Model)``
    or a :class:`~polybeam.transforms.routing.ModelLibrary`, and each example
    is scored by its key's model. ``routed=True``: the input is ``(key, batch)``
    pairs already (from :class:`~polybeam.transforms.routing.RouteByKey`).

    ``predictions``: what each prediction is, ``"label"``, ``"probability"`` or ``"score"`` (see
    :mod:`polybeam.learners.predictions`); None (the default): :meth:`Model.predict
    <polybeam.learners.model.Model.predict>`'s.
    """

    def __init__(
        self,
        model,
        *,
        key: KeyFn | None = None,
        routed: bool = False,
        predictions: str | None = None,
    ):
        super().__init__()
        if predictions is not None and predictions not in PREDICTION_KINDS:
            raise ValueError(f"predictions must be one of {', '.join(PREDICTION_KINDS)}, got {predictions!r}")
        self.model = model
        self.key = key
        self.routed = routed
        self.predictions = predictions

    def expand(self, batches):
        keyed = self.key is not None or self.routed
        batches = batches if self.routed else split_by_key(batches, self.key)
        return batches | "Score" >> beam.ParDo(_PredictFn(keyed, self.predictions), model_argument(self.model, keyed))


class WritePredictions(beam.PTransform):
    """Writes ScoredBatches as tab-separated lines: the prediction column(s), label, source, row, the example's
    ID (and key, and the ``extra_columns`` the batches carry, such as an anytime prefix's ``prefix`` and ``cost``).

    The prediction columns are headed ``prediction_columns`` (one ``prediction``, or one per class: see
    :func:`~polybeam.learners.predictions.prediction_columns`); the ID column ``id_name``: the input's ID
    column (``--id-column``), or ``tag`` for VW's tags (see :func:`id_column_name`).

    Without ``num_shards`` (None), one file named exactly ``path``; with ``num_shards`` N, N files
    ``path-SSSSS-of-NNNNN`` (0: as many as the runner likes; ``shard_name_template`` another template).
    They are written under temporary names beside ``path`` and renamed into place by one last step, once
    every PCollection of ``after`` is complete (the job's input check): a refused job leaves no predictions.
    Emits the names of the files written."""

    def __init__(
        self,
        path: str,
        *,
        num_shards: int | None = None,
        shard_name_template: str | None = None,
        with_key: bool = False,
        extra_columns: tuple[str, ...] = (),
        id_name: str = ID_COLUMN,
        prediction_columns: tuple[str, ...] = ("prediction",),
        after: tuple = (),
    ):
        super().__init__()
        if num_shards is not None and num_shards < 0:
            raise ValueError(f"num_shards must be >= 0 (0: as many as the runner likes), got {num_shards}")
        self.id_name = id_name
        self.path = path
        self.num_shards = num_shards
        self.shard_name_template = shard_name_template
        self.with_key = with_key
        self.extra_columns = tuple(extra_columns)
        self.prediction_columns = tuple(prediction_columns)
        self.after = tuple(after)
        # Beside the target (the same file system, so the last rename is one), unique to this pipeline.
        self.staging = f"{path}.polybeam-tmp-{uuid.uuid4().hex[:12]}"

    @property
    def header(self) -> str:
        columns = [*self.prediction_columns, *PREDICTION_HEADER.split("\t")[1:-1], self.id_name]
        columns += (["key"] if self.with_key else []) + list(self.extra_columns)
        return "\t".join(column.translate(_BLANK_SEPARATORS) for column in columns)

    def discard(self) -> None:
        """Remove what a job that failed left under its temporary names (the launcher calls it)."""
        remove_staging(self.staging, everything=True)

    def expand(self, scored):
        staging = self.staging
        single = self.num_shards is None
        if single:
            shards = {"num_shards": 1, "shard_name_template": ""}
        else:
            template = self.shard_name_template
            shards = {"num_shards": self.num_shards, **({} if template is None else {"shard_name_template": template})}
        written = (
            scored
            | "ToText" >> beam.Map(ScoredBatch.to_text, self.with_key)
            | "NonEmpty" >> beam.Filter(bool)
            | "Write" >> beam.io.WriteToText(FileSystems.join(staging, "part"), header=self.header, **shards)
        )
        ready = written | "AllWritten" >> beam.combiners.ToList()
        if self.after:
            ready = ready | "AfterInputCheck" >> WaitOn(*self.after)
        return ready | "Publish" >> beam.FlatMap(_publish, staging, self.path, single)


def _publish(names: list[str], staging: str, path: str, single: bool) -> list[str]:
    """Rename the files written under ``staging`` to their own names (``path``, or ``path`` followed by each
    shard's suffix); the names published. Idempotent: a retried step finds them published already."""
    prefix = FileSystems.join(staging, "part")
    targets = [path if single else path + name[len(prefix) :] for name in sorted(names)]
    pending = [(name, target) for name, target in zip(sorted(names), targets) if FileSystems.exists(name)]
    if pending:
        sources, destinations = zip(*pending)
        remote = [target for target in destinations if "://" in target and FileSystems.exists(target)]
        if remote:
            FileSystems.delete(remote)  # object stores may refuse to rename onto an existing object
        FileSystems.rename(list(sources), list(destinations))
    remove_staging(staging)
    return targets


def remove_staging(staging: str, everything: bool = False) -> None:
    """Remove the temporary folder of :class:`WritePredictions` once its files are published (or, with
    ``everything``, whatever a failed job left in it)."""
    try:
        if "://" not in staging:
            if everything:
                shutil.rmtree(staging, ignore_errors=True)
            elif os.path.isdir(staging):
                os.rmdir(staging)  # (empty once its files are published)
        elif FileSystems.exists(staging + "/"):
            FileSystems.delete([staging + "/"])
    except Exception:  # (Beam wraps file-system errors in its own types) leave what cannot be removed
        pass
