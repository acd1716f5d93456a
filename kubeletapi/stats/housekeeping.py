"""The housekeeping loop: a Snapshot every housekeepingInterval, volume usage every volumeStatsAggPeriod.

The pod inventory is taken on the event loop (the pod manager is not thread-safe), the reads run
in a worker thread, and the finished Snapshot replaces the previous one in a single assignment.
Requests only ever call latest(). A failed cycle is logged and the previous Snapshot stays.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence

from kubeletapi.aio import cancel_and_wait
from kubeletapi.clock import Clock
from kubeletapi.errors import KubeletError
from kubeletapi.runtime.stats import RuntimeStats
from kubeletapi.stats.collect import Collector
from kubeletapi.stats.inventory import Inventory, PodRef
from kubeletapi.stats.runtimestats import RuntimeStatsSource
from kubeletapi.stats.snapshot import Snapshot

log = logging.getLogger(__name__)


RUNTIME_STATS_TIMEOUT_S = 10.0


class Housekeeper:
    """`prepare`, when given, runs in the worker thread on each new Snapshot before it is
    published (the endpoints render their bodies ahead of requests there). `runtime`, a CRI
    runtime's stats, is asked on the loop at the start of each cycle, with a deadline: a runtime
    that fails or is slow costs that cycle its CRI figures (logged once until it recovers), never
    the cycle."""

    def __init__(self, collector: Collector, inventory: Inventory, clock: Clock,
                 interval_s: float, volume_period_s: float,
                 prepare: Callable[[Snapshot], None] | None = None,
                 runtime: RuntimeStatsSource | None = None) -> None:
        self._collector = collector
        self._runtime = runtime
        self._runtime_failing = False
        self._prepare = prepare
        self._inventory = inventory
        self._clock = clock
        self._interval_s = interval_s
        self._volume_period_s = volume_period_s
        self._latest: Snapshot | None = None
        self._generation = 0
        self._lock = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []
        self._observers: list[Callable[[Snapshot], None]] = []
        self.last_prepare_cpu_s = 0.0  # CPU time `prepare` took on the last cycle

    def add_observer(self, observer: Callable[[Snapshot], None]) -> None:
        """Call `observer` on the event loop with every new Snapshot (it must not block: a sink
        queues the cycle and does its work elsewhere)."""
        self._observers.append(observer)

    def latest(self) -> Snapshot | None:
        """The last complete cycle (None before the first one)."""
        return self._latest

    async def start(self) -> None:
        """Measure volumes and collect once (so the first request finds stats), then loop."""
        await self.refresh_volumes()
        await self.collect()
        self._tasks = [
            asyncio.create_task(self._loop(self.collect, self._interval_s), name="stats-housekeeping"),
            asyncio.create_task(self._loop(self.refresh_volumes, self._volume_period_s), name="stats-volumes"),
        ]

    async def stop(self) -> None:
        await cancel_and_wait(self._tasks)
        self._tasks.clear()

    async def collect(self) -> Snapshot | None:
        """One cycle now; the new Snapshot (or None when it failed; the previous one stays)."""
        async with self._lock:
            try:
                pods = self._inventory.pods()
                pids = list(self._inventory.runtime_pids())
                reported = await self._runtime_stats()
                snap = await asyncio.to_thread(self._cycle, pods, pids, self._generation + 1, reported)
            except Exception:
                log.exception("stats housekeeping failed; keeping the previous stats")
                return None
            self._generation += 1
            self._latest = snap
        for observer in self._observers:
            try:
                observer(snap)
            except Exception:
                log.exception("a stats observer failed on housekeeping cycle %d", snap.generation)
        return snap

    async def _runtime_stats(self) -> RuntimeStats | None:
        if self._runtime is None:
            return None
        try:
            async with asyncio.timeout(RUNTIME_STATS_TIMEOUT_S):
                reported = await self._runtime.runtime_stats()
        except (KubeletError, TimeoutError) as exc:
            if not self._runtime_failing:
                log.warning("stats: the container runtime's stats are unavailable, using cgroups alone: %s",
                            exc or "timed out")
            self._runtime_failing = True
            return None
        if self._runtime_failing:
            log.info("stats: the container runtime's stats are back")
        self._runtime_failing = False
        return reported

    def _cycle(self, pods: Sequence[PodRef], pids: Sequence[int], generation: int,
               reported: RuntimeStats | None = None) -> Snapshot:
        self._collector.measure_new_volumes(pods)
        snap = self._collector.collect(pods, pids, self._latest, generation, reported)
        if self._prepare is not None:
            start = time.thread_time()
            try:
                self._prepare(snap)
            except Exception:
                log.exception("preparing the stats endpoints' bodies failed")
            self.last_prepare_cpu_s = time.thread_time() - start
        return snap

    async def refresh_volumes(self) -> None:
        try:
            pods = self._inventory.pods()
            await asyncio.to_thread(self._collector.refresh_volumes, pods)
        except Exception:
            log.exception("volume stats refresh failed")

    async def _loop(self, step: Callable[[], Awaitable[object]], period_s: float) -> None:
        while True:
            await self._clock.sleep(period_s)
            await step()
