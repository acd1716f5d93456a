"""kubeletapi.aio: waiting for an event with a timeout, cancelling tasks, reading a bounded body."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from kubeletapi.aio import cancel_and_wait, import_off_loop, read_at_most, wait_event
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


GATES: list[threading.Event] = []  # the gate the slow module of the next test waits on


def test_import_off_loop_runs_the_import_while_the_loop_keeps_going(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The module's code waits until a task on the loop lets it finish: imported on the loop
    # itself, it would wait in vain and fail.
    gate = threading.Event()
    seen: dict[str, object] = {}
    (tmp_path / "kla_slow_module.py").write_text(
        "import threading\n"
        "from tests.unit.test_aio import GATES\n"
        "THREAD = threading.current_thread().name\n"
        "if not GATES[0].wait(10):\n"
        "    raise RuntimeError('the loop never ran during the import')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys.modules[__name__], "GATES", [gate])
    monkeypatch.delitem(sys.modules, "kla_slow_module", raising=False)

    async def go() -> None:
        async def open_gate() -> None:
            await asyncio.sleep(0)
            seen["opened_on_loop"] = True
            gate.set()

        opener = asyncio.create_task(open_gate())
        await import_off_loop("kla_slow_module")
        await opener

    asyncio.run(go())
    module = sys.modules.pop("kla_slow_module")
    assert seen == {"opened_on_loop": True}
    importer = module.THREAD
    assert importer != threading.main_thread().name


def test_import_off_loop_starts_no_thread_for_loaded_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    async def no_thread(*args: object) -> None:
        raise AssertionError("a thread for modules already loaded")

    monkeypatch.setattr(asyncio, "to_thread", no_thread)
    asyncio.run(import_off_loop("json", "asyncio"))

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
