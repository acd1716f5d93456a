"""The client role of kubeletapi.spdy (exec and attach on containerd's streaming server): the
connection against a transport that records what it is given, and dial() against a real loopback
server that answers the upgrade."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import pytest

from kubeletapi.errors import Unavailable
from kubeletapi.spdy import frames as fr
from kubeletapi.spdy.connection import SpdyConnection
from kubeletapi.spdy.dial import dial


class Recorder:
    """A transport: what was written (as frames), whether it was closed."""

    def __init__(self) -> None:
        self.written = b""
        self.closed = False
        self.paused = False

    def write(self, data: bytes) -> None:
        self.written += data

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False

    def frames(self) -> list[fr.Frame]:
        return list(fr.FrameParser().feed(self.written))


def run(body: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(body())  # type: ignore[arg-type]


def test_streams_replies_data_and_the_end() -> None:
    async def body() -> None:
        transport = Recorder()
        conn = SpdyConnection(transport, None)
        error, stdout = conn.open_stream({"streamtype": ["error"]}), conn.open_stream({"streamtype": ["stdout"]})
        assert (error.id, stdout.id) == (1, 3)
        server = fr.HeaderCompressor()
        conn.data_received(fr.syn_reply(server, 1, {}) + fr.syn_reply(server, 3, {})
                           + fr.data_frame(3, b"out") + fr.data_frame(1, b'{"status":"Success"}')
                           + fr.rst_stream(1, fr.CANCEL) + fr.rst_stream(3, fr.CANCEL) + fr.goaway(0))
        assert await stdout.read() == b"out" and await stdout.read() is None
        assert await error.read() == b'{"status":"Success"}' and await error.read() is None
        assert await conn.next_stream() is None  # a client is never offered streams
        sent = transport.frames()
        assert [(type(f).__name__, getattr(f, "stream_id", None)) for f in sent] == [
            ("SynStream", 1), ("SynStream", 3)]
        assert [f.headers for f in sent if isinstance(f, fr.SynStream)] == [
            {"streamtype": ["error"]}, {"streamtype": ["stdout"]}]
    run(body)


def test_server_pings_are_echoed_and_server_streams_refused() -> None:
    async def body() -> None:
        transport = Recorder()
        conn = SpdyConnection(transport, None)
        conn.data_received(fr.ping(2) + fr.ping(3) + fr.syn_stream(fr.HeaderCompressor(), 2, {"x": ["y"]}))
        assert transport.frames() == [fr.Ping(2), fr.RstStream(2, fr.REFUSED_STREAM)]
    run(body)


def test_stdin_half_close_and_close() -> None:
    async def body() -> None:
        transport = Recorder()
        conn = SpdyConnection(transport, None)
        stdin, stdout = conn.open_stream({"streamtype": ["stdin"]}), conn.open_stream({"streamtype": ["stdout"]})
        await stdin.write(b"typed")
        await stdin.close()
        conn.connection_lost(None)  # the server went away: close() does not wait for it
        await conn.close()
        sent = transport.frames()[2:]
        assert sent == [fr.Data(1, b"typed"), fr.Data(1, b"", fin=True)]
        assert await stdout.read() is None
    run(body)


def test_close_resets_unfinished_streams_and_says_goaway() -> None:
    async def body() -> None:
        transport = Recorder()
        conn = SpdyConnection(transport, None)
        stdin = conn.open_stream({"streamtype": ["stdin"]})
        await stdin.close()
        conn.open_stream({"streamtype": ["stdout"]})
        closing = asyncio.create_task(conn.close())
        await asyncio.sleep(0)
        conn.connection_lost(None)
        await closing
        assert transport.frames()[3:] == [fr.RstStream(3, fr.CANCEL), fr.GoAway(0, fr.GOAWAY_OK)]
        assert transport.closed
    run(body)


class Server:
    """A loopback server that answers one upgrade with `answer`, then closes once the client sent
    anything more (or left)."""

    def __init__(self, answer: bytes) -> None:
        self.answer = answer
        self.requests: list[bytes] = []
        self.handlers: list[asyncio.Task[None]] = []
        self.server: asyncio.Server | None = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.handlers.append(asyncio.current_task())  # type: ignore[arg-type]
        try:
            self.requests.append(await reader.readuntil(b"\r\n\r\n"))
            writer.write(self.answer)
            await writer.drain()
            await reader.read(1)
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def __aenter__(self) -> int:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()
        await asyncio.gather(*self.handlers)


def test_dial_upgrades_and_hands_over_early_frames() -> None:
    async def body() -> None:
        answer = (b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
                  b"X-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n" + fr.ping(2))
        server = Server(answer)
        async with server as port:
            conn = await dial("127.0.0.1", port, "/exec/token", "v4.channel.k8s.io", 5)
            conn.open_stream({"streamtype": ["error"]})
            await conn.close()
        head = server.requests[0].decode()
        assert head.startswith("POST /exec/token HTTP/1.1\r\n")
        assert "Upgrade: SPDY/3.1\r\n" in head and "X-Stream-Protocol-Version: v4.channel.k8s.io\r\n" in head
    run(body)


@pytest.mark.parametrize(("answer", "message"), [
    (b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found", "'HTTP/1.1 404 Not Found': not found"),
    (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v3.channel.k8s.io\r\n\r\n",
     "with version 'v3.channel.k8s.io', not SPDY/3.1 with v4.channel.k8s.io"),
])
def test_dial_refusals(answer: bytes, message: str) -> None:
    async def body() -> None:
        async with Server(answer) as port:
            with pytest.raises(Unavailable, match=message.replace("(", r"\(").replace(")", r"\)")):
                await dial("127.0.0.1", port, "/exec/token", "v4.channel.k8s.io", 5)
    run(body)


def test_dial_to_nothing_is_unavailable() -> None:
    async def body() -> None:
        async with Server(b"") as port:
            pass
        with pytest.raises(Unavailable, match="cannot connect"):
            await dial("127.0.0.1", port, "/", "v4.channel.k8s.io", 5)
    run(body)
