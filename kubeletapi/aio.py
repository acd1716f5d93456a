"""Small asyncio helpers shared by every component that owns background tasks or reads a body."""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import AsyncIterable, Iterable

from kubeletapi.errors import InvalidInput


async def cancel_and_wait(tasks: Iterable[asyncio.Task[object]] | Iterable[asyncio.Task[None]]) -> None:
    """Cancel the tasks and wait until each has finished (its CancelledError or error swallowed)."""
    pending = list(tasks)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)


async def read_at_most(chunks: AsyncIterable[bytes], limit: int, too_large: str) -> bytes:
    """The whole stream, or InvalidInput(too_large) as soon as it passes `limit` bytes (the rest
    is never read)."""
    body = bytearray()
    async for chunk in chunks:
        body += chunk
        if len(body) > limit:
            raise InvalidInput(too_large)
    return bytes(body)


async def wait_event(event: asyncio.Event, timeout_s: float) -> bool:
    """Wait for `event` at most `timeout_s` seconds; whether it was set.

    Not asyncio.wait_for: on Python 3.11 it runs the wait as a task of its own and returns that
    task's result when the caller is cancelled just as the event is set, swallowing the
    cancellation (CPython gh-86296), so a loop that waits this way could never be stopped (an
    agent hung on shutdown while pods were being deleted). asyncio.timeout cancels the caller
    itself and tells its own cancellation from anyone else's.
    """
    try:
        async with asyncio.timeout(timeout_s):
            await event.wait()
    except TimeoutError:
        return False
    return True


async def import_off_loop(*modules: str) -> None:
    """Import the modules not loaded yet in a worker thread, so the event loop keeps running.

    For what kubeletapi loads on first use only (grpc for a gRPC probe, cryptography for a client
    certificate): importing them takes 100-300 ms of module code that would otherwise run on the
    loop, stalling every request, probe and stream for that long. Once loaded, the check is a
    dictionary lookup, and the caller's own `import` statements find the modules in sys.modules.
    """
    missing = [name for name in modules if name not in sys.modules]
    if missing:
        await asyncio.to_thread(lambda: [importlib.import_module(name) for name in missing])
