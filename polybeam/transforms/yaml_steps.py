"""polybeam's transforms as Beam YAML steps: plain settings in, named PCollections out.

Beam YAML calls a Python transform by name with its ``config`` as keyword
arguments, and wires steps by named outputs (``Read.examples``). These thin
composites give polybeam's transforms that shape; the provider listing
shipped with the package (``polybeam/yaml_providers.yaml``, its path in
:data:`PROVIDERS`) names them:

================================  ==========================================================
``PolybeamReadExamples``          files -> ``examples`` (ExampleBatches), ``dead_letters``, ``counts``, ``origin``
``PolybeamTrain``                 examples (or ``{examples, origin}``) -> ``model``; writes the model file
``PolybeamEvaluate``              ``{examples, model}`` (or a ``model`` path) -> ``metrics`` (one Row)
``PolybeamPredict``               ``{examples, model}`` (or a ``model`` path) -> ``predictions`` (Rows)
``PolybeamRunInference``          rows -> the rows with the model's inference (RunInference, ``PolybeamModelHandler``)
``PolybeamSequence``              examples -> ``prefixes`` (Rows: rank, group, cost, ...); writes the file
================================  ==========================================================

``PolybeamEvaluate`` and ``PolybeamPredict`` take ExampleBatches or schema'd
rows of Beam YAML's own steps (``ReadFromCsv``, ``ReadFromParquet``,
``Create``, ``MapToFields``, ...), read as the model's training input was
read (see :mod:`polybeam.formats.fields`), with ``label``, ``weight``,
``features`` and ``ignore`` naming fields. Metrics, predictions, scored rows
and prefixes are schema'd Rows, so Beam YAML's own steps
(``WriteToJson``, ``MapToFields``, ``Filter``, ...) take them. A pipeline
includes the listing with ``providers: [{include: PATH}]``, where
``python -m polybeam.transforms.yaml_steps`` prints PATH.

Models know their input as the command line's do: ``PolybeamTrain`` given
``{examples: Read.examples, origin: Read.origin}`` records how the read read
them and what it counted (see :mod:`polybeam.transforms.provenance`), and
``PolybeamReadExamples`` with ``model: PATH`` reads as that model's input was
read (its format, columns, bits, seed, classes, and the labels its loss
takes), unless its config says otherwise. Predictions carry each example's
ID (``id``: the ID column's value, or the VW tag).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import apache_beam as beam
import numpy as np
from apache_beam.typehints.row_type import RowTypeConstraint

from polybeam.formats.columns import check_missing_columns
from polybeam.formats.fields import RowReading
from polybeam.formats.input_settings import InputSettings, readable_by
from polybeam.formats.records import ReadCounts
from polybeam.learners.choices import KEY_MODELS
from polybeam.learners.config import LearnerConfig
from polybeam.learners.loss_specs import loss_spec
from polybeam.learners.multitask import SharedKeys
from polybeam.learners.predictions import PROBABILISTIC
from polybeam.transforms.dead_letters import WriteDeadLetters
from polybeam.transforms.evaluate import Evaluate
from polybeam.transforms.model_io import ReadModel, WriteModel, read_model
from polybeam.transforms.predict import Predict
from polybeam.transforms.provenance import origin, stamp
from polybeam.transforms.read import ReadExamples
from polybeam.transforms.train import Train


class Counts(NamedTuple):
    """What a read saw: records = examples + dead letters + skipped lines."""

    records: int
    examples: int
    dead_letters: int
    skipped: int


class Metrics(NamedTuple):
    """Held-out metrics (NaN where one does not apply: auc for regression, mse for classification, mae and
    coverage for the losses that do not report them: see ``polybeam.learners.loss_specs``)."""

    examples: int
    loss: float
    error: float
    auc: float
    mse: float
    mae: float
    coverage: float


class Prediction(NamedTuple):
    """One example's prediction, as ``polybeam predict`` writes it; softmax also names the class; ``id`` is
    the example's ID (its ID column's value, or its VW tag; empty when it has none)."""

    prediction: float
    label: float
    source: str
    row: int
    predicted_class: str
    id: str


class Prefix(NamedTuple):
    """One chosen group of an anytime sequence."""

    rank: int
    group: str
    cost: float
    cumulative_cost: float
    explained_variance: float


# Schema'd rows: Beam YAML's writers and mappings read their fields.
for _row_type in (Counts, Metrics, Prediction, Prefix):
    beam.coders.registry.register_coder(_row_type, beam.coders.RowCoder)

PROVIDERS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "yaml_providers.yaml")


def _tuples(settings: Mapping) -> dict:
    """YAML's lists as the tuples polybeam's settings take (``categorical_columns``, ``class_names``, ...)."""
    return {name: tuple(value) if isinstance(value, list) else value for name, value in settings.items()}


def _examples_and(inputs, other: str, step: str) -> tuple:
    """``(examples, the input named other or None)`` of a step's input: ``STEP.examples`` alone, or
    ``{examples: STEP.examples, OTHER: STEP.OTHER}``."""
    if not isinstance(inputs, Mapping):
        return inputs, None
    if set(inputs) - {"examples", other} or "examples" not in inputs:
        raise ValueError(
            f"{step} takes input STEP.examples or {{examples: STEP.examples, {other}: STEP.{other}}}, "
            f"got {sorted(inputs)}"
        )
    return inputs["examples"], inputs.get(other)


def _refuse_rows(examples, step: str) -> None:
    """Say what a step that learns takes when it is given rows of another step (not an AttributeError later)."""
    fields = _row_fields(examples)
    if fields is not None:
        raise ValueError(
            f"{step} takes the examples of a PolybeamReadExamples step, not rows (fields "
            f"{[name for name, _ in fields]}); read the file with PolybeamReadExamples (format: csv, "
            "label_column, categorical_columns, ...). Rows are for PolybeamPredict, PolybeamEvaluate "
            "and PolybeamRunInference"
        )


class _ModelStep(beam.PTransform):
    """A step that scores examples with a model: from an input named ``model`` (a PolybeamTrain step's
    output), or from ``model: PATH``; its input is ``examples`` alone or ``{examples, model}``."""

    def __init__(self, model: str | None = None):
        super().__init__()
        self.path = model

    def _examples_and_model(self, inputs) -> tuple:
        step = type(self).__name__
        inputs, model = _examples_and(inputs, "model", step)
        if (model is None) == (self.path is None):
            raise ValueError(f"{step} needs its model from one place: an input named model, or config model: PATH")
        if model is None:
            model = inputs.pipeline | f"{step}ReadModel" >> ReadModel(self.path)
        return inputs, model


class PolybeamReadExamples(beam.PTransform):
    """Read examples: ``path`` (a glob on any Beam file system) in ``format``; any ReadExamples setting
    (``bits``, ``seed``, ``labels``, ``label_column``, ``categorical_columns``, ``id_column``, ...).
    ``model``, when given, is a model file whose input settings (and loss's labels) apply unless given
    here. ``dead_letters``, when given, is where the refused records are written (JSON lines). Besides
    ``examples``, ``dead_letters`` and ``counts``, outputs ``origin``: how the read read and what it
    counted, for ``PolybeamTrain`` to record in its model."""

    _yaml_requires_inputs = False  # a source: Beam YAML then asks for no input

    def __init__(
        self,
        path: str,
        format: str | None = None,
        dead_letters: str | None = None,
        model: str | None = None,
        **settings,
    ):
        super().__init__()
        self.path = path
        self.dead_letters_path = dead_letters
        settings = _tuples(settings)
        if model is not None:  # read as the model's input was read (read now: a bad model fails at once)
            format, settings = _as_model_reads(read_model(model), model, format, settings)
        self.format = format or "libsvm"
        self.settings = settings

    def expand(self, pbegin):
        reading = ReadExamples(self.path, format=self.format, **self.settings)
        read = pbegin | "Read" >> reading
        if self.dead_letters_path:
            read.dead_letters | "WriteDeadLetters" >> WriteDeadLetters(
                self.dead_letters_path, file_name_suffix="", num_shards=1, shard_name_template=""
            )
        counts = read.counts | "CountRows" >> beam.Map(
            lambda c: Counts(c.records, c.examples, c.dead_letters, c.skipped)
        ).with_output_types(Counts)
        known = origin(InputSettings.of(reading.format), [reading.file_pattern], command="yaml")
        read_origin = read.counts | "Origin" >> beam.Map(lambda c, known: {**known, "read": c.to_dict()}, known)
        return {"examples": read.examples, "dead_letters": read.dead_letters, "counts": counts, "origin": read_origin}


def _as_model_reads(model, path: str, format: str | None, settings: dict) -> tuple[str | None, dict]:
    """``(format, settings)``: those given, over how ``model``'s input was read (when it says) and the labels
    its loss takes."""
    settings = {"labels": model.config.label_kind, **settings}
    if not model.input:
        return format, settings
    recorded = InputSettings.from_dict(model.input)
    if format is not None and not readable_by(recorded.format, format):
        raise ValueError(
            f"format {format!r} cannot be the input of the model {path}: it was trained on "
            f"{recorded.format} input ({recorded.flags()})"
        )
    if format is None or format == recorded.format:
        return recorded.format, {**recorded.reader_options(settings["labels"]), **settings}
    return format, {"bits": recorded.bits, "seed": recorded.seed, **settings}


def _stamp_with_origin(model, read_origin: dict):
    return stamp(model, read_origin, ReadCounts.from_dict(read_origin["read"]))


class PolybeamTrain(beam.PTransform):
    """Train on ``examples`` with any LearnerConfig setting (``loss``, ``passes``, ``expand``, ...);
    ``model`` is where the model file goes. With input ``{examples, origin}`` (a PolybeamReadExamples
    step's outputs), the model records how its input was read and where it came from. Outputs ``model``
    (a PCollection of one Model). With no example the job fails, unless ``allow_empty: true``.
    ``key: column:NAME`` (or ``namespace:NAME``, ``tag``, ``file``, as ``--key``) with ``key_model: shared``
    trains one shared per-key model (the read must keep the key: ``key_column: NAME`` or
    ``key_namespace: NAME``); separate per-key models, a folder of files, are the command line's."""

    def __init__(
        self, model: str, allow_empty: bool = False, key: str | None = None, key_model: str = "separate", **settings
    ):
        super().__init__()
        self.path = model
        self.allow_empty = allow_empty
        self.settings = _tuples(settings)
        self.config = LearnerConfig(**self.settings)  # (refuses a bad setting when the pipeline is built)
        if key_model not in KEY_MODELS:
            raise ValueError(f"PolybeamTrain: key_model must be one of {', '.join(KEY_MODELS)}; got {key_model!r}")
        if key is not None and key_model != "shared":
            raise ValueError(
                "PolybeamTrain writes one model file: with a key, give key_model: shared (separate "
                "per-key models, a folder of files, are `polybeam train --key`'s)"
            )
        if key is None and key_model == "shared":
            raise ValueError("PolybeamTrain: key_model: shared needs key (e.g. key: column:store)")
        self.shared_keys = None if key is None else SharedKeys(key, seed=self.config.seed)

    def expand(self, inputs):
        inputs, read_origin = _examples_and(inputs, "origin", "PolybeamTrain")
        _refuse_rows(inputs, "PolybeamTrain")
        # (the settings, not the config: bits and seed left out are the read's)
        model = inputs | "Train" >> Train(allow_empty=self.allow_empty, shared_keys=self.shared_keys, **self.settings)
        if read_origin is not None:  # how the examples were read, and what the read counted
            model = model | "RecordOrigin" >> beam.Map(_stamp_with_origin, beam.pvalue.AsSingleton(read_origin))
        model | "Write" >> WriteModel(self.path)
        return {"model": model}


def _metrics_row(metrics: dict) -> Metrics:
    """One row of fixed fields: NaN where a metric does not apply (a field has one type)."""
    value = lambda name: float("nan") if metrics.get(name) is None else float(metrics[name])  # noqa: E731
    return Metrics(int(metrics["examples"]), *(value(name) for name in Metrics._fields[1:]))


class _RowFields:
    """A step's config naming the fields of schema'd rows: ``label``, ``weight``, ``features`` (default: every
    other field but the model's key, ID and ignored columns), ``ignore`` (more fields that are no features),
    ``missing_columns`` (``refuse``, the default: rows lacking one of the model's columns are refused, naming
    it; ``allow``: read absent columns as missing values)."""

    def __init__(
        self,
        step: str,
        label: str | None = None,
        weight: str | None = None,
        features: list[str] | tuple[str, ...] | None = None,
        ignore: list[str] | tuple[str, ...] = (),
        missing_columns: str = "refuse",
    ):
        self.step = step
        self.missing_columns = check_missing_columns(missing_columns)
        self.label = label
        self.weight = weight
        self.features = None if features is None else tuple(features)
        self.ignore = tuple(ignore)
        RowReading(label=label, weight=weight, features=self.features, ignore=self.ignore)  # a clash fails here

    def check(self, fields: list[tuple[str, object]]) -> None:
        """Refuse names the rows do not have (at construction: the rows' schema is known then)."""
        names = [name for name, _ in fields]
        for setting, named in (
            ("label", [self.label]),
            ("weight", [self.weight]),
            ("features", self.features or ()),
            ("ignore", self.ignore),
        ):
            unknown = sorted(set(named) - set(names) - {None})
            if unknown:
                raise ValueError(
                    f"{self.step}: {setting} names {unknown}, which the rows do not have; their fields are {names}"
                )

    def reading(self, model) -> RowReading:
        """How rows become examples of ``model``: as its training input was read, with the fields named here."""
        settings = InputSettings.from_dict(model.input) if getattr(model, "input", None) else None
        return RowReading(
            settings,
            label=self.label,
            weight=self.weight,
            features=self.features,
            ignore=self.ignore,
            missing_columns=self.missing_columns,
        )


def _keyed(batch, records: list, model):
    """The batch with each row's key, for a shared per-key model (its key column's value; none: the shared
    weights)."""
    if model.shared_keys is None or batch.key_codes is not None:
        return batch
    from polybeam.transforms.inference import keys_of

    _, keys = keys_of(records, model, "dict")
    names, codes = np.unique(np.asarray(keys, dtype=object).astype(str), return_inverse=True)
    return dataclasses.replace(batch, key_codes=codes.astype(np.int32), key_names=tuple(names.tolist()))


_REFUSED_ROWS = beam.metrics.Metrics.counter("polybeam", "rows_refused")


def _labelled_rows(rows, model, fields: _RowFields):
    """A Beam batch of rows as one ExampleBatch of those with a label the model takes (others are counted)."""
    records = [row._asdict() for row in rows]
    config = model.config
    read = fields.reading(model).examples(
        records,
        bits=config.bits,
        seed=config.seed,
        labels=config.label_kind,
        classes=config.classes,
        label_names=config.class_names,
    )
    if read.refused:
        _REFUSED_ROWS.inc(len(read.refused))
    if len(read.batch):
        yield _keyed(read.batch, [records[i] for i in read.rows.tolist()], model)


class PolybeamEvaluate(_ModelStep):
    """Held-out metrics of a model on ``examples`` (the model as :class:`_ModelStep` says). Outputs
    ``metrics``: one Row (examples, loss, error, auc, mse).

    ``examples`` may also be rows of any YAML step (``ReadFromCsv``, ``ReadFromParquet``, ``Create``,
    ``MapToFields``, ...), read as :mod:`polybeam.formats.fields` says: ``label`` names the label field
    (default: the model's label column), ``weight`` an importance weight field, ``features`` the feature
    fields (default: all others but the model's key, ID and ignored columns), ``ignore`` fields that are no
    features. A row without a label the model takes is left out (counted as ``polybeam/rows_refused``), as
    ``polybeam evaluate`` leaves out a file's dead letters."""

    def __init__(
        self,
        model: str | None = None,
        label: str | None = None,
        weight: str | None = None,
        features: list[str] | None = None,
        ignore: list[str] | tuple[str, ...] = (),
        missing_columns: str = "refuse",
    ):
        super().__init__(model)
        self.fields = _RowFields("PolybeamEvaluate", label, weight, features, ignore, missing_columns)

    def expand(self, inputs):
        examples, model = self._examples_and_model(inputs)
        fields = _row_fields(examples)
        if fields is not None:
            self.fields.check(fields)
            batches = examples | "BatchRows" >> beam.BatchElements(min_batch_size=1, max_batch_size=4096)
            examples = batches | "RowsToExamples" >> beam.FlatMap(
                _labelled_rows, beam.pvalue.AsSingleton(model), self.fields
            )
        metrics = examples | "Evaluate" >> Evaluate(model)
        return {"metrics": metrics | "ToRow" >> beam.Map(_metrics_row).with_output_types(Metrics)}


def _prediction_rows(scored):
    n = len(scored.predictions)
    rows = scored.row_ids.tolist() if scored.row_ids is not None else [-1] * n
    labels = scored.labels.tolist()
    ids = ["" if tag is None else str(tag) for tag in scored.tags.tolist()] if scored.tags is not None else [""] * n
    source = scored.source or ""
    if scored.predictions.ndim == 2:  # softmax: the most probable class and its probability
        best = scored.predictions.argmax(axis=1)
        for i in range(n):
            yield Prediction(
                float(scored.predictions[i, best[i]]),
                float(labels[i]),
                source,
                int(rows[i]),
                scored._class(best[i] + 1),
                ids[i],
            )
        return
    for prediction, label, row, identity in zip(scored.predictions.tolist(), labels, rows, ids):
        yield Prediction(float(prediction), float(label), source, int(row), "", identity)


class PolybeamPredict(_ModelStep):
    """Predictions of a model for ``examples`` (the model as :class:`_ModelStep` says). Outputs
    ``predictions``: one Row per example (prediction, label, source, row, predicted_class for softmax, id).
    The numbers are ``polybeam predict``'s.

    ``examples`` may also be rows of any YAML step (``ReadFromCsv``, ``ReadFromParquet``, ``Create``,
    ``MapToFields``, ...), read as :mod:`polybeam.formats.fields` says (a string a category, a null, NaN or
    empty value a missing feature, as in a CSV cell); ``label``, ``weight``, ``features`` and ``ignore`` name
    fields as :class:`PolybeamEvaluate`'s do (the label needs not be there). Each prediction row is then the
    input row with ``prediction`` and ``predicted_class`` added."""

    def __init__(
        self,
        model: str | None = None,
        ignore: list[str] | tuple[str, ...] = (),
        label: str | None = None,
        weight: str | None = None,
        features: list[str] | None = None,
        missing_columns: str = "refuse",
    ):
        super().__init__(model)
        self.fields = _RowFields("PolybeamPredict", label, weight, features, ignore, missing_columns)

    def expand(self, inputs):
        examples, model = self._examples_and_model(inputs)
        fields = _row_fields(examples)
        if fields is not None:
            return {"predictions": examples | "ScoreRows" >> _ScoreRows(model, fields, self.fields)}
        scored = examples | "Predict" >> Predict(model)
        return {"predictions": scored | "ToRows" >> beam.FlatMap(_prediction_rows).with_output_types(Prediction)}


def _row_fields(pcollection) -> list[tuple[str, object]] | None:
    """The ``(name, type)`` fields of a PCollection of schema'd rows; None for anything else (ExampleBatches)."""
    from apache_beam.typehints.schemas import named_fields_from_element_type

    try:
        return list(named_fields_from_element_type(pcollection.element_type))
    except (TypeError, ValueError, AttributeError):
        return None


def _is_text_type(kind) -> bool:
    """Whether a schema field's type is text (``str``, ``bytes``, or either optional).

    >>> from typing import Optional
    >>> _is_text_type(Optional[str]), _is_text_type(bytes), _is_text_type(Optional[float])
    (True, True, False)
    """
    members = getattr(kind, "__args__", None) if getattr(kind, "__origin__", None) is not None else None
    if members is not None and type(None) in members:  # Optional[T]: T
        members = [member for member in members if member is not type(None)]
        kind = members[0] if len(members) == 1 else kind
    return kind in (str, bytes)


def _score_rows(rows, model, fields: _RowFields):
    records = [row._asdict() for row in rows]
    # As a file's records are read for the model (its label, non-feature and categorical columns); every row is
    # scored, with or without a label.
    read = fields.reading(model).examples(records, bits=model.config.bits, seed=model.config.seed)
    predictions = model.predict(_keyed(read.batch, records, model))
    if predictions.ndim == 2:  # softmax: the most probable class and its probability
        best = predictions.argmax(axis=1)
        for record, probabilities, k in zip(records, predictions, best):
            yield beam.Row(**record, prediction=float(probabilities[k]), predicted_class=model.class_name(int(k) + 1))
        return
    for record, prediction in zip(records, predictions.tolist()):
        yield beam.Row(**record, prediction=float(prediction), predicted_class="")


class _ScoreRows(beam.PTransform):
    """Rows in, the rows with their prediction out: scored a batch of rows at a time (one ExampleBatch each)."""

    def __init__(self, model, fields: list[tuple[str, object]], named: _RowFields):
        super().__init__()
        self.model = model
        self.fields = fields
        self.named = named
        named.check(fields)

    def expand(self, rows):
        schema = RowTypeConstraint.from_fields(self.fields + [("prediction", float), ("predicted_class", str)])
        return (
            rows
            | "Batch" >> beam.BatchElements(min_batch_size=1, max_batch_size=4096)
            | "Score"
            >> beam.FlatMap(_score_rows, beam.pvalue.AsSingleton(self.model), self.named).with_output_types(schema)
        )


def _inference_type(model, output: str | None):
    """The type of one example's inference from ``model`` (for the output rows' schema)."""
    from polybeam.transforms.inference import OUTPUTS

    loss = model.config.loss
    if output is not None and output not in OUTPUTS:
        raise ValueError(f"PolybeamRunInference: output must be one of {', '.join(OUTPUTS)}; got {output!r}")
    if output == "probability" and not loss_spec(loss).probability:
        raise ValueError(
            f"PolybeamRunInference: output: probability needs a {' or '.join(PROBABILISTIC)} model; this one is {loss}"
        )
    if output == "label" and loss_spec(loss).classes:  # (a regression's label is its value)
        return str if model.config.class_names else int  # (a binary model's two names, as its labels were)
    return Sequence[float] if model.config.outputs > 1 else float


def _plain(inference):
    """A numpy result as the row field's Python value."""
    if isinstance(inference, np.ndarray):
        return [float(value) for value in inference.tolist()]
    if isinstance(inference, (np.integer, int)) and not isinstance(inference, bool):
        return int(inference)
    if isinstance(inference, (np.floating, float)):
        return float(inference)
    return inference


class _RowMappings(beam.DoFn):
    """Each row as ``(row, what the handler scores)``: its features' mapping, and for a shared per-key model
    (``keyed_model``) the row's key with it, as the handler takes ``(key, example)`` pairs."""

    def __init__(self, reading: RowReading, field_names: list[str], keyed_model=None, text_fields=()):
        self.reading = reading
        self.field_names = field_names
        self.keyed_model = keyed_model
        self.text_fields = tuple(text_fields)  # (a missing value there is no category, not a missing number)

    def setup(self):
        # The schema's, once: not per row.
        self.features_of = self.reading.feature_mapper(self.field_names, self.text_fields)

    def process(self, row):
        record = row._asdict()
        features = self.features_of(record)
        if self.keyed_model is None:
            yield row, features
            return
        from polybeam.transforms.inference import keys_of

        yield row, (keys_of([record], self.keyed_model, "dict")[1][0], features)


def _with_inference(keyed_result, tag: str):
    """The input row with the RunInference result's inference as field ``tag``."""
    row, result = keyed_result
    return beam.Row(**row._asdict(), **{tag: _plain(result.inference)})


class PolybeamRunInference(beam.PTransform):
    """Beam's ``RunInference`` with :class:`~polybeam.transforms.inference.PolybeamModelHandler` over rows of
    any YAML step: each output row is the input row with the model's inference in the field ``inference_tag``
    (default ``inference``), as Beam YAML's own ``RunInference`` step adds it.

    ``model`` is the model file (read now, to know the inference's type); ``output`` what the handler gives
    (none: what ``polybeam predict`` writes, a float, or the class probabilities for softmax; ``score``;
    ``probability``; ``label``); ``label``, ``weight``, ``features`` and ``ignore`` name fields as
    :class:`PolybeamPredict`'s do; ``min_batch_size``/``max_batch_size`` bound RunInference's batches."""

    def __init__(
        self,
        model: str,
        output: str | None = None,
        inference_tag: str = "inference",
        label: str | None = None,
        weight: str | None = None,
        features: list[str] | None = None,
        ignore: list[str] | tuple[str, ...] = (),
        min_batch_size: int | None = None,
        max_batch_size: int | None = None,
        missing_columns: str = "refuse",
    ):
        super().__init__()
        self.path = model
        self.model = read_model(model)  # a bad model (or output for it) fails at once
        self.output = output
        self.inference_tag = inference_tag
        self.inference_type = _inference_type(self.model, output)
        self.fields = _RowFields("PolybeamRunInference", label, weight, features, ignore, missing_columns)
        batching = {"min_batch_size": min_batch_size, "max_batch_size": max_batch_size}
        self.batching = {name: size for name, size in batching.items() if size is not None}

    def expand(self, rows):
        from apache_beam.ml.inference.base import KeyedModelHandler, RunInference

        from polybeam.transforms.inference import PolybeamModelHandler

        fields = _row_fields(rows)
        if fields is None:
            raise ValueError(
                f"PolybeamRunInference takes schema'd rows (from ReadFromCsv, Create, MapToFields, "
                f"...), got {rows.element_type}"
            )
        self.fields.check(fields)
        if self.inference_tag in {name for name, _ in fields}:
            raise ValueError(
                f"PolybeamRunInference: the rows already have a field {self.inference_tag!r}; "
                "name the inference another (inference_tag)"
            )
        keyed_model = self.model if self.model.shared_keys is not None else None
        text_fields = [name for name, kind in fields if _is_text_type(kind)]
        mappings = _RowMappings(self.fields.reading(self.model), [name for name, _ in fields], keyed_model, text_fields)
        # The rows' features, already held against the model's columns (a missing value spelled NaN, or "" for no
        # category): the handler must not refuse a row for a field its mapping leaves out, nor for a column the
        # step's own policy let it lack.
        handler = KeyedModelHandler(
            PolybeamModelHandler(self.path, output=self.output, missing_columns="allow", **self.batching)
        )
        schema = RowTypeConstraint.from_fields(fields + [(self.inference_tag, self.inference_type)])
        return (
            rows
            | "Features" >> beam.ParDo(mappings)
            | "RunInference" >> RunInference(handler)
            | "ToRows" >> beam.Map(_with_inference, self.inference_tag).with_output_types(schema)
        )


def _prefix_row(record: dict) -> Prefix:
    return Prefix(
        int(record["rank"]),
        str(record["group"]),
        float(record["cost"]),
        float(record["cumulative_cost"]),
        float(record["explained_variance"]),
    )


class PolybeamSequence(beam.PTransform):
    """Sequence the feature groups of the specification at ``groups`` (a JSON file) over ``examples``
    with ``method`` (cs-g-omp, cs-g-fr, doubling, ...); ``output`` is where the prefixes go (JSON lines,
    what ``polybeam predict --prefixes`` reads). Outputs ``prefixes``: one Row per chosen group."""

    def __init__(
        self,
        groups: str,
        output: str,
        method: str = "cs-g-omp",
        ridge: float = 1e-6,
        bits: int = 18,
        seed: int = 0,
        **options,
    ):
        super().__init__()
        from polybeam.selection.groups import GroupSpec

        self.spec = GroupSpec.load(groups, bits=bits, seed=seed)  # fail at construction on a bad specification
        self.output = output
        self.method = method
        self.ridge = ridge
        self.seed = seed
        self.options = options

    def expand(self, examples):
        from polybeam.transforms.sequence import SequenceGroups, WritePrefixes

        _refuse_rows(examples, "PolybeamSequence")
        sequenced = examples | "Sequence" >> SequenceGroups(
            self.spec, method=self.method, ridge=self.ridge, seed=self.seed, **self.options
        )
        sequenced.prefixes | "Write" >> WritePrefixes(self.output)
        return {"prefixes": sequenced.prefixes | "ToRows" >> beam.Map(_prefix_row).with_output_types(Prefix)}


if __name__ == "__main__":
    print(PROVIDERS)
