"""The pod cache and how syncs read it: a sync that changes nothing lists nothing, a sync that
changed its pod reads a listing begun after its change, and a relist begun earlier never brings
back a view without that change."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from kubeletapi.api.core_v1 import Pod
from kubeletapi.clock import RealClock
from kubeletapi.pods.backoff import Backoff
from kubeletapi.pods.manifest import decode_pod
from kubeletapi.pods.node import NodeEnv
from kubeletapi.pods.pleg import PLEG, EventType
from kubeletapi.pods.podcache import PodCache, PodRecord
from kubeletapi.pods.static import make_static
from kubeletapi.pods.statusstore import StatusStore
from kubeletapi.pods.sync import PodSyncer
from kubeletapi.pods.volumes import PodVolumes
from kubeletapi.runtime.process.runtime import ProcessRuntime
from kubeletapi.runtime.process.shimbuild import shim_path
from kubeletapi.runtime.types import ContainerState, ContainerStatus, PodMeta, Sandbox, SandboxState
from tests.podtools import container, manifest


def sandbox(uid: str, sid: str = "s") -> Sandbox:
    return Sandbox(id=sid, meta=PodMeta("p", "default", uid), state=SandboxState.READY, created_at=1)


def test_newer_than_is_by_listing_order() -> None:
    cache = PodCache()
    assert cache.newer_than("a", 0) is None  # nothing listed yet: nothing is known
    seq = cache.mark()
    cache.put_all({"a": PodRecord((sandbox("a"),), (), seq)}, seq)
    assert cache.newer_than("a", 0) == PodRecord((sandbox("a"),), (), seq)
    assert cache.newer_than("b", 0) == PodRecord(seq=seq)  # the listing had nothing of b: truly empty
    changed = cache.mark()  # a sync changed pod a after that listing
    assert cache.newer_than("a", changed) is None
    assert cache.newer_than("b", changed) is None


def test_an_older_listing_never_replaces_a_newer_record() -> None:
    cache = PodCache()
    relist = cache.mark()  # a relist begins...
    fresh = cache.mark()  # ...a sync lists its pod afterwards and stores what it found
    cache.put("a", PodRecord((sandbox("a", "new"),), (), fresh))
    cache.put("gone", PodRecord((sandbox("gone"),), (), fresh))
    cache.put("old", PodRecord((sandbox("old"),), (), 0))
    cache.put_all({"a": PodRecord((sandbox("a", "old"),), (), relist)}, relist)  # the relist ends
    record = cache.get("a")
    assert record is not None and record.sandboxes[0].id == "new"
    assert cache.get("gone") is not None  # listed after the relist began: not dropped by it
    assert cache.get("old") is None  # listed before it and absent from it: gone


class CountingRuntime(ProcessRuntime):
    """The process runtime, counting its list calls by filter ("*" for a full listing)."""

    lists: Counter[str]

    async def list_pod_sandboxes(self, pod_uid: str | None = None) -> Sequence[Sandbox]:
        self.lists[f"sandboxes {pod_uid or '*'}"] += 1
        return await super().list_pod_sandboxes(pod_uid)

    async def list_containers(self, pod_uid: str | None = None) -> Sequence[ContainerStatus]:
        self.lists[f"containers {pod_uid or '*'}"] += 1
        return await super().list_containers(pod_uid)


def sleeper(name: str) -> Pod:
    base = decode_pod(manifest(name, container("c", ["sleep", "300"])).encode(), "test")
    return make_static(base, "n", "file", f"/x/{name}.yaml", dt.datetime.now(dt.UTC))


def syncing(tmp_path: Path, kind: type[CountingRuntime] = CountingRuntime
            ) -> tuple[CountingRuntime, PLEG, StatusStore, PodSyncer]:
    """A syncer over a counting process runtime, with its PLEG (pod cache) and status store."""
    clock = RealClock()
    node = NodeEnv(node_name="n", node_ip="127.0.0.1", root_dir=tmp_path, pod_logs_dir=tmp_path / "logs")
    runtime = kind(tmp_path / "state", shim_path(), clock)
    runtime.lists = Counter()
    pleg = PLEG(runtime, clock)
    statuses = StatusStore()
    return runtime, pleg, statuses, PodSyncer(runtime, node, clock, Backoff(clock), PodVolumes(node), pleg, statuses)


def test_syncs_list_only_their_pod_and_only_after_a_change(tmp_path: Path) -> None:
    async def go() -> None:
        runtime, pleg, statuses, syncer = syncing(tmp_path)
        pods = [sleeper("a"), sleeper("b")]
        try:
            await pleg.relist()
            for pod in pods:
                await syncer.sync(pod)  # starts the sandbox and container, then lists that pod
            a, b = (p.metadata.uid for p in pods)
            assert runtime.lists == Counter({"sandboxes *": 1, "containers *": 1, f"sandboxes {a}": 1,
                                             f"containers {a}": 1, f"sandboxes {b}": 1, f"containers {b}": 1})
            runtime.lists.clear()
            for _ in range(3):
                for pod in pods:
                    await syncer.sync(pod)  # nothing to do: the cache answers
            assert runtime.lists == Counter()
            status = statuses.get(a)
            assert status is not None and status.container_statuses[0].state.running is not None

            (live,) = await runtime.list_containers(a)
            await runtime.stop_container(live.id, 0)  # the container dies behind the syncer's back
            events = await pleg.relist()  # (b's start is news to the relist too)
            assert (a, live.id, EventType.DIED) in {(e.pod_uid, e.container_id, e.type) for e in events}
            runtime.lists.clear()
            await syncer.sync(pods[0])  # restarts it (first restart: no back-off), then lists pod a
            assert runtime.lists == Counter({f"sandboxes {a}": 1, f"containers {a}": 1})
            states = sorted((c.attempt, c.state) for c in await runtime.list_containers(a))
            assert states == [(0, ContainerState.EXITED), (1, ContainerState.RUNNING)]
            await syncer.sync(pods[0])  # the cache already shows the restart: no second one
            assert len(await runtime.list_containers(a)) == 2
        finally:
            for pod in pods:
                await syncer.kill(pod)
        assert await runtime.list_containers() == []

    asyncio.run(go())


def test_a_relist_begun_before_a_sync_cannot_hide_its_container(tmp_path: Path) -> None:
    """A relist that lists sandboxes, then waits while a sync starts a pod, then lists containers
    and stores its view: the next sync still sees the container it started (no duplicate)."""

    class SlowLister(CountingRuntime):
        gate: asyncio.Event | None = None

        async def list_containers(self, pod_uid: str | None = None) -> Sequence[ContainerStatus]:
            listed = await super().list_containers(pod_uid)
            if pod_uid is None and self.gate is not None:
                await self.gate.wait()  # the listing was taken before the sync; it lands after
            return listed

    async def go() -> None:
        runtime, pleg, _, syncer = syncing(tmp_path, SlowLister)
        assert isinstance(runtime, SlowLister)
        pod = sleeper("a")
        try:
            await pleg.relist()
            runtime.gate = asyncio.Event()
            relist = asyncio.create_task(pleg.relist())
            await asyncio.sleep(0.05)
            await syncer.sync(pod)
            runtime.gate.set()
            await relist
            record = pleg.cache.get(pod.metadata.uid)  # what /exec, /containerLogs and stats read
            assert record is not None and [c.state for c in record.containers] == [ContainerState.RUNNING]
            await syncer.sync(pod)
            (only,) = await runtime.list_containers(pod.metadata.uid)
            assert only.state is ContainerState.RUNNING
        finally:
            runtime.gate = None
            await syncer.kill(pod)

    asyncio.run(go())
