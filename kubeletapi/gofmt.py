"""Go's fmt and strconv forms the kubelet's messages and metrics are written in, restated once:
- go_quote: %q of a string (strconv.Quote);
- go_list: %v of a []string (`[a b c]`);
- go_float: strconv.FormatFloat(v, 'g', -1, 64), which is also fmt's %v of a float64
  (`1.2345678e+07`, `0.5`, `3`); the metrics encoders call it for every sample, so integers take a
  fast path;
- go_time: %v of a time.Time in UTC (`2006-01-02 15:04:05.999999999 +0000 UTC`);
- go_duration: a time.Duration's String() (`1m2.5s`, `300ms`).
"""


from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence

_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
            '"': '\\"', "\\": "\\\\"}


def go_quote(text: str) -> str:
    """`text` as %q (strconv.Quote) prints it."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def go_list(items: Sequence[str]) -> str:
    """A []string as %v prints it: `[a b c]`."""
    return "[" + " ".join(items) + "]"


_EXACT_INT = 1 << 53


def go_float(value: float) -> str:
    """Go's FormatFloat(v, 'g', -1, 64): shortest digits, exponent form when exp < -4 or >= 21...
    for the shortest precision Go uses 6 as the threshold: 1e+06, 123456, 1.5e-05."""
    if isinstance(value, int) and not isinstance(value, bool) and -_EXACT_INT < value < _EXACT_INT:
        if -1_000_000 < value < 1_000_000:
            return str(value)
        return _exp_form(str(abs(value)), len(str(abs(value))) - 1, value < 0)
    v = float(value)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if v == 0:
        return "-0" if math.copysign(1.0, v) < 0 else "0"
    text = repr(abs(v))
    if "e" in text:
        mantissa, exp_text = text.split("e")
        digits = mantissa.replace(".", "")
        exp = int(exp_text)
    else:
        whole, _, frac = text.partition(".")
        frac = frac.rstrip("0")
        digits = (whole + frac).lstrip("0")
        exp = len(whole) - 1 if whole != "0" else -(len(frac) - len(frac.lstrip("0")) + 1)
    if -4 <= exp < 6:
        return ("-" if v < 0 else "") + (text[:-2] if text.endswith(".0") else text)
    return _exp_form(digits, exp, v < 0)


def _exp_form(digits: str, exp: int, negative: bool) -> str:
    digits = digits.rstrip("0") or "0"
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    sign = "-" if exp < 0 else "+"
    return f"{'-' if negative else ''}{mantissa}e{sign}{abs(exp):02d}"


def go_time(moment: float | None) -> str:
    """A time.Time as %v prints it in UTC: `2006-01-02 15:04:05.999999999 +0000 UTC`."""
    if moment is None:
        return "0001-01-01 00:00:00 +0000 UTC"
    at = dt.datetime.fromtimestamp(moment, dt.UTC)
    text = at.strftime("%Y-%m-%d %H:%M:%S")
    if at.microsecond:
        text += f".{at.microsecond:06d}".rstrip("0")
    return text + " +0000 UTC"


def go_duration(seconds: float) -> str:
    """A time.Duration as String() prints it (to the microsecond): `1m2.5s`, `1.5s`, `300ms`, `0s`."""
    micros = round(seconds * 1_000_000)
    if micros == 0:
        return "0s"
    sign, micros = ("-", -micros) if micros < 0 else ("", micros)
    if micros < 1_000_000:
        unit, scale = ("µs", 1) if micros < 1000 else ("ms", 1000)
        return sign + _trim(micros / scale) + unit
    hours, rest = divmod(micros, 3_600_000_000)
    minutes, rest = divmod(rest, 60_000_000)
    text = (f"{hours}h" if hours else "") + (f"{minutes}m" if hours or minutes else "")
    return sign + text + _trim(rest / 1_000_000) + "s"


def _trim(value: float) -> str:
    return f"{value:.6f}".rstrip("0").rstrip(".")
