"""Event times from a CSV or Parquet column: numbers and ISO-8601 read at once, missing or bad times as dead
letters that keep the counts reconciled."""

from __future__ import annotations

import datetime

import numpy as np
import pyarrow as pa
import pytest

from polybeam.formats.csv import CsvFormat
from polybeam.formats.parquet import ParquetFormat
from polybeam.formats.timestamps import UNIT_NAMES, parse_timestamps


def _seconds(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@pytest.mark.slow
@pytest.mark.parametrize(
    "cell, expected",
    [
        ("1793491200", 1793491200.0),
        ("-5.5", -5.5),
        ("1.5e3", 1500.0),
        ("2026-11-01", _seconds("2026-11-01T00:00:00Z")),
        ("2026-11-01T06:30:00Z", _seconds("2026-11-01T06:30:00Z")),
        ("2026-11-01 06:30:15.25", _seconds("2026-11-01T06:30:15.25+00:00")),
        ("2026-11-01T06:30+02:00", _seconds("2026-11-01T06:30:00+02:00")),
        ("1969-12-31T23:59:59Z", -1.0),
        ("  2026-11-01T06:30:00Z ", _seconds("2026-11-01T06:30:00Z")),
    ],
)
def test_numbers_and_iso_times(cell, expected):
    data = np.frombuffer(cell.encode(), dtype=np.uint8)
    seconds, status = parse_timestamps(data, np.array([[0, len(data)]]))
    assert status.tolist() == [0] and seconds[0] == pytest.approx(expected)


@pytest.mark.parametrize("cell", ["soon", "2026-13-01", "2026-11-01T25:00", "2026-11-01T06:30:00Q", "1e", "nan", "inf"])
def test_what_is_not_a_time(cell):
    data = np.frombuffer(cell.encode(), dtype=np.uint8)
    assert parse_timestamps(data, np.array([[0, len(data)]]))[1].tolist() == [2]


def test_csv_records_without_a_readable_time_are_dead_letters():
    fmt = CsvFormat(label_column="y", timestamp_column="ts")
    parsed = fmt.parse(b'y,ts,a\n1,100,2\n0,,3\n1,2026-01-01,4\n0,xx,5\n1,"2026-01-02T00:00:00Z",1\n')
    assert parsed.batch.timestamps.tolist() == [
        100.0,
        _seconds("2026-01-01T00:00:00Z"),
        _seconds("2026-01-02T00:00:00Z"),
    ]
    assert [(letter.line, letter.reason) for letter in parsed.dead_letters] == [
        (3, "timestamp column 'ts': missing"),
        (5, "timestamp column 'ts': not a number of seconds or an ISO-8601 time: 'xx'"),
    ]
    assert parsed.records == len(parsed.batch) + len(parsed.dead_letters) + parsed.skipped
    assert set(parsed.batch.names.values()) == {"a"}  # the time is not a feature


def test_csv_timestamp_column_cannot_have_another_role():
    with pytest.raises(ValueError, match="timestamp column 'y' cannot also be the label"):
        CsvFormat(label_column="y", timestamp_column="y").parse(b"y,a\n1,2\n")


@pytest.mark.parametrize(
    "column",
    [
        pa.array(["2026-11-01T00:00:00Z", None, "bad"]),
        pa.array([1793491200.0, None, float("nan")]),
        pa.array([datetime.datetime(2026, 11, 1), None, None], pa.timestamp("ms")),
    ],
)
def test_parquet_times_of_every_type(column):
    parsed = ParquetFormat(timestamp_column="ts").parse_table(
        pa.table({"label": [1.0, 0.0, 1.0], "ts": column, "x": [1.0, 2.0, 3.0]})
    )
    assert parsed.batch.timestamps.tolist() == [1793491200.0]
    assert [letter.line for letter in parsed.dead_letters] == [2, 3]
    assert parsed.dead_letters[0].reason == "timestamp column 'ts': missing"
    assert parsed.records == len(parsed.batch) + len(parsed.dead_letters)


# Epoch times of 2023-11-14T22:13:20Z in each unit, as Kafka, Java, numpy and Go write them.
IN_UNITS = {"s": "1700000000", "ms": "1700000000000", "us": "1700000000000000", "ns": "1700000000000000000"}


@pytest.mark.parametrize("unit", ["ms", "us", "ns"])
def test_a_time_in_a_finer_unit_read_as_seconds_is_a_dead_letter_naming_its_unit(unit):
    """Epoch milliseconds read as seconds are the year 55,840: the time cannot be a window's (Python's
    datetime ends at 9999), and the reason says which unit to pass. Read in their unit, they are the
    same instant."""
    fmt = CsvFormat(label_column="y", timestamp_column="ts")
    parsed = fmt.parse(f"y,ts,a\n1,{IN_UNITS[unit]},2\n0,1700000000,3\n".encode())
    assert parsed.batch.timestamps.tolist() == [1700000000.0]
    [letter] = parsed.dead_letters
    assert letter.line == 2
    assert letter.reason.endswith(f"it looks like {UNIT_NAMES[unit]}: pass --timestamp-unit {unit}")
    assert letter.reason.startswith(f"timestamp column 'ts': {IN_UNITS[unit]} seconds since the epoch is after")
    in_unit = CsvFormat(label_column="y", timestamp_column="ts", timestamp_unit=unit)
    assert in_unit.parse(f"y,ts,a\n1,{IN_UNITS[unit]},2\n".encode()).batch.timestamps.tolist() == [1700000000.0]


def test_times_outside_the_years_1_to_9999_are_dead_letters():
    fmt = CsvFormat(label_column="y", timestamp_column="ts")
    parsed = fmt.parse(b"y,ts,a\n1,-1e12,2\n0,0000-06-01,3\n1,253402300799,4\n0,1e300,5\n")
    assert parsed.batch.timestamps.tolist() == [253402300799.0]  # 9999-12-31T23:59:59Z: the last one
    assert [letter.reason for letter in parsed.dead_letters] == [
        "timestamp column 'ts': -1e12 seconds since the epoch is before the year 1",
        "timestamp column 'ts': 0000-06-01 is outside the years 1 to 9999",
        "timestamp column 'ts': 1e300 seconds since the epoch is after the year 9999",
    ]


@pytest.mark.parametrize("column", [pa.array([1700000000000, 1700000000000]), pa.array(["1700000000000"] * 2)])
def test_parquet_times_in_milliseconds(column):
    table = pa.table({"label": [1.0, 0.0], "ts": column, "x": [1.0, 2.0]})
    as_seconds = ParquetFormat(timestamp_column="ts").parse_table(table)
    assert len(as_seconds.batch) == 0
    assert as_seconds.dead_letters[0].reason.endswith("it looks like milliseconds: pass --timestamp-unit ms")
    in_ms = ParquetFormat(timestamp_column="ts", timestamp_unit="ms").parse_table(table)
    assert in_ms.batch.timestamps.tolist() == [1700000000.0, 1700000000.0]


def test_an_unknown_unit_is_refused():
    with pytest.raises(ValueError, match="timestamp_unit must be one of s, ms, us, ns, got 'm'"):
        CsvFormat(label_column="y", timestamp_column="ts", timestamp_unit="m")
