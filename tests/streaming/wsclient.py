"""A raw WebSocket client (the websockets library) for the streaming endpoints of an agent or a
FakeNode."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from pathlib import Path

from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect
from websockets.typing import Subprotocol

from tests.helpers import Listening, tls_client_context


def ws_url(node: Listening, path: str, listener: str = "secure") -> str:
    return node.url(listener, path).replace("https://", "wss://", 1).replace("http://", "ws://", 1)


def token_subprotocol(token: str) -> str:
    encoded = base64.urlsafe_b64encode(token.encode()).decode().rstrip("=")
    return f"base64url.bearer.authorization.k8s.io.{encoded}"


def open_ws(node: Listening, path: str, subprotocols: Sequence[str] = ("v4.channel.k8s.io",),
            listener: str = "secure", cert: tuple[Path, Path] | bool | None = True,
            token: str | None = None, timeout: float = 10) -> ClientConnection:
    """Open a WebSocket to `path`, with the admin client certificate unless `cert` says otherwise."""
    ctx = None
    if listener == "secure":
        pair = (node.certs / "admin.crt", node.certs / "admin.key") if cert is True else cert or None
        ctx = tls_client_context(node.certs / "ca.crt", pair)
    offered = [*subprotocols, *([token_subprotocol(token)] if token else [])]
    return connect(ws_url(node, path, listener), ssl=ctx, subprotocols=[Subprotocol(p) for p in offered] or None,
                   proxy=None, open_timeout=timeout, compression=None, max_size=None)


def refused(node: Listening, path: str, **kwargs: object) -> tuple[int, bytes]:
    """(status, body) of a handshake the node refuses."""
    try:
        ws = open_ws(node, path, **kwargs)  # type: ignore[arg-type]
    except InvalidStatus as exc:
        return exc.response.status_code, bytes(exc.response.body or b"")
    ws.close()
    raise AssertionError(f"the handshake to {path} was accepted")
