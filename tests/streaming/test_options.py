"""Query parsing: exec/attach stream options and argv, resize messages, port-forward ports."""

from __future__ import annotations

from urllib.parse import parse_qsl

import pytest

from kubeletapi.errors import InvalidInput
from kubeletapi.runtime.streaming import StreamOptions
from kubeletapi.streaming.portforward import parse_ports
from kubeletapi.streaming.remotecommand import parse_command, parse_resize, parse_stream_options


def query(text: str) -> list[tuple[str, str]]:
    return parse_qsl(text, keep_blank_values=True)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("output=1", StreamOptions(stdin=False, stdout=True, stderr=False), id="stdout-only"),
        pytest.param("input=1&output=1&error=1", StreamOptions(stdin=True, stdout=True, stderr=True), id="all"),
        pytest.param("error=1", StreamOptions(stdin=False, stdout=False, stderr=True), id="stderr-only"),
        pytest.param("input=1", StreamOptions(stdin=True, stdout=False, stderr=False), id="stdin-only"),
        pytest.param("input=1&output=1&error=1&tty=1",
                     StreamOptions(stdin=True, stdout=True, stderr=False, tty=True), id="tty-drops-stderr"),
        pytest.param("output=true&error=1", StreamOptions(stdin=False, stdout=False, stderr=True),
                     id="only-exactly-1-is-on"),
        pytest.param("output=1&output=0", StreamOptions(stdin=False, stdout=True, stderr=False),
                     id="first-value-wins"),
        pytest.param("stdout=1&output=1", StreamOptions(stdin=False, stdout=True, stderr=False),
                     id="apiserver-names-ignored"),
    ],
)
def test_stream_options(text: str, expected: StreamOptions) -> None:
    assert parse_stream_options(query(text)) == expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="nothing"),
        pytest.param("tty=1", id="tty-alone"),
        pytest.param("tty=1&error=1", id="tty-drops-the-only-stream"),
        pytest.param("stdin=1&stdout=1&stderr=1", id="apiserver-names"),
        pytest.param("output=0&error=true", id="not-1"),
    ],
)
def test_stream_options_need_a_stream(text: str) -> None:
    with pytest.raises(InvalidInput) as err:
        parse_stream_options(query(text))
    assert str(err.value) == "you must specify at least 1 of stdin, stdout, stderr"


def test_command_is_every_value_in_order() -> None:
    assert parse_command(query("command=sh&output=1&command=-c&command=echo%20a%26b")) == ("sh", "-c", "echo a&b")
    assert parse_command(query("output=1")) == ()


@pytest.mark.parametrize(
    ("data", "sizes"),
    [
        pytest.param(b'{"Width":80,"Height":24}', [(80, 24)], id="kubectl"),
        pytest.param(b'{"width":100,"height":40}', [(100, 40)], id="keys-case-insensitive"),
        pytest.param(b'{"Width":80,"Height":24}{"Width":90,"Height":30}', [(80, 24), (90, 30)],
                     id="concatenated-objects"),
        pytest.param(b'{"Width":80,"Height":24}\n{"Width":90,"Height":30}\n', [(80, 24), (90, 30)],
                     id="newline-separated"),
        pytest.param(b'{"Width":80}', [(80, 0)], id="missing-key-is-zero"),
        pytest.param(b'{"Width":80,"Height":24,"Other":1}', [(80, 24)], id="unknown-keys-ignored"),
        pytest.param(b"not json", [], id="bad-json-ignored"),
        pytest.param(b'{"Width":80,"Height":24}garbage', [(80, 24)], id="garbage-after-a-size"),
        pytest.param(b'{"Width":-1,"Height":24}', [], id="negative"),
        pytest.param(b'{"Width":65536,"Height":24}', [], id="over-uint16"),
        pytest.param(b'{"Width":80.0,"Height":24}', [], id="float"),
        pytest.param(b'{"Width":"80","Height":24}', [], id="string"),
        pytest.param(b'{"Width":true,"Height":24}', [], id="bool"),
        pytest.param(b"[80, 24]", [], id="not-an-object"),
        pytest.param(b"\xff\xfe", [], id="not-utf8"),
        pytest.param(b"", [], id="empty"),
    ],
)
def test_parse_resize(data: bytes, sizes: list[tuple[int, int]]) -> None:
    assert parse_resize(data) == sizes


@pytest.mark.parametrize(
    ("values", "ports"),
    [
        pytest.param(["8080"], [8080], id="one"),
        pytest.param(["80", "443"], [80, 443], id="repeated"),
        pytest.param(["80,443", "8080"], [80, 443, 8080], id="comma-lists"),
        pytest.param(["1", "65535"], [1, 65535], id="bounds"),
        pytest.param(["80,80"], [80, 80], id="duplicates-kept"),
        pytest.param(["007"], [7], id="leading-zeros"),
    ],
)
def test_parse_ports(values: list[str], ports: list[int]) -> None:
    assert parse_ports(values) == ports


@pytest.mark.parametrize(
    ("values", "message"),
    [
        pytest.param([], 'query parameter "port" is required', id="missing"),
        pytest.param([""], 'query parameter "port" cannot be empty', id="empty"),
        pytest.param(["80", ""], 'query parameter "port" cannot be empty', id="empty-second"),
        pytest.param(["abc"], 'unable to parse "abc" as a port: strconv.ParseUint: parsing "abc": invalid syntax',
                     id="not-a-number"),
        pytest.param(["80,x"], 'unable to parse "80,x" as a port: strconv.ParseUint: parsing "x": invalid syntax',
                     id="bad-item-names-the-whole-value"),
        pytest.param(["80,"], 'unable to parse "80," as a port: strconv.ParseUint: parsing "": invalid syntax',
                     id="trailing-comma"),
        pytest.param(["70000"],
                     'unable to parse "70000" as a port: strconv.ParseUint: parsing "70000": value out of range',
                     id="out-of-range"),
        pytest.param(["-1"], 'unable to parse "-1" as a port: strconv.ParseUint: parsing "-1": invalid syntax',
                     id="negative"),
        pytest.param(["+80"], 'unable to parse "+80" as a port: strconv.ParseUint: parsing "+80": invalid syntax',
                     id="sign"),
        pytest.param([" 80"], 'unable to parse " 80" as a port: strconv.ParseUint: parsing " 80": invalid syntax',
                     id="space"),
        pytest.param(["0"], 'port "0" must be > 0', id="zero"),
        pytest.param(["80,0"], 'port "80,0" must be > 0', id="zero-in-list"),
    ],
)
def test_parse_ports_errors(values: list[str], message: str) -> None:
    with pytest.raises(InvalidInput) as err:
        parse_ports(values)
    assert str(err.value) == message
