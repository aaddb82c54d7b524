"""Parsing blocks of input (LIBSVM, VW, CSV text; Parquet tables) into example batches.

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

from polybeam.learners.parsing.csv import CsvFormat
from polybeam.learners.parsing.formats import FORMATS, make_format
from polybeam.learners.parsing.libsvm import LibsvmFormat
from polybeam.learners.parsing.numbers import parse_number
from polybeam.learners.parsing.parquet import ParquetFormat
from polybeam.learners.parsing.records import (
    LABEL_KINDS,
    DeadLetter,
    ParsedBlock,
    label_problems,
    reject_examples,
)
from polybeam.learners.parsing.vw import VWFormat

__all__ = [
    "CsvFormat",
    "DeadLetter",
    "FORMATS",
    "LABEL_KINDS",
    "LibsvmFormat",
    "ParquetFormat",
    "ParsedBlock",
    "VWFormat",
    "label_problems",
    "make_format",
    "parse_number",
    "reject_examples",
]
