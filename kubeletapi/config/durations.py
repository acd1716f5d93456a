"""Go `time.Duration` syntax, as KubeletConfiguration files and /configz use it.

Parsing follows Go's time.ParseDuration ("1m30s", "1.5h", "100ms", "0"); formatting follows
Duration.String() ("1m0s", "20s", "4h0m0s", "100ms", "0s"), so /configz is byte-compatible.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from kubeletapi.api.gowire import GoValue

_UNITS: dict[str, int] = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # micro sign
    "\u03bcs": 1_000,  # Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
# As Go scans: digits, an optional fraction, then the unit is everything up to the next digit or dot.
_TERM = re.compile(r"([0-9]*)(?:(\.)([0-9]*))?([^0-9.]*)")
_MAX_NS = (1 << 63) - 1
_SECOND = 1_000_000_000


@dataclass(frozen=True, order=True)
class Duration(GoValue):
    """A signed duration in integer nanoseconds (Go's int64 time.Duration)."""

    ns: int

    @classmethod
    def parse(cls, text: str) -> Duration:
        """Parse Go duration syntax; raise ValueError with Go's wording on bad input."""
        return cls(_parse_ns(text))

    @classmethod
    def of_seconds(cls, seconds: float) -> Duration:
        return cls(round(seconds * _SECOND))

    @property
    def seconds(self) -> float:
        return self.ns / _SECOND

    def __str__(self) -> str:
        return _format_ns(self.ns)

    def wire(self) -> str:
        """metav1.Duration's JSON: the Go duration string."""
        return str(self)


def _parse_ns(text: str) -> int:
    if not isinstance(text, str):  # callers pass decoded JSON/YAML values
        raise ValueError(f"invalid duration {text!r}: must be a string like \"1m30s\"")
    orig = text
    negative = False
    if text[:1] in ("+", "-"):
        negative = text[0] == "-"
        text = text[1:]
    if text == "0":
        return 0
    if not text:
        raise ValueError(f'time: invalid duration "{orig}"')
    total = 0
    pos = 0
    while pos < len(text):
        match = _TERM.match(text, pos)
        if match is None or match.end() == pos or (not match.group(1) and not match.group(3)):
            raise ValueError(f'time: invalid duration "{orig}"')
        whole, frac, unit = match.group(1), match.group(3) or "", match.group(4)
        if not unit:
            raise ValueError(f'time: missing unit in duration "{orig}"')
        if unit not in _UNITS:
            raise ValueError(f'time: unknown unit "{unit}" in duration "{orig}"')
        scale = _UNITS[unit]
        value = int(whole or "0") * scale
        if frac:
            value += int(frac) * scale // (10 ** len(frac))
        total += value
        if total > _MAX_NS:
            raise ValueError(f'time: invalid duration "{orig}"')
        pos = match.end()
    return -total if negative else total


def _frac(value: int, digits: int) -> tuple[str, int]:
    """Go's fmtFrac: the fraction of `value` over 10**digits, trailing zeros dropped."""
    out = ""
    printed = False
    for _ in range(digits):
        digit = value % 10
        printed = printed or digit != 0
        if printed:
            out = str(digit) + out
        value //= 10
    return ("." + out if printed else ""), value


def _format_ns(ns: int) -> str:
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    u = abs(ns)
    if u < _SECOND:
        if u < 1_000:
            return f"{sign}{u}ns"
        if u < 1_000_000:
            frac, whole = _frac(u, 3)
            return f"{sign}{whole}{frac}\u00b5s"
        frac, whole = _frac(u, 6)
        return f"{sign}{whole}{frac}ms"
    frac, secs = _frac(u, 9)
    out = f"{secs % 60}{frac}s"
    minutes = secs // 60
    if minutes:
        out = f"{minutes % 60}m{out}"
        hours = minutes // 60
        if hours:
            out = f"{hours}h{out}"
    return sign + out


def coerce(value: Any) -> Duration:
    """Pydantic before-validator: accept a Duration or a Go duration string, nothing else."""
    if isinstance(value, Duration):
        return value
    if isinstance(value, str):
        return Duration.parse(value)
    raise ValueError(f"must be a duration string like \"1m0s\", not {type(value).__name__}")
