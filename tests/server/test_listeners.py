"""The listening socket: accepted connections get TCP_NODELAY on any event loop."""

from __future__ import annotations

import asyncio
import socket

from kubeletapi.server.listeners import bind


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
