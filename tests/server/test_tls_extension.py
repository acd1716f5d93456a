"""The ASGI TLS extension through real handshakes on our uvicorn protocol classes."""

from __future__ import annotations

import asyncio
import datetime as dt
import ipaddress
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.types import Receive, Scope, Send
from websockets.sync.client import connect

from kubeletapi.pki import NodePKI, ensure_pki
from kubeletapi.server.listeners import Listener, ListenerSpec
from kubeletapi.server.tls import server_context
from tests.helpers import LoopThread, free_port, tls_client_context
from tests.streaming.wsclient import tls_connection

SEEN: list[dict[str, Any]] = []


async def echo_tls(scope: Scope, receive: Receive, send: Send) -> None:
    """Records the TLS extension of every HTTP and WebSocket scope."""
    SEEN.append({"type": scope["type"], **scope.get("extensions", {}).get("tls", {"absent": True})})
    if scope["type"] == "websocket":
        await receive()
        await send({"type": "websocket.accept"})
        await send({"type": "websocket.close"})
        return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[NodePKI, int]]:
    pki = NodePKI.under(tmp_path)
    ensure_pki(pki, "tls-node", [ipaddress.ip_address("127.0.0.1")], dt.datetime.now(dt.UTC))
    ctx = server_context(pki.serving_crt, pki.serving_key, pki.ca_crt)
    loop = LoopThread()
    port = free_port()

    async def make() -> Listener:
        listener = Listener(ListenerSpec("secure", "127.0.0.1", port, echo_tls, ctx))
        await listener.start()
        return listener

    listener = loop.run(make())
    SEEN.clear()
    yield pki, port
    loop.run(listener.stop())  # type: ignore[attr-defined]
    loop.close()


def test_client_certificate_in_scope(served: tuple[NodePKI, int]) -> None:
    pki, port = served
    ctx = tls_client_context(pki.ca_crt, (pki.admin_crt, pki.admin_key))
    with httpx.Client(verify=ctx) as client:
        for _ in range(2):  # two requests on one keep-alive connection
            assert client.get(f"https://127.0.0.1:{port}/").text == "ok"
    assert len(SEEN) == 2
    ext = SEEN[0]
    assert ext["client_cert_name"] == "CN=kubeletapi-admin,O=system:masters"
    assert ext["client_cert_chain"][0] == pki.admin_crt.read_text()
    assert ext["tls_version"] in (0x0303, 0x0304)
    assert ext["client_cert_error"] is None


def test_no_client_certificate(served: tuple[NodePKI, int]) -> None:
    pki, port = served
    with httpx.Client(verify=tls_client_context(pki.ca_crt)) as client:
        client.get(f"https://127.0.0.1:{port}/")
    assert SEEN[0]["client_cert_chain"] == []
    assert SEEN[0]["client_cert_name"] is None


def test_websocket_scope_has_the_extension(served: tuple[NodePKI, int]) -> None:
    pki, port = served
    ctx = tls_client_context(pki.ca_crt, (pki.admin_crt, pki.admin_key))
    # the TLS connection is made by wsclient (its session tickets read before websockets writes)
    with connect(f"ws://127.0.0.1:{port}/ws", sock=tls_connection(port, ctx, 5), open_timeout=5) as ws:
        ws.close()
    assert SEEN[0]["type"] == "websocket"
    assert SEEN[0]["client_cert_name"] == "CN=kubeletapi-admin,O=system:masters"


__all__ = ["asyncio"]
