"""What each column of a table-shaped input is for, as a model's input contract records it.

A model trained on CSV (or on a pandas frame of named columns) knows the
columns it was trained on (``InputSettings.columns``) and their roles: the
label, the weight, the key, the ID, the event time, ignored columns, and the
features, numeric or categorical. Every door that hands it rows of named
fields (RunInference dicts and ``beam.Row``, Beam YAML) reads them through
:class:`ColumnRoles`, so that a row means what the same record means in a
file:

* a numeric column's value is a number; a string that reads as one is that
  number (as a CSV cell is text), a string that does not is refused naming
  the column; a missing value (None, NaN, pandas' ``NA``, an empty string,
  one of the contract's ``na_values``) is a missing number, NaN, as an empty
  cell: the model predicts it at the feature's mean over its training
  examples;
* a categorical column's value is a category, even when it is a number; a
  missing value is no category (``""``); for a model of typed values
  (Parquet, Avro, JSON Lines), a text value is a category in any column, as
  its reader reads it;
* a feature column the row does not have at all is **refused** by default,
  naming it: a row without the column is not the row the model was trained
  on (scoring it as if every such value were missing silently gives another
  prediction); ``missing_columns="allow"`` reads each absent column as a
  missing value instead (NaN, or no category).

>>> from polybeam.formats.input_settings import InputSettings
>>> settings = InputSettings("csv", {"label_column": "y", "categorical_columns": ("zip",)}, columns=("y", "age", "zip"))
>>> roles = ColumnRoles.of(settings)
>>> roles.features, sorted(roles.categorical)
(('age', 'zip'), ['zip'])
>>> roles.features_of({"y": 1, "age": "41", "zip": 10115})
{'age': 41.0, 'zip': '10115'}
>>> roles.features_of({"age": "NA", "zip": None}), ColumnRoles.of(settings, missing_columns="allow").features_of({})
({'age': nan, 'zip': ''}, {'age': nan, 'zip': ''})
>>> roles.features_of({"age": 41})
Traceback (most recent call last):
...
polybeam.formats.columns.MissingColumns: the row lacks the model's column 'zip' (missing_columns='allow' reads absent columns as missing values)
>>> roles.features_of({"age": "forty", "zip": 1})
Traceback (most recent call last):
...
polybeam.formats.columns.ColumnValueError: column 'age': not a number: 'forty'
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from polybeam.formats.formats import format_spec
from polybeam.formats.mappings import as_category, is_missing
from polybeam.learners.choices import MISSING_COLUMNS

MISSING_COLUMN_POLICIES = MISSING_COLUMNS  # (the option schema's --missing-columns, for files too)
# The settings of a read of named columns (CSV, JSON Lines, Parquet, Avro) that give a column a role other than feature.
ROLE_SETTINGS = {
    "label_column": "label",
    "weight_column": "weight",
    "key_column": "key",
    "id_column": "id",
    "timestamp_column": "timestamp",
}


class MissingColumns(ValueError):
    """A row without some of the model's feature columns."""


class ColumnValueError(ValueError):
    """A value a column of the model cannot hold (text in a numeric column)."""


def check_missing_columns(policy: str) -> str:
    if policy not in MISSING_COLUMN_POLICIES:
        raise ValueError(f"missing_columns must be one of {', '.join(MISSING_COLUMN_POLICIES)}; got {policy!r}")
    return policy


@dataclass(frozen=True)
class ColumnRoles:
    """The columns of a table-shaped input and what each is for (see the module docstring).

    ``features`` are the feature columns in their order, ``categorical`` those whose values are
    categories, ``roles`` the other columns' roles (``{"y": "label"}``), ``na_values`` the texts that
    mean a missing value, ``missing_columns`` the policy for absent feature columns, ``untyped`` the
    numeric columns whose missing value is no feature rather than NaN (a JSON Lines model's, but for its
    ``feature_columns``: as its reader reads a null or a field left out).
    """

    features: tuple[str, ...]
    categorical: frozenset[str] = frozenset()
    roles: Mapping[str, str] = field(default_factory=dict)
    na_values: frozenset[str] = frozenset()
    missing_columns: str = "refuse"
    text_is_category: bool = False
    untyped: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        check_missing_columns(self.missing_columns)

    @classmethod
    def of(cls, settings, *, missing_columns: str = "refuse") -> ColumnRoles | None:
        """The roles an input contract (:class:`~polybeam.formats.input_settings.InputSettings`) records; None
        when it records no columns (LIBSVM, VW, or a model from before polybeam recorded them)."""
        if settings is None or not settings.columns or not format_spec(settings.format).columns:
            return None
        columns = tuple(settings.columns)
        options = settings.options

        def named(column):
            if isinstance(column, int) and not isinstance(column, bool):
                return columns[column] if 0 <= column < len(columns) else None
            return column

        roles = {}
        for setting, role in ROLE_SETTINGS.items():
            column = options.get(setting)
            if setting == "label_column" and column is None and settings.format == "csv":
                column = 0  # CSV's default label: the first column
            if column is not None and named(column) is not None:
                roles[named(column)] = role
        for column in options.get("ignore_columns") or ():
            roles.setdefault(named(column), "ignored")
        categorical = frozenset(named(column) for column in options.get("categorical_columns") or ())
        features = tuple(column for column in columns if column not in roles)
        na_values = frozenset(options.get("na_values") or ())
        # Formats of typed values (Parquet, Avro, JSON Lines) read a text value as a category; CSV cells are text.
        format_class = format_spec(settings.format).format_class
        typed = hasattr(format_class, "parse_table")
        text_is_category = typed and options.get("infer_categorical", True) is not False
        untyped = frozenset()
        if getattr(format_class, "partial_rows", False):  # (see TableFormat's named layout)
            named = {*(options.get("feature_columns") or ()), *(options.get("number_columns") or ())}
            untyped = frozenset(features) - named
        categorical &= set(features)
        return cls(features, categorical, roles, na_values, missing_columns, text_is_category, untyped)

    def ignoring(self, columns) -> ColumnRoles:
        """These roles with ``columns`` also ignored (neither features nor required)."""
        ignored = set(columns)
        return ColumnRoles(
            tuple(column for column in self.features if column not in ignored),
            self.categorical - ignored,
            {**self.roles, **{column: "ignored" for column in ignored}},
            self.na_values,
            self.missing_columns,
            self.text_is_category,
            self.untyped - ignored,
        )

    def absent(self, fields) -> list[str]:
        """The feature columns that ``fields`` (a row's field names) lack."""
        present = set(fields)
        return [column for column in self.features if column not in present]

    def check_fields(self, fields) -> None:
        """Refuse rows with ``fields`` that lack feature columns (unless the policy allows it)."""
        if self.missing_columns == "allow":
            return
        absent = self.absent(fields)
        if absent:
            shown = ", ".join(repr(column) for column in absent[:10]) + (
                f", ... ({len(absent)} in all)" if len(absent) > 10 else ""
            )
            plural = "s" if len(absent) > 1 else ""
            raise MissingColumns(
                f"the row lacks the model's column{plural} {shown} (missing_columns='allow' reads absent columns "
                "as missing values)"
            )

    def features_of(self, record: Mapping) -> dict:
        """The row's features as :func:`~polybeam.formats.mappings.batch_from_mappings` reads them: numeric
        columns' values as numbers (NaN when missing), categorical ones' as categories (``""``, no category,
        when missing); other fields that are not label, weight, key, ID, time or ignored are features as they
        are (as a CSV file's extra columns are). A row lacking a feature column is refused (see the policy)."""
        self.check_fields(record.keys())
        features = {}
        for column in self.features:
            value = record.get(column)  # (None for a column the row lacks, which the policy allows: missing)
            if column in self.categorical or (self.text_is_category and isinstance(value, (str, bytes, bytearray))):
                category = _category(value)
                features[column] = "" if category.strip() in self.na_values else category
            else:
                features[column] = self._number(column, value)
                if column in self.untyped and features[column] != features[column]:
                    features[column] = ""  # (no feature, as batch_from_mappings reads an empty category)
        for name, value in record.items():
            # A field the model never saw: as it is, but a missing value is none (NaN there would move nothing).
            if name not in features and name not in self.roles and not is_missing(value):
                features[name] = value
        return features

    def _number(self, column: str, value):
        """A numeric column's value as a number, NaN when missing."""
        if is_missing(value):
            return math.nan
        if isinstance(value, (bytes, bytearray)):
            value = value.decode("utf-8", "replace")
        if isinstance(value, str):
            text = value.strip()
            if not text or text in self.na_values:
                return math.nan
            from polybeam.formats.numbers import parse_number

            try:
                return parse_number(text)
            except ValueError:
                raise ColumnValueError(f"column {column!r}: not a number: {text[:40]!r}") from None
        return value


def _category(value) -> str:
    """A categorical column's value as a category (a number's text, as its CSV cell), ``""`` when missing."""
    if isinstance(value, (bytes, bytearray)):
        return value.decode("utf-8", "replace")
    return as_category(value)


def feature_columns(settings) -> Sequence[str]:
    """The feature columns an input contract records (empty when it records none)."""
    roles = ColumnRoles.of(settings)
    return roles.features if roles is not None else ()
