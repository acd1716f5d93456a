"""Go duration syntax: parsing like time.ParseDuration, formatting like Duration.String()."""

import pytest

from kubeletapi.config.durations import Duration


@pytest.mark.parametrize(
    ("text", "ns", "formatted"),
    [
        pytest.param("0", 0, "0s", id="bare-zero"),
        pytest.param("0s", 0, "0s", id="zero"),
        pytest.param("20s", 20_000_000_000, "20s", id="seconds"),
        pytest.param("1m", 60_000_000_000, "1m0s", id="minute"),
        pytest.param("4h", 14_400_000_000_000, "4h0m0s", id="hours"),
        pytest.param("90m", 5_400_000_000_000, "1h30m0s", id="minutes-carry"),
        pytest.param("100ms", 100_000_000, "100ms", id="millis"),
        pytest.param("1.5s", 1_500_000_000, "1.5s", id="fraction"),
        pytest.param(".5s", 500_000_000, "500ms", id="leading-dot"),
        pytest.param("1us", 1_000, "1\u00b5s", id="micro-ascii"),
        pytest.param("1\u00b5s", 1_000, "1\u00b5s", id="micro-sign"),
        pytest.param("1.001ms", 1_001_000, "1.001ms", id="milli-fraction"),
        pytest.param("7ns", 7, "7ns", id="nanos"),
        pytest.param("-3s", -3_000_000_000, "-3s", id="negative"),
        pytest.param("1h2m3.004s", 3_723_004_000_000, "1h2m3.004s", id="mixed"),
    ],
)
def test_parse_and_format(text: str, ns: int, formatted: str) -> None:
    value = Duration.parse(text)
    assert value.ns == ns
    assert str(value) == formatted
    assert Duration.parse(str(value)) == value


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("", 'time: invalid duration ""', id="empty"),
        pytest.param("10", 'time: missing unit in duration "10"', id="no-unit"),
        pytest.param("1x", 'time: unknown unit "x" in duration "1x"', id="bad-unit"),
        pytest.param("abc", 'time: invalid duration "abc"', id="letters"),
        pytest.param("1d", 'time: unknown unit "d" in duration "1d"', id="days"),
        pytest.param("99999999999h", 'time: invalid duration "99999999999h"', id="overflow"),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(") + "$"):
        Duration.parse(text)


def test_unit_is_scanned_like_go() -> None:
    # Go reads everything up to the next digit or dot as the unit, spaces included.
    with pytest.raises(ValueError, match='unknown unit " minutes"'):
        Duration.parse("5 minutes")
