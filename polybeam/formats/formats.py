"""The input formats by name, for pipelines and command lines.

>>> make_format("libsvm", bits=20)
LibsvmFormat(bits=20, seed=0, labels='real', classes=0, label_names=(), zero_based=False)
>>> sorted(FORMATS)
['csv', 'libsvm', 'parquet', 'vw']
>>> make_format("libsvm", bitz=20)
Traceback (most recent call last):
...
ValueError: unknown option 'bitz' for format 'libsvm'; its options are bits, seed, labels, classes, label_names, zero_based
>>> make_format("csv", labels="multiclass", label_names=("cat", "dog")).classes
2
"""

from __future__ import annotations

import dataclasses
import importlib

# Name -> (module, class); a format's module (and e.g. pyarrow for Parquet) is
# imported only when the format is used.
_FORMAT_CLASSES = {
    "libsvm": ("polybeam.formats.libsvm", "LibsvmFormat"),
    "vw": ("polybeam.formats.vw", "VWFormat"),
    "csv": ("polybeam.formats.csv", "CsvFormat"),
    "parquet": ("polybeam.formats.parquet", "ParquetFormat"),
}
FORMATS = tuple(_FORMAT_CLASSES)


def format_class(name: str) -> type:
    """The class of the format called ``name``."""
    try:
        module, attribute = _FORMAT_CLASSES[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown input format {name!r}; known formats are {', '.join(sorted(FORMATS))}") from None
    return getattr(importlib.import_module(module), attribute)


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
