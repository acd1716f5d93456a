"""channel.k8s.io WebSocket subprotocols: names, negotiation and message framing.

Every message is one channel number followed by a payload. Binary subprotocols carry the channel
as a raw byte in binary messages; base64 subprotocols carry it as an ASCII digit ('0' + n) followed
by the base64 of the payload, in text messages. Like the kubelet's wsstream, the server reads a
message the same way whatever its frame type (clients send text frames on binary subprotocols),
skips empty messages and drops undecodable ones. v5 adds CLOSE: the binary message [255, n]
half-closes channel n (the client's [255, 0] is stdin EOF).

Negotiation is wsstream's: the first subprotocol the client lists that the server supports wins;
a client that lists none gets "" (binary, v1 status); a client whose list has no supported entry
is refused (403).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

V5_BINARY = "v5.channel.k8s.io"
V4_BINARY = "v4.channel.k8s.io"
V4_BASE64 = "v4.base64.channel.k8s.io"
V1_BINARY = "channel.k8s.io"
V1_BASE64 = "base64.channel.k8s.io"
NONE = ""  # no Sec-WebSocket-Protocol offered: binary, v1 status

CLOSE_CHANNEL = 255


@dataclass(frozen=True)
class Subprotocol:
    """One supported subprotocol; `version` 1 (plain error text), 4 (JSON status) or 5 (+ CLOSE)."""

    name: str
    version: int
    base64: bool

    @property
    def json_status(self) -> bool:
        return self.version >= 4

    @property
    def close_signal(self) -> bool:
        return self.version >= 5


def _table(*protocols: Subprotocol) -> dict[str, Subprotocol]:
    return {p.name: p for p in protocols}


# The kubelet's CRI streaming server (exec, attach): "", channel.k8s.io, base64.channel.k8s.io, v4
# binary and base64; v5 is what the kubelet terminates itself with ExtendWebSocketsToKubelet.
REMOTE_COMMAND: Mapping[str, Subprotocol] = _table(
    Subprotocol(V5_BINARY, 5, False),
    Subprotocol(V4_BINARY, 4, False),
    Subprotocol(V4_BASE64, 4, True),
    Subprotocol(V1_BINARY, 1, False),
    Subprotocol(V1_BASE64, 1, True),
    Subprotocol(NONE, 1, False),
)
# Port-forward: only "", v4 binary and v4 base64 (no channel.k8s.io / base64.channel.k8s.io).
PORT_FORWARD: Mapping[str, Subprotocol] = _table(
    Subprotocol(V4_BINARY, 4, False),
    Subprotocol(V4_BASE64, 4, True),
    Subprotocol(NONE, 4, False),
)


def negotiate(offered: Sequence[str], supported: Mapping[str, Subprotocol]) -> Subprotocol | None:
    """The first offered subprotocol that is supported; None when the offer has none of them."""
    candidates = [p.strip() for p in offered] or [NONE]
    for name in candidates:
        found = supported.get(name)
        if found is not None:
            return found
    return None


@dataclass(frozen=True)
class Frame:
    """A message from the client: `data` on `channel`, or (close=True) a v5 CLOSE of `channel`."""

    channel: int
    data: bytes = b""
    close: bool = False


def encode(proto: Subprotocol, channel: int, data: bytes) -> bytes | str:
    """The message carrying `data` on `channel`."""
    if proto.base64:
        return chr(ord("0") + channel) + base64.b64encode(data).decode("ascii")
    return bytes((channel,)) + data


def decode(proto: Subprotocol, message: bytes | str) -> Frame | None:
    """The frame a client message carries; None for an empty or undecodable message."""
    raw = message.encode("utf-8") if isinstance(message, str) else message
    if not raw:
        return None
    if proto.close_signal and raw[0] == CLOSE_CHANNEL and len(raw) >= 2:
        return Frame(raw[1], close=True)
    if not proto.base64:
        return Frame(raw[0], raw[1:])
    channel = (raw[0] - ord("0")) & 0xFF  # byte arithmetic, as Go's
    try:
        return Frame(channel, base64.b64decode(raw[1:], validate=True))
    except (binascii.Error, ValueError):
        return None
