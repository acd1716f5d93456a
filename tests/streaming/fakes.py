"""Hand-written fakes for the streaming bridges: a WebSocket and a StreamSession."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

from kubeletapi.errors import KubeletError
from kubeletapi.runtime.streaming import StreamOptions
from kubeletapi.streaming.conn import Disconnected


class FakeSocket:
    """A WebSocket whose client side the test drives: `client_send`/`client_close` and `sent`."""

    def __init__(self) -> None:
        self.inbox: asyncio.Queue[bytes | str | None] = asyncio.Queue()
        self.sent: list[bytes | str] = []
        self.closed_with: int | None = None
        self.receives = 0  # how many times the server asked for a message
        self.gone = False
        self._changed = asyncio.Event()

    # the client
    def client_send(self, message: bytes | str) -> None:
        self.inbox.put_nowait(message)

    def client_close(self) -> None:
        """The client vanishes: reads end, writes fail."""
        self.gone = True
        self.inbox.put_nowait(None)

    async def wait_sent(self, count: int, timeout: float = 2) -> list[bytes | str]:
        async def reached() -> None:
            while len(self.sent) < count:
                self._changed.clear()
                await self._changed.wait()

        await asyncio.wait_for(reached(), timeout)
        return self.sent

    # the server's WebSocket
    async def receive(self) -> bytes | str | None:
        self.receives += 1
        message = await self.inbox.get()
        if message is None:
            self.inbox.put_nowait(None)
        return message

    async def send(self, message: bytes | str) -> None:
        if self.gone:
            raise Disconnected
        self.sent.append(message)
        self._changed.set()

    async def close(self, code: int = 1000) -> None:
        if self.closed_with is None:
            self.closed_with = code
        self._changed.set()


class FakeSession:
    """A StreamSession: the test feeds output and ends it; stdin, resizes and close are recorded."""

    def __init__(self, opts: StreamOptions | None = None) -> None:
        self.opts = opts or StreamOptions()
        self._output: asyncio.Queue[tuple[int, bytes] | BaseException | None] = asyncio.Queue()
        self.exit: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.stdin: list[bytes] = []
        self.stdin_closed = False
        self.resizes: list[tuple[int, int]] = []
        self.closed = 0
        self.stdin_gate = asyncio.Event()  # write_stdin waits for it (backpressure tests)
        self.stdin_gate.set()
        self.stdin_entered = asyncio.Event()

    # the test
    def emit(self, channel: int, data: bytes) -> None:
        self._output.put_nowait((channel, data))

    def fail(self, exc: BaseException) -> None:
        self._output.put_nowait(exc)

    def end(self, exit_code: int) -> None:
        self._output.put_nowait(None)
        self.exit.set_result(exit_code)

    # the session
    async def write_stdin(self, data: bytes) -> None:
        self.stdin_entered.set()
        await self.stdin_gate.wait()
        self.stdin.append(data)

    async def close_stdin(self) -> None:
        self.stdin_closed = True

    async def output(self) -> AsyncIterator[tuple[int, bytes]]:
        while True:
            item = await self._output.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    async def resize(self, width: int, height: int) -> None:
        self.resizes.append((width, height))

    async def wait(self) -> int:
        return await self.exit

    async def close(self) -> None:
        self.closed += 1
        if not self.exit.done():
            self.exit.set_result(137)


class FakeContainer:
    """ContainerStreams handing out one FakeSession (or refusing)."""

    def __init__(self, refuse: KubeletError | None = None) -> None:
        self.refuse = refuse
        self.session: FakeSession | None = None
        self.calls: list[tuple[str, tuple[str, ...], StreamOptions]] = []

    async def exec(self, cmd: Sequence[str], opts: StreamOptions) -> FakeSession:
        self.calls.append(("exec", tuple(cmd), opts))
        return self._open(opts)

    async def attach(self, opts: StreamOptions) -> FakeSession:
        self.calls.append(("attach", (), opts))
        return self._open(opts)

    def _open(self, opts: StreamOptions) -> FakeSession:
        if self.refuse is not None:
            raise self.refuse
        self.session = FakeSession(opts)
        return self.session
