"""Rows of named fields (Beam schema'd rows, JSON records, dicts) as examples, read as a model's input was.

Beam YAML's sources (``ReadFromCsv``, ``ReadFromParquet``, ``Create``,
``MapToFields``, ...) hand over rows whose fields are already typed. A
:class:`RowReading` names the label, the weight and the features among those
fields and turns a list of rows into one ExampleBatch, so that a row scores
as the same record does when ``polybeam predict`` reads it from a file:

- for a model trained on **Parquet, Avro or JSON Lines** (its input settings
  say so), the rows become an Arrow table (each value typed by itself, see
  :mod:`polybeam.formats.row_tables`) read by the model's format with its
  settings: numeric fields are values, text fields and the
  model's categorical columns categories, ``indices``/``values`` list fields
  are the sparse layout;
- for any other model, each row is a mapping as a CSV record is (see
  :mod:`polybeam.formats.mappings`): a number is a value, a string a
  category, a null, NaN, empty string or one of the model's ``na_values``
  (``"NA"``, ...) a missing value (in a numeric field the value NaN, which
  the model predicts at the feature's training mean; in a categorical one
  no category); the model's
  categorical columns' values are categories even when numbers, and its
  label, weight, key, ID, timestamp and ignored columns are not features.

The label field is ``label`` when given, else the model's label column (CSV:
the first field when the model names none; Parquet: ``label``); a string
label is a class name (``label_names``) or a number, as in a CSV cell. The
features are ``features`` when given, else every field that is no label,
weight, key, ID, timestamp or ignored field.

>>> from polybeam.formats.csv import CsvFormat
>>> settings = InputSettings.of(CsvFormat(label_column="y", categorical_columns=("colour",)))
>>> reading = RowReading(settings)
>>> rows = [{"y": 1, "size": 2.5, "colour": "red"}, {"y": 0, "size": None, "colour": "blue"}]
>>> read = reading.examples(rows, bits=18, seed=0, labels="binary")
>>> csv = CsvFormat(label_column="y", categorical_columns=("colour",))
>>> parsed = csv.parse(b"y,size,colour\\n1,2.5,red\\n0,,blue\\n")
>>> read.batch.labels.tolist(), read.batch.indices.tolist() == parsed.batch.indices.tolist()
([1.0, 0.0], True)
>>> read = RowReading(settings, features=("size",)).examples(rows + [{"y": 7, "size": 1.0}], bits=18, seed=0,
...                                                           labels="binary")
>>> read.batch.values.tolist(), read.rows.tolist(), read.refused
([2.5, nan], [0, 1], [(2, 'label 7 is not a class of this task: a binary task takes -1, 0 or +1 (name its two classes to use other labels)')])
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from polybeam.formats.classes import class_names
from polybeam.formats.columns import ColumnRoles, check_missing_columns
from polybeam.formats.formats import format_class
from polybeam.formats.input_settings import InputSettings
from polybeam.formats.labels import read_labels
from polybeam.formats.mappings import SlotTable, as_category, batch_from_mappings, is_missing
from polybeam.learners.batch import ExampleBatch

# Settings of a CSV read that name columns which are never features of a row.
_ROLE_COLUMNS = ("weight_column", "key_column", "id_column", "timestamp_column")


@dataclass(frozen=True)
class RowsRead:
    """What :meth:`RowReading.examples` made of a list of rows: ``batch`` holds the rows that are examples,
    ``rows`` their positions in the list, ``refused`` ``(position, reason)`` for each of the others."""

    batch: ExampleBatch
    rows: np.ndarray
    refused: list[tuple[int, str]] = field(default_factory=list)


@dataclass(frozen=True)
class RowReading:
    """How rows of named fields become examples (see the module docstring).

    Parameters
    ----------
    settings : InputSettings, optional
        How the model's training input was read (None: the model does not say; rows are read as CSV
        records with nothing but ``label``, ``weight``, ``features`` and ``ignore`` known).
    label, weight : str, optional
        The label and importance-weight fields (default: the model's label and weight columns).
    features : tuple of str, optional
        The feature fields (default: every field that is not the label, the weight, or one of the
        model's key, ID, timestamp or ignored columns).
    ignore : tuple of str
        More fields that are not features (an ID of the rows' own, a note).
    missing_columns : {"refuse", "allow"}
        For a model that records its columns (CSV, a frame): rows lacking a feature column are refused
        (default), or read with that column missing; see :mod:`polybeam.formats.columns`, which also reads
        a numeric column's text as a number, as a CSV cell.
    """

    settings: InputSettings | None = None
    label: str | None = None
    weight: str | None = None
    features: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    missing_columns: str = "refuse"

    def __post_init__(self) -> None:
        if self.features is not None:
            object.__setattr__(self, "features", tuple(self.features))
            clash = {self.label, self.weight} & set(self.features)
            if clash - {None}:
                raise ValueError(f"the label and weight fields cannot also be features: {sorted(clash - {None})}")
        object.__setattr__(self, "ignore", tuple(self.ignore))
        check_missing_columns(self.missing_columns)

    def _columns(self, label: str | None) -> ColumnRoles | None:
        """The model's columns and roles, when it records them and these rows' features are not named here."""
        if self.features is not None or self._reads_tables:
            return None
        roles = ColumnRoles.of(self.settings, missing_columns=self.missing_columns)
        if roles is None:
            return None
        return roles.ignoring({label, self.weight, *self.ignore} - {None})

    @property
    def _format(self) -> str | None:
        return self.settings.format if self.settings is not None else None

    @property
    def _reads_tables(self) -> bool:
        """Whether the model's format reads rows as an Arrow table's (Parquet, Avro, JSON Lines)."""
        return self._format is not None and hasattr(format_class(self._format), "parse_table")

    def _option(self, name: str):
        return self.settings.options.get(name) if self.settings is not None else None

    def _named(self, column, fields: Sequence[str]) -> str | None:
        """A column setting (a name, or a 0-based position) as a field name: a position counts in the header of
        the model's training file when the model recorded it, else in the rows' fields."""
        if isinstance(column, int) and not isinstance(column, bool):
            names = self.settings.columns if self.settings is not None and self.settings.columns else fields
            return names[column] if 0 <= column < len(names) else None
        return column

    def label_field(self, fields: Sequence[str]) -> str | None:
        """The label among ``fields`` (the rows' field names, in order); None when the rows have none."""
        if self.label is not None:
            return self.label if self.label in fields else None
        column = self._option("label_column")
        if self._format == "csv" and column is None:
            column = 0  # the CSV reader's default: the first column
        name = self._named(column, fields)
        return name if name in fields else None

    def examples(
        self,
        records: Sequence[Mapping],
        *,
        bits: int,
        seed: int,
        labels: str = "any",
        classes: int = 0,
        label_names: Sequence[str] = (),
    ) -> RowsRead:
        """One ExampleBatch of ``records`` (mappings of field to value, all with the same fields).

        ``labels`` is the kind of label the rows must have ("any": none needed, as for prediction; "binary",
        "real", "multiclass": a row without such a label is refused, as a file's record is a dead letter);
        ``classes`` and ``label_names`` describe a multiclass task."""
        fields = list(records[0]) if records else []
        label = self.label_field(fields)
        if labels != "any" and label is None and records:
            raise ValueError(f"the rows have no label field ({self._label_hint()}); their fields are {fields}")
        if self._reads_tables:
            return self._arrow_examples(
                records, label, bits=bits, seed=seed, labels=labels, classes=classes, label_names=tuple(label_names)
            )
        return self._mapping_examples(
            records, fields, label, bits=bits, seed=seed, labels=labels, classes=classes, label_names=tuple(label_names)
        )

    def _label_hint(self) -> str:
        if self.label is not None:
            return f"label: {self.label!r}"
        column = self._option("label_column")
        return (
            f"the model's label column is {column!r}; name another with label"
            if column is not None
            else ("name it with label")
        )

    # -- rows as CSV records (mappings) -----------------------------------------

    def _not_features(self, fields: Sequence[str], label: str | None) -> set:
        named = {label, self.weight, *self.ignore}
        named |= {self._named(self._option(name), fields) for name in _ROLE_COLUMNS}
        named |= {self._named(column, fields) for column in self._option("ignore_columns") or ()}
        return named - {None}

    def _weight_field(self, fields: Sequence[str]) -> str | None:
        return self.weight if self.weight is not None else self._named(self._option("weight_column"), fields)

    def feature_fields(self, fields: Sequence[str]) -> tuple[str, ...]:
        """The feature fields among ``fields`` (the rows' field names, in order)."""
        if self.features is not None:
            missing = sorted(set(self.features) - set(fields))
            if missing:
                raise ValueError(f"features {missing} are not fields of the rows; their fields are {list(fields)}")
            return self.features
        not_features = self._not_features(fields, self.label_field(fields))
        if self._reads_tables and self._option("feature_columns") is not None:
            chosen = (*self._option("feature_columns"), *(self._option("categorical_columns") or ()))
            return tuple(dict.fromkeys(f for f in chosen if f in fields and f not in not_features))
        return tuple(f for f in fields if f not in not_features)

    def feature_mapper(self, fields: Sequence[str], text_fields: Collection[str] = ()) -> Callable[[Mapping], dict]:
        """A function from a row with these ``fields`` to its features as :mod:`polybeam.formats.mappings`
        reads them. Which fields are features and which are categories is worked out here, once for the
        rows' schema, not per row.

        For a model trained on Parquet, as its reader reads a row: numbers are values, text and the model's
        categorical columns' values are categories, and ``indices``/``values`` list fields are LIBSVM indices
        and their values (an index given twice adds up). A missing value (None, NaN) is a missing number, the
        value NaN, but in ``text_fields`` (the fields the rows' schema types as text), where it is no category;
        for a model of JSON Lines it is no feature, as its reader reads a null (unless ``feature_columns``
        name the field).

        >>> from polybeam.formats.csv import CsvFormat
        >>> reading = RowReading(InputSettings.of(CsvFormat(label_column="y", categorical_columns=("zip",))))
        >>> features_of = reading.feature_mapper(["y", "size", "zip"])
        >>> features_of({"y": 1, "size": 2.5, "zip": 10115})
        {'size': 2.5, 'zip': '10115'}
        """
        features = self.feature_fields(fields)
        columns = self._columns(self.label_field(fields))
        if columns is not None:
            columns.check_fields(fields)  # (every row of a schema has its fields)
            return columns.features_of
        if not self._reads_tables:
            categorical = self._categorical(fields)
            return functools.partial(
                _mapped_features, features=features, categorical=categorical, missing=self._missing()
            )
        return functools.partial(
            _parquet_row_features,
            features=features,
            indices=self._option("indices_column") or "indices",
            values=self._option("values_column") or "values",
            categorical=self._categorical(fields),
            text_is_categorical=self._option("infer_categorical") is not False,
            missing_numbers=self._missing_numbers(features, set(text_fields)),
        )

    def _missing_numbers(self, features: Sequence[str], text_fields: set) -> frozenset:
        """The features whose missing value is a missing number (NaN), for a model of typed values (see
        :meth:`feature_mapper`)."""
        if getattr(format_class(self._format), "partial_rows", False):  # (JSON Lines: see TableFormat)
            named = {*(self._option("feature_columns") or ()), *(self._option("number_columns") or ())}
            return frozenset(named) - text_fields
        return frozenset(features) - text_fields

    def _categorical(self, fields: Sequence[str]) -> set:
        return {self._named(column, fields) for column in self._option("categorical_columns") or ()}

    def _missing(self) -> frozenset:
        """The spellings of a missing value in a CSV model's input (``na_values``): such a string is missing."""
        return frozenset(self._option("na_values") or ()) if self._format == "csv" else frozenset()

    def _mapping_examples(self, records, fields, label, *, bits, seed, labels, classes, label_names) -> RowsRead:
        features = self.feature_fields(fields)
        categorical = self._categorical(fields)
        weight = self._weight_field(fields)
        names = class_names(label_names) if label_names else None
        missing = self._missing()
        values, weights, refused = [], [], []
        for position, record in enumerate(records):
            value, reason = _label_value(record.get(label) if label is not None else None, names, missing)
            importance, weight_reason = _weight_value(record.get(weight) if weight is not None else None, missing)
            reason = reason and f"label field {label!r}: {reason}"
            weight_reason = weight_reason and f"weight field {weight!r}: {weight_reason}"
            reason = reason or weight_reason
            if reason is not None and labels != "any":
                refused.append((position, reason))
            values.append(value)
            weights.append(importance if weight_reason is None else 1.0)
        read = read_labels(np.asarray(values, dtype=np.float64), labels, classes, label_names)
        if labels != "any":
            known = {position for position, _ in refused}
            for position in np.flatnonzero(~read.good).tolist():
                if position not in known:
                    refused.append((position, read.reason(position)))
            refused.sort()
        refused_rows = {position for position, _ in refused}
        kept = np.array([i for i in range(len(records)) if i not in refused_rows], dtype=np.int64)
        columns = self._columns(label)
        if columns is not None:
            columns.check_fields(fields)
            features_of = columns.features_of
        else:
            features_of = functools.partial(
                _mapped_features, features=features, categorical=categorical, missing=missing
            )
        mappings, usable = [], []
        for i in kept.tolist():
            try:
                mappings.append(features_of(records[i]))
                usable.append(i)
            except ValueError as error:  # a value its column cannot hold: the row is refused, as a record
                if labels == "any":
                    raise ValueError(f"row {i} ({dict(records[i])!r:.200}): {error}") from None
                refused.append((i, str(error)))
        if len(usable) < len(kept):
            refused.sort()
            kept = np.asarray(usable, dtype=np.int64)
        batch = batch_from_mappings(mappings, bits=bits, seed=seed, table=SlotTable(bits=bits, seed=seed))
        batch = batch.with_labels(read.targets[kept])
        return RowsRead(_with_weights(batch, np.asarray(weights, dtype=np.float64)[kept]), kept, refused)

    # -- rows as an Arrow table's (Parquet, Avro, JSON Lines) ------------------------

    def _arrow_examples(self, records, label, *, bits, seed, labels, classes, label_names) -> RowsRead:
        from polybeam.formats.row_tables import table_of_records

        options = {**self.settings.options, "bits": bits, "seed": seed, "labels": labels}
        if labels != "any" and (classes or label_names):
            options.update(classes=classes, label_names=label_names)
        if label is not None:
            options["label_column"] = label
        if self.weight is not None:
            options["weight_column"] = self.weight
        if self.features is not None:
            options["feature_columns"] = self.features
        options["ignore_columns"] = tuple(options.get("ignore_columns") or ()) + self.ignore
        options.pop("timestamp_column", None)  # event times are the pipeline's, not the model's business here
        if not records:
            return RowsRead(ExampleBatch.empty(bits), np.zeros(0, dtype=np.int64))
        rows = [dict(record) for record in records]
        # A field null in every row has no type of its own: read as a number, its nulls are missing numbers
        # (as a file's column of numbers holds them), whichever rows are read together.
        table = table_of_records(rows, number_fields=tuple(_null_fields(rows)))
        parsed = format_class(self._format)(**options).parse_table(table, source="<rows>")
        refused = sorted((letter.offset, letter.reason) for letter in parsed.dead_letters)
        if refused and labels == "any":  # a row that cannot be scored cannot be skipped silently
            position, reason = refused[0]
            raise ValueError(f"row {position} ({dict(records[position])!r:.200}): {reason}")
        return RowsRead(parsed.batch, np.asarray(parsed.batch.row_ids, dtype=np.int64), refused)


def _null_fields(rows: list[dict]) -> list[str]:
    """The fields that are None (or pandas' ``NA``) in every row.

    >>> _null_fields([{"a": None, "b": 1, "c": None}, {"a": None, "b": None, "c": None}])
    ['a', 'c']
    """
    fields = list(rows[0]) if rows else []
    for row in rows:
        fields = [name for name in fields if is_missing(row.get(name)) and not isinstance(row.get(name), float)]
        if not fields:
            break
    return fields


def _label_value(value, names, missing: frozenset = frozenset()) -> tuple[float, str | None]:
    """A row's label as a number (NaN: missing, as is a string among ``missing``), and why it cannot be one
    (None: it can)."""
    if value is None or type(value).__name__ in ("NAType", "NaTType"):
        return math.nan, None
    if isinstance(value, str):
        text = value.strip()
        if not text or text in missing:
            return math.nan, None
        if names is not None:
            found = names.class_of(text)
            if found:
                return float(found), None
        try:
            return float(text), None
        except ValueError:
            return math.nan, names.unknown_reason(text) if names is not None else f"not a number: {text!r:.80}"
    try:
        return float(value), None
    except (TypeError, ValueError):
        return math.nan, f"not a number: {value!r:.80}"


def _weight_value(value, missing: frozenset = frozenset()) -> tuple[float, str | None]:
    """A row's importance weight (a missing one is 1), and why it cannot be one."""
    if value is None or (isinstance(value, str) and value.strip() in missing):
        return 1.0, None
    try:
        weight = float(value)
    except (TypeError, ValueError):
        return 1.0, f"not a number: {value!r:.80}"
    if not (math.isfinite(weight) and weight >= 0.0):
        return 1.0, f"importance weight must be finite and >= 0, got {weight}"
    return weight, None


def _mapped_features(record: Mapping, features: Sequence[str], categorical: set, missing: frozenset = frozenset()):
    """A row's features as a CSV record's (see :meth:`RowReading.feature_mapper`): categorical fields' values
    are categories (``""`` when missing: no category); in the other fields an empty string or one among
    ``missing`` is a missing number, NaN, as an empty cell of a numeric column.

    >>> _mapped_features({"a": "NA", "b": " ", "c": None, "d": "red"}, ["a", "b", "c", "d"], {"c"}, frozenset({"NA"}))
    {'a': nan, 'b': nan, 'c': '', 'd': 'red'}
    """
    found = {name: _feature_value(record.get(name), name in categorical) for name in features}
    for name, value in found.items():
        if isinstance(value, str) and (value.strip() in missing or not value.strip()):
            found[name] = "" if name in categorical else math.nan
    return found


def _parquet_row_features(
    record: Mapping,
    features: Sequence[str],
    indices: str,
    values: str,
    categorical: set,
    text_is_categorical: bool,
    missing_numbers: frozenset = frozenset(),
) -> dict:
    """A row's features as the Parquet reader reads them (see :meth:`RowReading.feature_mapper`): a missing
    value (None, NaN) of ``missing_numbers`` is a missing number, NaN, as a null of a numeric column; of
    another field no feature (``""``).

    >>> fields = ["a", "b", "c", "d"]
    >>> _parquet_row_features({"a": None, "b": None, "c": 2, "d": None}, fields, "indices", "values", {"b"}, True,
    ...                       frozenset({"a", "c"}))
    {'a': nan, 'b': '', 'c': 2, 'd': ''}
    """
    if isinstance(record.get(indices), (list, tuple)):
        weights = record.get(values)
        weights = [1.0] * len(record[indices]) if weights is None else weights
        sparse: dict = {}
        for index, value in zip(record[indices], weights):
            sparse[int(index)] = sparse.get(int(index), 0.0) + (math.nan if value is None else float(value))
        return sparse
    found = {}
    for name in features:
        value = record.get(name)
        if isinstance(value, bytes):
            value = value.decode("utf-8", errors="replace")
        if name in categorical or (text_is_categorical and isinstance(value, str)):
            found[name] = _feature_value(value, True)
        elif isinstance(value, (bool, int, float, np.number)):
            found[name] = value
        elif is_missing(value):
            found[name] = math.nan if name in missing_numbers else ""
    return found


def _feature_value(value, categorical: bool):
    """A field's value as a mapping holds it: a categorical column's number is a category, as its CSV cell is,
    and its missing value (None, NaN, pandas' ``NA``) no category, ``""``."""
    return as_category(value) if categorical else value


def _with_weights(batch: ExampleBatch, weights: np.ndarray) -> ExampleBatch:
    from dataclasses import replace

    return replace(batch, weights=weights)
