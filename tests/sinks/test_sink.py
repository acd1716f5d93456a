"""The sink's loop with a scripted writer: points flow from observed cycles to the writer in order,
failures are retried after a back-off, the buffer bound drops the oldest, rejected batches are
dropped, and neither a failing nor a hanging InfluxDB ever holds up `observe`."""

from __future__ import annotations

import asyncio
import gzip
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from types import SimpleNamespace
from typing import cast

import pytest

from kubeletapi.clock import RealClock
from kubeletapi.errors import KubeletError
from kubeletapi.sinks.influxdb import Outcome, WriteResult
from kubeletapi.sinks.sink import InfluxSink, SinkCounts
from kubeletapi.stats.snapshot import Snapshot

BACKOFF = (0.02, 0.08)


class ScriptedWriter:
    """Answers from `script` (then WRITTEN); `hang` makes every write wait forever."""

    target = "scripted"

    def __init__(self, script: Sequence[Outcome | None] = (), hang: bool = False) -> None:
        self.script = deque(script)
        self.hang = hang
        self.attempts: list[tuple[float, list[bytes]]] = []
        self.written: list[bytes] = []
        self.closed = False

    async def write(self, gzipped: bytes) -> WriteResult:
        lines = gzip.decompress(gzipped).splitlines()
        self.attempts.append((time.monotonic(), lines))
        if self.hang:
            await asyncio.Event().wait()
        outcome = self.script.popleft() if self.script else Outcome.WRITTEN
        if outcome is None:
            raise ValueError("a bug in the writer")
        if outcome is Outcome.WRITTEN:
            self.written += lines
        return WriteResult(outcome, "" if outcome is Outcome.WRITTEN else f"scripted {outcome.value}")

    async def close(self) -> None:
        self.closed = True


def cycle(n: int) -> Snapshot:
    return cast(Snapshot, SimpleNamespace(generation=n))


def two_lines(snap: Snapshot) -> list[bytes]:
    return [f"m{snap.generation} a=1i".encode(), f"m{snap.generation} b=2i".encode()]


async def until(check: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.005)


def run(body: Callable[[InfluxSink, ScriptedWriter], Awaitable[None]], writer: ScriptedWriter,
        batch: int = 100, buffer: int = 1000,
        encode: Callable[[Snapshot], list[bytes]] = two_lines) -> SinkCounts:
    async def main() -> SinkCounts:
        sink = InfluxSink(writer, RealClock(), batch, buffer, encode=encode, backoff_s=BACKOFF)
        await sink.start()
        try:
            await body(sink, writer)
        finally:
            await sink.stop()
        assert writer.closed
        return sink.counts()

    return asyncio.run(main())


def test_points_of_every_cycle_are_written_in_order() -> None:
    async def body(sink: InfluxSink, writer: ScriptedWriter) -> None:
        for n in range(1, 4):
            sink.observe(cycle(n))
            await until(lambda n=n: len(writer.written) == 2 * n)  # type: ignore[misc]

    writer = ScriptedWriter()
    counts = run(body, writer)
    assert writer.written == two_lines(cycle(1)) + two_lines(cycle(2)) + two_lines(cycle(3))
    assert counts == SinkCounts(written=6, retried=0, dropped_buffer_full=0, dropped_rejected=0, buffered=0)


def test_failed_writes_are_retried_after_a_growing_backoff() -> None:
    async def body(sink: InfluxSink, writer: ScriptedWriter) -> None:
        sink.observe(cycle(1))
        await until(lambda: len(writer.written) == 2)

    writer = ScriptedWriter([Outcome.RETRY, Outcome.RETRY, Outcome.RETRY])
    counts = run(body, writer)
    assert [lines for _, lines in writer.attempts] == [two_lines(cycle(1))] * 4
    gaps = [b[0] - a[0] for a, b in zip(writer.attempts, writer.attempts[1:], strict=False)]
    assert gaps[0] >= 0.02 and gaps[1] >= 0.04 and gaps[2] >= 0.08  # 20 ms doubling, capped at 80 ms
    assert counts.retried == 6 and counts.written == 2 and counts.buffered == 0


def test_points_pile_up_while_failing_and_the_oldest_go_beyond_the_bound() -> None:
    async def body(sink: InfluxSink, writer: ScriptedWriter) -> None:
        for n in range(1, 7):  # 12 points into room for 4, while every write fails
            sink.observe(cycle(n))
            await until(lambda n=n: sink.counts().buffered + sink.counts().dropped_buffer_full >= 2 * n)  # type: ignore[misc]
        assert sink.counts().buffered == 4
        writer.script.clear()  # InfluxDB is back
        await until(lambda: sink.counts().buffered == 0)

    writer = ScriptedWriter([Outcome.RETRY] * 1000)
    counts = run(body, writer, batch=2, buffer=4)
    assert counts.dropped_buffer_full == 8 and counts.written == 4
    assert writer.written[-2:] == two_lines(cycle(6))  # the newest survive
    assert not set(two_lines(cycle(3))) & set(writer.written)


def test_rejected_batches_are_dropped_and_counted() -> None:
    async def body(sink: InfluxSink, writer: ScriptedWriter) -> None:
        sink.observe(cycle(1))
        await until(lambda: sink.counts().dropped_rejected == 2)
        sink.observe(cycle(2))
        await until(lambda: len(writer.written) == 2)

    writer = ScriptedWriter([Outcome.REJECTED])
    counts = run(body, writer)
    assert writer.written == two_lines(cycle(2)) and counts.dropped_rejected == 2 and counts.retried == 0


def test_a_cycle_that_cannot_be_encoded_is_skipped() -> None:
    def encode(snap: Snapshot) -> list[bytes]:
        if snap.generation == 1:
            raise KubeletError("failed to get root cgroup stats")
        return two_lines(snap)

    async def body(sink: InfluxSink, writer: ScriptedWriter) -> None:
        sink.observe(cycle(1))
        sink.observe(cycle(2))
        await until(lambda: len(writer.written) == 2)

    writer = ScriptedWriter()
    run(body, writer, encode=encode)
    assert writer.written == two_lines(cycle(2))


@pytest.mark.timeout(20)
def test_a_hanging_influxdb_never_holds_up_observe_and_stop_is_bounded() -> None:
    encoded: list[int] = []

    def counting(snap: Snapshot) -> list[bytes]:
        lines = two_lines(snap)
        encoded.append(snap.generation)
        return lines

    async def body(sink: InfluxSink, writer: ScriptedWriter) -> None:
        for n in range(1, 51):
            start = time.perf_counter()
            sink.observe(cycle(n))
            assert time.perf_counter() - start < 0.01
            await asyncio.sleep(0)
        await until(lambda: len(encoded) == 50)
        await asyncio.sleep(0.05)  # the last cycle's chunks reach the buffer on the loop
        assert sink.counts().buffered == 10  # bounded, whatever InfluxDB does

    writer = ScriptedWriter(hang=True)
    start = time.monotonic()
    counts = run(body, writer, batch=5, buffer=10, encode=counting)
    assert time.monotonic() - start < 6  # stop: one last try of at most 2 s
    assert counts.written == 0 and counts.dropped_buffer_full == 90 and counts.buffered == 10


def test_stop_writes_what_is_buffered() -> None:
    async def body(sink: InfluxSink, writer: ScriptedWriter) -> None:
        sink.observe(cycle(1))
        await until(lambda: len(writer.attempts) == 1)  # failed once: now waiting out the back-off

    writer = ScriptedWriter([Outcome.RETRY])
    counts = run(body, writer)
    assert writer.written == two_lines(cycle(1)) and counts.buffered == 0


def test_a_writer_bug_keeps_the_points_and_the_loop() -> None:
    async def body(sink: InfluxSink, writer: ScriptedWriter) -> None:
        sink.observe(cycle(1))
        await until(lambda: len(writer.written) == 2)

    writer = ScriptedWriter([None])  # raises once
    counts = run(body, writer)
    assert len(writer.attempts) == 2 and counts.retried == 2 and counts.written == 2


def test_a_cycle_bigger_than_a_batch_goes_in_several_requests() -> None:
    def seven(snap: Snapshot) -> list[bytes]:
        return [f"m{snap.generation} i={i}i".encode() for i in range(7)]

    async def body(sink: InfluxSink, writer: ScriptedWriter) -> None:
        sink.observe(cycle(1))
        await until(lambda: len(writer.written) == 7)

    writer = ScriptedWriter()
    counts = run(body, writer, batch=3, buffer=10, encode=seven)
    assert [len(lines) for _, lines in writer.attempts] == [3, 3, 1]
    assert writer.written == seven(cycle(1)) and counts.written == 7
