"""Event times of examples, read from a column of the input (``--timestamp column:NAME``).

A cell is a number of seconds since the epoch (``1762000000``, ``1.762e9``,
``-5.5``) or an ISO-8601 date and time in UTC or with an offset
(``2026-11-01``, ``2026-11-01T06:30:00Z``, ``2026-11-01 06:30:00.25+01:00``).
One numba kernel reads every cell of a block at once, as the parsers read
features: no Python per example. A missing or unreadable time is NaN with a
status saying which, so that the parser makes the record a dead letter.

>>> data = b"1700000000|2026-11-01T06:30:00Z|2026-11-01 07:30:00+01:00|soon|"
>>> spans = np.array([[0, 10], [11, 31], [32, 57], [58, 62], [-1, -1]])
>>> seconds, status = parse_timestamps(np.frombuffer(data, dtype=np.uint8), spans)
>>> seconds[:3].tolist(), status.tolist()
([1700000000.0, 1793514600.0, 1793514600.0], [0, 0, 0, 2, 1])
>>> problem(2, "ts", "soon")
"timestamp column 'ts': not a number of seconds or an ISO-8601 time: 'soon'"
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
def parse_timestamps(data, spans):
    """``(seconds, status)`` of each ``(start, stop)`` span of ``data`` (a uint8 array): seconds since the
    epoch (NaN unless the status is ``TIME_OK``); a span with ``start < 0`` or no text is ``TIME_MISSING``."""
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
        if np.isfinite(value):
            seconds[i] = value
        else:
            status[i] = TIME_BAD
    return seconds, status


def problem(status: int, column: str, cell: str) -> str:
    """Why a record's time made it a dead letter."""
    if status == TIME_MISSING:
        return f"timestamp column {column!r}: missing"
    return f"timestamp column {column!r}: not a number of seconds or an ISO-8601 time: {cell!r}"


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
