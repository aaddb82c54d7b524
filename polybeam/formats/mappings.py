"""Examples given as mappings of feature to value (``{"age": 41, "colour": "red", 7: 1.0}``), hashed as the readers hash.

This is how a RunInference caller or a Python user hands polybeam examples
that never were lines of a file. Keys and values mean what they mean in the
formats, so a model trained on files scores the mappings the same way:

- an ``int`` key is a LIBSVM (or Parquet) feature index;
- a ``str`` key is a feature name: a CSV column or a VW feature of the default
  namespace; ``"ns^name"`` is VW feature ``name`` of namespace ``ns``;
- a ``str`` value is a category, as a CSV categorical column's cell
  (``{"colour": "red"}`` is the feature ``colour=red`` with value 1);
- other values are numbers (``bool`` and NumPy's included);
- a missing value (``None``, NaN, pandas' ``NA`` and ``NaT``) is a missing
  number, as an empty cell of a numeric CSV column: the feature with the
  value NaN, which the learners fill with the feature's mean over the
  training examples. A row of a table with nullable columns (a Beam ``Row``,
  a JSON record, a pandas row) is thus an example as it is;
- an empty or blank category is no feature, as an empty cell of a
  categorical CSV column (so a categorical column's missing value is ``""``);
  a key left out and a zero are absent features.

>>> from polybeam.formats.csv import CsvFormat
>>> batch = batch_from_mappings([{"x1": 2.0, "c": "red"}, {"x1": 0.5}], bits=18, seed=3)
>>> parsed = CsvFormat(labels="any", bits=18, seed=3, categorical_columns=("c",)).parse(b"y,x1,c\\n0,2,red\\n").batch
>>> batch.indices[:2].tolist() == parsed.indices.tolist(), batch.values.tolist()
(True, [2.0, 1.0, 0.5])
>>> missing = batch_from_mappings([{"x1": None, "c": ""}, {"x1": float("nan"), "c": "red"}, {"x1": 0}], bits=18)
>>> missing.indptr.tolist(), missing.values.tolist()
([0, 1, 3, 3], [nan, nan, 1.0])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from numbers import Real

import numpy as np

from polybeam.learners.batch import INDEX_DTYPE, ExampleBatch
from polybeam.learners.hashing import feature_slot, hash_string, hash_token, libsvm_slot, slot_mask
from polybeam.learners.values import value_problem

# pandas' missing values, known by their type's name (pandas is not imported here).
_MISSING_TYPES = ("NAType", "NaTType")


class MappingError(ValueError):
    """An example mapping that cannot be a polybeam example."""


class SlotTable:
    """Remembers each key's slot (and each category's), so that repeated names are hashed once.

    >>> table = SlotTable(bits=18, seed=0)
    >>> table.slot(5), table.slot("a") == table.slot("a")
    (5, True)
    """

    def __init__(self, *, bits: int, seed: int):
        self.bits = bits
        self.seed = seed
        self._slots: dict = {}

    def slot(self, key, category: str | None = None) -> int:
        entry = (key, category)
        slot = self._slots.get(entry)
        if slot is None:
            slot = self._slots[entry] = self._hash(key, category)
        return slot

    def _hash(self, key, category: str | None) -> int:
        if isinstance(key, bool) or not isinstance(key, (int, np.integer, str)):
            raise MappingError(f"a feature key is a LIBSVM index (int) or a name (str), not {key!r}")
        if category is not None:
            column = str(key)
            text = np.frombuffer(category.encode("utf-8"), dtype=np.uint8)
            return int(hash_token(text, 0, len(text), hash_string(column, self.seed)) & slot_mask(self.bits))
        if isinstance(key, str):
            namespace, caret, name = key.partition("^")
            if not caret:
                namespace, name = "", key
            return feature_slot(name, self.bits, namespace, self.seed)
        if key < 0:
            raise MappingError(f"a LIBSVM index is >= 0, got {key}")
        return libsvm_slot(int(key), self.bits, self.seed)


def is_missing(value) -> bool:
    """Whether a mapping's value is a missing one: None, NaN, pandas' ``NA`` or ``NaT``.

    >>> [is_missing(value) for value in (None, float("nan"), 0.0, "")]
    [True, True, False, False]
    """
    if value is None or type(value).__name__ in _MISSING_TYPES:
        return True
    return isinstance(value, (float, np.floating)) and value != value


def as_category(value) -> str:
    """A categorical column's value as a mapping holds it: text as it is, a number as its CSV cell spells it
    (``10115``), a missing value as ``""``, no category.

    >>> as_category(10115), as_category("red"), as_category(None), as_category(float("nan"))
    ('10115', 'red', '', '')
    """
    if isinstance(value, str):
        return value
    return "" if is_missing(value) else str(value)


def batch_from_mappings(
    examples: Iterable[Mapping], *, bits: int, seed: int = 0, table: SlotTable | None = None
) -> ExampleBatch:
    """One ExampleBatch of the mappings (labels NaN: they are to be predicted)."""
    table = table or SlotTable(bits=bits, seed=seed)
    indptr = [0]
    slots: list[int] = []
    values: list[float] = []
    for position, example in enumerate(examples):
        if not isinstance(example, Mapping):
            raise MappingError(f"example {position} is a {type(example).__name__}, not a mapping of feature to value")
        for key, value in example.items():
            if value is None or type(value).__name__ in _MISSING_TYPES:  # (NaN: a number, below)
                slots.append(table.slot(key))  # a missing number
                values.append(np.nan)
                continue
            if isinstance(value, str):
                if value.strip():  # blank: an empty cell (hashing would ignore the blanks anyway)
                    slots.append(table.slot(key, value))
                    values.append(1.0)
                continue
            if not isinstance(value, (Real, np.bool_)):  # (True and False are 1 and 0)
                raise MappingError(
                    f"example {position}: feature {key!r} has value {value!r}, not a number or a category "
                    "(None or NaN for a missing one)"
                )
            number = float(value)
            if number == number and value_problem(number):  # (NaN: a missing number, kept)
                raise MappingError(f"example {position}: feature {key!r}: {value_problem(number)}")
            if number != 0.0:  # (NaN != 0)
                slots.append(table.slot(key))
                values.append(number)
        indptr.append(len(slots))
    n = len(indptr) - 1
    return ExampleBatch(
        labels=np.full(n, np.nan),
        weights=np.ones(n),
        indptr=np.asarray(indptr, dtype=np.int64),
        indices=np.asarray(slots, dtype=INDEX_DTYPE),
        values=np.asarray(values, dtype=np.float64),
        bits=bits,
    )
