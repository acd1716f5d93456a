"""A fast Prometheus text (0.0.4) encoder for collector output, formatted like client_golang.

The cadvisor and resource endpoints render tens of thousands of samples; prometheus_client's
generic path is too slow for that and formats numbers differently from the kubelet. Values here
are written as Go's strconv.FormatFloat(v, 'g', -1, 64) does (`1.2345678e+07`, `0.5`, `3`), with
optional millisecond timestamps, label values escaped as the text format requires.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

Labels = tuple[tuple[str, str], ...]
# (sample name, labels, value, timestamp in ms or None)
Sample = tuple[str, Labels, float, int | None]

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


def escape(value: str) -> str:
    if "\\" in value or '"' in value or "\n" in value:
        return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return value


@dataclass
class Family:
    """One metric family: HELP (with its stability prefix), TYPE and samples."""

    name: str
    help: str
    type: str
    samples: list[Sample] = field(default_factory=list)

    def add(self, labels: Labels, value: float, timestamp_ms: int | None = None, suffix: str = "") -> None:
        self.samples.append((self.name + suffix, labels, value, timestamp_ms))


def render(families: Iterable[Family], sort: bool = True) -> bytes:
    """The text exposition; families in name order and series in label order when `sort`
    (what client_golang's gatherer does), families without samples left out."""
    out: list[str] = []
    ordered: Sequence[Family] = sorted(families, key=lambda f: f.name) if sort else list(families)
    for family in ordered:
        if not family.samples:
            continue
        help_text = family.help.replace("\\", "\\\\").replace("\n", "\\n")
        out.append(f"# HELP {family.name} {help_text}\n# TYPE {family.name} {family.type}\n")
        samples = sorted(family.samples, key=lambda s: (s[0], s[1])) if sort else family.samples
        for name, labels, value, ts in samples:
            label_text = ",".join(f'{k}="{escape(v)}"' for k, v in labels)
            series = f"{name}{{{label_text}}}" if label_text else name
            out.append(f"{series} {go_float(value)} {ts}\n" if ts is not None else f"{series} {go_float(value)}\n")
    return "".join(out).encode()
