"""The summary built from fixture cycles: derived values, encoding rules, resets and vanished cgroups."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kubeletapi.cgroups.stats import PSI, CgroupSample, CpuStats, Pressure, PSIData
from kubeletapi.clock import FakeClock
from kubeletapi.stats.snapshot import Observed, Snapshot
from kubeletapi.stats.summary import SummaryError, cpu_and_memory_summary, encode, full_summary
from tests.stats.fixture import CTR, START, FixtureInventory, fixture_snapshots, make_collector

Mi = 1 << 20


@pytest.fixture(params=[1, 2], ids=["v1", "v2"])
def cycles(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Snapshot, Snapshot]:
    return fixture_snapshots(tmp_path, request.param)


def wire(snap: Snapshot, cpu_memory: bool = False) -> dict[str, Any]:
    summary = cpu_and_memory_summary(snap) if cpu_memory else full_summary(snap)
    parsed: dict[str, Any] = json.loads(encode(summary))
    return parsed


def test_rates_come_from_the_last_two_samples(cycles: tuple[Snapshot, Snapshot]) -> None:
    first, second = cycles
    before, after = wire(first), wire(second)
    assert "usageNanoCores" not in before["pods"][0]["containers"][0]["cpu"]  # one sample: no rate yet
    container = after["pods"][0]["containers"][0]
    assert container["cpu"]["usageNanoCores"] == 500_000_000  # 5 s of CPU in 10 s
    assert after["pods"][0]["cpu"]["usageNanoCores"] == 500_000_000
    assert after["node"]["cpu"]["usageNanoCores"] == 1_200_000_000
    delta = container["cpu"]["usageCoreNanoSeconds"] - before["pods"][0]["containers"][0]["cpu"]["usageCoreNanoSeconds"]
    assert delta == 5_000_000_000


def test_memory_figures_and_available_bytes(cycles: tuple[Snapshot, Snapshot]) -> None:
    _, snap = cycles
    doc = wire(snap)
    pod, container = doc["pods"][0], doc["pods"][0]["containers"][0]
    assert container["memory"]["workingSetBytes"] == 80 * Mi
    assert container["memory"]["usageBytes"] == 100 * Mi
    assert container["memory"]["availableBytes"] == 256 * Mi - 80 * Mi  # limit - working set
    assert pod["memory"]["availableBytes"] == 512 * Mi - 84 * Mi
    node = doc["node"]["memory"]
    assert node["availableBytes"] == snap.node.machine.memory_capacity - node["workingSetBytes"]
    # The kubelet's pageFaults is the cgroup's own pgfault counter.
    assert container["memory"]["pageFaults"] == 90000
    assert container["memory"]["majorPageFaults"] == 120


def test_encoding_rules(cycles: tuple[Snapshot, Snapshot]) -> None:
    _, snap = cycles
    body = encode(full_summary(snap)).decode()
    assert body.startswith('{\n "node": {\n  "nodeName": "node-1",\n')  # one-space indentation
    assert not body.endswith("\n")
    doc = json.loads(body)
    pod = doc["pods"][0]
    assert pod["podRef"] == {"name": "web", "namespace": "default", "uid": "6b2f4a1e-3c9d-4f7a-9e2b-1a5c8d7e0f31"}
    assert pod["startTime"] == "2025-11-21T07:26:40Z"  # second precision, UTC
    assert doc["node"]["cpu"]["time"] == "2025-11-21T10:00:10Z"
    network = doc["node"]["network"]
    assert network["name"] == "eth0" and network["rxBytes"] == 245618870  # eth0 flattened beside time
    assert [i["name"] for i in network["interfaces"]] == ["eth0", "eth1"]  # lo left out, as cAdvisor does
    assert set(pod) == {"podRef", "startTime", "containers", "cpu", "memory", "io", "network", "volume",
                        "ephemeral-storage", "process_stats", "swap"}
    assert pod["process_stats"] == {"process_count": 2}
    assert list(doc["node"]["runtime"]) == ["imageFs", "containerFs"]
    assert doc["node"]["runtime"]["imageFs"]["usedBytes"] == 3 * Mi  # the runtime's own files
    assert doc["node"]["fs"]["usedBytes"] == 50 * (1 << 30)  # rootfs: filesystem-wide
    # maxpid = min(pid_max, threads-max)
    assert doc["node"]["rlimit"] == {"time": "2025-11-21T10:00:10Z", "maxpid": 127532, "curproc": 1342}
    assert doc["node"]["startTime"] is not None  # boot time
    names = [c["name"] for c in doc["node"]["systemContainers"]]
    assert names == ["kubelet", "runtime", "pods"]


def test_volumes_and_ephemeral_storage(cycles: tuple[Snapshot, Snapshot]) -> None:
    _, snap = cycles
    pod = wire(snap)["pods"][0]
    cache, data = pod["volume"]
    assert (cache["name"], cache["usedBytes"], cache["inodesUsed"]) == ("cache", 8 * Mi, 12)
    assert data["name"] == "data" and "usedBytes" not in data  # too large to walk: capacity only
    assert data["capacityBytes"] == 200 * (1 << 30)
    eph = pod["ephemeral-storage"]
    assert eph["usedBytes"] == 8 * Mi + 24576  # emptyDir + container logs; hostPath is not ephemeral
    assert eph["inodesUsed"] == 12 + 3
    assert pod["containers"][0]["logs"]["usedBytes"] == 24576


def test_cpu_and_memory_variant_keeps_only_cpu_memory_swap(cycles: tuple[Snapshot, Snapshot]) -> None:
    _, snap = cycles
    doc = wire(snap, cpu_memory=True)
    assert set(doc["node"]) == {"nodeName", "systemContainers", "startTime", "cpu", "memory", "swap"}
    assert doc["node"]["startTime"] == "2025-11-21T07:26:40Z"  # the root cgroup's creation, not boot
    assert set(doc["pods"][0]) == {"podRef", "startTime", "containers", "cpu", "memory", "swap"}
    assert set(doc["pods"][0]["containers"][0]) == {"name", "startTime", "cpu", "memory", "swap"}


def _with_container_sample(snap: Snapshot, sample: CgroupSample, prev: CgroupSample | None) -> Snapshot:
    pod = snap.pods[0]
    container = dataclasses.replace(pod.containers[0], stats=Observed(sample, prev))
    return dataclasses.replace(snap, pods=(dataclasses.replace(pod, containers=(container,)),))


def test_counter_going_backwards_gives_no_rate(cycles: tuple[Snapshot, Snapshot]) -> None:
    _, snap = cycles
    observed = snap.pods[0].containers[0].stats
    assert observed is not None and observed.prev is not None and observed.cur.cpu is not None
    reset = dataclasses.replace(observed.cur, cpu=CpuStats(usage_ns=1000))
    cpu = wire(_with_container_sample(snap, reset, observed.prev))["pods"][0]["containers"][0]["cpu"]
    assert cpu["usageCoreNanoSeconds"] == 1000
    assert "usageNanoCores" not in cpu  # never negative or huge
    same_time = dataclasses.replace(observed.cur, timestamp_ns=observed.prev.timestamp_ns)
    cpu = wire(_with_container_sample(snap, same_time, observed.prev))["pods"][0]["containers"][0]["cpu"]
    assert "usageNanoCores" not in cpu


def test_vanished_container_cgroup_is_skipped(tmp_path: Path) -> None:
    first, _ = fixture_snapshots(tmp_path, 1)
    for hierarchy in (tmp_path / "cgroups/sys/fs/cgroup").iterdir():  # the container exits
        shutil.rmtree(hierarchy / CTR.lstrip("/"), ignore_errors=True)
    collector = make_collector(tmp_path, FakeClock(START + 20))
    inventory = FixtureInventory(tmp_path)  # still lists it: the runtime has not noticed yet
    snap = collector.collect(inventory.pods(), inventory.runtime_pids(), first, 3)
    assert snap.errors == ()
    container = wire(snap)["pods"][0]["containers"][0]
    assert container["name"] == "app" and "cpu" not in container and "memory" not in container
    assert wire(snap)["pods"][0]["cpu"]["usageNanoCores"] == 250_000_000  # the pod: 5 s over 20 s


def test_unreadable_rootfs_fails_the_full_summary_only(cycles: tuple[Snapshot, Snapshot]) -> None:
    _, snap = cycles
    broken = dataclasses.replace(snap, errors=("failed to get rootFs stats: /x does not exist",))
    with pytest.raises(SummaryError, match="failed to get rootFs stats"):
        full_summary(broken)
    assert cpu_and_memory_summary(broken).node.cpu is not None


def test_pods_and_containers_are_always_arrays(cycles: tuple[Snapshot, Snapshot]) -> None:
    _, snap = cycles
    assert isinstance(wire(snap)["pods"][0]["containers"], list)
    assert json.loads(encode(full_summary(dataclasses.replace(snap, pods=()))))["pods"] == []


def test_a_pod_without_a_running_container_is_left_out(cycles: tuple[Snapshot, Snapshot]) -> None:
    """The kubelet (its CRI stats provider, seen by tests/oracle) lists a pod by its running
    containers' stats: a crash-looper waiting in back-off is in neither summary. (This test said
    `containers: []` for such a pod before the oracle compared the two.)"""
    _, snap = cycles
    empty = dataclasses.replace(snap, pods=(dataclasses.replace(snap.pods[0], containers=()),))
    assert wire(empty)["pods"] == []
    assert cpu_and_memory_summary(empty).pods == []


ZERO_PSI = {"full": {"total": 0, "avg10": 0, "avg60": 0, "avg300": 0},
            "some": {"total": 0, "avg10": 0, "avg60": 0, "avg300": 0}}


def test_pressure_where_the_kubelet_writes_it(cycles: tuple[Snapshot, Snapshot]) -> None:
    """psi on every CPU and memory object, an io object (time, psi) in the full summary at every
    level; zeros without pressure files (cgroup v1), the cgroup's figures with them."""
    _, snap = cycles
    doc = wire(snap)
    node, pod = doc["node"], doc["pods"][0]
    container, kubelet = pod["containers"][0], doc["node"]["systemContainers"][0]
    for level in (node, pod, container, kubelet):
        assert level["cpu"]["psi"] == ZERO_PSI and level["memory"]["psi"] == ZERO_PSI
        assert level["io"] == {"time": level["cpu"]["time"], "psi": ZERO_PSI}
    assert list(node)[:7] == ["nodeName", "systemContainers", "startTime", "cpu", "memory", "io", "network"]
    assert list(container)[:5] == ["name", "startTime", "cpu", "memory", "io"]
    assert "io" not in doc["node"]["systemContainers"][-1]  # nothing read: no io either
    light = json.loads(encode(cpu_and_memory_summary(snap)))
    assert "io" not in light["node"] and light["node"]["cpu"]["psi"] == ZERO_PSI
    assert "io" not in light["pods"][0] and light["pods"][0]["memory"]["psi"] == ZERO_PSI

    stalled = Pressure(cpu=PSI(some=PSIData(1500, 0.5, 0.25, 0.0), full=PSIData(700, 0.125, 0.0, 0.0)))
    pod_snap = snap.pods[0]
    assert pod_snap.stats is not None
    pressed = dataclasses.replace(pod_snap, stats=dataclasses.replace(
        pod_snap.stats, cur=dataclasses.replace(pod_snap.stats.cur, pressure=stalled)))
    psi = wire(dataclasses.replace(snap, pods=(pressed,)))["pods"][0]["cpu"]["psi"]
    assert psi == {"full": {"total": 700, "avg10": 0.125, "avg60": 0, "avg300": 0},
                   "some": {"total": 1500, "avg10": 0.5, "avg60": 0.25, "avg300": 0}}
