"""Event times of examples, read from a column of the input (``--timestamp column:NAME``).

A cell is a number since the epoch (``1762000000``, ``1.762e9``, ``-5.5``), of
seconds unless the column's unit says otherwise (``--timestamp-unit ms``,
``us``, ``ns``: Kafka and Java write milliseconds), or an ISO-8601 date and
time in UTC or with an offset (``2026-11-01``, ``2026-11-01T06:30:00Z``,
``2026-11-01 06:30:00.25+01:00``). One numba kernel reads every cell of a
block at once, as the parsers read features: no Python per example. A
missing or unreadable time is NaN with a status saying which, so that the
parser makes the record a dead letter; so is a time outside the years 1 to
9999 (what a window's name can say), whose reason names the unit its number
looks like: epoch milliseconds read as seconds land in the year 55,000.

>>> data = b"1700000000|2026-11-01T06:30:00Z|2026-11-01 07:30:00+01:00|soon|"
>>> spans = np.array([[0, 10], [11, 31], [32, 57], [58, 62], [-1, -1]])
>>> seconds, status = parse_timestamps(np.frombuffer(data, dtype=np.uint8), spans)
>>> seconds[:3].tolist(), status.tolist()
([1700000000.0, 1793514600.0, 1793514600.0], [0, 0, 0, 2, 1])
>>> problem(2, "ts", "soon")
"timestamp column 'ts': not a number of seconds or an ISO-8601 time: 'soon'"
>>> parse_timestamps(np.frombuffer(b"1700000000000", dtype=np.uint8), np.array([[0, 13]]))[1].tolist()
[3]
>>> problem(3, "ts", "1700000000000")
"timestamp column 'ts': 1700000000000 seconds since the epoch is after the year 9999; it looks like milliseconds: pass --timestamp-unit ms"
>>> parse_timestamps(np.frombuffer(b"1700000000000", dtype=np.uint8), np.array([[0, 13]]), 1e3)[0].tolist()
[1700000000.0]
"""

from __future__ import annotations

import numba
import numpy as np

from polybeam.formats.numbers import scan_number
from polybeam.formats.records import ParsedBlock, reject_examples
from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernels below)

TIME_OK = 0
TIME_MISSING = 1
TIME_BAD = 2
TIME_OUT_OF_RANGE = 3

# Units of numeric times (``--timestamp-unit``): how many of them make a second.
UNITS = {"s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9}
UNIT_NAMES = {"s": "seconds", "ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds"}
# The times a window can be named by (Python's datetime: years 1 to 9999), in seconds since the epoch.
EARLIEST_SECONDS = -62135596800.0  # 0001-01-01T00:00:00Z
LATEST_SECONDS = 253402300800.0  # 10000-01-01T00:00:00Z
# A number is taken to be in a unit when it then falls between 1970 and 2200 (for the hint of a refusal only).
_PLAUSIBLE_SECONDS = (0.0, 7258118400.0)


@numba.njit(cache=True, nogil=True)
def _days_from_civil(year, month, day):
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm)."""
    year -= month <= 2
    era = (year if year >= 0 else year - 399) // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


@numba.njit(cache=True, nogil=True)
def _digits(data, pos, stop, count):
    """The value of ``count`` decimal digits at ``pos`` (-1 if they are not all digits)."""
    if pos + count > stop:
        return -1
    value = 0
    for k in range(pos, pos + count):
        digit = data[k] - 48
        if digit < 0 or digit > 9:
            return -1
        value = value * 10 + digit
    return value


@numba.njit(cache=True, nogil=True)
def _iso_seconds(data, pos, stop):
    """Seconds since the epoch of an ISO-8601 time at ``data[pos:stop]``, NaN if it is not one."""
    year = _digits(data, pos, stop, 4)
    if year < 0 or pos + 10 > stop or data[pos + 4] != 45 or data[pos + 7] != 45:  # '-'
        return np.nan
    month, day = _digits(data, pos + 5, stop, 2), _digits(data, pos + 8, stop, 2)
    if month < 1 or month > 12 or day < 1 or day > 31:
        return np.nan
    seconds = float(_days_from_civil(year, month, day)) * 86400.0
    pos += 10
    if pos < stop and (data[pos] == 84 or data[pos] == 32):  # 'T' or ' '
        hour, minute = _digits(data, pos + 1, stop, 2), _digits(data, pos + 4, stop, 2)
        if hour < 0 or hour > 23 or minute < 0 or minute > 59 or data[pos + 3] != 58:  # ':'
            return np.nan
        seconds += hour * 3600.0 + minute * 60.0
        pos += 6
        if pos < stop and data[pos] == 58:
            second = _digits(data, pos + 1, stop, 2)
            if second < 0 or second > 60:
                return np.nan
            seconds += second
            pos += 3
            if pos < stop and (data[pos] == 46 or data[pos] == 44):  # a fraction: '.' or ','
                scale = 0.1
                pos += 1
                start = pos
                while pos < stop and 48 <= data[pos] <= 57:
                    seconds += (data[pos] - 48) * scale
                    scale /= 10.0
                    pos += 1
                if pos == start:
                    return np.nan
    if pos < stop and data[pos] == 90:  # 'Z'
        pos += 1
    elif pos < stop and (data[pos] == 43 or data[pos] == 45):  # '+HH:MM', '+HHMM', '+HH'
        sign = 1.0 if data[pos] == 43 else -1.0
        hours = _digits(data, pos + 1, stop, 2)
        if hours < 0:
            return np.nan
        pos += 3
        minutes = 0
        if pos < stop and data[pos] == 58:
            pos += 1
        if pos < stop:
            minutes = _digits(data, pos, stop, 2)
            pos += 2
        if minutes < 0 or hours > 23 or minutes > 59:
            return np.nan
        seconds -= sign * (hours * 3600.0 + minutes * 60.0)
    return seconds if pos == stop else np.nan


@numba.njit(cache=True, nogil=True)
def parse_timestamps(data, spans, per_second=1.0):
    """``(seconds, status)`` of each ``(start, stop)`` span of ``data`` (a uint8 array): seconds since the
    epoch (NaN unless the status is ``TIME_OK``); a span with ``start < 0`` or no text is ``TIME_MISSING``, a
    time outside the years 1 to 9999 ``TIME_OUT_OF_RANGE``. Numbers count ``1 / per_second`` seconds
    (``per_second``: 1e3 for milliseconds, see ``UNITS``)."""
    n = len(spans)
    seconds = np.full(n, np.nan)
    status = np.zeros(n, dtype=np.int8)
    for i in range(n):
        start, stop = spans[i, 0], spans[i, 1]
        while start >= 0 and start < stop and (data[start] == 32 or data[start] == 9):
            start += 1
        while start >= 0 and stop > start and (data[stop - 1] == 32 or data[stop - 1] == 9 or data[stop - 1] == 13):
            stop -= 1
        if start < 0 or start >= stop:
            status[i] = TIME_MISSING
            continue
        value, end = scan_number(data, start, stop)
        if end != stop or not np.isfinite(value):
            value = _iso_seconds(data, start, stop)
        else:
            value /= per_second
        if not np.isfinite(value):
            status[i] = TIME_BAD
        elif value < EARLIEST_SECONDS or value >= LATEST_SECONDS:
            status[i] = TIME_OUT_OF_RANGE
        else:
            seconds[i] = value
    return seconds, status


def check_unit(unit: str | None) -> None:
    """Raise ValueError unless ``unit`` is a unit of numeric times (a key of ``UNITS``) or None (seconds)."""
    if unit is not None and unit not in UNITS:
        raise ValueError(f"timestamp_unit must be one of {', '.join(UNITS)}, got {unit!r}")


def out_of_range(seconds: np.ndarray) -> np.ndarray:
    """Where times (seconds since the epoch) fall outside the years 1 to 9999."""
    return (seconds < EARLIEST_SECONDS) | (seconds >= LATEST_SECONDS)


def likely_unit(number: float, unit: str = "s") -> str | None:
    """The unit (of ``UNITS``) that puts ``number``, out of range in ``unit``, between 1970 and 2200; or None.

    >>> likely_unit(1.7e12), likely_unit(1.7e15), likely_unit(1.7e18), likely_unit(1.7e15, "ms"), likely_unit(1e30)
    ('ms', 'us', 'ns', 'us', None)
    """
    for name, per_second in UNITS.items():
        if per_second > UNITS[unit] and _PLAUSIBLE_SECONDS[0] <= number / per_second < _PLAUSIBLE_SECONDS[1]:
            return name
    return None


def problem(status: int, column: str, cell: str, unit: str = "s") -> str:
    """Why a record's time made it a dead letter (``unit``: that of its numbers, a key of ``UNITS``)."""
    if status == TIME_MISSING:
        return f"timestamp column {column!r}: missing"
    if status == TIME_OUT_OF_RANGE:
        return out_of_range_problem(column, cell, unit)
    return f"timestamp column {column!r}: not a number of {UNIT_NAMES[unit]} or an ISO-8601 time: {cell!r}"


def out_of_range_problem(column: str, cell: str, unit: str = "s") -> str:
    """Why a time outside the years 1 to 9999 is a dead letter, with the unit its number looks like."""
    try:
        number = float(cell)
    except ValueError:  # an ISO-8601 time of the year 0, a Parquet timestamp of the year 10000 or later
        return f"timestamp column {column!r}: {cell} is outside the years 1 to 9999"
    when = "before the year 1" if number < 0 else "after the year 9999"
    text = f"timestamp column {column!r}: {cell} {UNIT_NAMES[unit]} since the epoch is {when}"
    guess = likely_unit(number, unit)
    if guess is not None:
        text += f"; it looks like {UNIT_NAMES[guess]}: pass --timestamp-unit {guess}"
    return text


def reject_untimed(parsed: ParsedBlock, problems: dict, raw_of) -> ParsedBlock:
    """``parsed`` with its examples that have no time (NaN) moved to the dead letters, each with its
    problem (``problems``: row id -> reason), dead letters in the order of the records."""
    times = parsed.batch.timestamps
    if times is None or not problems:
        return parsed
    bad = ~np.isfinite(times)
    rows = parsed.batch.row_ids
    count = len(parsed.dead_letters)
    parsed = reject_examples(parsed, bad, lambda example: problems.get(int(rows[example]), "no timestamp"), raw_of)
    if len(parsed.dead_letters) > count:
        parsed.dead_letters.sort(key=lambda letter: letter.offset)
    return parsed
