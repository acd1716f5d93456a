"""A channel connection: framed channels over any WebSocket, with the idle timeout.

`WebSocket` is the tiny surface the bridges need from a WebSocket, so they run the same over
uvicorn (streaming.asgi) and over a fake in unit tests. The idle timeout is the kubelet's
streamingConnectionIdleTimeout: its wsstream pushes the connection's deadline on every message
read or written, so a stream with no message in either direction for that long is closed
(WebSocket pings do not count).
"""

from __future__ import annotations

import logging
from typing import Protocol

from kubeletapi.clock import Clock, RealClock
from kubeletapi.idle import IdleTimer
from kubeletapi.streaming.protocol import Frame, Subprotocol, decode, encode

log = logging.getLogger(__name__)
NORMAL_CLOSURE = 1000


class Disconnected(Exception):
    """The peer is gone: the message could not be sent."""


class WebSocket(Protocol):
    """An accepted WebSocket."""

    async def receive(self) -> bytes | str | None:
        """The next message; None once the peer closed or vanished (then always None)."""
        ...

    async def send(self, message: bytes | str) -> None:
        """Send one message (binary for bytes, text for str), waiting while the peer is slow to
        read; Disconnected when the peer is gone."""
        ...

    async def close(self, code: int = NORMAL_CLOSURE) -> None:
        """Send a close frame (idempotent; never raises)."""
        ...


class ChannelConn:
    """Channels of one negotiated subprotocol over a WebSocket."""

    def __init__(self, ws: WebSocket, proto: Subprotocol, idle_timeout_s: float | None = None,
                 clock: Clock | None = None) -> None:
        self.ws = ws
        self.proto = proto
        self._idle = IdleTimer(idle_timeout_s, clock or RealClock())
        self._gone = False

    async def send(self, channel: int, data: bytes) -> None:
        """Write `data` on `channel`; Disconnected when the peer is gone."""
        if self._gone:
            raise Disconnected
        self._idle.touch()
        try:
            await self.ws.send(encode(self.proto, channel, data))
        except Disconnected:
            self._gone = True
            raise
        self._idle.touch()

    async def receive(self) -> Frame | None:
        """The next frame from the client; None once the peer is gone."""
        while not self._gone:
            message = await self.ws.receive()
            if message is None:
                self._gone = True
                break
            self._idle.touch()
            frame = decode(self.proto, message)
            if frame is not None:
                return frame
            log.debug("ignoring an empty or undecodable WebSocket message")
        return None

    async def idle(self) -> None:
        """Return once no message has moved for the idle timeout (never without one)."""
        await self._idle.expired()

    async def close(self) -> None:
        """Close the WebSocket normally."""
        self._gone = True
        await self.ws.close(NORMAL_CLOSURE)
