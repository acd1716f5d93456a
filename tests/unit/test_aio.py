"""kubeletapi.aio: waiting for an event with a timeout, cancelling tasks, reading a bounded body."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from kubeletapi.aio import cancel_and_wait, read_at_most, wait_event
from kubeletapi.errors import InvalidInput


async def _wait_for(event: asyncio.Event, timeout_s: float) -> bool:
    """The way the loops waited before: asyncio.wait_for (kept here to show the test can fail)."""
    try:
        await asyncio.wait_for(event.wait(), timeout_s)
    except TimeoutError:
        return False
    return True


def _stops_when_cancelled_as_woken(wait: Callable[[asyncio.Event, float], Awaitable[bool]]) -> bool:
    """A loop waiting on an event is cancelled in the same turn as the event is set (what a
    shutdown during pod changes does): whether the cancellation ends it."""

    async def go() -> bool:
        event = asyncio.Event()

        async def loop() -> None:
            while True:
                await wait(event, 10)
                event.clear()

        task = asyncio.create_task(loop())
        await asyncio.sleep(0)  # the loop is waiting
        event.set()
        task.cancel()
        try:
            async with asyncio.timeout(1):
                await cancel_and_wait([task])
        except TimeoutError:
            task.cancel()  # the first cancellation was swallowed: end it for the test's sake
            await cancel_and_wait([task])
            return False
        return task.cancelled()

    return asyncio.run(go())


def test_a_cancellation_as_the_event_is_set_ends_the_waiter() -> None:
    assert _stops_when_cancelled_as_woken(wait_event)


@pytest.mark.skipif(sys.version_info >= (3, 12),
                    reason="asyncio.wait_for swallows this cancellation on Python 3.11 only (gh-86296)")
def test_asyncio_wait_for_swallows_it_on_3_11() -> None:
    """Why wait_event exists: the same loop with asyncio.wait_for is never stopped."""
    assert not _stops_when_cancelled_as_woken(_wait_for)


def test_wait_event_says_whether_the_event_was_set() -> None:
    async def go() -> tuple[bool, bool]:
        event = asyncio.Event()
        timed_out = await wait_event(event, 0.01)
        asyncio.get_running_loop().call_later(0.01, event.set)
        return timed_out, await wait_event(event, 5)

    assert asyncio.run(go()) == (False, True)



async def _stream(chunks: list[bytes], read: list[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        read.append(chunk)
        yield chunk


def test_read_at_most_reads_a_body_up_to_the_limit() -> None:
    read: list[bytes] = []
    assert asyncio.run(read_at_most(_stream([b"ab", b"", b"cd"], read), 4, "too large")) == b"abcd"
    assert asyncio.run(read_at_most(_stream([], read), 4, "too large")) == b""


def test_read_at_most_stops_at_the_chunk_that_passes_the_limit() -> None:
    read: list[bytes] = []
    with pytest.raises(InvalidInput) as raised:
        asyncio.run(read_at_most(_stream([b"abc", b"de", b"fg"], read), 4, "too large"))
    assert str(raised.value) == "too large"
    assert read == [b"abc", b"de"]  # the rest is never read
