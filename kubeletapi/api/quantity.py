"""Kubernetes resource quantities (k8s.io/apimachinery pkg/api/resource), restated in Python.

A quantity is an exact decimal: `<sign><number><suffix>` where the suffix is a binary SI one
(Ki Mi Gi Ti Pi Ei), a decimal SI one (n u m "" k M G T P E) or a decimal exponent (e3, E-2).
Parsing reproduces apimachinery's scanner, its error texts and its quirks:

- a value finer than a nano is rounded away from zero to 1n; binary SI values are capped at
  2^63-1; a binary SI value between 0 and 1 is re-typed decimal SI;
- the serialized form (`wire()`) is the input string itself when apimachinery's fast parser would
  have cached it (for example "100m", "64Mi", "+1"), otherwise the canonical form ("0.5" -> "500m",
  "1024Mi" -> "1Gi", "1.5Gi" -> "1536Mi"): the kubelet re-emits quantities exactly that way.

`value()` and `milli_value()` round away from zero like Go's Value and MilliValue; where Go would
silently overflow int64 they saturate instead.
"""

from __future__ import annotations

import decimal
import math
from dataclasses import dataclass, field, replace
from decimal import ROUND_UP, Decimal
from functools import total_ordering
from typing import Annotated, Any

from pydantic import PlainSerializer, PlainValidator, WithJsonSchema

from kubeletapi.api.gowire import GoValue
from kubeletapi.errors import InvalidInput

SPLIT_RE = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
ERR_FORMAT = "quantities must match the regular expression '" + SPLIT_RE + "'"
ERR_NUMERIC = "unable to parse numeric part of quantity"
ERR_SUFFIX = "unable to parse quantity's suffix"

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"

_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_BY_EXP = {exp: suffix for suffix, exp in _DECIMAL.items()}
_BINARY_BY_POWER = {0: "", **{exp // 10: suffix for suffix, exp in _BINARY.items()}}
_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)
_MAX_INT64_FACTORS = 18
_NANO = Decimal("1e-9")
_DIGITS = frozenset("0123456789")
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
# Exact arithmetic: quantities are parsed from strings and only scaled by powers of 10 and 2.
_CTX = decimal.Context(prec=4096, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN, rounding=ROUND_UP)


class QuantityError(InvalidInput, ValueError):
    """A string that is not a Kubernetes quantity; the message is apimachinery's error text."""


@dataclass(frozen=True)
class _Scan:
    positive: bool
    value: str  # sign and number, without the suffix
    num: str  # integer digits, leading zeros stripped ("0" when none)
    denom: str  # fraction digits
    suffix: str


def _scan(text: str) -> _Scan:
    """apimachinery's parseQuantityString: split sign, number and suffix (permissively)."""
    positive, pos, end = True, 0, len(text)
    if pos < end and text[0] in "+-":
        positive, pos = text[0] == "+", 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return _Scan(positive, "0", "0", "", "")
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos >= end:
        return _Scan(positive, text, text[start:], "", "")
    num, denom = text[start:pos] or "0", ""
    if text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
        if pos >= end:
            return _Scan(positive, text, num, denom, "")
    value, suffix_start = text[:pos], pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(ERR_FORMAT)
    return _Scan(positive, value, num, denom, text[suffix_start:])


def _interpret(suffix: str) -> tuple[int, int, str]:
    """(base, exponent, format) of a suffix, as apimachinery's suffixer interprets it."""
    if suffix in _DECIMAL:
        return 10, _DECIMAL[suffix], DECIMAL_SI
    if suffix in _BINARY:
        return 2, _BINARY[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        try:
            parsed = int(suffix[1:], 10)
        except ValueError:
            raise QuantityError(ERR_SUFFIX) from None
        if not _INT64_MIN <= parsed <= _INT64_MAX or suffix[1:].strip() != suffix[1:]:
            raise QuantityError(ERR_SUFFIX)
        return 10, (parsed + 2**31) % 2**32 - 2**31, DECIMAL_EXPONENT  # Go's int32() truncation
    raise QuantityError(ERR_SUFFIX)


def _int64_amount(scan: _Scan, exponent: int, fmt: str) -> tuple[int, int] | None:
    """(value, scale) of the int64Amount apimachinery's fast path builds, or None when it falls back
    to inf.Dec (too many digits, a binary fraction, finer than a nano, outside int64)."""
    mantissa, scale = 1, exponent
    if fmt == BINARY_SI:
        if scan.denom:
            return None
        mantissa, scale = 1 << exponent, 0
        precision = 15 - len(scan.num) - int(exponent * 3 / 10) - 1
    else:
        precision = _MAX_INT64_FACTORS - len(scan.num) - len(scan.denom)
    scale -= len(scan.denom)
    if precision < 0 or scale < -9:
        return None
    value = int(scan.num + scan.denom) * mantissa
    if not _INT64_MIN <= value <= _INT64_MAX:
        return None
    return (value if scan.positive else -value), scale


def _cached_string(text: str, scan: _Scan, exponent: int, fmt: str) -> str | None:
    """The input string when apimachinery's int64 fast path would keep it for re-encoding."""
    fast = _int64_amount(scan, exponent, fmt)
    if fast is None:
        return None
    shifted = scan.num + scan.denom
    if fmt == BINARY_SI:
        return text if int(shifted) & 0x07 else None
    if fast[1] % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0":
        return text
    return None


def _amount(scan: _Scan, base: int, exponent: int) -> Decimal:
    with decimal.localcontext(_CTX):
        amount = Decimal(f"{scan.num}.{scan.denom or '0'}")
        amount = amount.scaleb(exponent) if base == 10 else amount * (Decimal(2) ** exponent)
        if amount and amount.as_tuple().exponent < -9:  # type: ignore[operator]
            amount = amount.quantize(_NANO, rounding=ROUND_UP)
        return amount if scan.positive else -amount


@total_ordering
@dataclass(frozen=True, eq=False)
class Quantity(GoValue):
    """An exact resource quantity. Compare, scale and re-encode it; never a float."""

    amount: Decimal
    format: str = DECIMAL_SI
    cached: str | None = field(default=None, repr=False)  # apimachinery's remembered string
    original: str = field(default="", repr=False)  # the text it was parsed from, if any

    @classmethod
    def parse(cls, text: str) -> Quantity:
        """Parse like resource.ParseQuantity; raise QuantityError with apimachinery's message."""
        if not text:
            raise QuantityError(ERR_FORMAT)
        if text == "0":
            return cls(Decimal(0), DECIMAL_SI, "0", text)
        scan = _scan(text)
        base, exponent, fmt = _interpret(scan.suffix)
        amount = _amount(scan, base, exponent)
        if fmt == BINARY_SI and abs(amount) > _INT64_MAX:
            amount = Decimal(_INT64_MAX) if amount > 0 else -Decimal(_INT64_MAX)
        if fmt == BINARY_SI and 0 < abs(amount) < 1:
            fmt = DECIMAL_SI
        return cls(amount, fmt, _cached_string(text, scan, exponent, fmt), text)

    @classmethod
    def from_int(cls, value: int, fmt: str = DECIMAL_SI) -> Quantity:
        return cls(Decimal(value), fmt)

    @classmethod
    def from_milli(cls, milli: int, fmt: str = DECIMAL_SI) -> Quantity:
        return cls(Decimal(milli).scaleb(-3), fmt)

    def scaled_value(self, scale: int) -> int:
        """ceil(q / 10^scale), rounded away from zero; saturated to the int64 range."""
        with decimal.localcontext(_CTX):
            scaled = self.amount.scaleb(-scale)
            if scaled > _INT64_MAX:
                return _INT64_MAX
            if scaled < _INT64_MIN:
                return _INT64_MIN
            return int(scaled.to_integral_value(rounding=ROUND_UP))

    def value(self) -> int:
        """Go's Value(): the integer value rounded away from zero."""
        return self.scaled_value(0)

    def milli_value(self) -> int:
        """Go's MilliValue(): the value in thousandths, rounded away from zero."""
        return self.scaled_value(-3)

    def as_int64(self) -> int | None:
        """Go's AsInt64: the value when apimachinery holds it as an int64 with no fraction left
        ("10Mi", "1.5M", "2e3"), else None ("1.5", "100m", "0.5Ki", beyond int64)."""
        if not self.original:
            return int(self.amount) if self.amount == int(self.amount) else None
        if self.original == "0":
            return 0
        scan = _scan(self.original)
        _, exponent, fmt = _interpret(scan.suffix)
        fast = _int64_amount(scan, exponent, fmt)
        if fast is None or fast[1] < 0:
            return None
        value = fast[0] * 10 ** fast[1]
        return value if _INT64_MIN <= value <= _INT64_MAX else None

    def is_zero(self) -> bool:
        return self.amount == 0

    def sign(self) -> int:
        return (self.amount > 0) - (self.amount < 0)

    def round_up_milli(self) -> Quantity:
        """RoundUp(-3) as SetDefaults_ResourceList applies it: exact values keep their string."""
        with decimal.localcontext(_CTX):
            if self.amount == self.amount.quantize(Decimal("1e-3"), rounding=ROUND_UP):
                return self
            return replace(self, amount=self.amount.quantize(Decimal("1e-3"), rounding=ROUND_UP), cached=None)

    def canonical(self) -> str:
        """The canonical form apimachinery computes (largest suffix, no fraction, no '+')."""
        if self.amount == 0:
            return "0"
        if self.format == BINARY_SI and not -1024 < self.amount < 1024 and self.amount == int(self.amount):
            mantissa, power = _remove_factors(int(self.amount), 1024)
            while power > max(_BINARY_BY_POWER):
                mantissa, power = mantissa * 1024, power - 1
            return f"{mantissa}{_BINARY_BY_POWER[power]}"
        sign, digits, exp = self.amount.as_tuple()
        text = "".join(map(str, digits))
        stripped = text.rstrip("0")
        mantissa, exponent = int(stripped), int(exp) + len(text) - len(stripped)
        while exponent % 3:
            mantissa, exponent = mantissa * 10, exponent - 1
        if self.format == DECIMAL_EXPONENT or exponent not in _DECIMAL_BY_EXP:
            suffix = "" if exponent == 0 else f"e{exponent}"
        else:
            suffix = _DECIMAL_BY_EXP[exponent]
        return f"{'-' if sign else ''}{mantissa}{suffix}"

    def wire(self) -> str:
        """The JSON string the kubelet emits (resource.Quantity.MarshalJSON)."""
        return self.cached if self.cached is not None else self.canonical()

    def __str__(self) -> str:
        return self.wire()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Quantity):
            return self.amount == other.amount
        return NotImplemented

    def __lt__(self, other: Quantity) -> bool:
        return self.amount < other.amount

    def __hash__(self) -> int:
        return hash(self.amount)


ZERO = Quantity(Decimal(0), DECIMAL_SI)


def _remove_factors(value: int, base: int) -> tuple[int, int]:
    times = 0
    while value and value % base == 0:
        value //= base
        times += 1
    return value, times


def go_float_text(value: float) -> str:
    """How Go's encoding/json writes a float64: the text a JSON-number quantity is parsed from."""
    if value == 0:
        return "0"
    if 1e-6 <= abs(value) < 1e21:
        return format(Decimal(repr(value)).normalize(_CTX), "f")
    text = repr(value)
    if len(text) >= 4 and text[-4:-2] == "e-" and text[-2] == "0":
        text = text[:-2] + text[-1]
    return text


def coerce_quantity(value: Any) -> Quantity:
    """Accept a Quantity, a string (trimmed, like UnmarshalJSON) or a bare JSON number."""
    if isinstance(value, Quantity):
        return value
    if isinstance(value, str):
        return Quantity.parse(value.strip())
    if isinstance(value, int) and not isinstance(value, bool):
        return Quantity.parse(str(value))
    if isinstance(value, float) and math.isfinite(value):
        return Quantity.parse(go_float_text(value))
    raise QuantityError(ERR_FORMAT)


QuantityValue = Annotated[
    Quantity,
    PlainValidator(coerce_quantity),
    PlainSerializer(lambda q: q.wire(), return_type=str),
    WithJsonSchema({"type": "string", "description": "a Kubernetes resource quantity, e.g. 100m or 64Mi"}),
]
"""A pydantic field type for quantities: string or number in, the kubelet's string out."""
