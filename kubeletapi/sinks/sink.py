"""The InfluxDB sink: every housekeeping cycle's points into a bounded buffer, written in batches.

The housekeeper hands each new Snapshot to `observe` on the event loop; turning it into line
protocol, cut into gzipped chunks of at most a batch (buffer.py), runs in a worker thread, and
writing runs in a task of its own, so neither the API nor the
pods ever wait on InfluxDB. A failed write keeps its batch and waits before trying again (1 s,
doubling to 10 s, back to 1 s after a success); while it waits new points pile up in the buffer and,
past `--influxdb-buffer-size`, the oldest are dropped. The counts behind /metrics' kubeletapi_influxdb_*
are kept here and read through `counts()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from kubeletapi.aio import cancel_and_wait
from kubeletapi.clock import Clock
from kubeletapi.errors import KubeletError
from kubeletapi.sinks.buffer import Chunk, PointBuffer
from kubeletapi.sinks.influxdb import Outcome, WriteResult
from kubeletapi.sinks.lineprotocol import encode_all
from kubeletapi.sinks.telegraf import snapshot_points
from kubeletapi.stats.snapshot import Snapshot

log = logging.getLogger(__name__)

BACKOFF_INITIAL_S = 1.0
BACKOFF_MAX_S = 10.0  # the default housekeeping interval: back within a cycle of InfluxDB's return
FINAL_FLUSH_S = 2.0


@dataclass(frozen=True)
class SinkCounts:
    """What the sink did since start: points written, retried (per failed attempt), dropped by
    reason, and held now."""

    written: int
    retried: int
    dropped_buffer_full: int
    dropped_rejected: int
    buffered: int


class Writer(Protocol):
    """Where batches go (influxdb.InfluxWriter)."""

    @property
    def target(self) -> str: ...

    async def write(self, gzipped: bytes) -> WriteResult: ...

    async def close(self) -> None: ...


class InfluxSink:
    def __init__(self, writer: Writer, clock: Clock, batch_size: int, buffer_size: int,
                 encode: Callable[[Snapshot], list[bytes]] | None = None,
                 backoff_s: tuple[float, float] = (BACKOFF_INITIAL_S, BACKOFF_MAX_S)) -> None:
        self._writer = writer
        self._clock = clock
        self._batch_size = batch_size
        self._buffer = PointBuffer(buffer_size)
        self._encode = encode or _encode_snapshot
        self._backoff_s = backoff_s
        # Cycles waiting to be encoded: encoding is CPU only and takes milliseconds, so this holds
        # one cycle at a time in practice; nothing here can wait on InfluxDB.
        self._pending: deque[Snapshot] = deque()
        self._snapshots = asyncio.Event()
        self._points = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._written = self._retried = self._rejected = 0
        self._failing: str | None = None  # the last failure's reason while writes fail

    def counts(self) -> SinkCounts:
        return SinkCounts(self._written, self._retried, self._buffer.dropped, self._rejected, len(self._buffer))

    def observe(self, snap: Snapshot) -> None:
        """A new housekeeping cycle (on the event loop): queued, encoded in the background."""
        self._pending.append(snap)
        self._snapshots.set()

    async def start(self) -> None:
        log.info("influxdb sink: writing every housekeeping cycle to %s", self._writer.target)
        self._tasks = [asyncio.create_task(self._encode_loop(), name="influxdb-encode"),
                       asyncio.create_task(self._write_loop(), name="influxdb-write")]

    async def stop(self) -> None:
        """Stop, after one last bounded try at writing what is buffered."""
        await cancel_and_wait(self._tasks)
        self._tasks.clear()
        if len(self._buffer):
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(FINAL_FLUSH_S):
                    await self._write_batch()
            if len(self._buffer):
                log.warning("influxdb sink: stopping with %d points not written", len(self._buffer))
        await self._writer.close()

    async def _encode_loop(self) -> None:
        while True:
            await self._snapshots.wait()
            self._snapshots.clear()
            while self._pending:
                snap = self._pending.popleft()
                try:
                    chunks = await asyncio.to_thread(self._chunks, snap)
                except KubeletError as exc:  # a cycle without root stats: nothing to write
                    log.warning("influxdb sink: skipping housekeeping cycle %d: %s", snap.generation, exc)
                    continue
                except Exception:
                    log.exception("influxdb sink: encoding housekeeping cycle %d failed", snap.generation)
                    continue
                self._buffer.extend(chunks)
                self._points.set()

    def _chunks(self, snap: Snapshot) -> list[Chunk]:
        """One cycle's points as gzip members of at most a batch each (in a worker thread)."""
        lines = self._encode(snap)
        size = self._batch_size
        return [Chunk(gzip.compress(b"".join(line + b"\n" for line in lines[i:i + size]), 1),
                      len(lines[i:i + size])) for i in range(0, len(lines), size)]

    async def _write_loop(self) -> None:
        backoff = self._backoff_s[0]
        while True:
            await self._points.wait()
            self._points.clear()
            while self._buffer.waiting:
                if await self._write_batch():
                    backoff = self._backoff_s[0]
                else:
                    await self._clock.sleep(backoff)
                    backoff = min(backoff * 2, self._backoff_s[1])

    async def _write_batch(self) -> bool:
        """Send the oldest batch; False when it failed and is to be retried."""
        batch = self._buffer.take(self._batch_size)
        points = sum(c.points for c in batch)
        try:
            result = await self._writer.write(b"".join(c.body for c in batch))
        except Exception as exc:  # a bug, not InfluxDB: keep the points and the loop alive
            log.exception("influxdb sink: writing a batch failed unexpectedly")
            result = WriteResult(Outcome.RETRY, f"{type(exc).__name__}: {exc}")
        except BaseException:  # cancelled (stopping): the batch goes back for the last try
            self._buffer.give_back()
            raise
        if result.outcome is Outcome.RETRY:
            self._buffer.give_back()
            self._retried += points
            self._report_failure(result, points)
            return False
        self._buffer.commit()
        if result.outcome is Outcome.REJECTED:
            self._rejected += points
            log.error("influxdb sink: %s rejected %d points, dropped: %s",
                      self._writer.target, points, result.reason)
        else:
            self._written += points
        if self._failing is not None:
            log.info("influxdb sink: writing to %s again (%d points buffered, %d dropped for want of room so far)",
                     self._writer.target, len(self._buffer), self._buffer.dropped)
            self._failing = None
        return True

    def _report_failure(self, result: WriteResult, count: int) -> None:
        if result.reason != self._failing:
            log.warning("influxdb sink: writing %d points to %s failed, keeping them to retry "
                        "(%d buffered, at most %d): %s", count, self._writer.target, len(self._buffer),
                        self._buffer.capacity, result.reason)
        self._failing = result.reason


def _encode_snapshot(snap: Snapshot) -> list[bytes]:
    return encode_all(snapshot_points(snap))
