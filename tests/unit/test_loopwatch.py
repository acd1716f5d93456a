"""LoopWatch on a real event loop: a coroutine that holds the loop is measured, named by its stack,
and makes the check fail for a while."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from kubeletapi.clock import RealClock
from kubeletapi.loopwatch import LoopWatch


def hold_the_loop_with_a_blocking_call(seconds: float) -> None:
    time.sleep(seconds)  # what a bad step does: block the loop's thread


def test_a_blocked_loop_is_measured_named_and_unhealthy(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="kubeletapi.loopwatch")
    lags: list[float] = []
    watch = LoopWatch(RealClock(), lags.append, interval=0.02, stack_after=0.1, unhealthy_after=0.3,
                      unhealthy_for=1.0)
    seen: dict[str, str | None] = {}

    async def healthy_within(seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while watch.check() is not None:
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.02)
        return True

    async def main() -> None:
        task = asyncio.create_task(watch.run())
        await asyncio.sleep(0.2)
        # On a loaded machine the OS itself may hold this process past 0.3 s now and then, which
        # the watch rightly reports: begin from a healthy state, however long that takes.
        seen["healthy before"] = "yes" if await healthy_within(10) else None
        hold_the_loop_with_a_blocking_call(0.5)
        await asyncio.sleep(0.1)
        seen["after"] = watch.check()
        seen["healthy later"] = "yes" if await healthy_within(10) else None
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(main())
    assert seen["healthy before"] == "yes"
    assert seen["after"] == "the event loop was blocked for over 0.3s in the last 1s"
    assert seen["healthy later"] == "yes"
    assert max(lags) >= 0.45  # the 0.5 s hold, seen by the heartbeat
    messages = [r.getMessage() for r in caplog.records]
    blocked = [m for m in messages
               if m.startswith("the event loop has been blocked for") and "hold_the_loop_with_a_blocking_call" in m]
    assert len(blocked) == 1 and "time.sleep" in blocked[0]
    ended = [float(m.split()[6]) for m in messages if m.startswith("the event loop was blocked for")]
    assert max(ended) >= 450


def test_check_during_a_stall() -> None:
    watch = LoopWatch(RealClock(), interval=0.02, unhealthy_after=0.2)

    async def main() -> str | None:
        task = asyncio.create_task(watch.run())
        await asyncio.sleep(0.1)
        result: list[str | None] = []
        # Another thread asks while the loop is held (as a health check on another thread would).
        import threading

        def ask() -> None:
            time.sleep(0.4)
            result.append(watch.check())

        asker = threading.Thread(target=ask)
        asker.start()
        hold_the_loop_with_a_blocking_call(1.0)
        asker.join()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return result[0]

    reason = asyncio.run(main())
    assert reason is not None and reason.startswith("the event loop has been blocked for 0.")
