"""Predict: score ExampleBatches with a model and write the predictions.

Each batch becomes one :class:`ScoredBatch` (predictions plus where each example
came from), and :class:`WritePredictions` writes them as tab-separated text,
one line per example, with a header line per output shard.
"""

from __future__ import annotations

from dataclasses import dataclass

import apache_beam as beam
import numpy as np

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

    For softmax models ``predictions`` holds the class probabilities (n x K)
    and the text output the most probable class (by name when the model has
    class names).
    """

    predictions: np.ndarray
    labels: np.ndarray
    source: str | None
    row_ids: np.ndarray | None
    tags: np.ndarray | None
    key: object = None
    class_names: tuple[str, ...] = ()
    # Columns after the usual ones, the same for every example of the batch (an anytime prefix's size and cost).
    extra: tuple = ()

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
        if self.predictions.ndim == 2:
            predicted = [self._class(k + 1) for k in np.argmax(self.predictions, axis=1)]
            labels = [self._class(label) if label == label else "" for label in self.labels.tolist()]
        else:
            predicted = [f"{value:.9g}" for value in self.predictions.tolist()]
            labels = [f"{value:.9g}" for value in self.labels.tolist()]
        key = f"\t{self.key}" if with_key else ""
        key += "".join(f"\t{value:.9g}" if isinstance(value, float) else f"\t{value}" for value in self.extra)
        return "\n".join(
            f"{prediction}\t{label}\t{source}\t{row}\t{tag or ''}{key}"
            for prediction, label, row, tag in zip(predicted, labels, rows.tolist(), tags)
        )


class _PredictFn(beam.DoFn):
    def __init__(self, keyed: bool):
        self.keyed = keyed

    def process(self, element, models):
        key, batch, model = model_for(element, models, self.keyed)
        yield ScoredBatch(
            model.predict(batch), batch.labels, batch.source, batch.row_ids, batch.tags, key, model.config.class_names
        )


class Predict(beam.PTransform):
    """Scores each ExampleBatch with ``model``, emitting one :class:`ScoredBatch` per batch.

    ``model`` is a Model, or a PCollection holding one Model (e.g. from
    ``ReadModel`` or ``Train``); with ``key``, a PCollection of ``(key, Model)``
    or a :class:`~polybeam.transforms.routing.ModelLibrary`, and each example
    is scored by its key's model. ``routed=True``: the input is ``(key, batch)``
    pairs already (from :class:`~polybeam.transforms.routing.RouteByKey`).
    """

    def __init__(self, model, *, key: KeyFn | None = None, routed: bool = False):
        super().__init__()
        self.model = model
        self.key = key
        self.routed = routed

    def expand(self, batches):
        keyed = self.key is not None or self.routed
        batches = batches if self.routed else split_by_key(batches, self.key)
        return batches | "Score" >> beam.ParDo(_PredictFn(keyed), model_argument(self.model, keyed))


class WritePredictions(beam.PTransform):
    """Writes ScoredBatches as tab-separated lines: prediction, label, source, row, the example's ID (and key,
    and the ``extra_columns`` the batches carry, such as an anytime prefix's ``prefix`` and ``cost``).

    The ID column is headed ``id_name``: the input's ID column (``--id-column``), or ``tag`` for VW's tags
    (see :func:`id_column_name`). Emits the names of the files written."""

    def __init__(
        self,
        path_prefix: str,
        *,
        num_shards: int = 0,
        shard_name_template: str | None = None,
        with_key: bool = False,
        extra_columns: tuple[str, ...] = (),
        id_name: str = ID_COLUMN,
    ):
        super().__init__()
        self.id_name = id_name
        self.path_prefix = path_prefix
        self.num_shards = num_shards
        self.shard_name_template = shard_name_template
        self.with_key = with_key
        self.extra_columns = tuple(extra_columns)

    def expand(self, scored):
        extra = {} if self.shard_name_template is None else {"shard_name_template": self.shard_name_template}
        header = "\t".join(PREDICTION_HEADER.split("\t")[:-1] + [self.id_name])
        header += ("\tkey" if self.with_key else "") + "".join(f"\t{c}" for c in self.extra_columns)
        return (
            scored
            | "ToText" >> beam.Map(ScoredBatch.to_text, self.with_key)
            | "NonEmpty" >> beam.Filter(bool)
            | "Write" >> beam.io.WriteToText(self.path_prefix, header=header, num_shards=self.num_shards, **extra)
        )
