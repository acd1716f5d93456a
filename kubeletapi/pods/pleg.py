"""Generic PLEG: relist the runtime every second and turn state changes into pod events.

Like the kubelet's GenericPLEG: compare each container's state with the previous relist and
emit ContainerStarted / ContainerDied / ContainerRemoved for its pod. The latest listing is kept
as the pod cache that status computation reads, so a sync does not list the runtime again.
"""

from __future__ import annotations

import enum
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from kubeletapi.clock import Clock
from kubeletapi.runtime.types import POD_UID, ContainerState, ContainerStatus, Sandbox, SandboxState


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
    async def list_containers(self) -> Sequence[ContainerStatus]: ...

    async def list_pod_sandboxes(self) -> Sequence[Sandbox]: ...


class RelistObserver(Protocol):
    """Where relist timings and runtime counts go (kubelet_pleg_*, kubelet_running_*)."""

    def relisted(self, duration_s: float, interval_s: float | None, at: float) -> None: ...

    def runtime_counted(self, running_pods: int, containers: Mapping[str, int]) -> None: ...


@dataclass(frozen=True)
class PodRecord:
    """What the runtime has for one pod: its sandboxes and containers (all instances)."""

    sandboxes: tuple[Sandbox, ...]
    containers: tuple[ContainerStatus, ...]


class PLEG:
    def __init__(self, runtime: Lister, clock: Clock, observer: RelistObserver | None = None) -> None:
        self._runtime = runtime
        self._clock = clock
        self._observer = observer
        self._states: dict[str, tuple[str, ContainerState]] = {}
        self._last_relist: float | None = None
        self.cache: dict[str, PodRecord] = {}

    async def relist(self) -> list[PodEvent]:
        started = time.perf_counter()
        sandboxes = await self._runtime.list_pod_sandboxes()
        containers = await self._runtime.list_containers()
        by_sandbox = {s.id: s.meta.uid for s in sandboxes}
        pods: dict[str, tuple[list[Sandbox], list[ContainerStatus]]] = {}
        for sandbox in sandboxes:
            pods.setdefault(sandbox.meta.uid, ([], []))[0].append(sandbox)
        events: list[PodEvent] = []
        seen: dict[str, tuple[str, ContainerState]] = {}
        for status in containers:
            uid = by_sandbox.get(status.sandbox_id) or status.labels.get(POD_UID, "")
            pods.setdefault(uid, ([], []))[1].append(status)
            seen[status.id] = (uid, status.state)
            events += self._compare(uid, status.id, self._states.get(status.id, (uid, None))[1], status.state)
        for cid, (uid, _) in self._states.items():
            if cid not in seen:
                events.append(PodEvent(uid, cid, EventType.REMOVED))
        self._states = seen
        self.cache = {uid: PodRecord(tuple(s), tuple(c)) for uid, (s, c) in pods.items()}
        now = self._clock.now()
        if self._observer is not None:
            interval = None if self._last_relist is None else now - self._last_relist
            self._observer.relisted(time.perf_counter() - started, interval, now)
            states = Counter(c.state.name.lower() for c in containers)
            ready = {s.meta.uid for s in sandboxes if s.state is SandboxState.READY}
            self._observer.runtime_counted(len(ready), states)
        self._last_relist = now
        return events

    @staticmethod
    def _compare(uid: str, cid: str, old: ContainerState | None, new: ContainerState) -> list[PodEvent]:
        if old == new:
            return []
        if new is ContainerState.RUNNING:
            return [PodEvent(uid, cid, EventType.STARTED)]
        if new is ContainerState.EXITED:
            return [PodEvent(uid, cid, EventType.DIED)]
        return [PodEvent(uid, cid, EventType.CHANGED)]
