"""Small ASGI helpers shared by the middlewares: plain responses on HTTP and WebSocket scopes."""

from __future__ import annotations

from collections.abc import Iterable

from starlette.types import Receive, Scope, Send

TEXT = b"text/plain; charset=utf-8"


async def send_plain(
    scope: Scope,
    receive: Receive,
    send: Send,
    status: int,
    body: bytes,
    headers: Iterable[tuple[bytes, bytes]] = (),
    content_type: bytes = TEXT,
) -> None:
    """Answer with a text body; on a WebSocket handshake, deny it with that HTTP response."""
    head = [(b"content-type", content_type), (b"content-length", str(len(body)).encode()), *headers]
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": status, "headers": head})
        await send({"type": "http.response.body", "body": body})
        return
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    if "websocket.http.response" in scope.get("extensions", {}):
        await send({"type": "websocket.http.response.start", "status": status, "headers": head})
        await send({"type": "websocket.http.response.body", "body": body})
    else:
        await send({"type": "websocket.close", "code": 1008, "reason": body.decode()[:120]})


def header(scope: Scope, name: bytes) -> bytes | None:
    """The first value of a request header (name in lower case)."""
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value)
    return None


async def not_found(scope: Scope, receive: Receive, send: Send) -> None:
    """Go's ServeMux answer for a path no handler is registered on."""
    await send_plain(scope, receive, send, 404, b"404 page not found\n", [(b"x-content-type-options", b"nosniff")])
