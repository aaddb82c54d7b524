"""RunInference handlers: polybeam models and anytime prefixes behind Beam's ``ModelHandler``.

``RunInference(PolybeamModelHandler("gs://bucket/m.model"))`` scores
examples with a polybeam model in any Beam pipeline, with what RunInference
brings: batching, one model per worker process, model refresh from a side
input, keyed and per-key models (``KeyedModelHandler``, ``KeyModelMapping``),
and its metrics under the handler's namespace (``polybeam``). A folder of
per-key models (``polybeam train --key``) is served by
``keyed_model_handler(FOLDER)`` (Beam's ``KeyedModelHandler``, a
``PolybeamModelHandler`` per key) or by ``PerKeyModelHandler(FOLDER)``
(one handler that reads each key's model on first use, with a fallback model).

Examples come as

- ``input_format="dict"`` (default): mappings of feature to value, hashed as
  the readers hash (``{"age": 41, "colour": "red"}``: CSV columns or VW
  features by name, ``"ns^name"`` for a VW namespace, ``int`` keys for LIBSVM
  indices; see :mod:`polybeam.formats.mappings`);
- ``"libsvm"``, ``"vw"``, ``"csv"``: raw lines of that format (``str`` or
  ``bytes``; LIBSVM lines carry a label, any number, as LIBSVM's own
  prediction input does; CSV lines need ``format_options={"columns": [...]}``
  unless ``has_header=False``), parsed by the readers' numba parsers;
- ``"batch"``: parsed :class:`~polybeam.learners.batch.ExampleBatch` elements
  (from ``ReadExamples``); each gets one result holding the batch's array.

Each RunInference batch is turned into one ExampleBatch and scored at once
by the model's numba kernel. ``output`` picks what each result's
``inference`` holds:

- ``None`` (default): what ``Predict`` writes: P(y = +1) for logistic loss,
  class probabilities (an array) for softmax, the margin for hinge, the value
  clamped to the training labels' range for squared loss;
- ``"score"``: the raw margin ``w . x + b`` (an array of class scores for softmax);
- ``"probability"``: logistic and softmax models only;
- ``"label"``: what ``predict --predictions label`` writes: for logistic and
  hinge the positive class where the score is above 0 (the model's two class
  names, else +1 / -1), for softmax the class (its name, else its number),
  for squared loss the clamped value.

A model that records how its training input was read (every model ``polybeam
train`` writes; see :mod:`polybeam.transforms.provenance`) lends those
settings to its handler unless ``format_options`` say otherwise: CSV lines
are read with its delimiter, header names, label, categorical, ignored and ID
columns (no ``columns`` needed), and in mappings its label, weight, key, ID
and ignored columns are no features and its categorical columns' values are
categories (``{"zip": 10115}`` is ``zip=10115``). Lines of a format whose
features the model cannot know (LIBSVM lines for a model of CSV columns) fail
when the model is loaded, naming the model's format.

Each result is a :class:`PredictionResult` (``example``, ``inference``,
``model_id``) that also carries its example's ID, ``result.id``: the value of
the model's ID column (``--id-column``; ``format_options={"id_column": ...}``)
in a mapping or a CSV line, a VW line's tag, an ExampleBatch's ``tags``
(an array), else None.

A shared per-key model (``polybeam train --key-model shared``) predicts each
example with the shared weights plus its key's offsets: give it
``(key, example)`` pairs, or examples that carry their key (a mapping's key
column, a CSV line's key column, a VW line's tag or key namespace, a batch
read with the key); a key it never trained, or none, gets the shared weights.

A line the parser refuses fails its batch with the line's reason (use
``RunInference(...).with_exception_handling()`` to dead-letter such batches).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from apache_beam.metrics import Metrics
from apache_beam.ml.inference.base import KeyedModelHandler, ModelHandler, PredictionResult

from polybeam.formats import make_format
from polybeam.formats.columns import ColumnRoles, check_missing_columns
from polybeam.formats.input_settings import InputSettings, readable_by
from polybeam.formats.mappings import SlotTable, as_category, batch_from_mappings
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.loss_specs import loss_spec
from polybeam.learners.model import Model
from polybeam.learners.predictions import PROBABILISTIC, model_values
from polybeam.selection.anytime import AnytimeModel
from polybeam.transforms.keyed_files import key_text

INPUT_FORMATS = ("dict", "batch", "libsvm", "vw", "csv")
OUTPUTS = ("score", "probability", "label")
METRICS_NAMESPACE = "polybeam"


class InferenceError(ValueError):
    """An example or a setting the handler cannot score with."""


def _check_choice(name: str, value, choices) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(str, choices))}; got {value!r}")


class IdentifiedPrediction(PredictionResult):
    """A RunInference result that also carries its example's ID: ``result.id`` (None when the example has
    none). It is a :class:`PredictionResult` in every other way (three fields: ``example, inference,
    model_id = result`` still unpacks); ``_replace`` gives a result without the ID."""

    id = None  # (a result rebuilt from its three fields has no ID)

    def __new__(cls, example, inference, model_id=None, id=None):
        result = super().__new__(cls, example, inference, model_id)
        result.id = id
        return result

    def __repr__(self) -> str:
        return f"{super().__repr__()[:-1]}, id={self.id!r})"


# Settings of a CSV/Parquet read that name columns that are no features of a mapping.
_NOT_FEATURES = ("label_column", "weight_column", "key_column", "id_column")
# The format options mappings take.
_MAPPING_OPTIONS = _NOT_FEATURES + ("ignore_columns", "categorical_columns")


def _check_format_options(input_format: str, format_options: Mapping[str, Any]) -> None:
    """Refuse options that cannot apply to ``input_format`` (at construction: they do not depend on the model)."""
    if "columns" in format_options and input_format != "csv":
        raise ValueError("format_options 'columns' is for input_format='csv'")
    unknown = set(format_options) - set(_MAPPING_OPTIONS)
    if input_format == "dict" and unknown:
        raise ValueError(
            f"format_options {sorted(unknown)} do not apply to mappings; they take {', '.join(_MAPPING_OPTIONS)}"
        )


def mappings_batch(model, mappings: Sequence[Mapping], *, ignore: Sequence[str] = ()) -> ExampleBatch:
    """One ExampleBatch of ``mappings`` (feature name -> value), read as ``model``'s training input was:
    its label, weight, key, ID and ignored columns are not features, its categorical columns' values are
    categories even when numbers; ``ignore`` names more fields that are no features."""
    recorded = InputSettings.from_dict(model.input) if getattr(model, "input", None) else None
    options = {}
    if ignore:
        kept = recorded.options.get("ignore_columns") if recorded is not None else None
        options["ignore_columns"] = tuple(kept or ()) + tuple(ignore)
    reader = _Examples("dict", options, recorded)
    return reader.batch(mappings, bits=model.config.bits, seed=model.config.seed)


class _Examples:
    """Turns a RunInference batch of one input format into one ExampleBatch (and its examples' IDs).

    ``recorded`` is how the model's training input was read (None: the model does not say); its settings
    apply unless ``format_options`` give others.
    """

    def __init__(
        self,
        input_format: str,
        format_options: Mapping[str, Any] | None,
        recorded: InputSettings | None = None,
        where: str = "the model",
        missing_columns: str = "refuse",
    ):
        _check_choice("input_format", input_format, INPUT_FORMATS)
        self.input_format = input_format
        # The model's columns and their roles, when it records them (CSV, a frame): mappings read through them.
        self.columns = ColumnRoles.of(recorded, missing_columns=missing_columns) if input_format == "dict" else None
        if self.columns is not None and format_options:
            if set(format_options) <= {"ignore_columns"}:  # more fields that are no features
                self.columns = self.columns.ignoring(format_options["ignore_columns"])
            else:
                self.columns = None  # (the caller's own reading of the fields)
        given = dict(format_options or {})
        columns = given.pop("columns", None)
        if (
            recorded is not None
            and input_format in ("libsvm", "vw", "csv")
            and not readable_by(recorded.format, input_format)
        ):
            raise InferenceError(
                f"input_format={input_format!r} cannot be the input of {where}: it was trained on "
                f"{recorded.format} input ({recorded.flags()}); give it {recorded.format} lines or "
                "mappings of its features"
            )
        # The model's own settings first (those of its format), then what the caller says.
        options = dict(recorded.options) if recorded is not None and recorded.format == input_format else {}
        if input_format == "dict" and recorded is not None:
            options = {name: value for name, value in recorded.options.items() if name in _MAPPING_OPTIONS}
        options.update(given)
        if input_format == "csv":
            if columns is None and recorded is not None and recorded.format == "csv":
                columns = recorded.columns or None
            has_header = options.get("has_header", True)
            if has_header and not columns:
                raise ValueError(
                    "input_format='csv' needs format_options={'columns': [...]} (the header's names), "
                    "or has_header=False"
                )
            delimiter = options.get("delimiter", ",")
            self.header = delimiter.join(columns).encode("utf-8") if columns else None
        else:
            self.header = None
        if input_format == "dict":
            self.id_column = options.get("id_column")
            self.not_features = {options[name] for name in _NOT_FEATURES if options.get(name) is not None}
            self.not_features |= set(options.get("ignore_columns") or ())
            self.categorical = set(options.get("categorical_columns") or ())
            options = {}
        self.options = options
        self._parsers: dict = {}
        self._tables: dict = {}

    def batch(self, examples: Sequence, *, bits: int, seed: int) -> ExampleBatch:
        if self.input_format == "dict":
            table = self._tables.setdefault((bits, seed), SlotTable(bits=bits, seed=seed))
            try:
                return batch_from_mappings(self._features(examples), bits=bits, seed=seed, table=table)
            except ValueError as error:
                raise InferenceError(str(error)) from None
        if self.input_format == "batch":
            return ExampleBatch.concat(examples) if len(examples) != 1 else examples[0]
        return self._parse(examples, bits=bits, seed=seed)

    def ids(self, examples: Sequence, batch: ExampleBatch) -> list:
        """Each example's ID: its ID column's value (mappings), its tag (lines), a batch's tags (batches)."""
        if self.input_format == "dict":
            if self.id_column is None:
                return [None] * len(examples)
            return [example.get(self.id_column) if isinstance(example, Mapping) else None for example in examples]
        if self.input_format == "batch":
            return [part.tags for part in examples]
        return [None] * len(examples) if batch.tags is None else batch.tags.tolist()

    def _features(self, examples: Sequence) -> list:
        """Mappings without the model's non-feature columns, its categorical columns' values as categories
        (read through the model's columns when it records them: see :mod:`polybeam.formats.columns`)."""
        if self.columns is not None:
            features = []
            for position, example in enumerate(examples):
                if not isinstance(example, Mapping):
                    features.append(example)  # (batch_from_mappings says what is wrong with it)
                    continue
                try:
                    features.append(self.columns.features_of(example))
                except ValueError as error:
                    raise InferenceError(f"example {position} ({dict(example)!r:.120}): {error}") from None
            return features
        if not self.not_features and not self.categorical:
            return list(examples)
        features = []
        for example in examples:
            if not isinstance(example, Mapping):
                features.append(example)  # (batch_from_mappings says what is wrong with it)
                continue
            features.append(
                {
                    key: as_category(value) if key in self.categorical else value
                    for key, value in example.items()
                    if key not in self.not_features
                }
            )
        return features

    def _parse(self, lines: Sequence, *, bits: int, seed: int) -> ExampleBatch:
        parser = self._parsers.get((bits, seed))
        if parser is None:
            settings = {**self.options, "labels": "any", "bits": bits, "seed": seed}
            parser = self._parsers[(bits, seed)] = make_format(self.input_format, **settings)
        # One join for the whole batch (str lines in C; bytes lines as they are).
        data = (
            "\n".join(lines).encode("utf-8")
            if all(isinstance(line, str) for line in lines)
            else b"\n".join(line.encode("utf-8") if isinstance(line, str) else bytes(line) for line in lines)
        )
        # A CSV block after the header line (at its offset), so that the parser takes the header as given.
        offset, first_line = (len(self.header) + 1, 2) if self.header is not None else (0, 1)
        parsed = parser.parse(
            data + b"\n", source="<RunInference>", offset=offset, first_line=first_line, header=self.header
        )
        if parsed.records + parsed.skipped != len(lines):
            raise InferenceError(
                f"the {len(lines)} examples hold {parsed.records + parsed.skipped} lines: give one line per example"
            )
        if parsed.dead_letters:
            letter = parsed.dead_letters[0]
            raise InferenceError(f"example {letter.line - first_line} ({letter.raw!r:.80}): {letter.reason}")
        if len(parsed.batch) != len(lines):  # a blank or comment line would shift every result after it
            raise InferenceError(f"{len(lines) - len(parsed.batch)} of the {len(lines)} lines are blank or comments")
        return parsed.batch


def _model_outputs(model: Model, batch: ExampleBatch, output: str | None, keys=None):
    """The ``output`` of ``model`` for the batch: an array (n,) or (n, K), or a list of labels. ``keys``:
    each example's key, for a shared per-key model (None: the batch's own keys)."""
    loss = model.config.loss
    if output is None:
        return model.predict(batch, keys)
    if output == "score":
        return model.margins(batch, keys)
    if output == "probability":
        if not loss_spec(loss).probability:
            raise InferenceError(f"output='probability' needs a {' or '.join(PROBABILISTIC)} model; this one is {loss}")
        return model.predict(batch, keys)
    # A label as ``predict --predictions label`` writes it (the positive class where the score is above 0,
    # a regression's value); a classifier without class names gives its numbers, not strings.
    labels = model_values(model, batch, "label", keys=keys)
    if not loss_spec(loss).classes:
        return labels
    return labels.tolist() if model.config.class_names else [int(label) for label in labels]


def _table_outputs(config, margins: np.ndarray, output: str | None, label_min, label_max):
    """:func:`_model_outputs` for rows of a scoring table's models (margins and each row's label range)."""
    from polybeam.learners.key_scoring import row_values

    loss = config.loss
    if output == "probability" and not loss_spec(loss).probability:
        raise InferenceError(f"output='probability' needs a {' or '.join(PROBABILISTIC)} model; this one is {loss}")
    if output in (None, "probability"):
        return row_values(config, margins, None, label_min, label_max)
    if output == "score":
        return margins
    labels = row_values(config, margins, "label", label_min, label_max)
    if not loss_spec(loss).classes:
        return labels
    return labels.tolist() if config.class_names else [int(label) for label in labels]


def keys_of(elements: Sequence, model: Model, input_format: str) -> tuple[Sequence, list | None]:
    """``(examples, keys)`` for a shared per-key model: elements that are ``(key, example)`` pairs give their
    keys; mappings their key column's value (the model's ``--key column:NAME``); other input (lines,
    batches) carries its keys itself (``keys`` None). A missing key is ``""``: the shared weights."""
    if input_format != "batch" and elements and all(isinstance(e, tuple) and len(e) == 2 for e in elements):
        return [e[1] for e in elements], ["" if e[0] is None else str(e[0]) for e in elements]
    if input_format == "dict":
        spec = model.shared_keys.spec
        column = ((model.input or {}).get("key_column") or spec.name) if spec.kind == "column" else None
        return elements, [
            "" if not isinstance(e, Mapping) or column is None or e.get(column) is None else str(e[column])
            for e in elements
        ]
    return elements, None


def _key_model(folder_uri: str, key: str) -> Model:
    """The model of ``key`` in a per-key folder, knowing how its input was read (the folder's index says so
    when the model does not)."""
    from polybeam.transforms.keyed_files import KeyedFolder

    folder = KeyedFolder(folder_uri)
    model = folder.model(key)
    if model is None:
        raise InferenceError(f"no model for key {key!r} in {folder_uri}")
    recorded = folder.index.get("input")
    if model.input is None and recorded is not None:
        model = dataclasses.replace(model, metadata={**model.metadata, "input": recorded})
    return model


class _PolybeamHandler(ModelHandler):
    """What both handlers share: input formats, batching, metrics, model paths."""

    def __init__(
        self, uri: str, *, input_format: str, format_options, namespace: str, missing_columns="refuse", **batching
    ):
        super().__init__(**batching)
        _check_choice("input_format", input_format, INPUT_FORMATS)
        self._missing_columns = check_missing_columns(missing_columns)
        _check_format_options(input_format, format_options or {})
        self._uri = uri
        self._input_format = input_format
        self._format_options = dict(format_options or {})
        self._readers: dict = {}  # one _Examples per way a model's input was read
        self._namespace = namespace
        self._scored = Metrics.counter(namespace, "examples_scored")
        self._batch_sizes = Metrics.distribution(namespace, "batch_examples")

    def update_model_path(self, model_path: str | None = None):
        """Score with the model at ``model_path`` from now on (RunInference's model refresh)."""
        if model_path:
            self._uri = model_path

    def get_metrics_namespace(self) -> str:
        return self._namespace

    def get_num_bytes(self, batch: Sequence) -> int:
        if self._input_format in ("libsvm", "vw", "csv"):
            return sum(len(line) for line in batch)
        if self._input_format == "batch":
            return sum(b.values.nbytes + b.indices.nbytes + b.indptr.nbytes for b in batch)
        return super().get_num_bytes(batch)

    def _reader(self, recorded: dict | None) -> _Examples:
        """How to read examples for a model whose training input was read as ``recorded`` says (None: unknown)."""
        name = json.dumps(recorded, sort_keys=True)
        reader = self._readers.get(name)
        if reader is None:
            settings = None if recorded is None else InputSettings.from_dict(recorded)
            reader = self._readers[name] = _Examples(
                self._input_format,
                self._format_options,
                settings,
                where=f"the model {self._uri}",
                missing_columns=self._missing_columns,
            )
        return reader

    def _score(self, examples: Sequence, *, bits: int, seed: int, recorded: dict | None, score) -> list:
        """Read ``examples`` into one batch, ``score(batch)`` it, and return one result per example (per batch
        for ExampleBatch input), each with its example's ID."""
        reader = self._reader(recorded)
        batch = reader.batch(examples, bits=bits, seed=seed)
        self._scored.inc(len(batch))
        self._batch_sizes.update(len(batch))
        outputs, model_id = score(batch)
        ids = reader.ids(examples, batch)
        if self._input_format == "batch":
            results, start = [], 0
            for part, part_ids in zip(examples, ids):
                results.append(IdentifiedPrediction(part, outputs[start : start + len(part)], model_id, part_ids))
                start += len(part)
            return results
        return [
            IdentifiedPrediction(example, output, model_id, identity)
            for example, output, identity in zip(examples, outputs, ids)
        ]


# How often a handler that follows a folder of streaming training looks at its ``latest`` pointer.
FOLLOW_SECONDS = 1.0


class FollowedFolder:
    """The latest version of a folder that ``polybeam train --watch`` (``TrainStream``) writes: its model,
    read again when the folder's ``latest`` pointer names a newer version (looked at no more than every
    :data:`FOLLOW_SECONDS`). What a handler given such a folder scores with: it swaps versions on any
    runner, Prism included, which cannot refresh a triggered side input in the global window (Beam issue
    31438) as ``model_metadata_pcoll`` asks."""

    def __init__(self, folder: str):
        from polybeam.transforms import version_folder

        self.folder = folder
        self.number = version_folder.latest_number(folder)
        if self.number is None:  # (serving began before learning wrote a version: wait for the first)
            logging.getLogger(__name__).warning("%s: waiting for its first model version", folder)
            while self.number is None:
                time.sleep(FOLLOW_SECONDS)
                self.number = version_folder.latest_number(folder)
        self.path = version_folder.version_model_path(folder, self.number)
        self.model = version_folder.read_version_model(folder, self.number)
        self.checked = time.monotonic()

    def latest(self) -> Model:
        """The newest version's model (reading it when it changed)."""
        from polybeam.transforms import version_folder

        if time.monotonic() - self.checked < FOLLOW_SECONDS:
            return self.model
        self.checked = time.monotonic()
        number = version_folder.latest_number(self.folder)
        if number is not None and number != self.number:
            self.path = version_folder.version_model_path(self.folder, number)
            self.model, self.number = version_folder.read_version_model(self.folder, number), number
        return self.model


class PolybeamModelHandler(_PolybeamHandler):
    """A polybeam model file (any Beam file system) as RunInference's model; see the module docstring.

    With ``key``, ``model_uri`` is a folder of per-key models (``polybeam train --key``) and the handler
    scores with that key's model (``model_id`` ``FOLDER#KEY``); :func:`keyed_model_handler` builds one per
    key of a folder into Beam's ``KeyedModelHandler``. A folder that streaming training writes
    (``polybeam train --watch``, ``TrainStream``) is followed: each batch is scored with its newest version
    (:class:`FollowedFolder`; ``model_id`` names the version's file); with ``follow=True`` the folder may
    not exist yet, and the first batch waits for the first version.

    >>> import apache_beam as beam
    >>> from apache_beam.ml.inference.base import RunInference
    >>> from polybeam.learners.config import LearnerConfig
    >>> from polybeam.learners.linear import LinearLearner
    >>> from polybeam.learners.batch import ExampleBatch
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "m.model")
    >>> rows = [(1.0, {1: 1.0}), (-1.0, {2: 1.0})] * 50
    >>> LinearLearner(LearnerConfig(loss="logistic")).fit([ExampleBatch.from_rows(rows)]).to_model().save(path)
    >>> with beam.Pipeline("FnApiRunner") as p:
    ...     _ = (p | beam.Create([{1: 1.0}, {2: 1.0}])
    ...            | RunInference(PolybeamModelHandler(path, output="label"))
    ...            | beam.Map(lambda result: print(result.example, result.inference)))
    {1: 1.0} 1
    {2: 1.0} -1
    """

    def __init__(
        self,
        model_uri: str,
        *,
        input_format: str = "dict",
        output: str | None = None,
        format_options: Mapping[str, Any] | None = None,
        key: str | None = None,
        follow: bool = False,
        **batching,
    ):
        if output is not None:
            _check_choice("output", output, OUTPUTS)
        if follow and key is not None:
            raise ValueError("follow serves the versions of one model's folder; key picks a per-key folder's model")
        super().__init__(
            model_uri, input_format=input_format, format_options=format_options, namespace=METRICS_NAMESPACE, **batching
        )
        self._output = output
        self._key = None if key is None else key_text(key)
        self._follow = follow
        self._following: FollowedFolder | None = None

    @property
    def model_id(self) -> str:
        """What each result's ``model_id`` says: the model file (a followed folder's version file), or
        ``FOLDER#KEY`` for a key of a per-key folder."""
        if self._following is not None:
            return self._following.path
        return self._uri if self._key is None else f"{self._uri}#{self._key}"

    def load_model(self) -> Model:
        from polybeam.transforms import version_folder

        self._following = None
        if self._key is None and (self._follow or version_folder.is_version_folder(self._uri)):
            self._following = FollowedFolder(self._uri)
            model = self._following.model
        elif self._key is None:
            from polybeam.transforms.model_io import read_model

            model = read_model(self._uri)
        else:
            model = _key_model(self._uri, self._key)
        self._reader(model.input)  # input the model cannot read fails here, before any example
        return model

    def run_inference(
        self, batch: Sequence, model: Model, inference_args: dict | None = None
    ) -> Iterable[PredictionResult]:
        if self._following is not None:
            model = self._following.latest()
        uri = self.model_id
        examples, keys = (batch, None) if model.shared_keys is None else keys_of(batch, model, self._input_format)
        results = self._score(
            examples,
            bits=model.config.bits,
            seed=model.config.seed,
            recorded=model.input,
            score=lambda parsed: (_model_outputs(model, parsed, self._output, keys), uri),
        )
        if examples is batch:
            return results
        # Each result shows the element it answers, its key included.
        return [
            IdentifiedPrediction(element, result.inference, result.model_id, result.id)
            for element, result in zip(batch, results)
        ]

    def validate_inference_args(self, inference_args: dict | None):
        if inference_args:
            raise ValueError(f"PolybeamModelHandler takes no inference_args, got {sorted(inference_args)}")


class PerKeyModelHandler(_PolybeamHandler):
    """A folder of per-key models (``polybeam train --key``) as RunInference's model: elements are
    ``(key, example)`` pairs, results ``(key, PredictionResult)``, each example scored by its key's model.

    The folder's shards are read a key at a time as keys arrive (a worker never loads every key's
    model; see :class:`~polybeam.transforms.routing.ModelLibrary`). A key without a model is scored
    by ``fallback_model_uri`` when given, else fails its batch with a message naming the key
    (``RunInference(...).with_exception_handling()`` dead-letters such batches). The other arguments
    are :class:`PolybeamModelHandler`'s.

    >>> import apache_beam as beam
    >>> from apache_beam.ml.inference.base import RunInference
    >>> from polybeam.learners.config import LearnerConfig
    >>> from polybeam.learners.linear import LinearLearner
    >>> from polybeam.learners.batch import ExampleBatch
    >>> from polybeam.transforms.routing import WriteKeyedModels
    >>> import tempfile, os
    >>> folder = os.path.join(tempfile.mkdtemp(), "models")
    >>> def model(sign):
    ...     rows = [(sign, {1: 1.0}), (-sign, {2: 1.0})] * 50
    ...     return LinearLearner(LearnerConfig(loss="logistic")).fit([ExampleBatch.from_rows(rows)]).to_model()
    >>> with beam.Pipeline("FnApiRunner") as p:
    ...     _ = p | beam.Create([("eu", model(1.0)), ("us", model(-1.0))]) | WriteKeyedModels(folder, key="tag")
    >>> with beam.Pipeline("FnApiRunner") as p:
    ...     _ = (p | beam.Create([("eu", {1: 1.0}), ("us", {1: 1.0})])
    ...            | RunInference(PerKeyModelHandler(folder, output="label"))
    ...            | beam.MapTuple(lambda key, result: print(key, result.inference)))
    eu 1
    us -1
    """

    def __init__(
        self,
        folder_uri: str,
        *,
        input_format: str = "dict",
        output: str | None = None,
        fallback_model_uri: str | None = None,
        format_options: Mapping[str, Any] | None = None,
        **batching,
    ):
        if output is not None:
            _check_choice("output", output, OUTPUTS)
        super().__init__(
            folder_uri,
            input_format=input_format,
            format_options=format_options,
            namespace=METRICS_NAMESPACE,
            **batching,
        )
        self._output = output
        self._fallback = fallback_model_uri
        self._key_scorer_of = None  # (library, its KeyScorer): the scoring tables of the loaded folder

    def load_model(self):
        from polybeam.transforms.routing import ModelLibrary

        library = ModelLibrary(self._uri, self._fallback)
        self._reader(library.index.get("input"))  # input the models cannot read fails here, before any example
        return library

    def run_inference(self, batch: Sequence, model, inference_args: dict | None = None) -> Iterable:
        results: list = [None] * len(batch)
        tabled = self._score_tabled(batch, model, results)
        by_key: dict = {}
        for position, (key, example) in enumerate(batch):
            if position not in tabled:
                by_key.setdefault(key, []).append((position, example))
        for key, members in by_key.items():
            keyed = model.model(key)
            if keyed is None:
                raise InferenceError(f"no model for key {key!r} in {self._uri} (and no fallback model)")
            model_id = f"{self._uri}#{key}" if model.keyed.has(key) else self._fallback
            scored = self._score(
                [example for _, example in members],
                bits=keyed.config.bits,
                seed=keyed.config.seed,
                recorded=keyed.input,
                score=lambda examples, m=keyed, i=model_id: (_model_outputs(m, examples, self._output), i),
            )
            for (position, _), result in zip(members, scored):
                results[position] = (key, result)
        return results

    def _score_tabled(self, batch: Sequence, library, results: list) -> set:
        """Score the examples whose keys' models a scoring table holds all at once (see
        polybeam.transforms.key_scoring: one read of their examples, one compiled pass), writing their
        results; the positions scored. Other examples (their keys' models apple's, or none) go key by key."""
        scorer = self._key_scorer(library)
        if scorer is None:
            return set()
        names = [key_text(key) for key, _ in batch]
        where = np.array([scorer.where(name) for name in names], dtype=np.int64)
        positions = np.flatnonzero(where >= 0)
        if not len(positions):
            return set()
        config = scorer.config
        examples = [batch[position][1] for position in positions]
        reader = self._reader(library.index.get("input"))
        parsed = reader.batch(examples, bits=config.bits, seed=config.seed)
        self._scored.inc(len(parsed))
        self._batch_sizes.update(len(parsed))
        margins, label_min, label_max = scorer.margins(parsed, where[positions])
        outputs = _table_outputs(config, margins, self._output, label_min, label_max)
        ids = reader.ids(examples, parsed)
        for position, output, identity in zip(positions.tolist(), outputs, ids):
            key, example = batch[position]
            model_id = f"{self._uri}#{key}"
            results[position] = (key, IdentifiedPrediction(example, output, model_id, identity))
        return set(positions.tolist())

    def _key_scorer(self, library):
        """A scoring table over ``library``'s shards (None when its models are scored key by key: an
        unsharded folder, softmax models, or whole batches as input)."""
        from polybeam.transforms.key_scoring import KeyScorer

        if self._input_format == "batch" or not library.keyed.sharded:
            return None
        held = self._key_scorer_of
        if held is None or held[0] is not library:  # (one per loaded library: a refreshed model gets its own)
            held = self._key_scorer_of = (library, KeyScorer(library))
        scorer = held[1]
        return scorer if scorer.config.outputs == 1 else None

    def get_num_bytes(self, batch: Sequence) -> int:
        return super().get_num_bytes([example for _, example in batch])

    def validate_inference_args(self, inference_args: dict | None):
        if inference_args:
            raise ValueError(f"PerKeyModelHandler takes no inference_args, got {sorted(inference_args)}")


def keyed_model_handler(
    folder_uri: str,
    keys: Iterable | None = None,
    *,
    input_format: str = "dict",
    output: str | None = None,
    format_options: Mapping[str, Any] | None = None,
    max_models_per_worker_hint: int | None = None,
) -> KeyedModelHandler:
    """Beam's ``KeyedModelHandler`` over a folder of per-key models (``polybeam train --key``,
    ``WriteKeyedModels``): one ``KeyModelMapping`` per key, each a :class:`PolybeamModelHandler` of that
    key's model, so that ``RunInference`` scores ``(key, example)`` pairs with Beam's own per-key
    machinery (its per-key metrics, ``max_models_per_worker_hint``, model updates by
    ``KeyModelPathMapping``).

    Parameters
    ----------
    folder_uri : str
        The folder (any Beam file system). Its index is read now, at pipeline construction, to list the keys.
    keys : iterable of str, optional
        The keys to serve (default: every key of the folder); a key the folder has no model for is refused.
    input_format, output, format_options
        As :class:`PolybeamModelHandler`'s, for every key.
    max_models_per_worker_hint : int, optional
        Beam's bound on the models a worker holds at once.

    Beam loads each key's model as a model of its own (in a process-shared cache), and an element whose
    key has no mapping fails its batch: this suits a folder of a few keys, or a few keys of a big one.
    :class:`PerKeyModelHandler` serves any number of keys from one handler (each key's model read from its
    shard on first use) and scores keys without a model with a fallback model.

    >>> import apache_beam as beam, os, tempfile
    >>> from apache_beam.ml.inference.base import RunInference
    >>> from polybeam.learners.config import LearnerConfig
    >>> from polybeam.learners.linear import LinearLearner
    >>> from polybeam.transforms.routing import WriteKeyedModels
    >>> folder = os.path.join(tempfile.mkdtemp(), "models")
    >>> def model(sign):
    ...     rows = [(sign, {1: 1.0}), (-sign, {2: 1.0})] * 50
    ...     return LinearLearner(LearnerConfig(loss="logistic")).fit([ExampleBatch.from_rows(rows)]).to_model()
    >>> with beam.Pipeline("FnApiRunner") as p:
    ...     _ = p | beam.Create([("eu", model(1.0)), ("us", model(-1.0))]) | WriteKeyedModels(folder, key="tag")
    >>> handler = keyed_model_handler(folder, output="label")
    >>> with beam.Pipeline("FnApiRunner") as p:
    ...     _ = (p | beam.Create([("eu", {1: 1.0}), ("us", {1: 1.0})])
    ...            | RunInference(handler)
    ...            | beam.MapTuple(lambda key, result: print(key, result.inference, result.model_id[-3:])))
    eu 1 #eu
    us -1 #us
    """
    from apache_beam.ml.inference.base import KeyModelMapping

    from polybeam.transforms.keyed_files import KeyedFolder
    from polybeam.transforms.routing import KEYED_MODELS

    folder = KeyedFolder(folder_uri)
    kind = folder.index.get("kind")
    if kind != KEYED_MODELS:
        raise ValueError(
            f"{folder_uri} is not a folder of per-key models (its index.json is a {kind}); a folder of "
            "models per window holds one such folder per window"
        )
    if keys is None:
        chosen = [key for key, _ in folder.entries()]
    else:
        chosen = [key_text(key) for key in keys]
        missing = [key for key in chosen if not folder.has(key)]
        if missing:
            raise ValueError(f"{folder_uri} has no model for the keys {missing[:10]}")
    if not chosen:
        raise ValueError(f"{folder_uri} holds no key's model")
    mappings = [
        KeyModelMapping(
            [key],
            PolybeamModelHandler(
                folder_uri, key=key, input_format=input_format, output=output, format_options=format_options
            ),
        )
        for key in chosen
    ]
    return KeyedModelHandler(mappings, max_models_per_worker_hint=max_models_per_worker_hint)


class AnytimeModelHandler(_PolybeamHandler):
    """Anytime prefixes (``polybeam sequence --output``) as RunInference's model.

    ``inference_args={"budget": B}`` scores with the longest prefix whose
    cumulative cost fits B, ``{"groups": [...]}`` with the longest prefix made
    of the available groups, and no argument with every group. Each result's
    ``model_id`` is ``URI#prefix=K`` for the K groups used.
    """

    def __init__(
        self,
        prefixes_uri: str,
        *,
        input_format: str = "dict",
        format_options: Mapping[str, Any] | None = None,
        **batching,
    ):
        super().__init__(
            prefixes_uri,
            input_format=input_format,
            format_options=format_options,
            namespace=f"{METRICS_NAMESPACE}_anytime",
            **batching,
        )

    def load_model(self) -> AnytimeModel:
        from polybeam.transforms.sequence import read_anytime_model

        model = read_anytime_model(self._uri)
        if not model.prefixes:
            raise InferenceError(f"{self._uri} holds no prefix")
        return model

    def validate_inference_args(self, inference_args: dict | None):
        unknown = set(inference_args or {}) - {"budget", "groups"}
        if unknown:
            raise ValueError(f"AnytimeModelHandler's inference_args are budget or groups, got {sorted(unknown)}")
        if inference_args and len(inference_args) > 1:
            raise ValueError("choose the prefix by budget or by groups, not both")

    def run_inference(
        self, batch: Sequence, model: AnytimeModel, inference_args: dict | None = None
    ) -> Iterable[PredictionResult]:
        self.validate_inference_args(inference_args)
        args = dict(inference_args or {})
        if "groups" in args:
            args["groups"] = tuple(args["groups"])
        length = model.prefix_length(**args)
        return self._score(
            batch,
            bits=model.bits,
            seed=int(model.prefixes[0].get("seed", 0)),
            recorded=None,
            score=lambda examples: (model.predict(examples, prefix=length), f"{self._uri}#prefix={length}"),
        )
