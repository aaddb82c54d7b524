"""Parsing blocks of input (LIBSVM, VW, CSV, JSON Lines text; Parquet and Avro tables) into example batches.

Every format is a small frozen dataclass with ``parse(data, source=, offset=,
first_line=, header=)`` returning a :class:`ParsedBlock`: an
:class:`~polybeam.learners.batch.ExampleBatch` of the good records plus a
:class:`DeadLetter` for each bad one, with
``records == examples + dead letters + skipped``. The text formats scan whole
blocks in numba, so there is no Python per line or per feature.

>>> parsed = make_format("libsvm").parse(b"1 3:1\\n-1 4:2\\n")
>>> len(parsed.batch), parsed.records
(2, 2)
"""

import importlib

from polybeam.formats.formats import FORMATS, format_class, make_format
from polybeam.formats.labels import LABEL_KINDS, label_problems
from polybeam.formats.records import DeadLetter, ParsedBlock, reject_examples

# The formats load on first use, so reading LIBSVM never imports pyarrow.
_LAZY = {
    "AvroFormat": "polybeam.formats.avro",
    "CsvFormat": "polybeam.formats.csv",
    "JsonLinesFormat": "polybeam.formats.jsonl",
    "LibsvmFormat": "polybeam.formats.libsvm",
    "ParquetFormat": "polybeam.formats.parquet",
    "TableFormat": "polybeam.formats.tables",
    "VWFormat": "polybeam.formats.vw",
    "parse_number": "polybeam.formats.numbers",
}


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AvroFormat",
    "CsvFormat",
    "DeadLetter",
    "FORMATS",
    "JsonLinesFormat",
    "LABEL_KINDS",
    "LibsvmFormat",
    "ParquetFormat",
    "ParsedBlock",
    "TableFormat",
    "VWFormat",
    "format_class",
    "label_problems",
    "make_format",
    "parse_number",
    "reject_examples",
]
