"""Resource quantities: parsing, errors, rounding, canonical and wire forms (tables from apimachinery)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from pydantic import BaseModel, ValidationError

from kubeletapi.api.quantity import (
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    ERR_FORMAT,
    ERR_SUFFIX,
    Quantity,
    QuantityError,
    QuantityValue,
    go_float_text,
)

P = pytest.param


@pytest.mark.parametrize(
    ("text", "amount", "fmt"),
    [
        P("0", "0", DECIMAL_SI, id="zero"),
        P("0Ki", "0", BINARY_SI, id="zero-binary"),
        P("1", "1", DECIMAL_SI, id="bare"),
        P("100m", "0.1", DECIMAL_SI, id="milli"),
        P("0.5", "0.5", DECIMAL_SI, id="fraction"),
        P("1Ki", "1024", BINARY_SI, id="Ki"),
        P("7Mi", "7340032", BINARY_SI, id="Mi"),
        P("6Gi", "6442450944", BINARY_SI, id="Gi"),
        P("3Ei", "3458764513820540928", BINARY_SI, id="Ei"),
        P("1G", "1000000000", DECIMAL_SI, id="G"),
        P("5n", "0.000000005", DECIMAL_SI, id="nano"),
        P("4u", "0.000004", DECIMAL_SI, id="micro"),
        P("1E", "1000000000000000000", DECIMAL_SI, id="exa"),
        P("1e3", "1000", DECIMAL_EXPONENT, id="exponent"),
        P("1E-3", "0.001", DECIMAL_EXPONENT, id="negative-exponent"),
        P("1.3E+6", "1300000", DECIMAL_EXPONENT, id="signed-exponent"),
        P("1.5Ki", "1536", BINARY_SI, id="fractional-binary"),
        P("0.5Mi", "524288", BINARY_SI, id="half-Mi"),
        P("100.035k", "100035", DECIMAL_SI, id="fractional-k"),
        P("+1", "1", DECIMAL_SI, id="plus-sign"),
        P("-1", "-1", DECIMAL_SI, id="minus-sign"),
        P(".001", "0.001", DECIMAL_SI, id="leading-dot"),
        P("1.", "1", DECIMAL_SI, id="trailing-dot"),
        P("1.G", "1000000000", DECIMAL_SI, id="dot-suffix"),
        P("3.001n", "0.000000004", DECIMAL_SI, id="rounds-up-to-nano"),
        P("0.9n", "0.000000001", DECIMAL_SI, id="sub-nano"),
        P("0.00000012345", "0.000000124", DECIMAL_SI, id="nano-rounding"),
        P("0.000000000001Ki", "0.000000002", DECIMAL_SI, id="tiny-binary-becomes-decimal"),
        P("9Ei", str(2**63 - 1), BINARY_SI, id="binary-capped"),
        P("9223372036854775807Ki", str(2**63 - 1), BINARY_SI, id="binary-capped-large"),
        P("12E", "12000000000000000000", DECIMAL_SI, id="decimal-not-capped"),
    ],
)
def test_parse(text: str, amount: str, fmt: str) -> None:
    q = Quantity.parse(text)
    assert q.amount == Decimal(amount)
    assert q.format == fmt
    if text[0] not in "+-":
        assert Quantity.parse("-" + text).amount == -Decimal(amount)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        P("", ERR_FORMAT, id="empty"),
        P("aoeu", ERR_FORMAT, id="letters"),
        P("1.1.M", ERR_FORMAT, id="two-dots"),
        P("1+1.0M", ERR_FORMAT, id="sign-inside"),
        P(" 1", ERR_FORMAT, id="leading-space"),
        P("1 ", ERR_FORMAT, id="trailing-space"),
        P("-3.01e-", ERR_SUFFIX, id="dangling-exponent"),
        P("0.1mi", ERR_SUFFIX, id="lowercase-mi"),
        P("0.1am", ERR_FORMAT, id="unknown-suffix-letter"),
        P(".5i", ERR_SUFFIX, id="bare-i"),
        P("1e", ERR_SUFFIX, id="bare-e"),
        P("1Ki3", ERR_SUFFIX, id="digits-after-suffix"),
        P("--1", ERR_SUFFIX, id="double-sign"),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(QuantityError) as err:
        Quantity.parse(text)
    assert str(err.value) == message


def test_format_error_text_is_apimachinery_s() -> None:
    assert ERR_FORMAT == "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


@pytest.mark.parametrize(
    ("canonical", "alternate"),
    [
        P("1Gi", "1024Mi", id="Gi"),
        P("300Mi", "307200Ki", id="Mi"),
        P("6Ki", "", id="Ki"),
        P("1001Gi", "1025024Mi", id="1001Gi"),
        P("1Ti", "1024Gi", id="Ti"),
        P("1G", "1000M", id="G"),
        P("1m", "1000u", id="m"),
        P("80m", "", id="80m"),
        P("1080m", "1.08", id="1080m"),
        P("300M", "", id="300M"),
        P("1e21", "1000E", id="beyond-exa"),
        P("1234567M", "", id="1234567M"),
        P("3k", "", id="k"),
        P("1025", "", id="1025"),
        P("1e9", ".001e12", id="exponent"),
        P("1e-3", "0.001e0", id="exponent-negative"),
        P("1e-9", "1000e-12", id="exponent-nano"),
        P("80e-3", "", id="exponent-80"),
        P("0", "00", id="zero"),
        P("1n", "", id="nano"),
        P("1080n", "", id="1080n"),
        P("1080u", "", id="1080u"),
        P("500m", "0.5", id="half"),
    ],
)
def test_canonical_and_wire(canonical: str, alternate: str) -> None:
    q = Quantity.parse(canonical)
    assert q.wire() == canonical
    assert q.canonical() == canonical
    if alternate:
        alt = Quantity.parse(alternate)
        assert alt.cached is None
        assert alt.wire() == canonical
        assert alt == q


@pytest.mark.parametrize(
    ("text", "wire"),
    [
        P("1Ki", "1Ki", id="Ki"),
        P("1024Mi", "1Gi", id="1024Mi"),
        P("1000M", "1G", id="1000M"),
        P(".001Ki", "1024m", id="milli-Ki"),
        P(".000001Ki", "1024u", id="micro-Ki"),
        P(".000000001Ki", "1024n", id="nano-Ki"),
        P(".000000000001Ki", "2n", id="sub-nano-Ki"),
        P("1.5Gi", "1536Mi", id="1.5Gi"),
        P("1.5Ki", "1536", id="1.5Ki"),
        P("+1", "+1", id="plus-kept-like-go"),
        P("100m", "100m", id="kept"),
        P("1000m", "1", id="1000m"),
        P("8Ei", str(2**63 - 1), id="capped"),
    ],
)
def test_parse_emit(text: str, wire: str) -> None:
    assert Quantity.parse(text).wire() == wire


@pytest.mark.parametrize(
    ("text", "milli", "value"),
    [
        P("100m", 100, 1, id="100m"),
        P("1", 1000, 1, id="one"),
        P("1500m", 1500, 2, id="rounds-up"),
        P("0.0001", 1, 1, id="sub-milli-rounds-up"),
        P("-1500m", -1500, -2, id="negative-away-from-zero"),
        P("64Mi", 67108864000, 67108864, id="64Mi"),
        P("1E", 2**63 - 1, 10**18, id="milli-saturates"),
        P("1e30", 2**63 - 1, 2**63 - 1, id="saturates"),
    ],
)
def test_milli_value_and_value(text: str, milli: int, value: int) -> None:
    q = Quantity.parse(text)
    assert q.milli_value() == milli
    assert q.value() == value


def test_compare() -> None:
    assert Quantity.parse("100m") > Quantity.parse("50m")
    assert Quantity.parse("10000T") > Quantity.parse("100Gi")
    assert Quantity.parse("1Gi") == Quantity.parse("1024Mi")
    assert Quantity.parse("1") == Quantity.parse("1000m")
    assert hash(Quantity.parse("1")) == hash(Quantity.parse("1000m"))
    assert sorted([Quantity.parse("1"), Quantity.parse("1m")]) == [Quantity.parse("1m"), Quantity.parse("1")]


@pytest.mark.parametrize(
    ("text", "rounded"),
    [
        P("100m", "100m", id="exact-kept"),
        P("100u", "1m", id="rounded-up"),
        P("-100u", "-1m", id="negative-away-from-zero"),
        P("1.5Ki", "1536", id="exact-binary"),
    ],
)
def test_round_up_milli(text: str, rounded: str) -> None:
    assert Quantity.parse(text).round_up_milli().wire() == rounded


class _Holder(BaseModel):
    q: QuantityValue


@pytest.mark.parametrize(
    ("raw", "wire"),
    [
        P("64Mi", "64Mi", id="string"),
        P(" 1 ", "1", id="trimmed-like-unmarshaljson"),
        P(2, "2", id="int"),
        P(0.5, "500m", id="float"),
        P(1.0, "1", id="float-integral"),
        P(-1, "-1", id="negative-int"),
    ],
)
def test_pydantic_type(raw: object, wire: str) -> None:
    holder = _Holder.model_validate({"q": raw})
    assert holder.model_dump(mode="json") == {"q": wire}


@pytest.mark.parametrize(
    "raw", [P(True, id="bool"), P([1], id="list"), P("1x", id="bad-string"), P(float("nan"), id="nan")]
)
def test_pydantic_type_rejects(raw: object) -> None:
    with pytest.raises(ValidationError):
        _Holder.model_validate({"q": raw})


@pytest.mark.parametrize(
    ("value", "text"),
    [
        P(1000.0, "1000", id="integral"),
        P(0.5, "0.5", id="half"),
        P(1e21, "1e+21", id="large"),
        P(1.5e-7, "1.5e-7", id="small"),
    ],
)
def test_go_float_text(value: float, text: str) -> None:
    assert go_float_text(value) == text


@pytest.mark.parametrize(
    ("text", "value"),
    [
        P("0", 0, id="zero"), P("10Mi", 10 * 2**20, id="binary"), P("1.5M", 1_500_000, id="decimal-fraction"),
        P("2e3", 2000, id="exponent"), P("1k", 1000, id="kilo"), P("+3", 3, id="plus"), P("-5", -5, id="negative"),
        P("1.5", None, id="fraction-left"), P("10.0", None, id="zero-fraction-left"), P("100m", None, id="milli"),
        P("0.5Ki", None, id="binary-fraction"), P("1Ei", None, id="binary-beyond-fast-path"),
        P("9223372036854775807", None, id="too-many-digits"), P("1e30", None, id="beyond-int64"),
    ],
)
def test_as_int64_is_gos(text: str, value: int | None) -> None:
    """Go's AsInt64: only what apimachinery holds as an int64 with no fraction (containerLogMaxSize)."""
    assert Quantity.parse(text).as_int64() == value
