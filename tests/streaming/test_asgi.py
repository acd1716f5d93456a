"""The ASGI WebSocket adapter: handshake accept/deny, messages, a vanished peer."""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from typing import Any

import pytest

from kubeletapi.streaming.asgi import AsgiWebSocket
from kubeletapi.streaming.conn import Disconnected

Message = MutableMapping[str, Any]


class Peer:
    """The server side of ASGI: queued client events, recorded app events, optional failure."""

    def __init__(self, *events: Message, extension: bool = True, fail_send: bool = False) -> None:
        self.events = list(events)
        self.sent: list[Message] = []
        self.fail_send = fail_send
        self.scope: Message = {"type": "websocket", "subprotocols": ["v4.channel.k8s.io", "channel.k8s.io"],
                               "extensions": {"websocket.http.response": {}} if extension else {}}

    async def receive(self) -> Message:
        return self.events.pop(0) if self.events else {"type": "websocket.disconnect", "code": 1006}

    async def send(self, message: Message) -> None:
        if self.fail_send:
            raise OSError("client disconnected")
        self.sent.append(message)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_accept_echoes_the_subprotocol() -> None:
    peer = Peer({"type": "websocket.connect"})
    ws = AsgiWebSocket(peer.scope, peer.receive, peer.send)
    assert ws.offered == ["v4.channel.k8s.io", "channel.k8s.io"]
    assert run(ws.accept("v4.channel.k8s.io"))
    assert peer.sent == [{"type": "websocket.accept", "subprotocol": "v4.channel.k8s.io"}]


def test_accept_of_the_empty_subprotocol_echoes_none() -> None:
    peer = Peer({"type": "websocket.connect"})
    assert run(AsgiWebSocket(peer.scope, peer.receive, peer.send).accept(""))
    assert peer.sent == [{"type": "websocket.accept", "subprotocol": None}]


def test_accept_when_the_client_left() -> None:
    peer = Peer({"type": "websocket.disconnect", "code": 1006})
    ws = AsgiWebSocket(peer.scope, peer.receive, peer.send)
    assert not run(ws.accept("v4.channel.k8s.io"))
    assert peer.sent == []
    assert run(ws.receive()) is None


def test_deny_with_an_http_response() -> None:
    peer = Peer({"type": "websocket.connect"})
    run(AsgiWebSocket(peer.scope, peer.receive, peer.send).deny(404, b"pod does not exist"))
    assert peer.sent == [
        {"type": "websocket.http.response.start", "status": 404,
         "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", b"18")]},
        {"type": "websocket.http.response.body", "body": b"pod does not exist"},
    ]


def test_deny_without_the_extension_closes() -> None:
    peer = Peer({"type": "websocket.connect"}, extension=False)
    run(AsgiWebSocket(peer.scope, peer.receive, peer.send).deny(404, b"x"))
    assert peer.sent == [{"type": "websocket.close", "code": 1008}]


def test_messages_and_close() -> None:
    peer = Peer({"type": "websocket.connect"}, {"type": "websocket.receive", "bytes": b"\x00a"},
                {"type": "websocket.receive", "text": "0YQ=="})
    ws = AsgiWebSocket(peer.scope, peer.receive, peer.send)

    async def main() -> list[Any]:
        await ws.accept("v4.channel.k8s.io")
        got = [await ws.receive(), await ws.receive()]
        await ws.send(b"\x01x")
        await ws.send("1eA==")
        await ws.close()
        await ws.close()  # idempotent
        return [*got, await ws.receive(), await ws.receive()]

    assert run(main()) == [b"\x00a", "0YQ==", None, None]
    assert peer.sent[1:] == [{"type": "websocket.send", "bytes": b"\x01x"}, {"type": "websocket.send", "text": "1eA=="},
                             {"type": "websocket.close", "code": 1000}]


def test_send_to_a_vanished_client_is_disconnected() -> None:
    peer = Peer({"type": "websocket.connect"})
    ws = AsgiWebSocket(peer.scope, peer.receive, peer.send)

    async def main() -> None:
        await ws.accept("v4.channel.k8s.io")
        peer.fail_send = True
        with pytest.raises(Disconnected):
            await ws.send(b"\x01x")
        with pytest.raises(Disconnected):
            await ws.send(b"\x01y")
        await ws.close()  # never raises

    run(main())
