"""Subprotocol negotiation and message framing (binary, base64, v5 CLOSE)."""

from __future__ import annotations

import pytest

from kubeletapi.streaming.protocol import (
    NONE,
    PORT_FORWARD,
    REMOTE_COMMAND,
    V1_BASE64,
    V1_BINARY,
    V4_BASE64,
    V4_BINARY,
    V5_BINARY,
    Frame,
    decode,
    encode,
    negotiate,
)


@pytest.mark.parametrize(
    ("offered", "expected"),
    [
        pytest.param([], NONE, id="no-offer-is-empty-protocol"),
        pytest.param([V5_BINARY, V4_BINARY], V5_BINARY, id="kubernetes-python-client"),
        pytest.param([V4_BINARY, V5_BINARY], V4_BINARY, id="first-listed-wins-not-newest"),
        pytest.param(["bogus", V4_BASE64, V4_BINARY], V4_BASE64, id="unsupported-skipped"),
        pytest.param([V1_BASE64], V1_BASE64, id="base64-v1"),
        pytest.param([V1_BINARY], V1_BINARY, id="channel-v1"),
        pytest.param([" v4.channel.k8s.io "], V4_BINARY, id="whitespace-trimmed"),
        pytest.param(["bogus", ""], NONE, id="an-empty-entry-is-the-empty-protocol"),
        pytest.param(["bogus"], None, id="nothing-supported-refused"),
        pytest.param(["v2.channel.k8s.io", "v3.channel.k8s.io"], None, id="spdy-only-versions-refused"),
        pytest.param(["SPDY/3.1+portforward.k8s.io"], None, id="tunneling-refused"),
    ],
)
def test_negotiate_remote_command(offered: list[str], expected: str | None) -> None:
    chosen = negotiate(offered, REMOTE_COMMAND)
    assert (chosen.name if chosen else None) == expected


@pytest.mark.parametrize(
    ("offered", "expected"),
    [
        pytest.param([], NONE, id="no-offer"),
        pytest.param([V4_BINARY], V4_BINARY, id="v4"),
        pytest.param([V4_BASE64, V4_BINARY], V4_BASE64, id="v4-base64-first"),
        pytest.param([V5_BINARY, V4_BINARY], V4_BINARY, id="no-v5-for-port-forward"),
        pytest.param([V1_BINARY], None, id="no-channel-k8s-io"),
        pytest.param([V1_BASE64], None, id="no-base64-channel-k8s-io"),
    ],
)
def test_negotiate_port_forward(offered: list[str], expected: str | None) -> None:
    chosen = negotiate(offered, PORT_FORWARD)
    assert (chosen.name if chosen else None) == expected


def test_subprotocol_capabilities() -> None:
    assert [(p.name, p.json_status, p.close_signal, p.base64) for p in REMOTE_COMMAND.values()] == [
        (V5_BINARY, True, True, False),
        (V4_BINARY, True, False, False),
        (V4_BASE64, True, False, True),
        (V1_BINARY, False, False, False),
        (V1_BASE64, False, False, True),
        (NONE, False, False, False),
    ]


@pytest.mark.parametrize(
    ("name", "channel", "data", "wire"),
    [
        pytest.param(V4_BINARY, 1, b"hello\n", b"\x01hello\n", id="binary"),
        pytest.param(V5_BINARY, 3, b"{}", b"\x03{}", id="binary-v5"),
        pytest.param(V4_BINARY, 1, b"", b"\x01", id="binary-empty-ready-frame"),
        pytest.param(V4_BASE64, 1, b"hello\n", "1aGVsbG8K", id="base64"),
        pytest.param(V1_BASE64, 2, b"\xff\x00", "2/wA=", id="base64-binary-payload"),
        pytest.param(V4_BASE64, 1, b"", "1", id="base64-empty-ready-frame"),
        pytest.param(NONE, 0, b"x", b"\x00x", id="empty-protocol-is-binary"),
    ],
)
def test_encode(name: str, channel: int, data: bytes, wire: bytes | str) -> None:
    assert encode(REMOTE_COMMAND[name], channel, data) == wire


@pytest.mark.parametrize(
    ("name", "message", "frame"),
    [
        pytest.param(V4_BINARY, b"\x00ls\n", Frame(0, b"ls\n"), id="binary-stdin"),
        pytest.param(V4_BINARY, "\x00ls\n", Frame(0, b"ls\n"), id="text-frame-on-binary-protocol"),
        pytest.param(V4_BINARY, b"\x04{}", Frame(4, b"{}"), id="resize"),
        pytest.param(V4_BINARY, b"\x00", Frame(0, b""), id="channel-only"),
        pytest.param(V4_BINARY, b"", None, id="empty-message-skipped"),
        pytest.param(V4_BASE64, "0bHMK", Frame(0, b"ls\n"), id="base64-text"),
        pytest.param(V4_BASE64, b"0bHMK", Frame(0, b"ls\n"), id="base64-in-binary-frame"),
        pytest.param(V4_BASE64, "0!!!", None, id="bad-base64-dropped"),
        pytest.param(V4_BASE64, "9", Frame(9, b""), id="base64-unknown-channel"),
        pytest.param(V5_BINARY, b"\xff\x00", Frame(0, close=True), id="v5-close-stdin"),
        pytest.param(V5_BINARY, b"\xff\x04", Frame(4, close=True), id="v5-close-resize"),
        pytest.param(V4_BINARY, b"\xff\x00", Frame(255, b"\x00"), id="no-close-signal-before-v5"),
    ],
)
def test_decode(name: str, message: bytes | str, frame: Frame | None) -> None:
    assert decode(REMOTE_COMMAND[name], message) == frame
