"""The HTTP/1.1 and WebSocket protocols of every listener: uvicorn's, with the listener's limits.

HttpProtocol is uvicorn's httptools protocol plus what server/limits.py describes, all enforced
here, below the app, so a request refused for its size or slowness costs no routing and no
authentication:
- the request head is counted as it arrives and is never fed to the parser beyond the limit
  (httptools would otherwise buffer a header of any size before calling back): 431;
- the head must be complete within the header timeout (from the accept, or from the first byte of
  a later request on a keep-alive connection): the connection is dropped without an answer;
- a body over the limit: 413 as soon as Content-Length says so, else when the streamed body passes
  it (an app already answering is cut off instead);
- after a refusal nothing more is read and the connection is dropped LINGER_S later.
On a TLS connection both protocols add the ASGI TLS extension to every scope (server/tls.py).
A request asking for `Upgrade: SPDY/3.1` carries the hijack extension (server/hijack.py): its
route may take the connection over; else the connection closes after its answer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from uvicorn.server import ServerState

from kubeletapi.server.hijack import HIJACK, Hijacked
from kubeletapi.server.limits import BODY_TOO_LARGE, HEADERS_TOO_LARGE, Limits
from kubeletapi.server.tls import with_tls_extension

log = logging.getLogger(__name__)

SPDY = b"spdy/3.1"
MAX_EARLY_BYTES = 64 * 1024  # what a client may send after an upgrade request before the answer
P = TypeVar("P", bound=asyncio.Protocol)


class HttpProtocol(HttpToolsProtocol):
    """One HTTP/1.1 connection of a listener (plain or inside TLS)."""

    def __init__(self, config: Config, server_state: ServerState, app_state: dict[str, Any], limits: Limits) -> None:
        super().__init__(config, server_state, app_state)
        self.limits = limits
        self._reading_head = True  # from a message's first byte (or the accept) to its headers' end
        self._head_bytes = 0
        self._body_bytes = 0
        self._head_timer: asyncio.TimerHandle | None = None
        self._drop_timer: asyncio.TimerHandle | None = None
        self._refused = False
        self._upgraded = False
        self._hijackable = False  # an upgrade request's head was read and its route has not answered
        self._early = bytearray()
        self._body_limit, self._body_refusal = limits.max_body_bytes, BODY_TOO_LARGE

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.app = with_tls_extension(self.app, transport)
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self._head_timer, self._drop_timer):
            if timer is not None:
                timer.cancel()
        self._head_timer = self._drop_timer = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._hijackable:
            self._keep_early(data)
            return
        if not self._reading_head:
            super().data_received(data)
            return
        room = self.limits.head_read_limit - self._head_bytes
        self._head_bytes += min(len(data), room)
        super().data_received(data if len(data) <= room else data[:room])
        if self._refused or self._upgraded or self.transport.is_closing():
            return
        if self._reading_head and self._head_bytes >= self.limits.head_read_limit:
            log.debug("Refused a request head over %d bytes from %s", self.limits.max_header_bytes, self.client)
            self._refuse_head(HEADERS_TOO_LARGE)
        elif len(data) > room:
            self.data_received(data[room:])  # the head ended within the limit: the rest is body or next

    # --- parser callbacks ---------------------------------------------------------------------
    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._reading_head = True
        self._arm_head_timer()

    def on_headers_complete(self) -> None:
        self._reading_head = False
        self._head_bytes = self._body_bytes = 0
        self._cancel_head_timer()
        self._body_limit, self._body_refusal = self.limits.body_rule(self.url)
        if self._declared_length() > self._body_limit:
            log.debug("Refused a %s body over %d bytes from %s", self.parser.get_method(),
                      self._body_limit, self.client)
            self._refuse_head(self._body_refusal)
            return
        upgrade = self._get_upgrade()
        if upgrade is not None and SPDY in upgrade:
            self._hijackable = True
            extensions: dict[str, Any] = self.scope.setdefault("extensions", {})
            extensions[HIJACK] = self._hijack
        super().on_headers_complete()
        if self._hijackable and self.cycle is not None:
            self.cycle.keep_alive = False  # the parser stopped at the upgrade: no next request

    def on_body(self, body: bytes) -> None:
        if self._refused:
            return
        self._body_bytes += len(body)
        if self._body_bytes > self._body_limit:
            self._refuse_streamed_body()
            return
        super().on_body(body)

    def on_message_complete(self) -> None:
        if self._refused:
            return
        self._reading_head = True  # what comes next is the next request's head
        self._head_bytes = 0
        super().on_message_complete()

    def handle_websocket_upgrade(self) -> None:
        self._upgraded = True
        self._cancel_head_timer()
        super().handle_websocket_upgrade()

    def _unsupported_upgrade_warning(self) -> None:
        if not self._hijackable:
            super()._unsupported_upgrade_warning()

    # --- hijack (server/hijack.py) ----------------------------------------------------------------
    def _keep_early(self, data: bytes) -> None:
        if len(self._early) + len(data) > MAX_EARLY_BYTES:
            log.debug("Closed an upgrade request from %s that sent over %d bytes before its answer",
                      self.client, MAX_EARLY_BYTES)
            self._hijackable = False
            self._refused = True
            self.transport.abort()
            return
        self._early += data

    def _hijack(self, head: bytes, factory: Callable[[asyncio.Transport], P]) -> P:
        if not self._hijackable or self.transport.is_closing():
            raise RuntimeError("the connection cannot be taken over")
        self._hijackable = False
        if self.cycle is not None:
            self.cycle.response_started = self.cycle.response_complete = True  # uvicorn writes nothing more
        self._cancel_head_timer()
        if self.timeout_keep_alive_task is not None:
            self.timeout_keep_alive_task.cancel()
            self.timeout_keep_alive_task = None
        self.connections.discard(self)
        self.flow.resume_reading()
        self.transport.write(head)
        inner = factory(self.transport)
        self.transport.set_protocol(Hijacked(inner, self.transport, self.connections))
        early, self._early = bytes(self._early), bytearray()
        if early:
            inner.data_received(early)
        return inner

    # --- limits -------------------------------------------------------------------------------
    def _declared_length(self) -> int:
        for name, value in self.headers:
            if name == b"content-length" and value.isdigit():
                return int(value)
        return 0

    def _arm_head_timer(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(self.limits.header_timeout_s, self._head_timed_out)

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.cycle is not None and not self.cycle.response_complete:
            # a pipelined head behind a response still being written: its time starts after it
            self._arm_head_timer()
            return
        log.debug("Closed a connection from %s that sent no complete request head in %gs", self.client,
                  self.limits.header_timeout_s)
        self.transport.abort()

    def _refuse_head(self, response: bytes) -> None:
        """Refuse the request whose head was just read; behind a pipelined request still being
        answered, an answer now would land inside that response: the connection is cut instead."""
        if self.cycle is not None and not self.cycle.response_complete:
            self._refused = True
            self.transport.abort()
            return
        self._refuse(response)

    def _refuse_streamed_body(self) -> None:
        cycle = self.cycle
        if cycle is not None and cycle.response_started:
            self._refused = True
            self.transport.abort()  # too late for a 413: the app is already answering
            return
        if cycle is not None:
            cycle.disconnected = True  # the app's receive() sees a disconnect, its send() goes nowhere
            cycle.message_event.set()
        self._refuse(self._body_refusal)

    def _refuse(self, response: bytes) -> None:
        """Answer, stop reading, and drop the connection after the linger delay (net/http's
        closeWriteAndWait): the client reads the answer before the reset of its unread data."""
        self._refused = True
        self._cancel_head_timer()
        self._unset_keepalive_if_required()
        self.flow.pause_reading()
        self.transport.write(response)
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self._drop_timer = self.loop.call_later(self.limits.linger_s, self.transport.abort)


class WebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's sans-I/O WebSocket protocol (after an upgrade), quiet about handshakes refused with
    an HTTP answer, with the TLS extension on a TLS connection.

    A handshake the agent refuses (401, 403, 404, 405, 500 for exec) is answered through the ASGI
    `websocket.http.response` extension; uvicorn then still logs "ASGI callable returned without
    completing handshake." at ERROR, as if the app had forgotten to answer. Once the refusal's
    last body message is sent the handshake is over: marking it so silences the false error and
    changes nothing else (uvicorn has already written the response and closed the transport).
    """

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.app = with_tls_extension(self.app, transport)

    async def send(self, message: Any) -> None:
        await super().send(message)
        if message["type"] == "websocket.http.response.body" and not message.get("more_body", False):
            self.handshake_complete = True
