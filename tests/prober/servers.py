"""Local hostile and well-behaved targets for probe handler tests (127.0.0.1 only)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@dataclass
class RawServer:
    """A TCP server on 127.0.0.1 running `handler` per connection; keeps each request head."""

    port: int = 0
    heads: list[bytes] = field(default_factory=list)
    connections: int = 0

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@contextlib.asynccontextmanager
async def raw_server(handler: Handler) -> AsyncIterator[RawServer]:
    info = RawServer()
    tasks: set[asyncio.Task[None]] = set()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        info.connections += 1
        task = asyncio.current_task()
        assert task is not None
        tasks.add(task)
        try:
            with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
                info.heads.append(await reader.readuntil(b"\r\n\r\n"))
                await handler(reader, writer)
        finally:
            writer.transport.abort()
            tasks.discard(task)

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    info.port = server.sockets[0].getsockname()[1]
    try:
        yield info
    finally:
        await asyncio.sleep(0.01)  # connections just accepted get their handler task
        server.close()
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await server.wait_closed()


def respond(status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> Handler:
    """A plain response with Content-Length."""

    async def handler(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        writer.write(f"HTTP/1.1 {status} X\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body)
        await writer.drain()

    return handler


async def never_answer(reader: asyncio.StreamReader, _: asyncio.StreamWriter) -> None:
    await asyncio.sleep(3600)
