"""The input formats by name, for pipelines and command lines.

>>> make_format("libsvm", bits=20)
LibsvmFormat(bits=20, seed=0, labels='real')
>>> sorted(FORMATS)
['csv', 'libsvm', 'parquet', 'vw']
>>> make_format("vw", bitz=20)
Traceback (most recent call last):
...
ValueError: unknown option 'bitz' for format 'vw'; its options are bits, seed, labels, feature_names
"""

from __future__ import annotations

import dataclasses

from polybeam.learners.parsing.csv import CsvFormat
from polybeam.learners.parsing.libsvm import LibsvmFormat
from polybeam.learners.parsing.parquet import ParquetFormat
from polybeam.learners.parsing.vw import VWFormat

FORMATS = {
    "libsvm": LibsvmFormat,
    "vw": VWFormat,
    "csv": CsvFormat,
    "parquet": ParquetFormat,
}


def make_format(name: str, **options):
    """The format called ``name``, configured with ``options``.

    Raises ``ValueError`` for an unknown format or option, naming the valid ones.
    """
    try:
        format_class = FORMATS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown input format {name!r}; known formats are {', '.join(sorted(FORMATS))}") from None
    valid = [field.name for field in dataclasses.fields(format_class)]
    for option in options:
        if option not in valid:
            raise ValueError(f"unknown option {option!r} for format {name!r}; its options are {', '.join(valid)}")
    return format_class(**options)
