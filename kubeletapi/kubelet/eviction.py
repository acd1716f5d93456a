"""Wiring of the eviction manager: thresholds from the configuration, signals from every
housekeeping Snapshot, pods from the pod manager (active pods, evict, admission), node-level
reclaim from the garbage collectors (none until they are wired: `reclaimers`), events to the
recorder in apiserver mode, kubelet_evictions* on /metrics, and the node's pressure conditions
for the node status."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from kubeletapi.aio import cancel_and_wait
from kubeletapi.clock import Clock
from kubeletapi.config import KubeletConfiguration
from kubeletapi.eviction import thresholds as t
from kubeletapi.eviction.manager import EvictionConfig, EvictionEvents, EvictionManager, NodeReclaimer
from kubeletapi.metrics.eviction import EvictionMetrics
from kubeletapi.node.status import Pressure
from kubeletapi.pods.manager import PodManager
from kubeletapi.stats.housekeeping import Housekeeper

log = logging.getLogger(__name__)


def eviction_config(cfg: KubeletConfiguration) -> EvictionConfig:
    found = t.parse_thresholds(cfg.eviction_hard or {}, cfg.eviction_soft, cfg.eviction_soft_grace_period,
                               cfg.eviction_minimum_reclaim)
    return EvictionConfig(tuple(found), cfg.eviction_pressure_transition_period.seconds,
                          cfg.eviction_max_pod_grace_period)


class EvictionWiring:
    def __init__(self, cfg: KubeletConfiguration, pods: PodManager, housekeeper: Housekeeper, clock: Clock,
                 events: EvictionEvents | None = None, reclaimers: Sequence[NodeReclaimer] = ()) -> None:
        self.metrics = EvictionMetrics()
        self.manager = EvictionManager(eviction_config(cfg), pods, housekeeper, clock, reclaimers, events,
                                       self.metrics)
        pods.add_admitter(self.manager)
        housekeeper.add_observer(self.manager.observe)
        self._tasks: list[asyncio.Task[None]] = []

    def pressure(self) -> Pressure:
        """The node status's MemoryPressure, DiskPressure and PIDPressure."""
        under = self.manager.under
        return Pressure(memory=under(t.MEMORY_PRESSURE), disk=under(t.DISK_PRESSURE), pid=under(t.PID_PRESSURE))

    def start(self) -> None:
        log.info("Eviction manager: starting control loop")
        self._tasks.append(asyncio.create_task(self.manager.run(), name="eviction-manager"))

    async def stop(self) -> None:
        await cancel_and_wait(self._tasks)
        self._tasks.clear()
