"""The listening socket: accepted connections get TCP_NODELAY on any event loop; it is closed when
the agent stops, whatever else fails."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from kubeletapi.server.listeners import bind
from tests.helpers import Agent, agent_args


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
