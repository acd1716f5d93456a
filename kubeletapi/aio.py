"""Small asyncio helpers shared by every component that owns background tasks."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable


async def cancel_and_wait(tasks: Iterable[asyncio.Task[object]] | Iterable[asyncio.Task[None]]) -> None:
    """Cancel the tasks and wait until each has finished (its CancelledError or error swallowed)."""
    pending = list(tasks)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
