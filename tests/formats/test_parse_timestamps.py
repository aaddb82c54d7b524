"""Event times from a CSV or Parquet column: numbers and ISO-8601 read at once, missing or bad times as dead
letters that keep the counts reconciled."""

from __future__ import annotations

import datetime

import numpy as np
import pyarrow as pa
import pytest

from polybeam.formats.csv import CsvFormat
from polybeam.formats.parquet import ParquetFormat
from polybeam.formats.timestamps import parse_timestamps


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
