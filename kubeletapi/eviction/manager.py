"""The eviction manager: the kubelet's pkg/kubelet/eviction managerImpl, restated.

Every housekeeping cycle (housekeepingInterval, 10 s by default: the kubelet's
evictionMonitoringPeriod, whose summary it asks for fresh stats) `synchronize` reads the new
Snapshot's signals and:

1. finds the thresholds met now, and those met before whose minimum reclaim is not reached yet;
2. notes when each was first met (soft thresholds act only after their grace period) and when
   each node condition (MemoryPressure, DiskPressure, PIDPressure) was last seen: a condition
   stays on for evictionPressureTransitionPeriod after its last sighting;
3. acts only on thresholds whose stats are newer than the last cycle's; memory first. A Warning
   EvictionThresholdMet event (`Attempting to reclaim memory`) on the node, then node-level
   reclaim for disk signals (unused containers, then unused images: NodeReclaimer); when the
   fresh stats then show every threshold (with its minimum reclaim) resolved, no pod goes;
4. otherwise ranks the active pods (rank.py) and evicts the first that may be evicted: at most
   one pod per cycle, killed with the hard grace (1 s; the stopper's 2 s floor applies) or, for a
   soft threshold, min(evictionMaxPodGracePeriod, the pod's terminationGracePeriodSeconds).
   Static, mirror and critical pods (priority >= 2000000000) are never evicted: the kubelet's
   IsCriticalPod, so a node that runs only static pods reports pressure but evicts nothing.

It is also the kubelet's eviction admission handler: under pressure, a BestEffort pod is refused
while MemoryPressure is the only condition (unless it tolerates the memory-pressure taint), every
pod under any other condition; critical pods are always admitted.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from kubeletapi.api.core_v1 import Pod
from kubeletapi.clock import Clock
from kubeletapi.cm.qos import QOSClass, qos_class
from kubeletapi.eviction import thresholds as t
from kubeletapi.eviction.message import (
    ATTEMPTING,
    REASON,
    THRESHOLD_MET_REASON,
    eviction_message,
    node_condition_message,
)
from kubeletapi.eviction.rank import Rank, rankers
from kubeletapi.eviction.signals import Observations, dedicated_imagefs, observe, pod_usage
from kubeletapi.pods.admission import Refusal
from kubeletapi.pods.static import CONFIG_MIRROR, is_static
from kubeletapi.stats.snapshot import Snapshot

log = logging.getLogger(__name__)

SYSTEM_CRITICAL_PRIORITY = 2_000_000_000  # scheduling.SystemCriticalPriority
HARD_GRACE_S = 1  # immediateEvictionGracePeriodSeconds
POD_CLEANUP_TIMEOUT_S = 30.0  # podCleanupTimeout: how long a cycle waits for the evicted pod's kill
CONDITION_ORDER = (t.MEMORY_PRESSURE, t.DISK_PRESSURE, t.PID_PRESSURE)
MEMORY_PRESSURE_TAINT = "node.kubernetes.io/memory-pressure"
DISK_SIGNALS = frozenset({t.NODEFS_AVAILABLE, t.NODEFS_INODES_FREE, t.IMAGEFS_AVAILABLE, t.IMAGEFS_INODES_FREE,
                          t.CONTAINERFS_AVAILABLE, t.CONTAINERFS_INODES_FREE})


class NodeReclaimer(Protocol):
    """Node-level reclaim before any pod is evicted (the kubelet's ImageGC and ContainerGC);
    the garbage collectors provide it."""

    async def delete_unused_images(self) -> int:
        """Remove every image no container uses; the bytes freed."""
        ...

    async def delete_all_unused_containers(self) -> None:
        """Remove every dead container (whatever its age or count)."""
        ...


class EvictablePods(Protocol):
    """The pod manager, as eviction uses it."""

    def active_pods(self) -> Sequence[Pod]: ...

    async def evict(self, pod: Pod, grace_s: int, message: str) -> bool: ...


class FreshStats(Protocol):
    """Housekeeping: a cycle now (after node-level reclaim), as the kubelet's updateStats=true."""

    async def collect(self) -> Snapshot | None: ...


class EvictionEvents(Protocol):
    def node_event(self, event_type: str, reason: str, message: str) -> None: ...

    def pod_event(self, pod: Pod, event_type: str, reason: str, message: str) -> None: ...


class EvictionObserver(Protocol):
    """kubelet_evictions and kubelet_eviction_stats_age_seconds (metrics/eviction.py)."""

    def evicted(self, signal: str) -> None: ...

    def stats_age(self, signal: str, seconds: float) -> None: ...


@dataclass(frozen=True)
class EvictionConfig:
    thresholds: tuple[t.Threshold, ...]
    pressure_transition_s: float = 300.0
    max_pod_grace_s: int = 0


def is_critical(pod: Pod) -> bool:
    """IsCriticalPod: static, mirror, or priority >= system-critical."""
    if is_static(pod) or CONFIG_MIRROR in pod.metadata.annotations:
        return True
    return pod.spec.priority is not None and pod.spec.priority >= SYSTEM_CRITICAL_PRIORITY


def tolerates_memory_pressure(pod: Pod) -> bool:
    """TolerationsTolerateTaint for node.kubernetes.io/memory-pressure:NoSchedule (value "")."""
    for tol in pod.spec.tolerations:
        if not isinstance(tol, dict):
            continue
        if tol.get("effect", "") not in ("", "NoSchedule"):
            continue
        key, operator = tol.get("key", ""), tol.get("operator", "") or "Equal"
        if key == "" and operator == "Exists":
            return True
        if key == MEMORY_PRESSURE_TAINT and (operator == "Exists" or tol.get("value", "") == ""):
            return True
    return False


def thresholds_met(thresholds: Sequence[t.Threshold], observations: Observations,
                   enforce_min_reclaim: bool) -> list[t.Threshold]:
    """thresholdsMet: available < threshold (+ minimum reclaim when enforced)."""
    out = []
    for threshold in thresholds:
        observed = observations.get(threshold.signal)
        if observed is None:
            continue
        quantity = threshold.value.amount(observed.capacity).amount
        if enforce_min_reclaim and threshold.min_reclaim is not None:
            quantity += threshold.min_reclaim.amount(observed.capacity).amount
        if quantity > observed.available:
            out.append(threshold)
    return out


def node_conditions(thresholds: Sequence[t.Threshold]) -> set[str]:
    return {t.CONDITION[x.signal] for x in thresholds}


class EvictionManager:
    def __init__(self, config: EvictionConfig, pods: EvictablePods, stats: FreshStats, clock: Clock,
                 reclaimers: Sequence[NodeReclaimer] = (), events: EvictionEvents | None = None,
                 observer: EvictionObserver | None = None) -> None:
        self._config = config
        self._pods = pods
        self._stats = stats
        self._clock = clock
        self._reclaimers = list(reclaimers)
        self._events = events
        self._observer = observer
        self._rankers: dict[str, Rank] | None = None
        self._dedicated = False
        self._conditions: tuple[str, ...] = ()
        self._first_met: dict[t.Threshold, float] = {}
        self._condition_seen: dict[str, float] = {}
        self._met: list[t.Threshold] = []
        self._last: Observations = {}
        self._pending: Snapshot | None = None
        self._wake = asyncio.Event()
        self.cycles = 0  # synchronize calls made by run()
        self.last_cycle_cpu_s = 0.0  # the loop thread's CPU time of the last one (suspensions included)

    # --- node conditions and admission --------------------------------------------------------
    def conditions(self) -> tuple[str, ...]:
        """The node conditions now on, in the kubelet's order (MemoryPressure, DiskPressure, PIDPressure)."""
        return self._conditions

    def under(self, condition: str) -> bool:
        return condition in self._conditions

    def admit(self, pod: Pod, admitted: Sequence[Pod]) -> Refusal | None:
        conditions = self._conditions
        if not conditions or is_critical(pod):
            return None
        if conditions == (t.MEMORY_PRESSURE,) and (
                qos_class(pod) is not QOSClass.BEST_EFFORT or tolerates_memory_pressure(pod)):
            return None
        return Refusal(REASON, node_condition_message(conditions))

    # --- the loop -----------------------------------------------------------------------------
    def observe(self, snap: Snapshot) -> None:
        """A housekeeping observer: the next synchronize works on this Snapshot."""
        self._pending = snap
        self._wake.set()

    async def run(self) -> None:
        """Synchronize on every new Snapshot; a failed cycle is logged and the next one tried."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            snap, self._pending = self._pending, None
            if snap is None:
                continue
            start = time.thread_time()
            try:
                await self.synchronize(snap)
            except Exception:
                log.exception("Eviction manager: failed to synchronize")
            self.last_cycle_cpu_s = time.thread_time() - start
            self.cycles += 1

    async def synchronize(self, snap: Snapshot) -> Pod | None:
        """One cycle on `snap`; the pod evicted, if any."""
        cfg = self._config
        if not cfg.thresholds:
            return None
        if self._rankers is None:
            self._dedicated = dedicated_imagefs(snap)
            self._rankers = rankers(self._dedicated)
        observations = observe(snap)
        met = thresholds_met(cfg.thresholds, observations, False)
        if self._met:
            met = t.merge_thresholds(met, thresholds_met(self._met, observations, True))
        now = self._clock.monotonic()
        self._first_met = {x: self._first_met.get(x, now) for x in met}
        for condition in node_conditions(met):
            self._condition_seen[condition] = now
        self._conditions = tuple(c for c in CONDITION_ORDER
                                 if now - self._condition_seen.get(c, -float("inf")) < cfg.pressure_transition_s)
        self._met = [x for x, at in self._first_met.items() if now - at >= x.grace_period_s]
        updated = [x for x in self._met if x.signal in observations and (
            x.signal not in self._last or observations[x.signal].time_ns > self._last[x.signal].time_ns)]
        self._last = observations
        if not updated:
            return None
        return await self._reclaim(t.by_eviction_priority(updated), observations, snap)

    async def _reclaim(self, updated: list[t.Threshold], observations: Observations, snap: Snapshot) -> Pod | None:
        threshold = updated[0]
        resource = t.RESOURCE[threshold.signal]
        log.info("Eviction manager: attempting to reclaim %s", resource)
        if self._events is not None:
            self._events.node_event("Warning", THRESHOLD_MET_REASON, ATTEMPTING.format(resource))
        if await self._reclaim_node_level(threshold.signal):
            log.info("Eviction manager: able to reduce %s pressure without evicting pods.", resource)
            return None
        active = list(self._pods.active_pods())  # asked for only when a pod must go
        if not active:
            log.error("Eviction manager: eviction thresholds have been met, but no pods are active to evict")
            return None
        usage = pod_usage(snap)
        assert self._rankers is not None
        ranked = self._rankers[threshold.signal](active, lambda p: usage.get(p.metadata.uid))
        wall_ns = int(self._clock.now() * 1e9)
        if self._observer is not None:
            for x in updated:
                self._observer.stats_age(x.signal, max(0.0, (wall_ns - observations[x.signal].time_ns) / 1e9))
        target = self._first_evictable(ranked)
        if target is None:
            log.info("Eviction manager: unable to evict any pods from the node")
            return None
        message = eviction_message(resource, target, usage.get(target.metadata.uid), updated, observations)
        await self._evict(target, self._grace(threshold, target), message)
        if self._observer is not None:
            self._observer.evicted(threshold.signal)
        return target

    @staticmethod
    def _first_evictable(ranked: Sequence[Pod]) -> Pod | None:
        """The first pod that is not critical; the critical ones before it logged in one line (the
        kubelet logs one per pod per cycle: 110 lines every 10 s on a node of static pods)."""
        spared = []
        for pod in ranked:
            if not is_critical(pod):
                break
            spared.append(f"{pod.metadata.namespace}/{pod.metadata.name}")
        else:
            pod = None
        if spared:
            log.info("Eviction manager: cannot evict %d critical pod(s): %s", len(spared), _some(spared))
        return pod

    def _grace(self, threshold: t.Threshold, pod: Pod) -> int:
        if threshold.hard:
            return HARD_GRACE_S
        grace = self._config.max_pod_grace_s
        own = pod.spec.termination_grace_period_seconds
        return min(grace, own) if own is not None else grace

    async def _evict(self, pod: Pod, grace_s: int, message: str) -> None:
        if self._events is not None:
            self._events.pod_event(pod, "Warning", REASON, message)
        log.info("Eviction manager: evicting pod %s/%s: %s", pod.metadata.namespace, pod.metadata.name, message)
        name = f"{pod.metadata.namespace}/{pod.metadata.name}"
        try:
            async with asyncio.timeout(POD_CLEANUP_TIMEOUT_S):
                done = await self._pods.evict(pod, grace_s, message)
        except TimeoutError:
            log.info("Eviction manager: timed out waiting for pod %s to be cleaned up", name)
            return
        if done:
            log.info("Eviction manager: pod %s is evicted successfully", name)
        else:
            log.error("Eviction manager: pod %s failed to evict", name)

    async def _reclaim_node_level(self, signal: str) -> bool:
        """reclaimNodeLevelResources: disk signals only, unused containers then unused images;
        True when fresh stats show every threshold resolved (minimum reclaim included)."""
        if signal not in DISK_SIGNALS or not self._reclaimers:
            return False
        if self._dedicated and signal in (t.NODEFS_AVAILABLE, t.NODEFS_INODES_FREE):
            return False  # with a dedicated imagefs, nodefs holds no images or writable layers
        for reclaimer in self._reclaimers:
            for step in (reclaimer.delete_all_unused_containers, reclaimer.delete_unused_images):
                try:
                    await step()
                except Exception as exc:  # one failing collector never stops the eviction
                    log.info("Eviction manager: unexpected error when attempting to reduce %s pressure: %s",
                             signal, exc)
        snap = await self._stats.collect()
        if snap is None:
            log.error("Eviction manager: failed to get summary stats after resource reclaim")
            return False
        return not thresholds_met(self._config.thresholds, observe(snap), True)


def _some(names: Sequence[str], most: int = 5) -> str:
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")
