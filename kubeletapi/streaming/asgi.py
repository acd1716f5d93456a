"""The `WebSocket` (streaming.conn) of one ASGI websocket scope, and its handshake answers.

A handshake is either accepted with the negotiated subprotocol or denied with an HTTP response,
through the ASGI "websocket.http.response" extension (uvicorn's websockets-sansio implementation
offers it), so a refused exec gets the kubelet's status and body. A server without the extension
can only close the handshake, which the client sees as 403.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from kubeletapi.streaming.conn import NORMAL_CLOSURE, Disconnected

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
TEXT = b"text/plain; charset=utf-8"


class AsgiWebSocket:
    """One websocket scope, before and after the handshake."""

    def __init__(self, scope: Message, receive: Receive, send: Send) -> None:
        self.scope = scope
        self._receive = receive
        self._send = send
        self._connected = False
        self._gone = False
        self._closed = False

    @property
    def offered(self) -> list[str]:
        """The subprotocols the client offered (a bearer-token subprotocol already removed)."""
        return list(self.scope.get("subprotocols") or [])

    async def _connect(self) -> bool:
        if not self._connected:
            message = await self._receive()
            self._connected = message["type"] == "websocket.connect"
            self._gone = not self._connected
        return self._connected

    async def accept(self, subprotocol: str) -> bool:
        """Complete the handshake, echoing `subprotocol` ("" echoes none); False if the client left."""
        if not await self._connect():
            return False
        try:
            await self._send({"type": "websocket.accept", "subprotocol": subprotocol or None})
        except (OSError, RuntimeError):
            self._gone = True
            return False
        return True

    async def deny(self, status: int, body: bytes, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
        """Refuse the handshake with an HTTP response (text/plain unless headers say otherwise)."""
        if not await self._connect():
            return
        self._closed = True
        head = [(b"content-type", TEXT), (b"content-length", str(len(body)).encode()), *headers]
        try:
            if "websocket.http.response" in (self.scope.get("extensions") or {}):
                await self._send({"type": "websocket.http.response.start", "status": status, "headers": head})
                await self._send({"type": "websocket.http.response.body", "body": body})
            else:
                await self._send({"type": "websocket.close", "code": 1008})
        except (OSError, RuntimeError):
            self._gone = True

    async def receive(self) -> bytes | str | None:
        if self._gone:
            return None
        message = await self._receive()
        if message["type"] != "websocket.receive":
            self._gone = True
            return None
        data = message.get("bytes")
        if data is not None:
            return bytes(data)
        return str(message.get("text") or "")

    async def send(self, message: bytes | str) -> None:
        if self._gone or self._closed:
            raise Disconnected
        event: Message = {"type": "websocket.send"}
        event["bytes" if isinstance(message, bytes) else "text"] = message
        try:
            await self._send(event)
        except (OSError, RuntimeError) as exc:
            self._gone = True
            raise Disconnected from exc

    async def close(self, code: int = NORMAL_CLOSURE) -> None:
        if self._closed or not self._connected:
            return
        self._closed = True
        try:
            await self._send({"type": "websocket.close", "code": code})
        except (OSError, RuntimeError):
            self._gone = True
