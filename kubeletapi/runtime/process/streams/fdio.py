"""Non-blocking fd plumbing for the stream sessions: owned fds and their event-loop waits, the
output iterator, and stdin writes with backpressure. No threads: everything waits on the loop."""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Awaitable, Callable, Sequence


def resolve(fut: asyncio.Future[bool | None], value: bool | None) -> None:
    if not fut.done():
        fut.set_result(value)


class Fds:
    """The fds a session owns and the event loop callbacks on them; the only place that closes
    them, after removing their callbacks (a closed number may be reused at once)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.open: set[int] = set()
        self.waiters: set[asyncio.Future[bool | None]] = set()

    def own(self, fd: int) -> int:
        self.open.add(fd)
        return fd

    def close(self, fd: int | None) -> None:
        if fd is None or fd not in self.open:
            return
        self.loop.remove_reader(fd)
        self.loop.remove_writer(fd)
        self.open.discard(fd)
        os.close(fd)

    def close_all(self) -> None:
        for fd in list(self.open):
            self.close(fd)

    def wake_all(self) -> None:
        """Every pending wait returns None: the session's state changed, look again."""
        for fut in list(self.waiters):
            resolve(fut, None)

    async def wait(self, read: Sequence[int], write: Sequence[int] = (), limit_s: float | None = None) -> bool | None:
        """True when one of the fds is ready, False after `limit_s`, None when woken."""
        fut: asyncio.Future[bool | None] = self.loop.create_future()
        for fd in read:
            self.loop.add_reader(fd, resolve, fut, True)
        for fd in write:
            self.loop.add_writer(fd, resolve, fut, True)
        timer = self.loop.call_later(limit_s, resolve, fut, False) if limit_s is not None else None
        self.waiters.add(fut)
        try:
            return await fut
        finally:
            self.waiters.discard(fut)
            if timer is not None:
                timer.cancel()
            for fd in read:
                if fd in self.open:
                    self.loop.remove_reader(fd)
            for fd in write:
                if fd in self.open:
                    self.loop.remove_writer(fd)


class Output:
    """The async iterator output() returns: one consumer per session."""

    def __init__(self, step: Callable[[], Awaitable[tuple[int, bytes] | None]]) -> None:
        self._step = step

    def __aiter__(self) -> Output:
        return self

    async def __anext__(self) -> tuple[int, bytes]:
        chunk = await self._step()
        if chunk is None:
            raise StopAsyncIteration
        return chunk


class Stdin:
    """Writing to a non-blocking fd with backpressure; a reader that went away ends it quietly."""

    def __init__(self, fds: Fds, fd: int | None) -> None:
        self.fds = fds
        self.fd = fd
        self.lock = asyncio.Lock()
        self.last = b"\n"  # the last byte written (a tty's close_stdin needs to know)

    async def write(self, data: bytes) -> None:
        if self.fd is None or not data:
            return
        async with self.lock:
            view = memoryview(data)
            while view and self.fd is not None and self.fd in self.fds.open:
                try:
                    n = os.write(self.fd, view)
                except BlockingIOError:
                    if await self.fds.wait((), (self.fd,)) is None:
                        return  # the session is closing
                    continue
                except OSError as exc:  # EPIPE: the reader exited; EIO: a pty whose slave is gone
                    if exc.errno not in (errno.EPIPE, errno.EIO, errno.ENXIO):
                        raise
                    n = 0
                if n == 0:  # a pty master says so once its slave side is closed
                    self.fd = None
                    return
                self.last = bytes(view[n - 1 : n])
                view = view[n:]
