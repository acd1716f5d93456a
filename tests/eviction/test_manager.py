"""The eviction manager's cycle (synchronize) and admission, on hand-built Snapshots with a fake pod
manager, reclaimer and clock: grace periods, the pressure transition period, minimum reclaim,
node-level reclaim first, one pod per cycle, critical and static pods spared, the kubelet's
messages. Real pressure is in tests/e2e/test_eviction_pressure.py and tests/cluster/test_eviction.py."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from kubeletapi.api.core_v1 import Pod
from kubeletapi.cgroups.stats import CgroupSample, MemoryStats
from kubeletapi.clock import FakeClock
from kubeletapi.eviction.manager import EvictionConfig, EvictionManager
from kubeletapi.eviction.thresholds import parse_thresholds
from kubeletapi.pods.admission import Refusal
from kubeletapi.stats.fs import FsStats
from kubeletapi.stats.inventory import ContainerRef, PodRef
from kubeletapi.stats.machine import MachineInfo
from kubeletapi.stats.node import NodeMemory, Rlimit
from kubeletapi.stats.snapshot import ContainerSnap, FsSample, NodeSnap, Observed, PodSnap, Snapshot

Mi, Gi = 2**20, 2**30
CAPACITY = 8 * Gi
MACHINE = MachineInfo(4, 2, 1, 0, CAPACITY, 0, "", "", "", None, "", "")


def pod(name: str, *, memory: str | None = None, priority: int | None = None, grace: int | None = None,
        annotations: dict[str, str] | None = None, tolerations: list[dict[str, str]] | None = None) -> Pod:
    resources = {"requests": {"memory": memory}, "limits": {}} if memory else {}
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i", "resources": resources}],
                            "tolerations": tolerations or []}
    if priority is not None:
        spec["priority"] = priority
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    meta = {"name": name, "namespace": "ns", "uid": name,
            "annotations": annotations or {"kubernetes.io/config.source": "api"}}
    return Pod.model_validate({"metadata": meta, "spec": spec})


def _sample(path: str, working_set: int, ns: int) -> Observed:
    return Observed(CgroupSample(path, ns, memory=MemoryStats(working_set, working_set)))


def snapshot(ns: int, *, memory_used: int = Gi, disk_free: int = 50 * Gi, pids: int = 100,
             pods: dict[str, int] | None = None) -> Snapshot:
    """A cycle at `ns`: the node's used memory, nodefs free bytes, tasks; each pod's working set."""
    fs = FsSample(FsStats("/dev/vda", 253, 0, 100 * Gi, disk_free, 100 * Gi - disk_free, 1000, 900, 100), ns)
    meminfo = NodeMemory(CAPACITY, 0, None, 0, 0, 0, 0, 0, 0, 0, 0)
    node = NodeSnap("n", 0, MACHINE, _sample("/", memory_used, ns), meminfo, None, (), "", ns, fs, fs, None, fs, (),
                    Rlimit(32768, pids), ns)
    snaps = []
    for uid, working_set in (pods or {}).items():
        ref = ContainerRef("c", f"id-{uid}", "i", 0, 0, True)
        container = ContainerSnap(ref, _sample(f"/{uid}/c", working_set, ns), None)
        snaps.append(PodSnap(PodRef(uid, uid, "ns", 0), _sample(f"/{uid}", working_set, ns), (container,), (), 1))
    return Snapshot(1, ns, node, (), (), tuple(snaps))


@dataclass
class FakePods:
    active: list[Pod]
    evicted: list[tuple[str, int, str]] = field(default_factory=list)

    def active_pods(self) -> Sequence[Pod]:
        return list(self.active)

    async def evict(self, target: Pod, grace_s: int, message: str) -> bool:
        self.evicted.append((target.metadata.name, grace_s, message))
        self.active = [p for p in self.active if p is not target]
        return True


@dataclass
class FakeStats:
    fresh: Snapshot | None = None

    async def collect(self) -> Snapshot | None:
        return self.fresh


@dataclass
class FakeReclaimer:
    """Frees what `after` says: the fresh Snapshot the manager reads once it has run."""

    stats: FakeStats
    after: Snapshot
    calls: list[str] = field(default_factory=list)

    async def delete_unused_images(self) -> int:
        self.calls.append("images")
        self.stats.fresh = self.after
        return 1

    async def delete_all_unused_containers(self) -> None:
        self.calls.append("containers")


@dataclass
class Observer:
    evictions: list[str] = field(default_factory=list)
    ages: list[tuple[str, float]] = field(default_factory=list)

    def evicted(self, signal: str) -> None:
        self.evictions.append(signal)

    def stats_age(self, signal: str, seconds: float) -> None:
        self.ages.append((signal, seconds))


def manager(pods: FakePods, *, hard: dict[str, str] | None = None, soft: dict[str, str] | None = None,
            grace: dict[str, str] | None = None, reclaim: dict[str, str] | None = None, transition: float = 300,
            max_grace: int = 0, clock: FakeClock | None = None, stats: FakeStats | None = None,
            reclaimers: Sequence[Any] = (), observer: Observer | None = None) -> EvictionManager:
    thresholds = parse_thresholds(hard or {}, soft or {}, grace or {}, reclaim or {})
    return EvictionManager(EvictionConfig(tuple(thresholds), transition, max_grace), pods, stats or FakeStats(),
                           clock or FakeClock(start=1000.0), reclaimers, observer=observer)


def sync(m: EvictionManager, snap: Snapshot) -> Pod | None:
    return asyncio.run(m.synchronize(snap))


S = 1_000_000_000


def test_hard_memory_threshold_evicts_one_pod_with_the_kubelets_message() -> None:
    pods = FakePods([pod("burstable", memory="1Gi"), pod("besteffort")])
    observer = Observer()
    m = manager(pods, hard={"memory.available": "1Gi"}, observer=observer, clock=FakeClock(start=1000.0))
    assert sync(m, snapshot(1000 * S, memory_used=2 * Gi)) is None and m.conditions() == ()
    used = {"burstable": 512 * Mi, "besteffort": 6 * Gi + 512 * Mi}
    evicted = sync(m, snapshot(1000 * S + 1, memory_used=7 * Gi + 512 * Mi, pods=used))
    assert evicted is not None and evicted.metadata.name == "besteffort"
    assert m.conditions() == ("MemoryPressure",)
    assert pods.evicted == [("besteffort", 1, (
        "The node was low on resource: memory. Threshold quantity: 1Gi, available: 512Mi. "
        "Container c was using 6656Mi, request is 0, has larger consumption of memory. "))]
    assert observer.evictions == ["memory.available"]
    assert [signal for signal, _ in observer.ages] == ["memory.available"]
    # the same stats again: nothing more (thresholdsUpdatedStats); newer ones: the next pod
    assert sync(m, snapshot(1000 * S + 1, memory_used=7 * Gi + 512 * Mi, pods=used)) is None
    assert sync(m, snapshot(1000 * S + 2, memory_used=7 * Gi + 512 * Mi, pods=used)) is not None
    assert [name for name, _, _ in pods.evicted] == ["besteffort", "burstable"]


@pytest.mark.parametrize("spared", [
    pytest.param(pod("static", annotations={"kubernetes.io/config.source": "file"}), id="static"),
    pytest.param(pod("mirror", annotations={"kubernetes.io/config.source": "api",
                                            "kubernetes.io/config.mirror": "x"}), id="mirror"),
    pytest.param(pod("critical", priority=2_000_000_000), id="system-critical priority"),
])
def test_critical_pods_are_never_evicted(spared: Pod) -> None:
    pods = FakePods([spared])
    m = manager(pods, hard={"memory.available": "1Gi"})
    assert sync(m, snapshot(S, memory_used=7 * Gi + 512 * Mi, pods={spared.metadata.uid: 7 * Gi})) is None
    assert pods.evicted == [] and m.conditions() == ("MemoryPressure",)
    pods.active.append(pod("other"))
    assert sync(m, snapshot(2 * S, memory_used=7 * Gi + 512 * Mi, pods={spared.metadata.uid: 7 * Gi})) is not None
    assert [name for name, _, _ in pods.evicted] == ["other"]  # ranked after, but the one that may go


def test_soft_threshold_waits_for_its_grace_period_and_uses_the_pods_grace() -> None:
    clock = FakeClock(start=1000.0)
    pods = FakePods([pod("a", grace=5)])
    m = manager(pods, soft={"pid.available": "1000"}, grace={"pid.available": "30s"}, max_grace=20, clock=clock)
    assert sync(m, snapshot(S, pids=32000)) is None
    assert m.conditions() == ("PIDPressure",)  # the condition does not wait for the grace period
    clock.advance(29)
    assert sync(m, snapshot(2 * S, pids=32000)) is None and pods.evicted == []
    clock.advance(1)
    assert sync(m, snapshot(3 * S, pids=32000)) is not None
    assert pods.evicted[0][:2] == ("a", 5)  # min(evictionMaxPodGracePeriod 20, the pod's 5)
    assert pods.evicted[0][2].startswith("The node was low on resource: pids. Threshold quantity: 1k, available: 768. ")


def test_pressure_condition_lasts_the_transition_period() -> None:
    clock = FakeClock(start=1000.0)
    m = manager(FakePods([]), hard={"nodefs.available": "10Gi"}, transition=60, clock=clock)
    sync(m, snapshot(S, disk_free=5 * Gi))
    assert m.conditions() == ("DiskPressure",)
    clock.advance(59)
    sync(m, snapshot(2 * S, disk_free=50 * Gi))
    assert m.conditions() == ("DiskPressure",)
    clock.advance(1)
    sync(m, snapshot(3 * S, disk_free=50 * Gi))
    assert m.conditions() == ()


def test_minimum_reclaim_keeps_evicting_until_reclaimed() -> None:
    pods = FakePods([pod("a"), pod("b"), pod("c")])
    m = manager(pods, hard={"nodefs.available": "10Gi"}, reclaim={"nodefs.available": "5Gi"})
    assert sync(m, snapshot(S, disk_free=9 * Gi)) is not None
    # above the threshold, short of threshold + minimum reclaim: still met, the next pod goes
    assert sync(m, snapshot(2 * S, disk_free=12 * Gi)) is not None
    assert sync(m, snapshot(3 * S, disk_free=15 * Gi)) is None  # reclaimed: done
    assert [name for name, _, _ in pods.evicted] == ["a", "b"]
    without = FakePods([pod("a"), pod("b")])
    m = manager(without, hard={"nodefs.available": "10Gi"})
    sync(m, snapshot(S, disk_free=9 * Gi))
    assert sync(m, snapshot(2 * S, disk_free=12 * Gi)) is None  # no minimum reclaim: resolved at once


def test_node_level_reclaim_first_for_disk_and_no_eviction_when_it_suffices() -> None:
    stats = FakeStats()
    pods = FakePods([pod("a")])
    reclaimer = FakeReclaimer(stats, snapshot(2 * S, disk_free=20 * Gi))
    m = manager(pods, hard={"nodefs.available": "10Gi"}, stats=stats, reclaimers=[reclaimer])
    assert sync(m, snapshot(S, disk_free=5 * Gi, pods={"a": Mi})) is None
    assert reclaimer.calls == ["containers", "images"] and pods.evicted == []
    reclaimer.after = snapshot(4 * S, disk_free=6 * Gi)  # reclaim frees too little: a pod goes
    assert sync(m, snapshot(3 * S, disk_free=5 * Gi, pods={"a": Mi})) is not None
    assert reclaimer.calls == ["containers", "images"] * 2
    assert pods.evicted[0][2].startswith(
        "The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi, available: 5Gi. ")


def test_memory_pressure_does_not_run_the_garbage_collectors() -> None:
    stats = FakeStats()
    reclaimer = FakeReclaimer(stats, snapshot(2 * S))
    pods = FakePods([pod("a")])
    m = manager(pods, hard={"memory.available": "1Gi"}, stats=stats, reclaimers=[reclaimer])
    assert sync(m, snapshot(S, memory_used=7 * Gi + 512 * Mi, pods={"a": Gi})) is not None
    assert reclaimer.calls == []


def _admission(m: EvictionManager, candidate: Pod) -> Refusal | None:
    return m.admit(candidate, [])


def test_admission_under_pressure() -> None:
    clock = FakeClock(start=1000.0)
    m = manager(FakePods([]), hard={"memory.available": "1Gi", "nodefs.available": "10Gi"}, clock=clock)
    assert _admission(m, pod("be")) is None  # no pressure: everything
    sync(m, snapshot(S, memory_used=7 * Gi + 512 * Mi))
    memory_only = Refusal("Evicted", "The node had condition: [MemoryPressure]. ")
    assert _admission(m, pod("be")) == memory_only
    assert _admission(m, pod("burstable", memory="64Mi")) is None
    assert _admission(m, pod("critical", priority=2_000_000_000)) is None
    assert _admission(m, pod("static", annotations={"kubernetes.io/config.source": "file"})) is None
    tolerant = [{"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"}]
    assert _admission(m, pod("tolerant", tolerations=tolerant)) is None
    sync(m, snapshot(2 * S, memory_used=7 * Gi + 512 * Mi, disk_free=5 * Gi))
    both = Refusal("Evicted", "The node had condition: [MemoryPressure DiskPressure]. ")
    assert _admission(m, pod("burstable", memory="64Mi")) == both
    assert _admission(m, pod("tolerant", tolerations=tolerant)) == both
