"""Event-time windows of examples: fixed and sliding windows, and how a batch splits into them.

Times are integer microseconds since the epoch, as Beam's timestamps are, so the
windows here are exactly Beam's ``FixedWindows`` / ``SlidingWindows`` (size,
period and offset in seconds; a window is ``[start, start + size)``, starts at
``offset + k * period``).

A batch of examples with timestamps splits into **panes**: runs of time inside
which every instant belongs to the same windows. A pane starts at a window's
start or end, so the pane's start belongs to exactly the windows every example
of the pane belongs to. Emitting each pane's examples as one element stamped
with the pane's start, then letting Beam's own ``WindowInto`` assign windows,
puts every example in exactly the windows that contain its timestamp (for
sliding windows, several), with no Python work per example.

>>> spec = parse_window("sliding:1d,12h")
>>> spec.size, spec.period
(86400.0, 43200.0)
>>> stamps = to_micros(np.array([0.0, 3600.0, 50000.0, 90000.0]))
>>> [(start // 10**6, rows.tolist()) for start, rows in split_by_pane(stamps, spec)]
[(0, [0, 1]), (43200, [2]), (86400, [3])]
>>> [(a // 10**6, b // 10**6) for a, b in spec.windows_of(to_micros(np.array([50000.0])))[0]]
[(0, 86400), (43200, 129600)]
>>> window_name(0, 86400 * 10**6)
'window-19700101T000000Z-19700102T000000Z'
"""

from __future__ import annotations

import dataclasses
import datetime
import re

import numpy as np

MICROS = 1_000_000
# Duration units of --window sizes.
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
WINDOW_KINDS = ("fixed", "sliding")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw]?)")


def parse_duration(text: str) -> float:
    """Seconds of a duration: a number of seconds, or a number with a unit s, m, h, d or w.

    >>> parse_duration("3600"), parse_duration("1.5h"), parse_duration("1d")
    (3600.0, 5400.0, 86400.0)
    >>> parse_duration("ten")
    Traceback (most recent call last):
    ValueError: not a duration: 'ten' (a number of seconds, or a number with a unit s, m, h, d or w: 3600, 1h, 1d)
    """
    match = _DURATION.fullmatch(text.strip())
    seconds = float(match.group(1)) * UNITS[match.group(2) or "s"] if match else 0.0
    if not match or seconds <= 0 or seconds * MICROS != int(seconds * MICROS):
        problem = "not a duration" if not match else "a duration must be positive whole microseconds"
        raise ValueError(
            f"{problem}: {text!r} (a number of seconds, or a number with a unit s, m, h, d or w: 3600, 1h, 1d)"
        )
    return seconds


@dataclasses.dataclass(frozen=True)
class WindowSpec:
    """Fixed (``period == size``) or sliding windows of ``size`` seconds starting every ``period`` seconds."""

    size: float
    period: float
    offset: float = 0.0

    def __post_init__(self):
        if self.size <= 0 or self.period <= 0:
            raise ValueError(f"window size and period must be positive, got {self.size} and {self.period}")
        if self.period > self.size:
            raise ValueError(
                f"a sliding window's period ({self.period:g} s) cannot exceed its size "
                f"({self.size:g} s): examples between windows would belong to none"
            )

    @property
    def kind(self) -> str:
        return "fixed" if self.period == self.size else "sliding"

    def text(self) -> str:
        """The ``--window`` spelling of these windows (``fixed:86400``, ``sliding:86400,3600``)."""
        size = f"{self.size:g}"
        return f"fixed:{size}" if self.kind == "fixed" else f"sliding:{size},{self.period:g}"

    def micros(self) -> tuple[int, int, int]:
        """``(size, period, offset)`` in whole microseconds (the offset within one period)."""
        return (
            round(self.size * MICROS),
            round(self.period * MICROS),
            round(self.offset * MICROS) % round(self.period * MICROS),
        )

    def pane_starts(self, micros: np.ndarray) -> np.ndarray:
        """The start of the pane of each timestamp (int64 microseconds): the last window start or end at or
        before it, whichever is later."""
        size, period, offset = self.micros()
        micros = np.asarray(micros, dtype=np.int64)
        last_start = micros - (micros - offset) % period
        last_end = micros - (micros - offset - size) % period
        return np.maximum(last_start, last_end)

    def windows_of(self, micros: np.ndarray) -> list[list[tuple[int, int]]]:
        """Every window ``(start, end)`` containing each timestamp (for tests and small inputs)."""
        size, period, offset = self.micros()
        windows = []
        for stamp in np.asarray(micros, dtype=np.int64).tolist():
            last = stamp - (stamp - offset) % period
            windows.append(
                [
                    (start, start + size)
                    for start in range(last - ((size - 1) // period) * period, last + 1, period)
                    if stamp < start + size
                ]
            )
        return windows


def parse_window(text: str) -> WindowSpec:
    """The windows of ``--window fixed:SIZE`` or ``--window sliding:SIZE,PERIOD``.

    >>> parse_window("fixed:1d")
    WindowSpec(size=86400.0, period=86400.0, offset=0.0)
    >>> parse_window("hourly")
    Traceback (most recent call last):
    ValueError: --window must be fixed:SIZE or sliding:SIZE,PERIOD (sizes like 3600, 1h, 1d), got 'hourly'
    """
    kind, _, sizes = text.strip().partition(":")
    parts = sizes.split(",") if sizes else []
    if kind not in WINDOW_KINDS or len(parts) != (1 if kind == "fixed" else 2):
        raise ValueError(f"--window must be fixed:SIZE or sliding:SIZE,PERIOD (sizes like 3600, 1h, 1d), got {text!r}")
    try:
        durations = [parse_duration(part) for part in parts]
    except ValueError as error:
        raise ValueError(f"--window {text}: {error}") from None
    try:
        return WindowSpec(durations[0], durations[-1])
    except ValueError as error:
        raise ValueError(f"--window {text}: {error}") from None


@dataclasses.dataclass(frozen=True)
class TimestampSpec:
    """Where each example's event time is: ``--timestamp column:NAME``.

    >>> TimestampSpec.parse("column:ts").column
    'ts'
    >>> TimestampSpec.parse("ts")
    Traceback (most recent call last):
    ValueError: --timestamp must be column:NAME, got 'ts'
    """

    column: str

    @classmethod
    def parse(cls, text: str | TimestampSpec) -> TimestampSpec:
        if isinstance(text, TimestampSpec):
            return text
        kind, _, name = str(text).partition(":")
        if kind != "column" or not name:
            raise ValueError(f"--timestamp must be column:NAME, got {text!r}")
        return cls(name)

    def __str__(self) -> str:
        return f"column:{self.column}"


def to_micros(seconds: np.ndarray) -> np.ndarray:
    """Seconds since the epoch (float) as Beam's integer microseconds (rounded down, as Beam rounds)."""
    return np.floor(np.asarray(seconds, dtype=np.float64) * MICROS).astype(np.int64)


def split_by_pane(micros: np.ndarray, spec: WindowSpec) -> list[tuple[int, np.ndarray]]:
    """``(pane start, rows)`` for every pane the timestamps fall in, panes in time order, rows in input order."""
    starts = spec.pane_starts(micros)
    if len(starts) and (starts == starts[0]).all():
        return [(int(starts[0]), np.arange(len(starts)))]
    order = np.argsort(starts, kind="stable")
    bounds = np.flatnonzero(np.diff(starts[order])) + 1
    return [(int(starts[rows[0]]), rows) for rows in np.split(order, bounds)]


def iso_utc(micros: int) -> str:
    """A time (microseconds since the epoch) in ISO-8601 UTC, whole seconds unless it has a fraction.

    >>> iso_utc(0), iso_utc(1_500_000)
    ('1970-01-01T00:00:00Z', '1970-01-01T00:00:01.500000Z')
    """
    moment = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(microseconds=micros)
    return moment.strftime("%Y-%m-%dT%H:%M:%S" + (".%f" if micros % MICROS else "") + "Z")


def window_name(start: int, end: int) -> str:
    """The name of the window ``[start, end)`` (microseconds): its bounds in compact UTC ISO form."""
    return "window-" + "-".join(iso_utc(moment).replace("-", "").replace(":", "") for moment in (start, end))


def window_record(start: int, end: int) -> dict:
    """What a model's metadata says of its window: ``{"start": ISO, "end": ISO}``, plus the microseconds."""
    return {"start": iso_utc(start), "end": iso_utc(end), "start_micros": int(start), "end_micros": int(end)}
