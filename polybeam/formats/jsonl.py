"""JSON Lines: one JSON object per line, its fields read as an Arrow table's columns.

Each line holds one object whose fields are the columns of
:class:`~polybeam.formats.tables.TableFormat` -- the same options, layouts and
rules as Parquet and Avro, and the same as rows of dicts given to
RunInference:

* **values are typed by JSON**: a number (or ``true``/``false``) is a numeric
  feature named after its field, a string is a category (``field=value``);
  ``null`` or a field left out is a missing number (the value NaN, which the
  learners fill with the feature's mean) in a field of ``number_columns``
  (``polybeam train`` and ``ReadExamples`` record there the fields that hold
  numbers in the first lines of the input) or ``feature_columns``, and no
  feature in others: a null has no type of its own, and a line must read
  alike whichever lines share its block; a field of ``categorical_columns``
  makes numbers categories too, spelled as a CSV file spells them. A field holding numbers on some lines and strings on others
  gives each line what its own value is, whichever block the line is in.
* **sparse lists**: an ``indices`` list of integers (and a ``values`` list of
  numbers) holds a line's numbered features, as in LIBSVM.
* a field left out of a line is missing there: a block whose lines all leave
  out the label holds labels that are all missing, never an error.

Blank lines and lines whose first non-blank character is ``#`` are skipped,
as in every text format. A line that is not a JSON object (invalid JSON,
an array, two objects, a field given twice) is a dead letter saying why, with
its line number and byte offset; so is a line whose values cannot be an
example (a NaN, a missing label, an unknown class).

Blocks are parsed by Arrow's JSON reader (C++, no Python per line); only a
block holding a bad line or a field of mixed types is read line by line.

Examples
--------
>>> fmt = JsonLinesFormat(label_column="y")
>>> parsed = fmt.parse(b'{"y": 1, "age": 30, "city": "Paris"}\\n\\n{"y": 0, "age": 0}\\n{"y": 1, "age": [}\\n')
>>> parsed.records, parsed.skipped, parsed.batch.labels.tolist(), parsed.batch.row_ids.tolist()
(4, 1, [1.0, 0.0], [0, 38])
>>> sorted(parsed.batch.names.values())
['age', 'city=Paris']
>>> letter = parsed.dead_letters[0]
>>> letter.line, letter.offset, letter.reason
(4, 57, 'not valid JSON: Expecting value: line 1 column 18 (char 17)')
>>> mixed = fmt.parse(b'{"y": 1, "zip": 10115}\\n{"y": 0, "zip": "10115-B"}\\n')
>>> sorted(mixed.batch.names.values())
['zip', 'zip=10115-B']
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import ClassVar

import numba
import numpy as np
import pyarrow as pa

from polybeam.formats.records import DeadLetter, ParsedBlock
from polybeam.formats.row_tables import table_of_records
from polybeam.formats.tables import TableFormat
from polybeam.formats.text import LineBlock, as_bytes_array, check_position, is_skippable, nul_positions, nul_reason
from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernels below)


@dataclass(frozen=True)
class JsonLinesFormat(TableFormat):
    """Parse JSON Lines (see :class:`~polybeam.formats.tables.TableFormat` for the settings)."""

    name: ClassVar[str] = "jsonl"
    header_lines: ClassVar[int] = 0
    # A line may leave any field out: a column no line of a block has is missing there, not an error.
    partial_rows: ClassVar[bool] = True

    def parse(
        self,
        data: bytes,
        *,
        source: str = "<memory>",
        offset: int = 0,
        first_line: int | None = 1,
        header: bytes | None = None,
    ) -> ParsedBlock:
        """Parse a block of complete lines starting at byte ``offset`` (line ``first_line``) of ``source``."""
        return self.parse_lines(data, source=source, offset=offset, first_line=first_line)

    def parse_lines(
        self,
        data: bytes,
        *,
        source: str = "<memory>",
        offset: int = 0,
        first_line: int | None = 1,
        parse_table=None,
    ) -> ParsedBlock:
        """Parse a block as :meth:`parse` does, the table of its objects parsed by ``parse_table(table, *,
        source, first_row)`` (default: this format's), e.g. held against a model's columns."""
        check_position(offset, first_line)
        block = LineBlock.scan(data, source=source, offset=offset, first_line=first_line)
        lines, skipped, letters = _record_lines(block)
        table, lines, bad = self._table(block, lines)
        letters += bad
        parse_table = self.parse_table if parse_table is None else parse_table
        parsed = parse_table(self.with_absent_columns(table), source=source, first_row=0)
        # Rows back to lines: ids become byte offsets (as every text format's), letters carry their line.
        row_ids = block.offset + block.starts[lines[parsed.batch.row_ids]] if len(lines) else parsed.batch.row_ids
        batch = replace(parsed.batch, row_ids=np.asarray(row_ids, dtype=np.int64))
        for letter in parsed.dead_letters:
            line = int(lines[letter.offset])
            letters.append(block.dead_letter(line, letter.reason, refused=letter.refused))
        letters.sort(key=lambda letter: letter.offset)
        return ParsedBlock(batch=batch, dead_letters=letters, records=block.records, skipped=skipped)

    def label_texts(self, data: bytes, header: bytes | None = None) -> list[str]:
        """The labels of a block's lines as text (missing ones left out), for a launcher's sample."""
        return self.table_label_texts(self.sample_table(data))

    def sample_table(self, data: bytes) -> pa.Table:
        """The table of the objects of a block's lines (lines holding none left out)."""
        block = LineBlock.scan(data, source="<sample>", offset=0, first_line=1)
        lines, _, _ = _record_lines(block)
        return self._table(block, lines)[0]

    def _table(self, block: LineBlock, lines: np.ndarray) -> tuple[pa.Table, np.ndarray, list[DeadLetter]]:
        """The table of the objects on ``lines``, the lines its rows come from, and the dead letters of the
        lines that hold no object. Arrow's reader takes the whole block; a block it refuses (a bad line, a
        field of mixed types) is read line by line."""
        # (the block itself when every line holds a record: no copy per line)
        every = len(lines) == block.records
        payload = block.data if every else b"\n".join(block.raw(int(line)) for line in lines)
        table = _arrow_json(payload) if len(lines) else pa.table({})
        if table is not None and table.num_rows == len(lines):
            return table, lines, []
        rows, kept, letters = [], [], []
        for line in lines:
            record, problem = _json_object(block.raw(int(line)))
            if problem is not None:
                letters.append(block.dead_letter(int(line), problem))
                continue
            rows.append(record)
            kept.append(line)
        return table_of_records(rows, text_columns=self._text_roles()), np.asarray(kept, dtype=np.int64), letters

    def _text_roles(self) -> tuple[str, ...]:
        """Columns whose mixed values are read as text: the roles that are never numeric features."""
        roles = (self.label_column, self.weight_column, self.key_column, self.id_column, self.timestamp_column)
        return tuple(role for role in roles if role is not None)


def _record_lines(block: LineBlock) -> tuple[np.ndarray, int, list[DeadLetter]]:
    """The lines of ``block`` that hold records, the number skipped (blank, comments), and dead letters for
    lines holding a NUL byte."""
    skippable = _skippable(as_bytes_array(block.data), block.starts, block.stops)
    nuls = nul_positions(block)
    letters = []
    if nuls is not None:
        damaged = nuls >= 0
        letters = [block.dead_letter(int(line), nul_reason(nuls[line])) for line in np.flatnonzero(damaged)]
        skippable &= ~damaged
        return np.flatnonzero(~skippable & ~damaged), int(np.count_nonzero(skippable)), letters
    return np.flatnonzero(~skippable), int(np.count_nonzero(skippable)), letters


@numba.njit(cache=True)
def _skippable(data, starts, stops):
    skipped = np.zeros(len(starts), dtype=np.bool_)
    for line in range(len(starts)):
        skipped[line] = is_skippable(data, starts[line], stops[line])
    return skipped


def _arrow_json(payload: bytes) -> pa.Table | None:
    """The objects of ``payload`` read by Arrow (None: Arrow refuses it). Text Arrow took for dates stays
    text: a JSON string is a category, whatever it spells."""
    import pyarrow.json as pj

    try:
        table = pj.read_json(pa.py_buffer(payload))
        dated = [field.name for field in table.schema if pa.types.is_temporal(field.type)]
        if dated:
            schema = pa.schema([pa.field(name, pa.string()) for name in dated])
            options = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="infer")
            table = pj.read_json(pa.py_buffer(payload), parse_options=options)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if table.num_columns != len(set(table.column_names)):
        return None
    return table


def _json_object(raw: bytes) -> tuple[dict | None, str | None]:
    """A line's object, or why it holds none."""

    def unique(pairs):
        record = {}
        for name, value in pairs:
            if name in record:
                raise ValueError(f"field {name!r} appears twice")
            record[name] = value
        return record

    def not_json(constant):
        raise ValueError(f"{constant} is no JSON value")

    try:
        record = json.loads(raw, object_pairs_hook=unique, parse_constant=not_json)
    except UnicodeDecodeError:
        return None, "not valid JSON: not UTF-8 text"
    except ValueError as error:  # (json.JSONDecodeError is one)
        text = str(error)
        return None, text if text.startswith("field ") else f"not valid JSON: {text}"
    except RecursionError:
        return None, "not valid JSON: nested too deeply"
    if not isinstance(record, dict):
        return None, f"not a JSON object but {_kind(record)}"
    return record, None


def _kind(value) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    return "a number" if not isinstance(value, bool) else "a boolean"
