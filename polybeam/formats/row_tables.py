"""Rows of fields (JSON objects, Avro records, dicts) as an Arrow table, each value typed by itself.

A field's values become one column when they are of one kind (numbers --
booleans among them --, text, bytes, dates and times, lists, ...) and, when
they mix numbers and text, two columns of the field's name, one numeric and
one of text, so that each row's value reads as what it is: a number as a
numeric feature, a text as a category (see
:class:`~polybeam.formats.tables.TableFormat`); a row's text is no missing
number in the numeric column (a null there would be one). The table is the
same whichever rows are read together, so a row reads alike in every block,
file and door (but for a field that is null in every row read together: it
has no type, and gives no feature).
"""

from __future__ import annotations

import datetime
import decimal
import json
import math

import pyarrow as pa


def table_of_records(
    records: list[dict], *, text_columns: tuple[str, ...] = (), number_fields: tuple[str, ...] = ()
) -> pa.Table:
    """An Arrow table of ``records`` (mappings of field to value), each value typed by itself: a field whose
    values are numbers on some records and text on others becomes two columns of its name, one numeric and
    one of text, so that each record's value reads as what it is (see the module docstring). Fields of
    ``text_columns`` holding both are one column of text instead (numbers spelled as JSON spells them).
    Fields of ``number_fields`` (a schema says they may hold numbers) always have a numeric column, so that
    their nulls are missing numbers whichever records are read together.

    >>> table = table_of_records([{"a": 1, "b": "x"}, {"a": "y", "c": None}])
    >>> [(field.name, str(field.type)) for field in table.schema]
    [('a', 'int64'), ('a', 'string'), ('b', 'string'), ('c', 'null')]
    >>> table = table_of_records([{"a": "y", "c": None}], number_fields=("a", "c"))
    >>> [(field.name, str(field.type)) for field in table.schema], table.column(0).to_pylist()
    ([('a', 'int64'), ('a', 'string'), ('c', 'int64')], [0])
    """
    names = list(dict.fromkeys(name for record in records for name in record))
    arrays, fields = [], []
    for name in names:
        values = [record.get(name) for record in records]
        kinds = {_value_kind(value) for value in values} - {"null"}
        if name in number_fields and not kinds & {"number", "boolean"}:
            kinds.add("number")
        if len(kinds) <= 1 or kinds == {"number", "boolean"}:
            arrays.append(_array(values, kinds))
            fields.append(name)
        elif name in text_columns and not kinds & {"nested", "bytes", "temporal"}:
            arrays.append(pa.array([None if value is None else _spelled(value) for value in values], pa.string()))
            fields.append(name)
        else:
            for kind in sorted(kinds):  # ("boolean" and "number" together: numbers)
                if kind == "boolean" and "number" in kinds:
                    continue
                chosen = {"number", "boolean"} if kind == "number" else {kind}
                arrays.append(_array(_part(values, chosen), chosen & kinds))
                fields.append(name)
    if not arrays:
        return pa.table({"__rows__": pa.nulls(len(records))}).drop_columns(["__rows__"])
    return pa.Table.from_arrays(arrays, names=fields)


def _part(values: list, chosen: set) -> list:
    """The values of the kinds ``chosen`` of a field that holds several kinds. In the numeric part, a value of
    another kind is 0 (no feature), not null: a null there would be a missing number, which that row read
    without the others has not.

    >>> _part([1.5, "red", None, True], {"number", "boolean"}), _part([True, "red", None], {"boolean"})
    ([1.5, 0, None, True], [True, False, None])
    >>> _part([1.5, "red", None], {"text"})
    [None, 'red', None]
    """
    other = 0 if "number" in chosen else (False if "boolean" in chosen else None)
    return [value if value is None or _value_kind(value) in chosen else other for value in values]


def _value_kind(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float, decimal.Decimal)):
        return "number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, (bytes, bytearray)):
        return "bytes"
    if isinstance(value, (datetime.date, datetime.time)):  # (datetimes are dates)
        return "temporal"
    return "nested"


def _array(values: list, kinds: set) -> pa.Array:
    """One column of values of one kind, typed as Arrow's JSON reader types them (integers while every
    number is one that fits, else doubles)."""
    if not kinds:
        return pa.nulls(len(values))
    if kinds == {"boolean"}:
        return pa.array(values, pa.bool_())
    if "number" in kinds:
        numbers = [None if value is None else (int(value) if isinstance(value, bool) else value) for value in values]
        whole = all(isinstance(value, int) and -(2**63) <= value < 2**63 for value in numbers if value is not None)
        if whole:
            return pa.array(numbers, pa.int64())
        return pa.array([None if value is None else _as_double(value) for value in numbers], pa.float64())
    if kinds == {"temporal"}:
        try:
            return pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # (dates with times, naive with aware): as their text
            return pa.array([None if value is None else value.isoformat() for value in values], pa.string())
    if kinds == {"text"}:
        return pa.array(values, pa.string())
    if kinds == {"bytes"}:
        return pa.array([None if value is None else bytes(value) for value in values], pa.binary())
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):  # lists of mixed things: as their JSON text
        return pa.array([None if value is None else json.dumps(value) for value in values], pa.string())


def _as_double(value) -> float:
    try:
        return float(value)
    except OverflowError:  # an integer beyond a double: infinite, which the reader flags
        return math.inf if value > 0 else -math.inf


def _spelled(value) -> str:
    return value if isinstance(value, str) else json.dumps(value)
