"""A model's input, as the launcher sees it: what the model says about how it was read, the CSV header a
training job records, and a fast check that ``evaluate``/``predict`` input can be what the model reads.

The check reads the start of the first input file (at most :data:`SAMPLE_BYTES`, whole lines) with the
settings the job will read with, before anything is launched. Input a model cannot have been trained on
-- a CSV file without the model's label column, LIBSVM lines for a model of CSV columns -- then fails at
once, in one line that names the model's format and how its input is read, instead of as a worker's error
or an AUC of 0.5. The job's own input check (``CheckInput``) still sees every record of every file.

>>> import os, tempfile
>>> from polybeam.formats.formats import make_format
>>> path = os.path.join(tempfile.mkdtemp(), "test.libsvm")
>>> _ = open(path, "w").write("1 3:1 7:0.5\\n-1 2:1\\n")
>>> model = InputSettings.of(make_format("csv", label_column="y"))
>>> try:
...     check_sample(path, model, labels="binary", model=model, model_path="m.model")
... except InputMismatch as error:
...     print(str(error).split(": ", 1)[1])
label_column 'y' is not a column; the columns are ['1 3:1 7:0.5']; these records look like LIBSVM; the model m.model was trained on CSV input (--format csv --label-column y): give it input like its training data, or the options that read this input
>>> header_columns(path, model.replace(format="csv")), recorded_input(None, "old.model")
(('1 3:1 7:0.5',), None)
"""

from __future__ import annotations

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from polybeam.formats.acceptance import FORMAT_NAMES, guess_format
from polybeam.formats.csv import split_fields
from polybeam.formats.formats import format_class, format_spec
from polybeam.formats.input_settings import InputSettings
from polybeam.formats.scoring import OPTIONAL_ROLES, ColumnsMismatch, ScoringColumns, ScoringFormat
from polybeam.pipelines.input_choices import settle_scoring_input
from polybeam.pipelines.options import given_input_settings, input_settings
from polybeam.transforms.samples import number_fields

SAMPLE_BYTES = 64 << 10
SAMPLE_ROWS = 256


class InputMismatch(ValueError):
    """Input that cannot be what the model reads (the command's one-line error, exit 2)."""


def recorded_input(record, where: str) -> InputSettings | None:
    """The settings a model's metadata (or a per-key folder's index) records under ``input``; None for a
    model that records none (older models: they read as before, from the options alone)."""
    if not record:
        return None
    try:
        return InputSettings.from_dict(record)
    except (ValueError, TypeError) as error:
        raise InputMismatch(
            f"{where}: its record of how its input was read cannot be used ({error}); pass the "
            "input options (--format, --label-column, ...) with a polybeam that knows it"
        ) from None


def first_file(pattern: str) -> str | None:
    """The first file ``pattern`` matches (by name), or None."""
    try:
        matched = FileSystems.match([pattern])[0].metadata_list
    except Exception:  # Beam wraps file-system errors in its own types; the read reports them
        return None
    return min((metadata.path for metadata in matched), default=None)


def text_sample(path: str, limit: int = SAMPLE_BYTES) -> bytes:
    """The complete lines among the first ``limit`` bytes of ``path`` (decompressed as the readers do)."""
    with FileSystems.open(path) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        data = data[: data.rfind(b"\n", 0, limit) + 1]
    return data


def header_columns(pattern: str, settings: InputSettings) -> tuple[str, ...]:
    """The columns of the first input file: a CSV header's names (without a header, ``"1"`` ... ``"d"``, as the
    reader names them, counted in its first record), a Parquet or Avro file's schema, the fields of the first
    JSON Lines objects; empty when unknown (other formats, no file, a file that cannot be read: the job's read
    reports it)."""
    spec = format_spec(settings.format)
    if not spec.columns:
        return ()
    path = first_file(pattern)
    if path is None:
        return ()
    try:
        if spec.layout == "file":
            return tuple(_file_schema(path, settings.format).names)
        data = text_sample(path)
    except Exception:  # the job's read reports a file it cannot read
        return ()
    if settings.format != "csv":
        return _sampled_fields(data, settings)
    delimiter = settings.options["delimiter"]
    if settings.options["has_header"]:
        return tuple(split_fields(data.split(b"\n", 1)[0], delimiter))
    record = next((line for line in data.split(b"\n") if line.strip() and not line.strip().startswith(b"#")), None)
    try:
        count = 0 if record is None else len(split_fields(record, delimiter))
    except ValueError:  # a damaged first record: its dead letter says so
        return ()
    return tuple(str(i + 1) for i in range(count))


def _file_schema(path: str, format_name: str):
    """The Arrow schema of a file of a binary table format (Parquet, Avro), from its footer or header."""
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as stream:
        return format_class(format_name).schema(stream)


def _sampled_fields(data: bytes, settings: InputSettings) -> tuple[str, ...]:
    """The fields of the records of a sample of rows (JSON Lines), in the order they first appear."""
    return tuple(dict.fromkeys(settings.reader("any").sample_table(data).column_names))


def with_columns(pattern: str, settings: InputSettings) -> InputSettings:
    """``settings`` with the columns of the first input file (see :func:`header_columns`), as a model records
    them; for a typed format (Parquet, Avro), with its text columns among the categorical ones too (the
    reader takes them as categories by their type: recorded by name, every reader of the model's rows knows
    them)."""
    columns = header_columns(pattern, settings)
    settings = settings.replace(columns=columns)
    options = settings.options
    if getattr(format_spec(settings.format).format_class, "partial_rows", False) and columns:
        settings = _with_number_fields(pattern, settings)
    if not format_spec(settings.format).typed or not columns or not options.get("infer_categorical", True):
        return settings
    if options["indices_column"] in columns:  # (sparse lists: no named features)
        return settings
    try:
        schema = _file_schema(first_file(pattern), settings.format)
    except Exception:  # the job's read reports a file it cannot read
        return settings
    import pyarrow as pa

    roles = {options.get(name) for name in ("label_column", "weight_column", "key_column", "id_column")}
    roles |= {options.get("timestamp_column"), *options.get("ignore_columns", ())}
    chosen = options.get("feature_columns")

    def is_text(kind) -> bool:  # (dictionary-encoded, strings or bytes: categories, as the reader takes them)
        checks = ("is_string", "is_large_string", "is_string_view", "is_binary", "is_large_binary")
        return pa.types.is_dictionary(kind) or any(getattr(pa.types, check)(kind) for check in checks)

    text = [
        name
        for name, kind in zip(schema.names, schema.types)
        if is_text(kind) and name not in roles and (chosen is None or name in chosen)
    ]
    if not text:
        return settings
    return settings.replace(categorical_columns=tuple(dict.fromkeys([*options["categorical_columns"], *text])))


def _with_number_fields(pattern: str, settings: InputSettings) -> InputSettings:
    """JSON Lines: ``settings`` with the fields that hold numbers in the first file's first lines as its
    ``number_columns``, whose null or absence is then a missing number (NaN) on every line, whichever lines
    share its block (see :class:`~polybeam.formats.tables.TableFormat`), as a CSV or Parquet file's empty
    numeric cell is; recorded in the model, every door that scores its rows reads them alike."""
    options = settings.options
    if options.get("number_columns") or options.get("indices_column") in settings.columns:
        return settings
    numbers = number_fields(pattern, settings.reader("any"))
    return settings.replace(number_columns=numbers) if numbers else settings


def scoring_reader(
    settings: InputSettings,
    model: InputSettings | None,
    *,
    labels: str,
    optional: tuple[str, ...] = (),
    missing: str = "refuse",
    given: frozenset = frozenset(),
):
    """The format ``evaluate`` and ``predict`` read with: for input of named columns of a model that records its
    columns, a :class:`~polybeam.formats.scoring.ScoringFormat` holding each file's columns against the model's
    (refusing files without some of its feature columns unless ``missing`` is ``"allow"``, leaving out columns
    it never saw, reading files without the ``optional`` label or weight column without them); else the format
    the settings describe. ``given``: the format settings the user gave (a label column given is never optional).
    """
    reader = settings.reader(labels)
    columns = _scoring_columns(settings, model, optional=optional, missing=missing, given=given)
    return reader if columns is None else ScoringFormat(reader, columns)


def scoring_input(job, config, key: str | None, model: InputSettings | None, *, labels: str, command: str):
    """How ``evaluate`` (``labels``: the model's) or ``predict`` (``labels="any"``) read their input, after a
    look at the first input file when the model says how it was read: ``(settings, what the model reads for
    the messages or None, the format to read with)``. The input is read as the model's was unless the options
    say otherwise (see :func:`~polybeam.pipelines.options.input_settings`), held against the model's columns
    (see :func:`scoring_reader`; ``predict`` reads files without the label or weight column)."""
    settings = input_settings(job, config, key=key, model=model, model_path=job.model)
    if model is None:  # a model from before polybeam recorded its input: the options alone, as before
        return settings, None, settings.reader(labels)
    settings, _ = settle_scoring_input(job.input, settings, model, zero_based_given=job.zero_based)
    settings = named_label(settings)
    reader = scoring_reader(
        settings,
        model,
        labels=labels,
        optional=OPTIONAL_ROLES if command == "predict" else (),
        missing=job.missing_columns,
        given=frozenset(given_input_settings(job)),
    )
    check_sample(job.input, settings, labels=labels, model=model, model_path=job.model, reader=reader)
    return settings, model_note(model, job.model), reader


def named_label(settings: InputSettings) -> InputSettings:
    """CSV with a header whose label column is the default (the first): named after the model's first column,
    so that a file without it is read without labels rather than with its first feature as the label."""
    if settings.format != "csv" or not settings.options["has_header"] or not settings.columns:
        return settings
    if settings.options["label_column"] is not None:
        return settings
    return settings.replace(label_column=settings.columns[0])


def _scoring_columns(settings, model, *, optional, missing, given) -> ScoringColumns | None:
    spec = format_spec(settings.format)
    if model is None or not model.columns or not spec.columns:
        return None
    if model.format != settings.format:
        return None  # (another format of the same features: its columns are its own)
    names = model.columns
    header = bool(settings.options.get("has_header", True))  # (only CSV may have none)
    if model.options.get("indices_column") in names:
        return None  # sparse lists: features by index, not by column
    if getattr(spec.format_class, "partial_rows", False):
        missing = "allow"  # (a row may leave any field out: a field no row of a block has is missing there)

    def named(column):
        if column is None:
            return None
        if isinstance(column, int) and not isinstance(column, bool):
            return names[column] if 0 <= column < len(names) else None
        return column if column in names else None

    def role(setting: str, reading: InputSettings):
        column = reading.options.get(setting)
        if setting == "label_column" and column is None and reading.format == "csv":
            column = 0  # the CSV reader's default: the first column
        return named(column)

    label, weight = role("label_column", settings), role("weight_column", settings)
    roles = set()
    for reading in (model, settings):
        for setting in ("label_column", "weight_column", "key_column", "id_column", "timestamp_column"):
            roles.add(role(setting, reading))
        roles.update(named(column) for column in reading.options.get("ignore_columns", ()))
    roles -= {None, label, weight}
    settable = {"label": "label_column", "weight": "weight_column"}
    return ScoringColumns(
        names,
        label=label,
        weight=weight,
        roles=tuple(sorted(roles)),
        header=header,
        optional=tuple(role for role in optional if settable[role] not in given),
        missing=missing,
    )


def check_sample(
    pattern: str,
    settings: InputSettings,
    *,
    labels: str,
    model: InputSettings | None = None,
    model_path: str | None = None,
    reader=None,
) -> None:
    """Raise :class:`InputMismatch` when the first input file cannot be read as ``settings`` say (its header
    or schema lacks a column they name) or, for a ``model`` that records its input, cannot be what it
    reads: none of its first records reads and they look like another format. ``reader``: the format to
    read with (default: the one ``settings`` describe, accepting ``labels``)."""
    path = first_file(pattern)
    if path is None:
        return
    reader = reader if reader is not None else settings.reader(labels)
    sample = b""
    try:
        if format_spec(settings.format).layout == "file":
            parsed = _table_sample(path, reader)
        else:
            sample = text_sample(path)
            parsed = reader.parse(sample, source=path)
    except ValueError as error:  # a header or schema the format cannot read (or not Parquet at all)
        if format_spec(settings.format).layout == "file":
            sample = _text_start(path)  # (what the file looks like instead)
        first = next((line for line in sample.decode("utf-8", "replace").splitlines() if line.strip()), "")
        looks_like = _looks_like(first, settings)
        # (a file lacking some of the model's columns: its message says which and what to do)
        told = isinstance(error, ColumnsMismatch) and not looks_like
        note = f"; {model_note(model, model_path)}" if model is not None and not told else ""
        text = str(error) if path in str(error) else f"{path}: {error}"  # (the readers name the file; pyarrow not)
        text = text.rstrip(".")
        raise InputMismatch(f"{text}{looks_like}{note}") from None
    except Exception:  # not readable here (permissions, a damaged file): the job says what is wrong
        return
    readable = len(parsed.batch) + len(parsed.dead_letters)
    if model is None or not readable or len(parsed.dead_letters) < readable:  # (the job's check weighs them)
        return
    letter = parsed.dead_letters[0]
    looks_like = _looks_like(letter.raw or "", settings)
    if not looks_like:
        return  # records of the right kind that do not fit the task: the job's check weighs them all
    raise InputMismatch(f"{path} line {letter.line}: {letter.reason}{looks_like}; {model_note(model, model_path)}")


def _text_start(path: str) -> bytes:
    try:
        return text_sample(path, 4096)
    except Exception:  # unreadable as text too: nothing to guess from
        return b""


def parse_sample(path: str, settings: InputSettings, labels: str):
    """The first records of ``path`` (at most :data:`SAMPLE_BYTES` of text, :data:`SAMPLE_ROWS` rows of a
    binary table file), parsed as ``settings`` read them (a ``ParsedBlock``); the readers' errors as they
    raise them."""
    reader = settings.reader(labels)
    if format_spec(settings.format).layout == "file":
        return _table_sample(path, reader)
    return reader.parse(text_sample(path), source=path)


def _looks_like(raw: str, settings: InputSettings) -> str:
    """``"; these records look like LIBSVM"`` when ``raw`` looks like another format than ``settings``'."""
    guess = guess_format(raw)
    return "" if guess is None or guess == settings.format else f"; these records look like {FORMAT_NAMES[guess]}"


def model_note(model: InputSettings, model_path: str) -> str:
    return (
        f"the model {model_path} was trained on {FORMAT_NAMES[model.format]} input ({model.flags()}): "
        "give it input like its training data, or the options that read this input"
    )


def _table_sample(path: str, reader):
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as stream:
        table = next(iter(reader.record_batches(stream, SAMPLE_ROWS)), None)
    if table is None:
        raise LookupError("no rows")
    return reader.parse_table(table, source=path)


__all__ = [
    "InputMismatch",
    "check_sample",
    "header_columns",
    "model_note",
    "named_label",
    "parse_sample",
    "recorded_input",
    "scoring_input",
    "scoring_reader",
    "with_columns",
]
