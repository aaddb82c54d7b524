"""How a model's examples were read, so that it reads its input the same way again.

A model scores features by their hashed slots, and which slot a feature gets
depends on how the input was read: the format (a LIBSVM index is its own
slot, a CSV column or VW feature is hashed by name), the columns that are the
label, the weight, the key, the ID or ignored, the columns read as
categories, the delimiter and header, the bits and hash seed, the class
names. :class:`InputSettings` records all of it (in the model file, and in a
per-key folder's index), and gives it back as the options of a reader.

>>> from polybeam.formats.formats import make_format
>>> settings = InputSettings.of(make_format("csv", label_column="y", categorical_columns=("colour",), id_column="rid"))
>>> settings.flags()
'--format csv --label-column y --categorical-columns colour --id-column rid'
>>> InputSettings.from_dict(settings.to_dict()) == settings
True
>>> fmt = settings.reader(labels="any")
>>> fmt.label_column, fmt.id_column, fmt.labels
('y', 'rid', 'any')

Formats that number their features the same way can read for each other's
models (LIBSVM and the sparse lists of Parquet, Avro or JSON Lines by index; CSV, VW
text and the named columns of Parquet, Avro or JSON Lines by name); the others cannot:

>>> readable_by("libsvm", "parquet"), readable_by("csv", "vw"), readable_by("csv", "libsvm")
(True, True, False)
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from polybeam.formats.formats import FORMAT_SPECS, FORMATS, format_class, format_spec, make_format

# Settings every format has: the hashed space and the labels. The labels a
# reader accepts are the task's (evaluate: the model's loss; predict: any), so
# they are not recorded.
SHARED = ("bits", "seed", "labels", "classes", "label_names")


# Format settings recorded only when set (newer than the records of older models).
OPTIONAL_RECORDS = frozenset({"timestamp_column", "timestamp_unit", "column_names", "number_columns"})

# Format settings newer than some records, whose default changed how input is read: a record without one
# read its input as this value does (CSV: only an empty cell was missing; Parquet: only numeric columns
# were features). Other settings missing from a record take their defaults.
BEFORE_RECORDED = {name: spec.before_recorded for name, spec in FORMAT_SPECS.items() if spec.before_recorded}

# The command-line flag of each format setting (settings without one are shown as Python keywords).
FLAGS = {
    "label_column": "--label-column",
    "weight_column": "--weight-column",
    "categorical_columns": "--categorical-columns",
    "ignore_columns": "--ignore-columns",
    "id_column": "--id-column",
    "delimiter": "--csv-delimiter",
    "feature_names": "--feature-names",
    "zero_based": "--zero-based",
    "na_values": "--na-values",
    "timestamp_unit": "--timestamp-unit",
}


def readable_by(model_format: str, input_format: str) -> bool:
    """Whether input in ``input_format`` gives the features a model trained on ``model_format`` knows."""
    model, given = format_spec(model_format), format_spec(input_format)
    return model == given or (model.indexed and given.indexed) or (model.named and given.named)


def _plain(value: Any) -> Any:
    """A setting as JSON has it (tuples as lists)."""
    return list(value) if isinstance(value, tuple) else value


def _setting(value: Any) -> Any:
    """A setting as a format takes it (JSON lists as tuples)."""
    return tuple(value) if isinstance(value, list) else value


@dataclass(frozen=True)
class InputSettings:
    """A format and every setting it read a model's examples with.

    Parameters
    ----------
    format : str
        A name of :data:`~polybeam.formats.formats.FORMATS`.
    options : mapping
        The format's own settings (``label_column``, ``delimiter``,
        ``categorical_columns``, ``id_column``, ...), every one of them.
    bits, seed : int
        The hashed feature space and the hash seed.
    classes : int
        The number of classes of a multiclass task (0: not one).
    class_names : tuple of str
        The classes' names, if any (the i-th is class i + 1).
    columns : tuple of str
        The columns of the training input's first file: a CSV header's names
        (without a header ``"1"`` ... ``"d"``), a Parquet schema's, a pandas
        frame's columns; readers of single lines (RunInference) know them,
        and scoring files are held against them (see
        :mod:`polybeam.formats.scoring`).
    matrix_columns : int
        For a model fitted on a matrix (scikit-learn, NumPy, SciPy: column
        ``j`` is feature ``j + 1``), its number of columns; 0 otherwise. Such
        a model was not trained on a file, so how a LIBSVM file numbers its
        features is the file's own: scoring detects it (an index 0: from 0;
        an index ``matrix_columns``: from 1), as scikit-learn's
        ``load_svmlight_file(zero_based="auto")`` does.
    """

    format: str
    options: Mapping[str, Any] = field(default_factory=dict)
    bits: int = 18
    seed: int = 0
    classes: int = 0
    class_names: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()
    matrix_columns: int = 0

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ValueError(f"unknown input format {self.format!r}; known formats are {', '.join(FORMATS)}")
        known = _own_fields(self.format)
        # Every setting, defaults included, so that a record says what was read even when defaults change.
        options = {name: _setting(self.options.get(name, default)) for name, default in known.items()}
        object.__setattr__(self, "options", options)
        object.__setattr__(self, "class_names", tuple(self.class_names))
        object.__setattr__(self, "columns", tuple(self.columns))

    # -- construction -----------------------------------------------------------

    @classmethod
    def of(cls, fmt, columns: tuple[str, ...] = ()) -> InputSettings:
        """The settings of a format object (``polybeam.formats``)."""
        values = {f.name: getattr(fmt, f.name) for f in dataclasses.fields(fmt)}
        return cls(
            format=fmt.name,
            options={name: value for name, value in values.items() if name not in SHARED},
            bits=values["bits"],
            seed=values["seed"],
            classes=values["classes"],
            class_names=values["label_names"],
            columns=columns,
        )

    def to_dict(self) -> dict:
        """Plain JSON: ``format``, the format's settings, ``bits``, ``seed``, ``classes``, ``class_names``
        (and ``columns`` when known)."""
        # (no timestamp column is left out: what models recorded before there were windows, read alike)
        options = {
            name: value
            for name, value in self.options.items()
            if not (name in OPTIONAL_RECORDS and (value is None or value == ()))
        }
        record = {
            "format": self.format,
            **{name: _plain(value) for name, value in options.items()},
            "bits": self.bits,
            "seed": self.seed,
            "classes": self.classes,
            "class_names": list(self.class_names),
        }
        if self.columns:
            record["columns"] = list(self.columns)
        if self.matrix_columns:
            record["matrix_columns"] = self.matrix_columns
        return record

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> InputSettings:
        """The settings :meth:`to_dict` wrote; settings this version does not know are left out (a newer
        polybeam may record more), and settings an older one did not record read as it read
        (:data:`BEFORE_RECORDED`).

        >>> InputSettings.from_dict({"format": "csv", "label_column": "y"}).options["na_values"]
        ()
        """
        if not isinstance(record, Mapping) or "format" not in record:
            raise ValueError(f"input settings need a format, got {record!r}")
        known = _own_fields(record["format"]) if record["format"] in FORMATS else {}
        options = {
            **BEFORE_RECORDED.get(record["format"], {}),
            **{name: record[name] for name in known if name in record},
        }
        return cls(
            format=record["format"],
            options=options,
            bits=int(record.get("bits", 18)),
            seed=int(record.get("seed", 0)),
            classes=int(record.get("classes", 0)),
            class_names=tuple(record.get("class_names", ())),
            columns=tuple(record.get("columns", ())),
            matrix_columns=int(record.get("matrix_columns", 0)),
        )

    # -- use ----------------------------------------------------------------------

    def reader_options(self, labels: str) -> dict:
        """Keyword arguments of ``make_format(self.format, ...)`` (or ``ReadExamples``) that read as recorded,
        accepting ``labels`` ("real", "binary", "multiclass" or "any")."""
        options = {"bits": self.bits, "seed": self.seed, "labels": labels, **self.options}
        if self.classes or self.class_names:
            options.update(classes=self.classes, label_names=self.class_names)
        return options

    def reader(self, labels: str):
        """The format object that reads as recorded."""
        return make_format(self.format, **self.reader_options(labels))

    def replace(self, **changes) -> InputSettings:
        """A copy with some fields (``format``, ``bits``, ...) or format settings (``label_column``, ...) changed."""
        own = {name: changes.pop(name) for name in list(changes) if name in self.options}
        return dataclasses.replace(self, **changes, options={**self.options, **own})

    def flags(self) -> str:
        """The command-line options that read this way (settings that differ from the format's defaults)."""
        parts = ["--format", self.format]
        defaults = _own_fields(self.format)
        for name, value in self.options.items():
            if value == defaults[name] or name in ("key_column", "key_namespace", "timestamp_column"):
                continue
            flag = FLAGS.get(name)
            if name == "has_header":
                parts.append("--no-csv-header")
            elif flag is None:
                parts.append(f"{name}={_plain(value)!r}")
            elif value is True:
                parts.append(flag)
            else:
                parts += [flag, ",".join(map(str, value)) if isinstance(value, tuple) else str(value)]
        for name, kind in (("key_column", "column"), ("key_namespace", "namespace")):
            if self.options.get(name) is not None:
                parts += ["--key", f"{kind}:{self.options[name]}"]
        if self.options.get("timestamp_column") is not None:
            parts += ["--timestamp", f"column:{self.options['timestamp_column']}"]
        return shlex.join(parts)  # (quoted as a shell needs: --csv-delimiter ';')

    def describe(self) -> str:
        """One line for people: the format, how to read it again, and the hashed space."""
        names = (
            f", classes {', '.join(self.class_names)}"
            if self.class_names
            else (f", {self.classes} classes" if self.classes else "")
        )
        return f"{self.format} ({self.flags()}), {self.bits} bits, hash seed {self.seed}{names}"


def _own_fields(name: str) -> dict[str, Any]:
    """The settings of format ``name`` that are its own (not shared by all formats), with their defaults."""
    return {f.name: f.default for f in dataclasses.fields(format_class(name)) if f.name not in SHARED}
