"""Generic PLEG: relist the runtime every second and turn state changes into pod events.

Like the kubelet's GenericPLEG: compare each container's state with the previous relist and
emit ContainerStarted / ContainerDied / ContainerRemoved for its pod. Each relist also fills
the pod cache (podcache.py) that syncs, status and queries read, so they do not list the runtime
again; a sync that changed its pod asks for that one pod afresh (`pod_record`), which lists only
that pod's sandboxes and containers and leaves the relist's own comparison untouched (a change a
sync made still becomes an event at the next relist, as in the kubelet).
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from kubeletapi.clock import Clock
from kubeletapi.config.durations import Duration
from kubeletapi.pods.podcache import PodCache, PodRecord
from kubeletapi.runtime.types import POD_UID, ContainerState, ContainerStatus, Sandbox, SandboxState

RELIST_THRESHOLD_S = 180.0  # the kubelet's relistThreshold


class EventType(enum.Enum):
    STARTED = "ContainerStarted"
    DIED = "ContainerDied"
    REMOVED = "ContainerRemoved"
    CHANGED = "ContainerChanged"


@dataclass(frozen=True)
class PodEvent:
    pod_uid: str
    container_id: str
    type: EventType


class Lister(Protocol):
    async def list_containers(self, pod_uid: str | None = None) -> Sequence[ContainerStatus]: ...

    async def list_pod_sandboxes(self, pod_uid: str | None = None) -> Sequence[Sandbox]: ...


class RelistObserver(Protocol):
    """Where relist timings and runtime counts go (kubelet_pleg_*, kubelet_running_*)."""

    def relisted(self, duration_s: float, interval_s: float | None, at: float) -> None: ...

    def runtime_counted(self, running_pods: int, containers: Mapping[str, int]) -> None: ...


class PLEG:
    def __init__(self, runtime: Lister, clock: Clock, observer: RelistObserver | None = None,
                 cache: PodCache | None = None) -> None:
        self._runtime = runtime
        self._clock = clock
        self._observer = observer
        self._states: dict[str, tuple[str, ContainerState]] = {}
        self._last_relist: float | None = None
        self._started = clock.monotonic()
        self._last_ok: float | None = None  # monotonic time of the last relist that completed
        self.cache = cache if cache is not None else PodCache()

    async def relist(self) -> list[PodEvent]:
        started = self._clock.monotonic()
        seq = self.cache.mark()
        sandboxes = await self._runtime.list_pod_sandboxes()
        containers = await self._runtime.list_containers()
        pods = _group(sandboxes, containers)
        events: list[PodEvent] = []
        seen: dict[str, tuple[str, ContainerState]] = {}
        for uid, (_, statuses) in pods.items():
            for status in statuses:
                seen[status.id] = (uid, status.state)
                events += self._compare(uid, status.id, self._states.get(status.id, (uid, None))[1], status.state)
        for cid, (uid, _) in self._states.items():
            if cid not in seen:
                events.append(PodEvent(uid, cid, EventType.REMOVED))
        self._states = seen
        self.cache.put_all({uid: PodRecord(tuple(s), tuple(c), seq) for uid, (s, c) in pods.items()}, seq)
        now = self._clock.now()
        if self._observer is not None:
            interval = None if self._last_relist is None else now - self._last_relist
            self._observer.relisted(self._clock.monotonic() - started, interval, now)
            states = Counter(c.state.name.lower() for c in containers)
            ready = {s.meta.uid for s in sandboxes if s.state is SandboxState.READY}
            self._observer.runtime_counted(len(ready), states)
        self._last_relist = now
        self._last_ok = self._clock.monotonic()
        return events

    def unhealthy(self, threshold_s: float = RELIST_THRESHOLD_S) -> str | None:
        """The kubelet's PLEG health: None when a relist completed within `threshold_s`."""
        since = self._clock.monotonic() - (self._last_ok if self._last_ok is not None else self._started)
        if since <= threshold_s:
            return None
        return (f"PLEG is not healthy: pleg was last seen active {Duration.of_seconds(since)} ago; "
                f"threshold is {Duration.of_seconds(threshold_s)}")

    def mark(self) -> int:
        """A sequence number newer than every listing begun so far (podcache.PodCache.mark)."""
        return self.cache.mark()

    async def pod_record(self, uid: str, newer_than: int) -> PodRecord:
        """The pod's record, listed after `newer_than`: from the cache when it is that fresh,
        else asked of the runtime now for this pod alone."""
        record = self.cache.newer_than(uid, newer_than)
        if record is not None:
            return record
        seq = self.cache.mark()
        sandboxes = await self._runtime.list_pod_sandboxes(uid)
        containers = await self._runtime.list_containers(uid)
        return self.cache.put(uid, PodRecord(tuple(sandboxes), tuple(containers), seq))

    @staticmethod
    def _compare(uid: str, cid: str, old: ContainerState | None, new: ContainerState) -> list[PodEvent]:
        if old == new:
            return []
        if new is ContainerState.RUNNING:
            return [PodEvent(uid, cid, EventType.STARTED)]
        if new is ContainerState.EXITED:
            return [PodEvent(uid, cid, EventType.DIED)]
        return [PodEvent(uid, cid, EventType.CHANGED)]


def _group(
    sandboxes: Sequence[Sandbox], containers: Sequence[ContainerStatus]
) -> dict[str, tuple[list[Sandbox], list[ContainerStatus]]]:
    """Sandboxes and containers by pod UID (a container whose sandbox is gone, by its label)."""
    by_sandbox = {s.id: s.meta.uid for s in sandboxes}
    pods: dict[str, tuple[list[Sandbox], list[ContainerStatus]]] = {}
    for sandbox in sandboxes:
        pods.setdefault(sandbox.meta.uid, ([], []))[0].append(sandbox)
    for status in containers:
        uid = by_sandbox.get(status.sandbox_id) or status.labels.get(POD_UID, "")
        pods.setdefault(uid, ([], []))[1].append(status)
    return pods
