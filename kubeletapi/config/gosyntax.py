"""Go's parsers and printers that the kubelet's configuration checks use, restated with Go's errors.

- parse_float32: strconv.ParseFloat(s, 32) (eviction percentages);
- atoi: strconv.Atoi (cpuset lists), parse_int: strconv.ParseInt(s, 10, 0) (qosReserved);
- cpuset_error: k8s.io/utils/cpuset.Parse's error for a CPU list, without building the set (a
  hostile "0-2000000000" costs nothing here);
- url_error: what net/url.Parse and the tracing endpoint check refuse.
Each raises (or returns) the text Go would, so messages match the kubelet's. Go's printers (%q,
float formatting) are kubeletapi.gofmt's.
"""

from __future__ import annotations

import math
import re
import struct

from kubeletapi.gofmt import go_quote

_DECIMAL_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_HEX_FLOAT = re.compile(r"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+")
_SPECIAL_FLOAT = re.compile(r"[+-]?(?:inf|infinity|nan)", re.IGNORECASE)
_INT = re.compile(r"[+-]?[0-9]+")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
_INT_BITS = 64


def _syntax(func: str, text: str) -> ValueError:
    return ValueError(f"strconv.{func}: parsing {go_quote(text)}: invalid syntax")


def _range(func: str, text: str) -> ValueError:
    return ValueError(f"strconv.{func}: parsing {go_quote(text)}: value out of range")


def to_float32(value: float) -> float:
    """Go's float32(value), back as a Python float (infinite beyond float32's range)."""
    try:
        return float(struct.unpack("f", struct.pack("f", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def parse_float32(text: str) -> float:
    """strconv.ParseFloat(text, 32): decimal, hexadecimal (with a p exponent), inf and nan."""
    if _SPECIAL_FLOAT.fullmatch(text):
        return float(text)
    if _DECIMAL_FLOAT.fullmatch(text):
        value = float(text)
    elif _HEX_FLOAT.fullmatch(text):
        value = float.fromhex(text)
    else:
        raise _syntax("ParseFloat", text)
    rounded = to_float32(value)
    if math.isinf(rounded):
        raise _range("ParseFloat", text)
    return rounded


def parse_int(text: str, func: str = "ParseInt") -> int:
    """strconv.ParseInt(text, 10, 0) on a 64-bit machine (an optional sign, decimal digits only)."""
    if not _INT.fullmatch(text):
        raise _syntax(func, text)
    value = int(text)
    if not -(2 ** (_INT_BITS - 1)) <= value < 2 ** (_INT_BITS - 1):
        raise _range(func, text)
    return value


def atoi(text: str) -> int:
    """strconv.Atoi: ParseInt with Atoi's name in the error."""
    return parse_int(text, "Atoi")


def cpuset_error(text: str) -> str | None:
    """Why cpuset.Parse refuses a Linux CPU list ("0-3,8"), or None when it accepts it."""
    if text == "":
        return None
    for part in text.split(","):
        bounds = part.split("-", 1)
        try:
            numbers = [atoi(b) for b in bounds]
        except ValueError as exc:
            return str(exc)
        if len(numbers) == 2 and numbers[0] > numbers[1]:
            return f"invalid range {go_quote(part)} ({numbers[0]} > {numbers[1]})"
    return None


def url_error(raw: str) -> str | None:
    """net/url.Parse's error for `raw`, for the cases a configured endpoint can hit, else None."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in raw):
        return f"parse {go_quote(raw)}: net/url: invalid control character in URL"
    if raw.startswith(":"):
        return f"parse {go_quote(raw)}: missing protocol scheme"
    return None


def url_scheme(raw: str) -> str:
    """The scheme net/url.Parse finds in `raw` ("" when there is none), lower-cased as Go does."""
    scheme, sep, _ = raw.partition(":")
    if sep and _SCHEME.fullmatch(scheme):
        return scheme.lower()
    return ""
