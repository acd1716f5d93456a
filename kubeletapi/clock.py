"""Injected time: every loop and cache takes a Clock so tests can move time by hand."""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    """Wall-clock and monotonic time, and sleeping on the monotonic clock."""

    def now(self) -> float:
        """Seconds since the Unix epoch (wall clock)."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Sleep for `seconds` of this clock's time."""
        ...


class RealClock:
    """The system clocks."""

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class FakeClock:
    """A clock that only moves when a test calls advance().

    sleep() returns once the fake time has passed its deadline; it polls, so advance() may be
    called from another thread (a test driving an agent that runs on its own loop). A sleep's
    deadline is set when it starts: a test that must move time past a sleep waits until
    `sleepers` says the sleep has begun, then advances.
    """

    def __init__(self, start: float | None = None) -> None:
        # Starts at the real time: certificates made with it must also pass real TLS handshakes.
        self._wall = time.time() if start is None else start
        self._mono = 1000.0
        self.sleepers = 0  # sleeps in progress

    def now(self) -> float:
        return self._wall

    def monotonic(self) -> float:
        return self._mono

    def advance(self, seconds: float) -> None:
        self._wall += seconds
        self._mono += seconds

    async def sleep(self, seconds: float) -> None:
        deadline = self._mono + seconds
        self.sleepers += 1
        try:
            while self._mono < deadline:  # noqa: ASYNC110 - polled: advance() may come from another thread
                await asyncio.sleep(0.005)
        finally:
            self.sleepers -= 1
