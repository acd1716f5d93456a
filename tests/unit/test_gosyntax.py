"""Go's parsers and printers the configuration checks restate: results and error texts as Go gives them."""

from __future__ import annotations

import math

import pytest

from kubeletapi.config.gosyntax import atoi, cpuset_error, parse_float32, url_error, url_scheme
from kubeletapi.gofmt import go_duration, go_float, go_quote, go_time

P = pytest.param


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        P("abc", '"abc"', id="plain"),
        P('a"b\\c', '"a\\"b\\\\c"', id="escapes"),
        P("a\nb\t", '"a\\nb\\t"', id="controls"),
        P("\x01", '"\\x01"', id="byte"),
        P("pödś", '"pödś"', id="printable-unicode"),
        P("\u200b", '"\\u200b"', id="zero-width"),
    ],
)
def test_go_quote(text: str, quoted: str) -> None:
    assert go_quote(text) == quoted


@pytest.mark.parametrize(
    ("text", "value"),
    [
        P("10", 10.0, id="int"), P("2.5", 2.5, id="fraction"), P(".5", 0.5, id="leading-dot"),
        P("5.", 5.0, id="trailing-dot"), P("1e2", 100.0, id="exponent"), P("-3", -3.0, id="negative"),
        P("0x1p-2", 0.25, id="hex"), P("+Inf", math.inf, id="inf"), P("0.1", 0.10000000149011612, id="float32"),
    ],
)
def test_parse_float32(text: str, value: float) -> None:
    assert parse_float32(text) == value


@pytest.mark.parametrize(
    ("text", "error"),
    [
        P("abc", 'strconv.ParseFloat: parsing "abc": invalid syntax', id="letters"),
        P("", 'strconv.ParseFloat: parsing "": invalid syntax', id="empty"),
        P(" 1", 'strconv.ParseFloat: parsing " 1": invalid syntax', id="space"),
        P("1_0", 'strconv.ParseFloat: parsing "1_0": invalid syntax', id="underscore"),
        P("0x1", 'strconv.ParseFloat: parsing "0x1": invalid syntax', id="hex-without-exponent"),
        P("1e39", 'strconv.ParseFloat: parsing "1e39": value out of range', id="beyond-float32"),
    ],
)
def test_parse_float32_errors(text: str, error: str) -> None:
    with pytest.raises(ValueError, match="^" + error.replace("(", r"\(") + "$"):
        parse_float32(text)


def test_parse_float32_nan() -> None:
    assert math.isnan(parse_float32("NaN"))


@pytest.mark.parametrize(
    ("text", "error"),
    [
        P("7", None, id="int"), P("+7", None, id="plus"),
        P("x", 'strconv.Atoi: parsing "x": invalid syntax', id="syntax"),
        P("99999999999999999999", 'strconv.Atoi: parsing "99999999999999999999": value out of range', id="range"),
    ],
)
def test_atoi(text: str, error: str | None) -> None:
    if error is None:
        assert atoi(text) == int(text)
    else:
        with pytest.raises(ValueError) as err:
            atoi(text)
        assert str(err.value) == error


@pytest.mark.parametrize(
    ("text", "error"),
    [
        P("", None, id="empty"), P("0-3,8,12-15", None, id="ranges"), P("1-1", None, id="one-wide"),
        P("0-2000000000", None, id="huge-range-costs-nothing"),
        P("a", 'strconv.Atoi: parsing "a": invalid syntax', id="letter"),
        P("1,,2", 'strconv.Atoi: parsing "": invalid syntax', id="empty-element"),
        P("-1", 'strconv.Atoi: parsing "": invalid syntax', id="negative"),
        P("1-2-3", 'strconv.Atoi: parsing "2-3": invalid syntax', id="three-bounds"),
        P("5-2", 'invalid range "5-2" (5 > 2)', id="descending"),
    ],
)
def test_cpuset(text: str, error: str | None) -> None:
    assert cpuset_error(text) == error


@pytest.mark.parametrize(
    ("value", "text"),
    [
        P(0.9, "0.9", id="fraction"), P(2.0, "2", id="whole"), P(600.0, "600", id="hundreds"),
        P(123456.0, "123456", id="six-digits"), P(1e6, "1e+06", id="exponent-6"),
        P(1234567.0, "1.234567e+06", id="exponent-digits"), P(0.0001, "0.0001", id="small"),
        P(0.00001, "1e-05", id="smaller"), P(0.0, "0", id="zero"), P(-1.5, "-1.5", id="negative"),
    ],
)
def test_go_float(value: float, text: str) -> None:
    assert go_float(value) == text


@pytest.mark.parametrize(
    ("raw", "scheme", "error"),
    [
        P("dns://collector:4317", "dns", None, id="dns"), P("unix:///run/otel.sock", "unix", None, id="unix"),
        P("HTTP://x", "http", None, id="scheme-lowered"), P("//x", "", None, id="no-scheme"),
        P("1http://x", "", None, id="digit-first"),
        P("://x", "", 'parse "://x": missing protocol scheme', id="empty-scheme"),
        P("dns://a\nb", "dns", 'parse "dns://a\\nb": net/url: invalid control character in URL', id="control"),
    ],
)
def test_url(raw: str, scheme: str, error: str | None) -> None:
    assert (url_scheme(raw), url_error(raw)) == (scheme, error)


def test_go_time_and_duration() -> None:
    assert [go_duration(s) for s in (0, 0.0005, 0.3, 1.5, 62.25, 3723)] == ["0s", "500µs", "300ms", "1.5s",
                                                                           "1m2.25s", "1h2m3s"]
    assert go_time(None) == "0001-01-01 00:00:00 +0000 UTC"
