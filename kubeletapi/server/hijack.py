"""Taking over a connection after an HTTP request: the SPDY/3.1 upgrade of the streaming routes.

ASGI has no way for an app to switch an HTTP connection to another protocol, and the kubelet's
streaming endpoints need one (Go's http.Hijacker). A request with `Connection: Upgrade` and
`Upgrade: SPDY/3.1` is served as an ordinary HTTP request (every middleware sees it: authn,
authz with the verb of its method, instrumentation), with one more scope extension, HIJACK:
a `Hijack` callable. A route that wants the connection calls it with the 101 response head and
a factory for the protocol that serves the connection from then on; any other route answers as
usual and the connection is closed after its response (the HTTP parser stopped at the upgrade).

The HTTP protocol (server/protocols.py) implements Hijack: it writes the head, marks the ASGI
response as sent so uvicorn writes nothing more, hands over any bytes that arrived early, and
puts the new protocol in place inside `Hijacked`, which keeps the connection in the server's
connection set (so a shutdown closes it) until it is lost.
"""

from __future__ import annotations

import asyncio
import email.utils
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol, TypeVar

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

HIJACK = "kubeletapi.hijack"
P = TypeVar("P", bound=asyncio.BaseProtocol)


class Hijack(Protocol):
    """Take the connection: write `head`, then serve it with `factory(transport)`."""

    def __call__(self, head: bytes, factory: Callable[[asyncio.Transport], P]) -> P: ...


def switching_protocols(headers: Iterable[tuple[str, str]]) -> bytes:
    """A 101 head as Go's net/http writes it: the handler's headers and Date, sorted by name."""
    lines = sorted([*headers, ("Date", email.utils.formatdate(usegmt=True))], key=lambda kv: kv[0])
    fields = "".join(f"{name}: {value}\r\n" for name, value in lines)
    return f"HTTP/1.1 101 Switching Protocols\r\n{fields}\r\n".encode("latin-1")


def hijack_of(scope: Scope) -> Hijack | None:
    """The scope's Hijack, when its request is an upgrade this server can take over."""
    hijack: Hijack | None = (scope.get("extensions") or {}).get(HIJACK)
    return hijack


class UpgradeResponse(Response):
    """Takes the connection with `head` and serves it with `serve(protocol)` until that returns."""

    def __init__(self, head: bytes, factory: Callable[[asyncio.Transport], P],
                 serve: Callable[[P], Awaitable[None]]) -> None:
        super().__init__(status_code=101)
        self._start: Callable[[Hijack], Awaitable[None]] = lambda hijack: serve(hijack(head, factory))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        hijack = hijack_of(scope)
        if hijack is None:
            raise RuntimeError("an upgrade response on a connection that cannot be taken over")
        await self._start(hijack)


class Hijacked(asyncio.Protocol):
    """The protocol that took a connection over, kept in the server's connection set until lost."""

    def __init__(self, inner: asyncio.Protocol, transport: asyncio.Transport, connections: set[Any]) -> None:
        self.inner = inner
        self.transport = transport
        self._connections = connections
        connections.add(self)

    def data_received(self, data: bytes) -> None:
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        keep_open = self.inner.eof_received()
        # asyncio's TLS transport closes after the peer's close_notify whatever the answer (and
        # warns when told otherwise): only a plain transport can stay half open.
        return None if self.transport.get_extra_info("sslcontext") is not None else keep_open

    def connection_lost(self, exc: Exception | None) -> None:
        self._connections.discard(self)
        self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    def shutdown(self) -> None:
        """The server stops: drop the connection (its session ends as if the client left)."""
        self.transport.abort()
