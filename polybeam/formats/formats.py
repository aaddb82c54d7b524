"""The input formats by name, and what each can do: one registry for pipelines, command lines and messages.

A format is one :class:`FormatSpec` in :data:`FORMAT_SPECS`, naming the class
that parses it and declaring its capabilities; every place that treats formats
differently asks the spec, never the name. Adding a format is a module with
its class and one entry here.

>>> make_format("libsvm", bits=20)
LibsvmFormat(bits=20, seed=0, labels='real', classes=0, label_names=(), zero_based=False)
>>> sorted(FORMATS)
['avro', 'csv', 'jsonl', 'libsvm', 'parquet', 'vw']
>>> make_format("libsvm", bitz=20)
Traceback (most recent call last):
...
ValueError: unknown option 'bitz' for format 'libsvm'; its options are bits, seed, labels, classes, label_names, zero_based
>>> make_format("csv", labels="multiclass", label_names=("cat", "dog")).classes
2
>>> spec = format_spec("avro")
>>> spec.title, spec.layout, spec.columns, spec.typed
('Avro', 'file', True, True)
>>> formats_where(columns=True)
('csv', 'parquet', 'jsonl', 'avro')
"""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class FormatSpec:
    """An input format and what it can do.

    Parameters
    ----------
    name : str
        The format's name (``--format NAME``, ``format="NAME"``, a model's record).
    title : str
        How messages and pages name it ("VW text").
    module, class_name : str
        Where its class is; the module is imported only when the format is
        used (so reading LIBSVM never imports pyarrow).
    layout : {"lines", "file"}
        ``"lines"``: one record per line, read by blocks of lines split
        anywhere in a file (plain or compressed), parsed by
        ``parse(data, source=, offset=, first_line=, header=)``.
        ``"file"``: a binary file read whole, one worker a file, by record
        batches (the class's ``record_batches(stream, rows)``), each parsed
        by ``parse_table``; dead letters are numbered by row.
    indexed, named : bool
        Whether its features can be numbered (an index is its slot: LIBSVM,
        sparse list columns) and named (hashed by name). A model reads input
        of any format sharing one of these with its own.
    columns : bool
        Records are rows of named columns: the label, weight, key, ID,
        timestamp, categorical and ignored columns are options, a model
        records the training input's columns, and scoring input is held
        against them.
    typed : bool
        The file declares each column's type (a schema): text columns are
        categories by their type, and a model records them as such.
    features : str
        How its features become slots, for messages ("are named by column").
    options, python_options : str
        The settings that shape how its records read, as flags and as
        keywords, named when records look right but do not parse.
    before_recorded : dict
        Settings newer than some model records whose default changed what is
        read: a record without one read its input as this value does.
    magic : bytes
        How its files start, when they always start alike (``b"PAR1"``), for
        telling a user that the input looks like another format.
    """

    name: str
    title: str
    module: str
    class_name: str
    layout: str = "lines"
    indexed: bool = False
    named: bool = False
    columns: bool = False
    typed: bool = False
    features: str = ""
    options: str = ""
    python_options: str = ""
    before_recorded: dict = dataclasses.field(default_factory=dict)
    magic: bytes = b""

    def __post_init__(self) -> None:
        if self.layout not in ("lines", "file"):
            raise ValueError(f"layout must be 'lines' or 'file', got {self.layout!r}")

    @property
    def format_class(self) -> type:
        return getattr(importlib.import_module(self.module), self.class_name)


_TABLE_OPTIONS = "--label-column, --weight-column, --categorical-columns, --ignore-columns"
_TABLE_KEYWORDS = "label_column, weight_column, categorical_columns, ignore_columns"

FORMAT_SPECS = {
    spec.name: spec
    for spec in (
        FormatSpec(
            "libsvm",
            "LIBSVM",
            "polybeam.formats.libsvm",
            "LibsvmFormat",
            indexed=True,
            features="are numbered",
        ),
        FormatSpec("vw", "VW text", "polybeam.formats.vw", "VWFormat", named=True, features="are named"),
        FormatSpec(
            "csv",
            "CSV",
            "polybeam.formats.csv",
            "CsvFormat",
            named=True,
            columns=True,
            features="are named by column",
            options="--label-column, --categorical-columns, --na-values, --csv-delimiter, --no-csv-header",
            python_options="label_column, categorical_columns, na_values, delimiter, has_header",
            before_recorded={"na_values": ()},
        ),
        FormatSpec(
            "parquet",
            "Parquet",
            "polybeam.formats.parquet",
            "ParquetFormat",
            layout="file",
            indexed=True,
            named=True,
            columns=True,
            typed=True,
            features="are numbered or named by column",
            options=_TABLE_OPTIONS,
            python_options=_TABLE_KEYWORDS,
            before_recorded={"infer_categorical": False},
            magic=b"PAR1",
        ),
        FormatSpec(
            "jsonl",
            "JSON Lines",
            "polybeam.formats.jsonl",
            "JsonLinesFormat",
            indexed=True,
            named=True,
            columns=True,
            features="are numbered or named by field",
            options=_TABLE_OPTIONS,
            python_options=_TABLE_KEYWORDS,
        ),
        FormatSpec(
            "avro",
            "Avro",
            "polybeam.formats.avro",
            "AvroFormat",
            layout="file",
            indexed=True,
            named=True,
            columns=True,
            typed=True,
            features="are numbered or named by field",
            options=_TABLE_OPTIONS,
            python_options=_TABLE_KEYWORDS,
            magic=b"Obj\x01",
        ),
    )
}
FORMATS = tuple(FORMAT_SPECS)


def format_spec(name: str) -> FormatSpec:
    """The spec of the format called ``name``; a ``ValueError`` naming the known ones for another name."""
    try:
        return FORMAT_SPECS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown input format {name!r}; known formats are {', '.join(sorted(FORMATS))}") from None


def formats_where(**capabilities) -> tuple[str, ...]:
    """The names of the formats with all of ``capabilities`` (``columns=True``, ``layout="file"``, ...)."""
    return tuple(
        name
        for name, spec in FORMAT_SPECS.items()
        if all(getattr(spec, capability) == wanted for capability, wanted in capabilities.items())
    )


def format_class(name: str) -> type:
    """The class of the format called ``name``."""
    return format_spec(name).format_class


def make_format(name: str, **options):
    """The format called ``name``, configured with ``options``.

    Raises ``ValueError`` for an unknown format or option, naming the valid ones.
    """
    format_type = format_class(name)
    valid = [field.name for field in dataclasses.fields(format_type)]
    for option in options:
        if option not in valid:
            raise ValueError(f"unknown option {option!r} for format {name!r}; its options are {', '.join(valid)}")
    return format_type(**options)


def spec_of(parsing_format) -> FormatSpec | None:
    """The spec of a format object (None for an object of no registered format)."""
    return FORMAT_SPECS.get(getattr(parsing_format, "name", None))


def named_list(names) -> str:
    """The formats' titles as prose ("CSV, Parquet or Avro").

    >>> named_list(formats_where(columns=True))
    'CSV, Parquet, JSON Lines or Avro'
    """
    titles = [format_spec(name).title for name in names]
    return titles[0] if len(titles) == 1 else f"{', '.join(titles[:-1])} or {titles[-1]}"


# The formats of rows with named columns (key, timestamp, ID, categorical and ignored columns), for messages.
COLUMN_FORMATS = formats_where(columns=True)
COLUMN_FORMATS_TEXT = named_list(COLUMN_FORMATS)
COLUMN_FORMATS_FLAG = "--format " + "/".join(COLUMN_FORMATS)


def is_file_format(parsing_format) -> bool:
    """Whether a format object reads whole files by record batches (``layout="file"``) rather than lines."""
    spec = spec_of(parsing_format)
    return spec.layout == "file" if spec is not None else hasattr(parsing_format, "record_batches")
