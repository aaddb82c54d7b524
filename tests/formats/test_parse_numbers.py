"""The numba number parser against Python's float()."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from parsing_reference import ulp_distance
from parsing_strategies import PROPERTY_SETTINGS, number_texts, strings

from polybeam.formats.numbers import parse_float, parse_number, scan_number

NUMBER_SETTINGS = settings(PROPERTY_SETTINGS, max_examples=500)


def as_array(text: bytes) -> np.ndarray:
    return np.frombuffer(text, dtype=np.uint8)


@st.composite
def fast_path_texts(draw) -> str:
    """At most 15 significant digits with the decimal exponent in [-22, 22], written many ways."""
    mantissa = draw(st.integers(0, 10**15 - 1))
    exponent = draw(st.integers(-22, 22))
    digits = str(mantissa)
    point = draw(st.integers(0, len(digits)))
    # digits[:point].digits[point:] * 10**shown == mantissa * 10**exponent
    shown = exponent + (len(digits) - point)
    whole, fraction = digits[:point], digits[point:]
    text = draw(st.sampled_from(["", "0", "000"])) + whole
    if fraction or draw(st.booleans()):
        text += "." + fraction
    if not whole and not fraction:
        text = "0" + text
    if shown != 0 or draw(st.booleans()):
        text += draw(st.sampled_from("eE")) + draw(st.sampled_from(["", "+"] if shown >= 0 else [""])) + str(shown)
    return draw(st.sampled_from(["", "-", "+"])) + text


@NUMBER_SETTINGS
@given(fast_path_texts())
def test_fast_path_is_exactly_float(text):
    assert parse_number(text) == float(text)
    assert math.copysign(1, parse_number(text)) == math.copysign(1, float(text))


@NUMBER_SETTINGS
@given(st.floats(allow_nan=False), st.sampled_from(["{!r}", "{:.17g}", "{:.16e}", "{:.25e}", "{:.3g}", "{:.40f}"]))
def test_any_double_within_two_ulps(value, style):
    text = style.format(value)
    assert ulp_distance(parse_number(text), float(text)) <= 2


@NUMBER_SETTINGS
@given(strings("0123456789", min_size=1, max_size=60), st.integers(0, 60), st.integers(-420, 420))
def test_long_and_extreme_numbers_within_two_ulps(digits, point, exponent):
    point = min(point, len(digits))
    text = f"{digits[:point]}.{digits[point:]}e{exponent}"
    assert ulp_distance(parse_number(text), float(text)) <= 2


@NUMBER_SETTINGS
@given(number_texts)
def test_generated_numbers_match_float(text):
    assert ulp_distance(parse_number(text), float(text)) <= 2


@pytest.mark.parametrize(
    "text",
    [
        "0",
        "-0",
        "+0.0",
        "1",
        "1.",
        ".5",
        "-.5",
        "1e5",
        "1E-5",
        "1e+5",
        "00012.5000",
        "9007199254740993",
        "123456789012345678901234567890",
        "0.1",
        "0.3",
        "2.2250738585072014e-308",
        "4.9e-324",
        "5e-324",
        "1.7976931348623157e308",
        "1.7976931348623158e308",
        "1.8e308",
        "1e-400",
        "1e400",
        "1e99999999999999999999",
        "1e-99999999999999999999",
        "0." + "0" * 400 + "1",
        "1" + "0" * 400,
    ],
)
def test_hard_cases(text):
    assert ulp_distance(parse_number(text), float(text)) <= 1


@pytest.mark.parametrize("text", ["nan", "NaN", "-nan", "+NAN"])
def test_nan_words(text):
    assert math.isnan(parse_number(text))


@pytest.mark.parametrize(
    "text, value", [("inf", math.inf), ("-Inf", -math.inf), ("+infinity", math.inf), ("-INFINITY", -math.inf)]
)
def test_infinity_words(text, value):
    assert parse_number(text) == value


@pytest.mark.parametrize(
    "text",
    [
        "",
        ".",
        "-",
        "+",
        "e5",
        ".e5",
        "1e",
        "1e+",
        "1e-",
        "--1",
        "+-1",
        "1.2.3",
        "0x10",
        "1_000",
        " 1",
        "1 ",
        "nan1",
        "infinit",
        "infinityy",
        "in",
        "1,5",
        "١",
    ],
)
def test_rejects_what_is_not_a_number(text):
    with pytest.raises(ValueError, match="not a number"):
        parse_number(text)


def test_scan_stops_where_the_number_ends():
    data = as_array(b"12.5e+x")
    value, end = scan_number(data, 0, len(data))
    assert (value, end) == (12.5, 4)  # the dangling exponent marker is not consumed
    value, end = scan_number(as_array(b"-infinity:"), 0, 10)
    assert (value, end) == (-math.inf, 9)
    assert scan_number(as_array(b"abc"), 0, 3) == (0.0, 0)


def test_parse_float_respects_the_span():
    data = as_array(b"xx3.25yy")
    assert parse_float(data, 2, 6) == (True, 3.25)
    assert parse_float(data, 2, 7)[0] is False
    assert parse_float(data, 2, 2)[0] is False


def test_many_random_numbers():
    """A broad sweep beyond what hypothesis draws: exact on the fast path, within 2 ulps elsewhere."""
    rng = np.random.default_rng(7)
    mantissas = rng.integers(0, 10**15, size=20000)
    exponents = rng.integers(-22, 23, size=20000)
    for mantissa, exponent in zip(mantissas.tolist(), exponents.tolist()):
        text = f"{mantissa}e{exponent}"
        assert parse_number(text) == float(text), text
    doubles = rng.integers(0, 2**63 - 2**52, size=20000, dtype=np.int64).view(np.float64)
    texts = [f"{value:.17g}" for value in doubles.tolist()] + [f"{value:.20e}" for value in doubles[:5000].tolist()]
    parsed = np.array([parse_number(text) for text in texts])
    assert (ulp_distance(parsed, [float(text) for text in texts]) <= 2).all()
