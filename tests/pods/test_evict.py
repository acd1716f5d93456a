"""The pod manager's evict (the eviction manager's killPodFunc), on the process runtime: the pod is
killed, then kept Failed with reason Evicted while its source defines it, and never started again."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from kubeletapi.api.core_v1 import Container, ObjectMeta, Pod, PodSpec
from kubeletapi.clock import RealClock
from kubeletapi.pods.backoff import Backoff
from kubeletapi.pods.manager import PodManager
from kubeletapi.pods.node import NodeEnv
from kubeletapi.pods.pleg import PLEG
from kubeletapi.pods.sources import ManifestResult, PodUpdate
from kubeletapi.pods.statusstore import StatusStore
from kubeletapi.pods.sync import PodSyncer
from kubeletapi.pods.volumes import PodVolumes
from kubeletapi.runtime.process.runtime import ProcessRuntime
from kubeletapi.runtime.process.shimbuild import shim_path

MESSAGE = "The node was low on resource: memory. Threshold quantity: 1Gi, available: 512Mi. "


def api_pod(name: str) -> Pod:
    return Pod(metadata=ObjectMeta(name=name, namespace="ns", uid=f"uid-{name}", resource_version="1", generation=3),
               spec=PodSpec(containers=[Container(name="c", image="busybox:1.36", command=["sleep", "600"])]))


async def _until(check: object, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


def test_an_evicted_pod_is_killed_and_stays_failed(tmp_path: Path) -> None:
    async def go() -> None:
        clock = RealClock()
        node = NodeEnv(node_name="n", node_ip="127.0.0.1", root_dir=tmp_path, pod_logs_dir=tmp_path / "logs")
        runtime = ProcessRuntime(tmp_path / "state", shim_path(), clock)
        pleg, statuses = PLEG(runtime, clock), StatusStore()
        syncer = PodSyncer(runtime, node, clock, Backoff(clock), PodVolumes(node), pleg, statuses)
        manager = PodManager(syncer, pleg, statuses, clock, 10, ["api"])
        update = PodUpdate("api", (ManifestResult("ns/a", pod=api_pod("a")), ManifestResult("ns/b", pod=api_pod("b"))))
        try:
            manager.apply(update)
            await _until(lambda: all(p.status.phase == "Running" for p in manager.pods()))
            assert not await manager.evict(api_pod("nobody"), 1, MESSAGE)
            target = next(p for p in manager.active_pods() if p.metadata.name == "a")
            assert await manager.evict(target, 1, MESSAGE)
            assert [p.metadata.name for p in manager.active_pods()] == ["b"]
            manager.apply(update)  # still defined by its source: not started again
            await manager.housekeeping()
            (evicted,) = [p for p in manager.pods() if p.metadata.name == "a"]
            status = evicted.status
            assert (status.phase, status.reason, status.message) == ("Failed", "Evicted", MESSAGE)
            assert status.container_statuses[0].state.terminated is not None
            (target_condition,) = [c for c in status.conditions if c.type == "DisruptionTarget"]
            assert (target_condition.status, target_condition.reason, target_condition.message,
                    target_condition.observed_generation) == ("True", "TerminationByKubelet", MESSAGE, 3)
            assert [s.id for s in await runtime.list_pod_sandboxes() if s.meta.uid == "uid-a"] == []
            bound = {b.name: b for b in manager.bound_pods()}
            assert bound["a"].finished and bound["a"].status == status
            manager.apply(PodUpdate("api", (ManifestResult("ns/b", pod=api_pod("b")),)))  # deleted from the API
            assert [p.metadata.name for p in manager.pods()] == ["b"]
        finally:
            await manager.stop()
            await syncer.kill(api_pod("b"))

    asyncio.run(go())
