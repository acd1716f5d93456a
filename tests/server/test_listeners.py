"""The listening socket: accepted connections get TCP_NODELAY on any event loop; it is closed when
the agent stops, whatever else fails."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import psutil
import pytest

from kubeletapi.server.listeners import bind
from tests.fakehost import FakeHost, FakeNode
from tests.helpers import Agent, agent_args, tls_client_context


def test_accepted_connections_have_nodelay() -> None:
    """asyncio sets TCP_NODELAY on accepted sockets only when the listener is IPPROTO_TCP; without
    it a response written in two parts waits ~40 ms for the peer's delayed ACK."""

    async def scenario() -> int:
        seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                sock = transport.get_extra_info("socket")
                seen.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        listener = bind("127.0.0.1", 0, "test")
        server = await asyncio.get_running_loop().create_server(Probe, sock=listener)
        port = listener.getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        value = await asyncio.wait_for(seen, 5)
        writer.close()
        server.close()
        await server.wait_closed()
        return value

    assert asyncio.run(scenario()) != 0


def test_a_failing_part_does_not_keep_the_listeners_open(tmp_path: Path) -> None:
    """An agent whose stats stop fails still stops the pods, closes every listening socket, and
    then says what failed (the error of the first part that failed)."""
    agent = Agent(agent_args(tmp_path))
    kubelet = agent.kubelet
    assert kubelet.stats is not None and kubelet.pods is not None

    async def broken() -> None:
        raise RuntimeError("stats would not stop")

    kubelet.stats.stop = broken  # type: ignore[method-assign]
    secure = agent.port("secure")
    socks = [listener.sock for listener in kubelet.listeners.values()]
    try:
        with pytest.raises(RuntimeError, match="stats would not stop"):
            agent.close()
        left_open = [sock.getsockname() for sock in socks if sock.fileno() != -1]
    finally:
        for sock in socks:
            sock.close()  # a failed check must not also leak them into later tests
    assert len(socks) == 3 and left_open == []
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", secure)) != 0


def test_an_idle_tls_client_connection_is_cut_when_the_agent_stops(tmp_path: Path) -> None:
    """A client keeping an idle keep-alive TLS connection (a pooled one) never answers the
    server's close_notify: the stop cuts it instead of leaving the server's socket open beyond the
    loop that owns it (found later by the garbage collector, unclosed)."""
    node = FakeNode(agent_args(tmp_path))
    port = node.port("secure")
    ctx = tls_client_context(node.certs / "ca.crt", (node.certs / "admin.crt", node.certs / "admin.key"))
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
            ctx.wrap_socket(raw, server_hostname="127.0.0.1") as conn:
        conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: node\r\n\r\n")
        assert conn.recv(4096).startswith(b"HTTP/1.1 200 OK")
        assert len(server_sides(port)) == 1
        node.close()  # the client stays idle: it reads nothing, answers nothing
        assert server_sides(port) == []


def server_sides(port: int) -> list[str]:
    """This process's TCP sockets on `port` other than the listening one: the server's side of
    its connections, with their states."""
    return [c.status for c in psutil.Process().net_connections(kind="tcp")
            if c.laddr and c.laddr.port == port and c.status != psutil.CONN_LISTEN]


def test_a_request_in_flight_at_stop_finishes_over_tls(tmp_path: Path) -> None:
    """The stop closes idle connections at once but lets a request under way finish: its response
    arrives whole, with `Connection: close`, after the listening socket is closed."""
    started, release = threading.Event(), threading.Event()

    async def slow(namespace: str, pod: str, uid: str | None, container: str, cmd: Sequence[str]) -> bytes:
        started.set()
        while not release.is_set():  # the test releases it once the stop has begun
            await asyncio.sleep(0.01)
        return b"finished\n"

    node = FakeNode(agent_args(tmp_path), FakeHost(run_in_container=slow))
    port = node.port("secure")
    ctx = tls_client_context(node.certs / "ca.crt", (node.certs / "admin.crt", node.certs / "admin.key"))
    stopper = threading.Thread(target=node.close)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
                ctx.wrap_socket(raw, server_hostname="127.0.0.1") as conn:
            conn.sendall(b"POST /run/ns/p/c?cmd=true HTTP/1.1\r\nHost: node\r\nContent-Length: 0\r\n\r\n")
            assert started.wait(10)
            stopper.start()
            while _accepts(port):  # the stop has begun once the listening socket is gone
                time.sleep(0.01)
            release.set()
            answer = b""
            while chunk := conn.recv(4096):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 200 OK"), answer
        assert b"connection: close" in answer.lower() and answer.endswith(b"finished\n"), answer
    finally:
        release.set()
        if stopper.ident is not None:
            stopper.join(30)
        node.close()  # idempotent: stops the node if the test failed before its stop


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True
