"""API pods through the real manager, syncer and process runtime: an in-place update, a deletion
honouring deletionGracePeriodSeconds with a terminal final status kept until the API forgets the
pod, a pod deleted before it ever ran, and refusals reported for the status sync."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from kubeletapi.api.core_v1 import Pod
from kubeletapi.clock import RealClock
from kubeletapi.pods.backoff import Backoff
from kubeletapi.pods.manager import PodManager
from kubeletapi.pods.manifest import decode_api_pod
from kubeletapi.pods.node import NodeEnv
from kubeletapi.pods.pleg import PLEG
from kubeletapi.pods.sources import ApiRef, ManifestResult, PodUpdate
from kubeletapi.pods.statusstore import StatusStore
from kubeletapi.pods.sync import PodSyncer
from kubeletapi.pods.volumes import PodVolumes
from kubeletapi.runtime.process.runtime import ProcessRuntime
from kubeletapi.runtime.process.shimbuild import shim_path


def api_pod(command: list[str], version: str = "1", grace: int = 30, **meta: Any) -> Pod:
    return decode_api_pod({
        "metadata": {"name": "web", "namespace": "ns", "uid": "11111111-2222-3333-4444-555555555555",
                     "resourceVersion": version, "generation": 1, **meta},
        "spec": {"nodeName": "n", "terminationGracePeriodSeconds": grace,
                 "containers": [{"name": "c", "image": "busybox", "command": command}]},
        "status": {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-02T03:04:05Z"}]},
    }, "ns/web")


def deleted(pod: Pod, grace: int) -> Pod:
    out = pod.model_copy(deep=True)
    out.metadata.deletion_timestamp = dt.datetime.now(dt.UTC)
    out.metadata.deletion_grace_period_seconds = grace
    out.metadata.resource_version = str(int(pod.metadata.resource_version) + 1)
    return out


def update(*pods: Pod) -> PodUpdate:
    return PodUpdate("api", tuple(ManifestResult(f"ns/{p.metadata.name}", pod=p) for p in pods))


class Rig:
    def __init__(self, tmp: Path, max_pods: int) -> None:
        clock = RealClock()
        node = NodeEnv(node_name="n", node_ip="127.0.0.1", root_dir=tmp, pod_logs_dir=tmp / "logs")
        self.runtime = ProcessRuntime(tmp / "state", shim_path(), clock)
        self.statuses = StatusStore()
        self.pleg = PLEG(self.runtime, clock)
        syncer = PodSyncer(self.runtime, node, clock, Backoff(clock), PodVolumes(node), self.pleg, self.statuses)
        self.manager = PodManager(syncer, self.pleg, self.statuses, clock, max_pods, ["api"])

    async def until(self, what: Callable[[], object], timeout: float = 20) -> None:
        async with asyncio.timeout(timeout):
            while not what():
                await self.manager.housekeeping()
                await asyncio.sleep(0.05)

    def phase(self, uid: str) -> str:
        status = self.statuses.get(uid)
        return status.phase if status is not None else ""


def run(tmp: Path, body: Callable[[Rig], Awaitable[None]], max_pods: int = 110) -> None:
    async def go() -> None:
        rig = Rig(tmp, max_pods)
        try:
            await body(rig)
        finally:
            await rig.manager.stop()
            for sandbox in await rig.runtime.list_pod_sandboxes():
                await rig.runtime.stop_pod_sandbox(sandbox.id)
                await rig.runtime.remove_pod_sandbox(sandbox.id)

    asyncio.run(go())


def test_deleted_pod_stops_on_sigterm_keeps_its_terminal_status_until_the_api_forgets_it(tmp_path: Path) -> None:
    marker = tmp_path / "got-term"
    pod = api_pod(["sh", "-c", f"trap 'touch {marker}; exit 0' TERM; while true; do sleep 0.1; done"])
    uid = pod.metadata.uid

    async def body(rig: Rig) -> None:
        rig.manager.apply(update(pod))
        await rig.until(lambda: rig.phase(uid) == "Running")
        first = rig.statuses.get(uid)
        assert first is not None and first.observed_generation == 1
        scheduled = next(c for c in first.conditions if c.type == "PodScheduled")
        assert scheduled.last_transition_time == dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)  # the API's
        rig.manager.apply(update(deleted(pod, grace=20)))
        await rig.until(lambda: rig.manager.bound_pods()[0].finished)
        assert marker.exists()
        (view,) = rig.manager.bound_pods()
        assert view.deleting and view.status is not None
        assert view.status.phase == "Succeeded"  # exit 0 on SIGTERM: the kubelet's terminal phase
        terminated = view.status.container_statuses[0].state.terminated
        assert terminated is not None and terminated.exit_code == 0
        assert await rig.runtime.list_containers() == []
        assert [p.status.phase for p in rig.manager.pods()] == ["Succeeded"]
        rig.manager.apply(update())  # the API server deleted it
        assert rig.manager.bound_pods() == [] and rig.statuses.get(uid) is None

    run(tmp_path, body)


def test_a_pod_deleted_before_it_ran_finishes_failed_without_starting(tmp_path: Path) -> None:
    pod = api_pod(["sleep", "300"])

    async def body(rig: Rig) -> None:
        rig.manager.apply(update(deleted(pod, grace=30)))
        await rig.until(lambda: rig.manager.bound_pods()[0].finished)
        (view,) = rig.manager.bound_pods()
        assert view.status is not None and view.status.phase == "Failed"
        state = view.status.container_statuses[0].state.terminated
        assert state is not None and (state.reason, state.exit_code) == ("ContainerStatusUnknown", 137)
        assert await rig.runtime.list_containers() == []

    run(tmp_path, body)


def test_an_updated_api_pod_is_synced_in_place(tmp_path: Path) -> None:
    pod = api_pod(["sleep", "300"])
    uid = pod.metadata.uid

    async def body(rig: Rig) -> None:
        rig.manager.apply(update(pod))
        await rig.until(lambda: rig.phase(uid) == "Running")
        changed = pod.model_copy(deep=True)
        changed.metadata.resource_version = "2"
        changed.spec.containers[0].command = ["sleep", "301"]
        rig.manager.apply(update(changed))

        async def restarted() -> bool:
            return any(c.attempt == 1 for c in await rig.runtime.list_containers())

        async with asyncio.timeout(20):
            while not await restarted():
                await rig.manager.housekeeping()
                await asyncio.sleep(0.05)
        assert rig.manager.spec(uid) is changed

    run(tmp_path, body)


def test_refusals_are_reported_failed_with_a_stable_status(tmp_path: Path) -> None:
    pods = [api_pod(["sleep", "300"], name=f"p{i}", uid=f"uid-{i}") for i in range(3)]

    async def body(rig: Rig) -> None:
        broken = ManifestResult("ns/bad", error="ns/bad: spec.frobnicate: unknown field",
                                api=ApiRef("ns", "bad", "uid-bad", deleting=False))
        rig.manager.apply(PodUpdate("api", (*update(*pods).results, broken)))
        views = {v.name: v for v in rig.manager.bound_pods()}
        assert set(views) == {"p0", "p1", "p2", "bad"}
        out_of_pods = views["p2"].status
        assert out_of_pods is not None and (out_of_pods.phase, out_of_pods.reason) == ("Failed", "OutOfpods")
        assert views["p2"].finished
        refused = views["bad"].status
        assert refused is not None and (refused.phase, refused.reason) == ("Failed", "PodNotSupported")
        assert "spec.frobnicate: unknown field" in refused.message
        again = {v.name: v for v in rig.manager.bound_pods()}["bad"].status
        assert again == refused  # the same status every pass: no patch storm

    run(tmp_path, body, max_pods=2)  # a node with room for two pods
