"""A raw WebSocket client (the websockets library) for the streaming endpoints of an agent or a
FakeNode: open_ws for sessions (the threaded client, on a TLS connection made here), refused for
handshakes the node answers with an HTTP status (the sans-I/O client, in the caller's thread)."""

from __future__ import annotations

import base64
import select
import socket
import ssl
import time
from collections.abc import Sequence
from pathlib import Path

from websockets.client import ClientProtocol
from websockets.exceptions import InvalidStatus
from websockets.http11 import USER_AGENT
from websockets.sync.client import ClientConnection, connect
from websockets.typing import Subprotocol
from websockets.uri import parse_uri

from tests.helpers import LOOPBACK, Listening, tls_client_context


def ws_url(node: Listening, path: str, listener: str = "secure") -> str:
    return node.url(listener, path).replace("https://", "wss://", 1).replace("http://", "ws://", 1)


def token_subprotocol(token: str) -> str:
    encoded = base64.urlsafe_b64encode(token.encode()).decode().rstrip("=")
    return f"base64url.bearer.authorization.k8s.io.{encoded}"


def open_ws(node: Listening, path: str, subprotocols: Sequence[str] = ("v4.channel.k8s.io",),
            listener: str = "secure", cert: tuple[Path, Path] | bool | None = True,
            token: str | None = None, timeout: float = 10) -> ClientConnection:
    """Open a WebSocket to `path`, with the admin client certificate unless `cert` says otherwise."""
    offered = [*subprotocols, *([token_subprotocol(token)] if token else [])]
    protocols = [Subprotocol(p) for p in offered] or None
    if listener != "secure":
        return connect(ws_url(node, path, listener), subprotocols=protocols, proxy=None, open_timeout=timeout,
                       compression=None, max_size=None)
    pair = (node.certs / "admin.crt", node.certs / "admin.key") if cert is True else cert or None
    sock = tls_connection(node.port("secure"), tls_client_context(node.certs / "ca.crt", pair), timeout)
    # TLS is already on: websockets is given the connection and a ws:// URL, so it does not wrap it again.
    url = ws_url(node, path, listener).replace("wss://", "ws://", 1)
    try:
        return connect(url, sock=sock, subprotocols=protocols, open_timeout=timeout, compression=None, max_size=None)
    except BaseException:
        sock.close()
        raise


def tls_connection(port: int, ctx: ssl.SSLContext, timeout: float) -> ssl.SSLSocket:
    """A TLS connection to a loopback port, its session tickets read (read_session_tickets): give
    it to websockets' sync client with a ws:// URL."""
    sock = ctx.wrap_socket(socket.create_connection((LOOPBACK, port), timeout), server_hostname=LOOPBACK)
    try:
        read_session_tickets(sock, timeout)
    except BaseException:
        sock.close()
        raise
    sock.settimeout(None)
    return sock


def read_session_tickets(sock: ssl.SSLSocket, timeout: float) -> None:
    """Let OpenSSL read the session tickets a TLS 1.3 server sends after the handshake, before
    anything is written.

    websockets' sync client reads in a thread of its own while the caller's thread writes, and an
    OpenSSL connection is not safe for that: a ticket read while the upgrade request is written
    can lose or garble the request, about once in a thousand connections (the handshake then
    waits for an answer that never comes, and the client's cleanup blocks in its reading thread
    until pytest's timeout; or it fails with "did not receive a valid HTTP response"). Nothing
    but tickets comes before the request; TLS 1.2 sends none after the handshake.
    """
    if sock.version() != "TLSv1.3":
        return
    deadline = time.monotonic() + timeout
    sock.setblocking(False)
    try:
        while _read_handshake_messages(sock):
            if sock.session is not None and sock.session.has_ticket:
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return  # no ticket: none will come to race the first write
            select.select([sock], [], [], remaining)
    finally:
        sock.setblocking(True)


def _read_handshake_messages(sock: ssl.SSLSocket) -> bool:
    """Have OpenSSL read what has arrived (on a non-blocking socket); False at end of stream."""
    try:
        data = sock.recv(1)
    except ssl.SSLWantReadError:
        return True
    if data:
        raise AssertionError("the server wrote before the upgrade request")
    return False


def refused(node: Listening, path: str, subprotocols: Sequence[str] = ("v4.channel.k8s.io",),
            listener: str = "secure", cert: tuple[Path, Path] | bool | None = True,
            token: str | None = None, timeout: float = 10) -> tuple[int, bytes]:
    """(status, body) of a handshake the node refuses; the arguments are open_ws's.

    The handshake is websockets' own (its sans-I/O client) driven in this thread: the threaded
    client, on a refusal, closes the connection from the caller's thread while its reading thread
    may still hold data, and then logs an "unexpected internal error" of its own (about once in a
    hundred refusals), which the tests that look for errors in the log would take for the node's.
    """
    offered = [Subprotocol(p) for p in (*subprotocols, *([token_subprotocol(token)] if token else []))]
    protocol = ClientProtocol(parse_uri(ws_url(node, path, listener)), subprotocols=offered or None)
    request = protocol.connect()
    request.headers["User-Agent"] = USER_AGENT
    protocol.send_request(request)
    if listener == "secure":
        pair = (node.certs / "admin.crt", node.certs / "admin.key") if cert is True else cert or None
        sock: socket.socket = tls_connection(node.port("secure"), tls_client_context(node.certs / "ca.crt", pair),
                                             timeout)
    else:
        sock = socket.create_connection((LOOPBACK, node.port(listener)), timeout)
    with sock:
        sock.settimeout(timeout)
        for data in protocol.data_to_send():
            sock.sendall(data)
        while not protocol.events_received() and protocol.handshake_exc is None:
            data = sock.recv(65536)
            if data:
                protocol.receive_data(data)
            else:
                protocol.receive_eof()
    if isinstance(protocol.handshake_exc, InvalidStatus):
        return protocol.handshake_exc.response.status_code, bytes(protocol.handshake_exc.response.body or b"")
    raise AssertionError(f"the handshake to {path} was not refused: {protocol.handshake_exc or 'accepted'}")
