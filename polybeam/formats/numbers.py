"""Decimal numbers from raw bytes, in numba, for the block parsers.

The text parsers scan whole blocks of bytes inside numba kernels, so they cannot
call Python's ``float()``. This module parses the grammar

    [+-]? (digits [. digits*] | . digits) ([eE] [+-]? digits)?

plus ``nan``, ``inf`` and ``infinity`` in any case, with an optional sign. The
non-finite words parse to NaN / infinity so that the callers' finiteness checks
reject them with a "non-finite" reason rather than a syntax error. Python's
extras (underscores, surrounding whitespace, hexadecimal) are not accepted.

Accuracy
--------
* **Exact** (bit-for-bit equal to Python's ``float()``, i.e. correctly rounded)
  when the significant digits form an integer below ``2**53`` (every number with
  at most 15 significant digits) and the decimal exponent, after moving the
  decimal point to the end of those digits, lies in ``[-22, 22]``: the integer and
  the power of ten are then both exact doubles, and one multiplication or
  division rounds once. This covers the numbers data files are made of
  (``1``, ``0.25``, ``-3.5e-4``, ``12345.678``).
* **Within 1 ulp** otherwise (more than 15 significant digits, exponents far
  from 0, subnormals): the first 19 significant digits are kept as a 64-bit
  integer and multiplied by a double-double approximation of the power of ten
  (about 106 bits), with an error-free product, so the only error of note is
  the final rounding; the result is correctly rounded except very close to a
  halfway case. Digits after the 19th shift the value by less than ``1e-18``
  relative. The tests check this against ``float()`` (at most 2 ulp allowed).
* Overflow gives infinity and underflow gives zero, as ``float()`` does.

Examples
--------
>>> parse_number("2.5e3"), parse_number(b"-.5"), parse_number("1.")
(2500.0, -0.5, 1.0)
>>> parse_number("0.1") == 0.1, parse_number("1.7976931348623157e308") == 1.7976931348623157e308
(True, True)
>>> parse_number("-Infinity"), parse_number("NaN")
(-inf, nan)
>>> parse_number("1e")
Traceback (most recent call last):
...
ValueError: not a number: '1e'
"""

from __future__ import annotations

import math
from fractions import Fraction

import numba
import numpy as np

from polybeam.formats.pointers import byte_pointer
from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernels below)

# Powers of ten an integer below 2**53 can be scaled by with one exact rounding.
_EXACT_POWERS = np.array([10.0**k for k in range(23)], dtype=np.float64)
_EXACT_LIMIT = 1 << 53

# Decimal exponents outside this window overflow to inf (a mantissa >= 1 times
# 10**310) or underflow to 0 (a 19-digit mantissa times 10**-344 is below half of
# the smallest subnormal) whatever the mantissa is.
_MIN_EXP10 = -343
_MAX_EXP10 = 309
# Exponent digits beyond this are only counted, never accumulated: the value is
# already infinite or zero and the integer must not overflow.
_EXPONENT_CLAMP = 100_000
_MAX_MANTISSA_DIGITS = 19


def _power_table() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """10**e = (hi + lo) * 2**shift with hi in [1, 2), exact to about 106 bits.

    Computed once at import with exact rational arithmetic (a few milliseconds).
    """
    his, los, shifts = [], [], []
    for exponent in range(_MIN_EXP10, _MAX_EXP10 + 1):
        if exponent >= 0:
            power = 10**exponent
            shift = power.bit_length() - 1
            scaled = Fraction(power, 1 << shift)
        else:
            divisor = 10 ** (-exponent)
            # 2**(k-1) < divisor < 2**k for exponent < 0, so 2**-k < 10**exponent < 2**(1-k).
            k = divisor.bit_length()
            shift = -k
            scaled = Fraction(1 << k, divisor)
        hi = float(scaled)  # Fraction -> float rounds correctly
        lo = float(scaled - Fraction(hi))
        his.append(hi)
        los.append(lo)
        shifts.append(shift)
    return np.array(his), np.array(los), np.array(shifts, dtype=np.int64)


_POW10_HI, _POW10_LO, _POW10_SHIFT = _power_table()


@numba.njit(cache=True)
def _is_digit(c):
    return 48 <= c <= 57


@numba.njit(cache=True)
def _lower(c):
    # ASCII letters only: OR-ing 0x20 folds 'A'-'Z' onto 'a'-'z'.
    return c | 32


@numba.njit(cache=True)
def _two_product_error(a, b, product):
    """The rounding error of ``product = a * b`` (Dekker's algorithm, no FMA needed)."""
    split = 134217729.0  # 2**27 + 1 splits a double into two 26-bit halves
    t = split * a
    a_hi = t - (t - a)
    a_lo = a - a_hi
    t = split * b
    b_hi = t - (t - b)
    b_lo = b - b_hi
    return ((a_hi * b_hi - product) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo


@numba.njit(cache=True)
def _scale_slow(mantissa, exp10):
    """``mantissa * 10**exp10`` for a non-zero 64-bit mantissa, within 1 ulp."""
    if exp10 > _MAX_EXP10:
        return np.inf
    if exp10 < _MIN_EXP10:
        return 0.0
    row = exp10 - _MIN_EXP10
    hi = _POW10_HI[row]
    lo = _POW10_LO[row]
    # Split the mantissa into a part a double holds exactly and a small remainder.
    if mantissa < np.uint64(_EXACT_LIMIT):
        top = np.float64(mantissa)
        bottom = 0.0
    else:
        top = np.float64((mantissa >> np.uint64(11)) << np.uint64(11))
        bottom = np.float64(mantissa & np.uint64(2047))
    product = top * hi
    rest = _two_product_error(top, hi, product) + top * lo + bottom * hi + bottom * lo
    # hi is in [1, 2), so nothing here can overflow or underflow; ldexp applies
    # the binary exponent last (exactly, unless the result is subnormal or inf).
    return math.ldexp(product + rest, _POW10_SHIFT[row])


@numba.njit(cache=True)
def scan_number(data, start, stop):
    """Parse the longest number at ``data[start:stop]`` (a uint8 array).

    Returns ``(value, end)``: the value and the index just past the number, or
    ``(0.0, start)`` when no number starts there. The caller checks that
    ``end`` lands on a separator. An exponent marker without digits (``1e``,
    ``1e+``) is not consumed, so ``end`` stops at the ``e``.
    """
    pos = start
    negative = False
    if pos < stop and (data[pos] == 43 or data[pos] == 45):  # '+' / '-'
        negative = data[pos] == 45
        pos += 1
    mantissa = np.uint64(0)
    kept_digits = 0
    exp10 = 0
    any_digit = False
    while pos < stop and _is_digit(data[pos]):
        any_digit = True
        if kept_digits < _MAX_MANTISSA_DIGITS:
            mantissa = mantissa * np.uint64(10) + np.uint64(data[pos] - 48)
            if mantissa != 0:
                kept_digits += 1  # leading zeros are not significant
        else:
            exp10 += 1
        pos += 1
    if pos < stop and data[pos] == 46:  # '.'
        fraction_start = pos + 1
        pos = fraction_start
        while pos < stop and _is_digit(data[pos]):
            if kept_digits < _MAX_MANTISSA_DIGITS:
                mantissa = mantissa * np.uint64(10) + np.uint64(data[pos] - 48)
                exp10 -= 1
                if mantissa != 0:
                    kept_digits += 1
            pos += 1
        if pos > fraction_start:
            any_digit = True
        elif not any_digit:
            return 0.0, start  # a lone '.'
    if not any_digit:
        return _scan_word(data, pos, stop, negative, start)
    if pos < stop and _lower(data[pos]) == 101:  # 'e' / 'E'
        marker = pos
        pos += 1
        exponent_negative = False
        if pos < stop and (data[pos] == 43 or data[pos] == 45):
            exponent_negative = data[pos] == 45
            pos += 1
        if pos < stop and _is_digit(data[pos]):
            exponent = 0
            while pos < stop and _is_digit(data[pos]):
                if exponent < _EXPONENT_CLAMP:
                    exponent = exponent * 10 + (data[pos] - 48)
                pos += 1
            exp10 += -exponent if exponent_negative else exponent
        else:
            pos = marker
    if mantissa == 0:
        value = 0.0
    elif mantissa < np.uint64(_EXACT_LIMIT) and -22 <= exp10 <= 22:
        # Clinger's fast path: both operands are exact, so one rounding.
        if exp10 >= 0:
            value = np.float64(mantissa) * _EXACT_POWERS[exp10]
        else:
            value = np.float64(mantissa) / _EXACT_POWERS[-exp10]
    else:
        value = _scale_slow(mantissa, exp10)
    return (-value if negative else value), pos


@numba.njit(cache=True)
def _matches_word(data, pos, stop, word):
    if stop - pos < len(word):
        return False
    for i in range(len(word)):
        if _lower(data[pos + i]) != word[i]:
            return False
    return True


_NAN = np.frombuffer(b"nan", dtype=np.uint8).copy()
_INF = np.frombuffer(b"inf", dtype=np.uint8).copy()
_INFINITY = np.frombuffer(b"infinity", dtype=np.uint8).copy()


@numba.njit(cache=True)
def _scan_word(data, pos, stop, negative, start):
    """``nan`` / ``inf`` / ``infinity`` (any case) at ``pos``, after the sign."""
    if _matches_word(data, pos, stop, _NAN):
        return np.nan, pos + 3
    if _matches_word(data, pos, stop, _INFINITY):
        return (-np.inf if negative else np.inf), pos + 8
    if _matches_word(data, pos, stop, _INF):
        return (-np.inf if negative else np.inf), pos + 3
    return 0.0, start


@numba.njit(cache=True)
def parse_float(data, start, stop):
    """Parse all of ``data[start:stop]`` (``data`` a uint8 array) as a number: ``(ok, value)``."""
    # Through a raw pointer, like the kernels, so scan_number compiles once.
    value, end = scan_number(byte_pointer(data), start, stop)
    return end == stop and end > start, value


def parse_number(text: str | bytes) -> float:
    """Parse one number exactly as the block parsers do (for tests and docs).

    Raises ``ValueError`` when ``text`` is not entirely a number.

    >>> parse_number("-12.5e-1")
    -1.25
    """
    raw = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    ok, value = parse_float(np.frombuffer(raw, dtype=np.uint8), 0, len(raw))
    if not ok:
        raise ValueError(f"not a number: {text!r}")
    return float(value)
