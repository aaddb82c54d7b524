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
from polybeam.formats.input_settings import InputSettings

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
    """CSV with a header: the column names of the first input file (empty when unknown)."""
    if settings.format != "csv" or not settings.options["has_header"]:
        return ()
    path = first_file(pattern)
    if path is None:
        return ()
    try:
        data = text_sample(path)
    except Exception:  # the job's read reports a file it cannot read
        return ()
    return tuple(split_fields(data.split(b"\n", 1)[0], settings.options["delimiter"]))


def check_sample(
    pattern: str,
    settings: InputSettings,
    *,
    labels: str,
    model: InputSettings | None = None,
    model_path: str | None = None,
) -> None:
    """Raise :class:`InputMismatch` when the first input file cannot be read as ``settings`` say (its header
    or schema lacks a column they name) or, for a ``model`` that records its input, cannot be what it
    reads: none of its first records reads and they look like another format."""
    path = first_file(pattern)
    if path is None:
        return
    reader = settings.reader(labels)
    sample = b""
    try:
        if settings.format == "parquet":
            parsed = _parquet_sample(path, reader)
        else:
            sample = text_sample(path)
            parsed = reader.parse(sample, source=path)
    except ValueError as error:  # a header or schema the format cannot read (or not Parquet at all)
        if settings.format == "parquet":
            sample = _text_start(path)  # (what the file looks like instead)
        first = next((line for line in sample.decode("utf-8", "replace").splitlines() if line.strip()), "")
        note = f"; {model_note(model, model_path)}" if model is not None else ""
        text = str(error) if path in str(error) else f"{path}: {error}"  # (the readers name the file; pyarrow not)
        text = text.rstrip(".")
        raise InputMismatch(f"{text}{_looks_like(first, settings)}{note}") from None
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
    """The first records of ``path`` (at most :data:`SAMPLE_BYTES` of text, :data:`SAMPLE_ROWS` of Parquet),
    parsed as ``settings`` read them (a ``ParsedBlock``); the readers' errors as they raise them."""
    reader = settings.reader(labels)
    if settings.format == "parquet":
        return _parquet_sample(path, reader)
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


def _parquet_sample(path: str, reader):
    import pyarrow.parquet as pq

    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as stream:
        table = next(pq.ParquetFile(stream).iter_batches(batch_size=SAMPLE_ROWS), None)
    if table is None:
        raise LookupError("no rows")
    return reader.parse_table(table, source=path)


__all__ = ["InputMismatch", "check_sample", "header_columns", "model_note", "parse_sample", "recorded_input"]
