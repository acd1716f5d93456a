"""--runonce: run the static pods once and exit (the kubelet's RunOnce, pkg/kubelet/runonce.go
before its removal; the 1.34 kubelet refuses the runOnce configuration field, and so does the
configuration here: the mode is this agent's --runonce flag).

One snapshot of each static pod source (the manifest directory or file, the manifest URL), read
once; the pods admitted as always (a rejected one is reported and counts as failed); the sync
loop's housekeeping every second while they start; each pod checked after 1 s, then at doubling
intervals, at most 10 retries (runOnceRetryDelay, runOnceRetryDelayBackoff, runOnceMaxRetries):
it ran once every container runs (or the pod Succeeded), it failed when the pod is Failed, a
container cannot start (CrashLoopBackOff, image and config errors), or after the last retry
("timeout error: ..."). Then one line per pod on stdout, the pods removed (killed, their
containers and sandboxes gone), and the exit status: 0 when every pod ran, 1 otherwise. No
listener, no stats, no status or GC loops: what RunOnce needs only.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

from kubeletapi import nodeinfo
from kubeletapi.aio import cancel_and_wait
from kubeletapi.api.core_v1 import Pod
from kubeletapi.clock import Clock, RealClock
from kubeletapi.config import KubeletConfiguration, NodeOptions
from kubeletapi.errors import ConfigError, Unavailable
from kubeletapi.kubelet.pods import PodWiring
from kubeletapi.metrics.pods import PodMetrics
from kubeletapi.metrics.spec import new_registry
from kubeletapi.pods.sources import FileSource, PodSource, PodUpdate, URLSource

log = logging.getLogger(__name__)
RETRY_DELAY_S = 1.0  # runOnceRetryDelay
RETRY_BACKOFF = 2  # runOnceRetryDelayBackoff
MAX_RETRIES = 10  # runOnceMaxRetries
HOUSEKEEPING_S = 1.0  # the sync loop's period
FAILING = frozenset({"CrashLoopBackOff", "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
                     "CreateContainerConfigError", "CreateContainerError", "RunContainerError",
                     "PreStartHookError", "PostStartHookError", "CreatePodSandboxError"})


@dataclass(frozen=True)
class PodResult:
    name: str  # namespace/name, or the manifest's origin for a manifest without a pod
    ran: bool
    detail: str  # Running, Succeeded, or why it failed

    def line(self) -> str:
        return f"{self.name}: {self.detail}" if self.ran else f"{self.name}: failed: {self.detail}"


def outcome(pod: Pod) -> tuple[bool, str] | None:
    """(ran, detail) once the pod has run or failed, None while it is still starting."""
    status = pod.status
    if status.phase == "Succeeded":
        return True, "Succeeded"
    by_name = {s.name: s for s in status.container_statuses}
    if status.phase == "Failed":
        exits = [f'container "{s.name}" exited with {t.exit_code} ({t.reason})' for s in by_name.values()
                 if (t := s.state.terminated) is not None and t.exit_code != 0]
        return False, ": ".join(x for x in ("Failed", status.reason, status.message, ", ".join(exits)) if x)
    for c in pod.spec.containers:
        s = by_name.get(c.name)
        waiting = s.state.waiting if s is not None else None
        if waiting is not None and waiting.reason in FAILING:
            return False, f'container "{c.name}": {waiting.reason}: {waiting.message}'.rstrip(": ")
    if all(by_name.get(c.name) is not None and by_name[c.name].state.running is not None for c in pod.spec.containers):
        return True, "Running"
    return None


async def read_once(name: str, source: PodSource) -> PodUpdate:
    """One snapshot of a static pod source (Unavailable when it cannot be read now)."""
    if isinstance(source, FileSource):
        results = await asyncio.to_thread(source.scan)
        if results is None:
            raise Unavailable(f"cannot read the static pods of source {name}")
        return PodUpdate(name, tuple(results))
    if isinstance(source, URLSource):
        import httpx  # noqa: PLC0415 - only a --manifest-url source needs an HTTP client

        async with httpx.AsyncClient(follow_redirects=True) as client:
            update = await source.poll(client)
        if update is None:
            raise Unavailable(f"cannot fetch the static pods of source {name}")
        return update
    raise ConfigError(f"--runonce runs static pods only; source {name} cannot be read once")


class RunOnce:
    def __init__(self, cfg: KubeletConfiguration, opts: NodeOptions, clock: Clock | None = None,
                 out: TextIO | None = None) -> None:
        if not cfg.static_pod_path and not cfg.static_pod_url:
            raise ConfigError("--runonce needs static pods: --pod-manifest-path (staticPodPath) or --manifest-url "
                              "(staticPodURL)")
        self._cfg, self._opts = cfg, opts
        self._clock = clock or RealClock()
        self._out = out or sys.stdout

    async def run(self) -> bool:
        """Run, report and remove the pods; True when every pod ran."""
        node = nodeinfo.node_name(self._opts.hostname_override)
        ip = str(nodeinfo.node_ips(self._opts.node_ip)[0])
        pods = PodWiring(self._cfg, self._opts, node, ip, self._clock, PodMetrics(new_registry()))
        housekeeping: list[asyncio.Task[None]] = []
        try:
            await pods.start_runtime()
            updates = [await read_once(name, source) for name, source in pods.sources]
            housekeeping.append(asyncio.create_task(self._housekeeping(pods), name="runonce-housekeeping"))
            results = await self._run(pods, updates)
            for result in results:
                print(result.line(), file=self._out, flush=True)
            await self._remove(pods, updates)
        finally:
            await cancel_and_wait(housekeeping)
            await pods.stop()
        failed = [r.name for r in results if not r.ran]
        if failed:
            log.error("runonce failed: error running pods: [%s]", " ".join(failed))
            return False
        log.info("Pods started: %d", len(results))
        return True

    async def _housekeeping(self, pods: PodWiring) -> None:
        while True:
            await pods.manager.housekeeping()
            await self._clock.sleep(HOUSEKEEPING_S)

    async def _run(self, pods: PodWiring, updates: Sequence[PodUpdate]) -> list[PodResult]:
        log.info("Processing manifest with pods: %d", sum(len(u.results) for u in updates))
        for update in updates:
            pods.manager.apply(update)
        results = [PodResult(r.origin, False, r.error) for u in updates for r in u.results if r.pod is None]
        admitted = []
        for pod in pods.manager.pods():
            if pods.manager.known(pod.metadata.uid):
                admitted.append(pod)
            else:  # refused at admission (a duplicate, OutOfpods, an admit handler)
                results.append(PodResult(_name(pod), False, f"rejected: {pod.status.reason}: {pod.status.message}"))
        log.info("Waiting for pods: %d", len(admitted))
        results += await asyncio.gather(*(self._run_pod(pods, pod.metadata.uid, _name(pod)) for pod in admitted))
        return results

    async def _run_pod(self, pods: PodWiring, uid: str, name: str) -> PodResult:
        delay = RETRY_DELAY_S
        for _ in range(MAX_RETRIES + 1):
            await self._clock.sleep(delay)
            pod = next((p for p in pods.manager.pods() if p.metadata.uid == uid), None)
            found = outcome(pod) if pod is not None else None
            if found is not None:
                log.info("Pod %s: %s", name, found[1])
                return PodResult(name, *found)
            log.info("Pod's containers not running, waiting %.0fs: %s", delay, name)
            delay *= RETRY_BACKOFF
        return PodResult(name, False, f'timeout error: pod "{name}" containers not running after {MAX_RETRIES} '
                                      "retries")

    async def _remove(self, pods: PodWiring, updates: Sequence[PodUpdate]) -> None:
        uids = {r.pod.metadata.uid for u in updates for r in u.results if r.pod is not None}
        for update in updates:
            pods.manager.apply(PodUpdate(update.source, ()))
        while any(pods.manager.known(uid) for uid in uids):
            await self._clock.sleep(0.05)
        log.info("Removed the pods: %d", len(uids))


def _name(pod: Pod) -> str:
    return f"{pod.metadata.namespace}/{pod.metadata.name}"

