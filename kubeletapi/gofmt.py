"""Go's fmt and strconv forms the kubelet's messages and metrics are written in, restated once:
- go_quote: %q of a string (strconv.Quote);
- go_list: %v of a []string (`[a b c]`);
- go_float: strconv.FormatFloat(v, 'g', -1, 64), which is also fmt's %v of a float64
  (`1.2345678e+07`, `0.5`, `3`); the metrics encoders call it for every sample, so integers take a
  fast path.
"""


from __future__ import annotations

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
