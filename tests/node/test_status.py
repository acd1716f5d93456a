"""Node facts and status, as the kubelet's setters compute them."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from kubeletapi.node.facts import NodeFacts
from kubeletapi.node.status import Pressure, changed, conditions, node_status, status_patch
from kubeletapi.stats.machine import MachineInfo

GI = 1 << 30
MACHINE = MachineInfo(num_cores=4, num_physical_cores=2, num_sockets=1, cpu_frequency_khz=0,
                      memory_capacity=8 * GI, swap_capacity=0, machine_id="m", system_uuid="u", boot_id="b",
                      boot_time=0, kernel_version="6.1.0", os_version="Debian GNU/Linux 12 (bookworm)")
T0 = dt.datetime(2026, 11, 25, 12, 0, 0, tzinfo=dt.UTC)


def facts(**kw: Any) -> NodeFacts:
    base: dict[str, Any] = {
        "name": "n1", "hostname": "n1", "addresses": [("InternalIP", "10.1.2.3"), ("Hostname", "n1")],
        "kubelet_port": 10250, "machine": MACHINE, "max_pods": 110, "rootfs_bytes": 100 * GI,
        "runtime_version": "process://0.1.0", "kubelet_version": "v1.34.4+kubeletapi-0.1.0",
    }
    return NodeFacts(**{**base, **kw})


@pytest.mark.parametrize(
    ("extra", "allocatable"),
    [
        pytest.param({}, {"cpu": "4", "memory": "8Gi", "pods": "110", "ephemeral-storage": "100Gi"},
                     id="nothing-reserved"),
        pytest.param({"eviction_hard": {"memory.available": "100Mi", "nodefs.available": "10%",
                                        "imagefs.available": "15%"}},
                     {"cpu": "4", "memory": "8092Mi", "pods": "110", "ephemeral-storage": "90Gi"},
                     id="hard-eviction-thresholds"),
        pytest.param({"kube_reserved": {"cpu": "500m", "memory": "1Gi"}, "system_reserved": {"cpu": "500m"}},
                     {"cpu": "3", "memory": "7Gi", "pods": "110", "ephemeral-storage": "100Gi"}, id="reservations"),
        pytest.param({"kube_reserved": {"memory": "16Gi"}}, {"cpu": "4", "memory": "0", "pods": "110",
                                                               "ephemeral-storage": "100Gi"}, id="never-negative"),
        pytest.param({"hugepages": {"2Mi": GI}}, {"cpu": "4", "memory": "7Gi", "pods": "110",
                                                   "ephemeral-storage": "100Gi", "hugepages-2Mi": "1Gi"},
                     id="hugepages-taken-from-memory"),
    ],
)
def test_capacity_and_allocatable(extra: dict[str, Any], allocatable: dict[str, str]) -> None:
    f = facts(**extra)
    assert {k: v.wire() for k, v in f.allocatable().items()} == allocatable
    assert f.capacity()["memory"].wire() == "8Gi" and f.capacity()["cpu"].wire() == "4"


def test_conditions_keep_transition_times_and_ready_is_last() -> None:
    first = conditions([], T0, Pressure(), [])
    assert [c["type"] for c in first] == ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
    assert all(c["lastTransitionTime"] == c["lastHeartbeatTime"] == "2026-11-25T12:00:00Z" for c in first)
    later = T0 + dt.timedelta(minutes=5)
    second = conditions(first, later, Pressure(memory=True), ["PLEG is not healthy: x"])
    by = {c["type"]: c for c in second}
    assert by["DiskPressure"]["lastTransitionTime"] == "2026-11-25T12:00:00Z"  # unchanged status
    assert by["DiskPressure"]["lastHeartbeatTime"] == "2026-11-25T12:05:00Z"
    assert (by["MemoryPressure"]["status"], by["MemoryPressure"]["reason"]) == ("True", "KubeletHasInsufficientMemory")
    assert by["MemoryPressure"]["lastTransitionTime"] == "2026-11-25T12:05:00Z"
    assert (by["Ready"]["status"], by["Ready"]["reason"], by["Ready"]["message"]) == (
        "False", "KubeletNotReady", "PLEG is not healthy: x")


def test_changed_ignores_heartbeats_only() -> None:
    f = facts()
    a = node_status(f, "b", {}, T0, Pressure(), [], [])
    b = node_status(f, "b", a, T0 + dt.timedelta(seconds=10), Pressure(), [], [])
    assert not changed(a, b)
    assert changed(None, b)
    assert changed(a, node_status(f, "b2", a, T0, Pressure(), [], []))  # a reboot: bootID
    assert changed(a, node_status(f, "b", a, T0, Pressure(pid=True), [], []))


def test_status_patch_replaces_addresses_and_drops_gone_resources() -> None:
    before = node_status(facts(hugepages={"2Mi": GI}), "b", {}, T0, Pressure(), [], [])
    after = node_status(facts(), "b", before, T0, Pressure(), [], [])
    patch = status_patch(before, after)["status"]
    assert patch["addresses"][-1] == {"$patch": "replace"}
    assert patch["capacity"]["hugepages-2Mi"] is None and patch["allocatable"]["hugepages-2Mi"] is None
    assert patch["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 10250}}
    assert patch["nodeInfo"]["containerRuntimeVersion"] == "process://0.1.0"
