"""The three listeners (secure, read-only, healthz) as uvicorn servers on one asyncio loop.

Sockets are bound here, before anything is served, so a port in use stops start-up with a
StartupError naming the address and port. uvicorn's own signal handling and lifespan are not
used: the command line owns signals and the composition root owns start-up and shutdown.
Connections are served by server/protocols.py (the listener's Limits), inside TLSProtocol on the
secure listener (server/tls.py): uvicorn's connection handling, with our protocols in place of
the ones its own start-up would build.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field

import uvicorn
from starlette.types import ASGIApp

from kubeletapi.errors import StartupError
from kubeletapi.server.limits import Limits
from kubeletapi.server.protocols import HttpProtocol, WebSocketProtocol
from kubeletapi.server.tls import TLSProtocol

log = logging.getLogger(__name__)

# Go's http.Server IdleTimeout for the kubelet's listeners.
IDLE_TIMEOUT_S = 90
SHUTDOWN_GRACE_S = 5


@dataclass(frozen=True)
class ListenerSpec:
    name: str
    address: str
    port: int
    app: ASGIApp
    ssl_context: ssl.SSLContext | None = None
    limits: Limits = field(default_factory=Limits)
    # A context that may change (a rotated serving certificate): read for every new connection.
    ssl_source: Callable[[], ssl.SSLContext] | None = None

    def tls(self) -> ssl.SSLContext | None:
        return self.ssl_source() if self.ssl_source is not None else self.ssl_context


def bind(address: str, port: int, name: str) -> socket.socket:
    """A listening, non-blocking TCP socket; StartupError names the port when it is taken."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY on accepted sockets only when the listening
    # socket says it is TCP; without it a response written in two parts (head, body) waits for the
    # peer's delayed ACK, ~40 ms on every keep-alive request after the first.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6 and address == "::":
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind((address, port))
        sock.listen(1024)
    except OSError as exc:
        sock.close()
        raise StartupError(
            f"failed to listen on {address}:{port} for the {name} server: {exc.strerror or exc}"
        ) from exc
    sock.setblocking(False)
    return sock


class Listener:
    """One bound socket served by one uvicorn server."""

    def __init__(self, spec: ListenerSpec) -> None:
        self.spec = spec
        self.sock = bind(spec.address, spec.port, spec.name)
        config = uvicorn.Config(
            spec.app,
            http="httptools",
            ws=WebSocketProtocol,
            lifespan="off",
            log_config=None,
            access_log=False,
            server_header=False,
            timeout_keep_alive=IDLE_TIMEOUT_S,
            timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
            ws_per_message_deflate=False,
        )
        config.load()
        self._server = uvicorn.Server(config)
        self._ticker: asyncio.Task[None] | None = None

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    async def start(self) -> None:
        server = self._server
        server.lifespan = server.config.lifespan_class(server.config)
        loop = asyncio.get_running_loop()
        server.servers = [await loop.create_server(self._connection, sock=self.sock, backlog=server.config.backlog)]
        server.started = True
        self._ticker = asyncio.create_task(self._server.main_loop(), name=f"uvicorn-{self.spec.name}")
        scheme = "https" if self.spec.tls() is not None else "http"
        log.info("Started %s server on %s://%s:%d", self.spec.name, scheme, self.spec.address, self.port)

    def _connection(self) -> asyncio.BaseProtocol:
        """The protocol of one accepted connection."""
        server = self._server
        http = HttpProtocol(server.config, server.server_state, server.lifespan.state, self.spec.limits)
        ctx = self.spec.tls()
        if ctx is None:
            return http
        return TLSProtocol(http, ctx, self.spec.limits.header_timeout_s)

    async def stop(self) -> None:
        """Stop accepting, close the open connections (after the grace period), close the socket."""
        self._server.should_exit = True
        try:
            if self._ticker is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await self._ticker
            if self._server.started:
                await self._server.shutdown(sockets=[self.sock])
        finally:
            self.sock.close()
            await self._drop_connections()

    async def _drop_connections(self) -> None:
        """Cut what the graceful shutdown left open, as Go's Server.Close does. uvicorn asks an idle
        connection to close, which on TLS sends close_notify and waits for the peer's (up to 30 s): a
        client that keeps an idle pooled connection never answers, and its socket would outlive the
        loop that owns it."""
        left = [c.transport for c in list(self._server.server_state.connections) if getattr(c, "transport", None)]
        for transport in left:
            transport.abort()
        if left:
            await asyncio.sleep(0)  # the aborted transports close their sockets on the next iteration
            await asyncio.sleep(0)
