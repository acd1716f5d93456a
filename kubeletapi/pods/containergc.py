"""Container garbage collection, as the kubelet's (pkg/kubelet/kuberuntime/kuberuntime_gc.go).

Every minute (ContainerGCPeriod) and on demand (the eviction manager's node-level reclaim):

- Evictable containers are the ones not running, created more than `min_age_s` ago, grouped in
  units of (pod UID, container name).
- Once every pod source has spoken, every evictable container of a pod the node no longer has is
  removed. A pod that has finished but is still here keeps what its status needs (unlike the
  kubelet's reclaim, which removes it: here its worker would start containers it no longer finds).
- Each unit keeps its `max_per_pod_container` newest (<0: no limit); then, over all units, at most
  `max_containers` (<0: no limit): first an equal share per unit (at least 1), then the oldest go.
- What a live pod's status needs is never removed, whatever the policy: the two newest instances
  of each container (the current one and the one before: state and lastState, `logs --previous`),
  the instances pods.sync keeps.
- Sandboxes that are not ready and hold no container: all of a gone pod's, all but the newest of
  a live pod's. Then the log directories of gone pods (pods.loggc, its retention).
- A failed pass is logged and recorded as a ContainerGCFailed event on the Node.

A removed container's log file goes with it (and its rotated files), as the kubelet's
removeContainerLog. select() is the pure decision (table-tested); ContainerGC applies it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from kubeletapi.clock import Clock
from kubeletapi.errors import KubeletError
from kubeletapi.events import reasons
from kubeletapi.pods.loggc import LogGC
from kubeletapi.runtime import types as rt
from kubeletapi.runtime.logfiles import remove_logs, rotated_files

log = logging.getLogger(__name__)
GC_PERIOD_S = 60.0  # the kubelet's ContainerGCPeriod
STATUS_KEEPS = 2  # instances per container a live pod's status reads (pods.sync keeps as many)


@dataclass(frozen=True)
class GCPolicy:
    """The kubelet's --minimum-container-ttl-duration, --maximum-dead-containers-per-container
    and --maximum-dead-containers (defaults 0, 1, -1)."""

    min_age_s: float = 0.0
    max_per_pod_container: int = 1
    max_containers: int = -1


@dataclass(frozen=True)
class Dead:
    """One container as GC sees it."""

    id: str
    pod_uid: str
    name: str
    created_ns: int
    attempt: int = 0
    running: bool = False


def select(containers: Sequence[Dead], policy: GCPolicy, now_ns: int, gone: Callable[[str], bool],
           sources_ready: bool) -> list[str]:
    """The ids of the containers to remove, oldest first within each step."""
    # Before every source has spoken a pod not known yet may be one still to come: protect all.
    protected = _status_needs(containers, gone if sources_ready else (lambda uid: False))
    newest_gc = now_ns - int(policy.min_age_s * 1e9)
    units: dict[tuple[str, str], list[Dead]] = {}
    for c in containers:
        if not c.running and c.created_ns <= newest_gc:
            units.setdefault((c.pod_uid, c.name), []).append(c)
    for items in units.values():
        items.sort(key=lambda c: (c.created_ns, c.attempt), reverse=True)  # newest first
    remove: list[Dead] = []
    if sources_ready:
        for key in [k for k in units if gone(k[0])]:
            remove.extend(reversed(units.pop(key)))
    if policy.max_per_pod_container >= 0:
        _keep_per_unit(units, policy.max_per_pod_container, remove)
    total = sum(len(items) for items in units.values())
    if policy.max_containers >= 0 and total > policy.max_containers:
        _keep_per_unit(units, max(policy.max_containers // len(units), 1), remove)
        flat = sorted((c for items in units.values() for c in items), key=lambda c: (c.created_ns, c.attempt))
        excess = len(flat) - policy.max_containers
        if excess > 0:
            remove.extend(flat[:excess])
    return [c.id for c in remove if c.id not in protected]


def _keep_per_unit(units: dict[tuple[str, str], list[Dead]], keep: int, remove: list[Dead]) -> None:
    for key, items in units.items():
        if len(items) > keep:
            remove.extend(reversed(items[keep:]))
            units[key] = items[:keep]


def _status_needs(containers: Sequence[Dead], gone: Callable[[str], bool]) -> set[str]:
    """The newest STATUS_KEEPS instances of each container of a pod still here."""
    by_unit: dict[tuple[str, str], list[Dead]] = {}
    for c in containers:
        if not gone(c.pod_uid):
            by_unit.setdefault((c.pod_uid, c.name), []).append(c)
    keep: set[str] = set()
    for items in by_unit.values():
        items.sort(key=lambda c: (c.attempt, c.created_ns), reverse=True)
        keep.update(c.id for c in items[:STATUS_KEEPS])
    return keep


def sandboxes_to_remove(sandboxes: Sequence[rt.Sandbox], busy: Collection[str],
                        gone: Callable[[str], bool]) -> list[str]:
    """Sandboxes neither ready nor holding a container (`busy`): all of a gone pod's, all but the
    newest of a live pod's (a pod keeps its newest sandbox, active or not)."""
    by_pod: dict[str, list[rt.Sandbox]] = {}
    for s in sandboxes:
        by_pod.setdefault(s.meta.uid, []).append(s)
    out: list[str] = []
    for uid, items in by_pod.items():
        items.sort(key=lambda s: s.created_at, reverse=True)
        candidates = items if gone(uid) else items[1:]
        out.extend(s.id for s in reversed(candidates) if s.state is not rt.SandboxState.READY and s.id not in busy)
    return out


class GCRuntime(Protocol):
    """What GC needs of a runtime (runtime.interface.Runtime has it)."""

    async def list_containers(self, pod_uid: str | None = None) -> Sequence[rt.ContainerStatus]: ...

    async def remove_container(self, container_id: str) -> None: ...

    async def stop_container(self, container_id: str, timeout_s: float) -> None: ...

    async def list_pod_sandboxes(self, pod_uid: str | None = None) -> Sequence[rt.Sandbox]: ...

    async def stop_pod_sandbox(self, sandbox_id: str) -> None: ...

    async def remove_pod_sandbox(self, sandbox_id: str) -> None: ...


class NodeEventSink(Protocol):
    def node_event(self, event_type: str, reason: str, message: str) -> None: ...


class PodStates(Protocol):
    """What GC asks the pod manager (pods.manager.PodManager has it)."""

    def known(self, uid: str) -> bool:
        """The pod is defined, being killed, or kept for its final status."""
        ...

    def sources_not_ready(self) -> str | None: ...


@dataclass
class GCResult:
    containers: int = 0
    sandboxes: int = 0
    log_dirs: int = 0
    errors: int = 0


def _dead(c: rt.ContainerStatus) -> Dead:
    return Dead(c.id, c.labels.get(rt.POD_UID, ""), c.name, c.created_at, c.attempt,
                c.state is rt.ContainerState.RUNNING)


class ContainerGC:
    """garbage_collect() is one pass; run() makes one every GC_PERIOD_S."""

    def __init__(self, runtime: GCRuntime, pods: PodStates, policy: GCPolicy, clock: Clock,
                 log_gc: LogGC | None = None, events: NodeEventSink | None = None) -> None:
        self._runtime = runtime
        self._events = events
        self._pods = pods
        self.policy = policy
        self._clock = clock
        self._log_gc = log_gc
        self._failed_before = False
        self._lock = asyncio.Lock()

    async def run(self, period_s: float = GC_PERIOD_S) -> None:
        """A pass every period (the first after one period, as the kubelet's wait.Until starts
        at once but the node has just listed its pods), until cancelled; failures are logged."""
        while True:
            await self._clock.sleep(period_s)
            try:
                result = await self.garbage_collect()
            except KubeletError as exc:
                log.error("Container garbage collection failed: %s", exc)
                if self._events is not None:
                    self._events.node_event(reasons.WARNING, reasons.CONTAINER_GC_FAILED, str(exc))
                self._failed_before = True
                continue
            except Exception:
                log.exception("Container garbage collection failed")
                self._failed_before = True
                continue
            level = logging.INFO if self._failed_before else logging.DEBUG
            self._failed_before = False
            log.log(level, "Container garbage collection succeeded (%s)", result)

    async def garbage_collect(self, policy: GCPolicy | None = None) -> GCResult:
        """One pass with `policy` (default: the configured one)."""
        async with self._lock:
            return await self._collect(policy or self.policy)

    async def delete_all_unused_containers(self) -> None:
        """Node-level reclaim (the kubelet's DeleteAllUnusedContainers): every dead container
        whatever its age, beyond what a pod's status needs."""
        await self.garbage_collect(GCPolicy(0.0, 0, 0))

    async def _collect(self, policy: GCPolicy) -> GCResult:
        result = GCResult()
        pods = self._pods

        def gone(uid: str) -> bool:
            return not pods.known(uid)
        ready = self._pods.sources_not_ready() is None
        containers = await self._runtime.list_containers()
        by_id = {c.id: c for c in containers}
        now_ns = int(self._clock.now() * 1e9)
        ours = [_dead(c) for c in containers if c.labels.get(rt.POD_UID)]  # a pod's, not another client's
        for cid in select(ours, policy, now_ns, gone, ready):
            if await self._remove_container(by_id[cid]):
                result.containers += 1
            else:
                result.errors += 1
        await self._sandboxes(gone if ready else (lambda uid: False), result)
        if self._log_gc is not None and ready:
            live = {c.labels.get(rt.POD_UID, "") for c in await self._runtime.list_containers()}
            removed = await asyncio.to_thread(self._log_gc.collect, _Live(self._pods, live))
            result.log_dirs = len(removed)
        return result

    async def _remove_container(self, c: rt.ContainerStatus) -> bool:
        try:
            if c.state is rt.ContainerState.UNKNOWN:  # may be running: stop it first, as the kubelet
                await self._runtime.stop_container(c.id, 0)
            await self._runtime.remove_container(c.id)
        except KubeletError as exc:
            log.error("Failed to remove container %s: %s", c.id, exc)
            return False
        log.debug("removed dead container %s (%s of pod %s)", c.id, c.name, c.labels.get(rt.POD_UID, ""))
        if c.log_path:
            await asyncio.to_thread(_remove_log, c.log_path)
        return True

    async def _sandboxes(self, gone: Callable[[str], bool], result: GCResult) -> None:
        sandboxes = [s for s in await self._runtime.list_pod_sandboxes() if s.meta.uid]
        busy = {c.sandbox_id for c in await self._runtime.list_containers()}
        for sid in sandboxes_to_remove(sandboxes, busy, gone):
            try:
                await self._runtime.stop_pod_sandbox(sid)
                await self._runtime.remove_pod_sandbox(sid)
            except KubeletError as exc:
                log.error("Failed to remove sandbox %s: %s", sid, exc)
                result.errors += 1
                continue
            result.sandboxes += 1


class _Live(Collection[str]):
    """The pod UIDs whose logs stay: pods the manager knows and pods the runtime still has."""

    def __init__(self, pods: PodStates, runtime_uids: Collection[str]) -> None:
        self._pods, self._runtime_uids = pods, runtime_uids

    def __contains__(self, uid: object) -> bool:
        return isinstance(uid, str) and (uid in self._runtime_uids or self._pods.known(uid))

    def __iter__(self) -> Iterator[str]:
        return iter(self._runtime_uids)

    def __len__(self) -> int:
        return len(self._runtime_uids)


def _remove_log(path: str) -> None:
    """The container's log file and its rotated files."""
    try:
        paths = [path, *rotated_files(path)]
    except OSError:
        paths = [path]
    for name, exc in remove_logs(paths):
        log.warning("cannot remove the log %s of a removed container: %s", name, exc)
