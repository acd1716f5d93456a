"""The API client's errors say what failed even when the transport's exception has no text (a
connection reset is httpx.ReadError('')): the log line then names the exception type."""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from kubeletapi.apiclient.client import ApiClient
from kubeletapi.clock import RealClock
from kubeletapi.errors import Unavailable
from kubeletapi.kubeconfig import ClientConfig


@pytest.fixture
def resetting_server() -> Iterator[str]:
    """A loopback server that reads a request and answers with a TCP reset."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.1)  # accept() wakes to see `stop`
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(5)
            conn.recv(65536)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        listener.close()
        thread.join(5)


@pytest.mark.parametrize("call", ["get", "watch"])
def test_a_reset_connection_is_named(resetting_server: str, call: str) -> None:
    async def attempt() -> str:
        client = ApiClient(ClientConfig(server=resetting_server), RealClock())
        try:
            if call == "get":
                await client.get("/api/v1/pods")
            else:
                async for _ in client.watch("/api/v1/pods", "1"):
                    pass
        except Unavailable as exc:
            return str(exc)
        finally:
            await client.close()
        return "no error"

    message = asyncio.run(attempt())
    method = "GET" if call == "get" else "WATCH"
    assert message == f"{method} {resetting_server}/api/v1/pods: ReadError"
