"""The port-forward bridge against a fake WebSocket and real loopback TCP servers."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable, Sequence

import pytest

from kubeletapi.errors import Unavailable
from kubeletapi.streaming.conn import ChannelConn
from kubeletapi.streaming.portforward import serve_port_forward
from kubeletapi.streaming.protocol import PORT_FORWARD, V4_BASE64, V4_BINARY
from tests.streaming.fakes import FakeSocket

LOOPBACK = "127.0.0.1"


class Pod:
    """PodPorts connecting to loopback servers, by their port; others are refused."""

    sandbox_id = "sandbox-1"

    def __init__(self) -> None:
        self.open: list[asyncio.StreamWriter] = []

    async def connect(self, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            reader, writer = await asyncio.open_connection(LOOPBACK, port)
        except OSError as exc:
            raise Unavailable(f"dial tcp {LOOPBACK}:{port}: connection refused") from exc
        self.open.append(writer)
        return reader, writer


class Server:
    """A loopback TCP server: echoes upper-cased, or closes after a greeting; records its peers."""

    def __init__(self, greet_and_close: bool = False) -> None:
        self.greet_and_close = greet_and_close
        self.peers: list[asyncio.StreamWriter] = []
        self.closed = asyncio.Event()
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, LOOPBACK, 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.peers.append(writer)
        try:
            if self.greet_and_close:
                writer.write(b"bye\n")
                await writer.drain()
                return
            while data := await reader.read(1024):
                writer.write(data.upper())
                await writer.drain()
        finally:
            writer.close()
            self.closed.set()

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


Client = Callable[[FakeSocket, list[int]], Awaitable[None]]


def run(client: Client, servers: Sequence[Server | None], proto: str = V4_BINARY,
        idle: float | None = None) -> FakeSocket:
    """Forward one port per entry (None: a port nobody listens on) while `client` plays."""
    ws = FakeSocket()

    async def main() -> None:
        before = asyncio.all_tasks()
        ports = [await s.start() if s else free_port() for s in servers]
        pod = Pod()
        try:
            conn = ChannelConn(ws, PORT_FORWARD[proto], idle)
            bridge = asyncio.create_task(serve_port_forward(conn, ports, pod))
            await asyncio.wait_for(asyncio.gather(bridge, client(ws, ports)), 5)
            assert all(w.is_closing() for w in pod.open), "a TCP connection was left open"
        finally:
            for server in servers:
                if server:
                    await server.stop()
        await asyncio.sleep(0)
        assert asyncio.all_tasks() == before, "the bridge left tasks behind"

    asyncio.run(main())
    return ws


def le(port: int) -> bytes:
    return port.to_bytes(2, "little")


def test_data_both_ways_and_close_tears_down_tcp() -> None:
    server = Server()

    async def client(ws: FakeSocket, ports: list[int]) -> None:
        await ws.wait_sent(2)
        ws.client_send(b"\x00hello")
        await ws.wait_sent(3)
        ws.client_send(b"\x00world")
        await ws.wait_sent(4)
        ws.client_close()
        await asyncio.wait_for(server.closed.wait(), 2)

    ws = run(client, [server])
    first = ws.sent[0]
    assert isinstance(first, bytes)
    port = first[1:]
    assert ws.sent == [b"\x00" + port, b"\x01" + port, b"\x00HELLO", b"\x00WORLD"]


def test_port_prefix_is_little_endian_on_both_channels() -> None:
    servers = [Server(), Server()]

    async def client(ws: FakeSocket, ports: list[int]) -> None:
        await ws.wait_sent(4)
        assert ws.sent == [b"\x00" + le(ports[0]), b"\x01" + le(ports[0]),
                           b"\x02" + le(ports[1]), b"\x03" + le(ports[1])]
        ws.client_send(b"\x02second")
        await ws.wait_sent(5)
        assert ws.sent[4] == b"\x02SECOND"
        ws.client_close()

    run(client, servers)


def test_connect_failure_on_the_error_channel_then_close() -> None:
    seen: list[int] = []

    async def client(ws: FakeSocket, ports: list[int]) -> None:
        seen.extend(ports)
        await ws.wait_sent(3)

    ws = run(client, [None])
    port = seen[0]
    assert ws.sent[2] == (f"\x01error forwarding port {port} to pod sandbox-1, uid : "
                          f"dial tcp 127.0.0.1:{port}: connection refused").encode()
    assert ws.closed_with == 1000  # the only port ended


def test_websocket_closes_once_every_port_ended() -> None:
    server = Server(greet_and_close=True)

    async def client(ws: FakeSocket, ports: list[int]) -> None:
        while ws.closed_with is None:
            await asyncio.sleep(0.005)

    ws = run(client, [server])
    assert ws.sent[2:] == [b"\x00bye\n"]
    assert ws.closed_with == 1000


def test_one_failed_port_does_not_end_the_others() -> None:
    server = Server()

    async def client(ws: FakeSocket, ports: list[int]) -> None:
        await ws.wait_sent(5)  # 4 prefixes + the error of port 2
        assert ws.closed_with is None
        ws.client_send(b"\x00still here")
        await ws.wait_sent(6)
        assert ws.sent[5] == b"\x00STILL HERE"
        ws.client_close()

    run(client, [server, None])


@pytest.mark.parametrize("message", [b"\x01to an error channel", b"\x09unknown", b"\xff\x00", b"\x00"])
def test_ignored_frames(message: bytes) -> None:
    server = Server()

    async def client(ws: FakeSocket, ports: list[int]) -> None:
        await ws.wait_sent(2)
        ws.client_send(message)
        ws.client_send(b"\x00ok")
        await ws.wait_sent(3)
        assert ws.sent[2] == b"\x00OK"
        ws.client_close()

    run(client, [server])


def test_base64() -> None:
    server = Server()

    async def client(ws: FakeSocket, ports: list[int]) -> None:
        await ws.wait_sent(2)
        assert isinstance(ws.sent[0], str) and ws.sent[0].startswith("0")
        ws.client_send("0aGk=")  # "hi"
        await ws.wait_sent(3)
        assert ws.sent[2] == "0SEk="  # "HI"
        ws.client_close()

    run(client, [server], proto=V4_BASE64)


def test_idle_timeout_closes_everything() -> None:
    server = Server()

    async def client(ws: FakeSocket, ports: list[int]) -> None:
        await asyncio.wait_for(server.closed.wait(), 2)

    ws = run(client, [server], idle=0.1)
    assert ws.closed_with == 1000


def test_client_gone_before_the_prefixes() -> None:
    ws = FakeSocket()
    ws.gone = True

    async def main() -> None:
        await asyncio.wait_for(serve_port_forward(ChannelConn(ws, PORT_FORWARD[V4_BINARY]), [1], Pod()), 2)

    asyncio.run(main())
    assert ws.sent == []
