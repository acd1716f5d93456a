"""The kubelet's resource → cgroup value mapping, case by case (pkg/kubelet/cm/helpers_linux.go and friends)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeletapi.api.core_v1 import Pod
from kubeletapi.cgroups import ResourceConfig
from kubeletapi.cm.cgroupnames import container_cgroup_path, pod_cgroup_path, qos_parent
from kubeletapi.cm.oom import oom_score_adj
from kubeletapi.cm.qos import QOSClass, qos_class
from kubeletapi.cm.resources import (
    ContainerResources,
    container_resource_config,
    milli_cpu_to_quota,
    milli_cpu_to_shares,
    pod_resource_config,
    pod_resources,
)
from kubeletapi.errors import InvalidInput

Mi = 1024 * 1024
Gi = 1024 * Mi
G, B, BE = QOSClass.GUARANTEED, QOSClass.BURSTABLE, QOSClass.BEST_EFFORT


def cr(cpu_req: int | None = None, cpu_lim: int | None = None, mem_req: int | None = None,
       mem_lim: int | None = None, *, sidecar: bool = False) -> ContainerResources:
    return ContainerResources(cpu_req, cpu_lim, mem_req, mem_lim, restartable=sidecar)


def _spec(name: str, c: ContainerResources) -> dict[str, Any]:
    """A container spec with `c`'s figures (milliCPU as `<n>m`, bytes as plain integers)."""
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}
    for table, cpu, memory in ((requests, c.cpu_request, c.memory_request), (limits, c.cpu_limit, c.memory_limit)):
        if cpu is not None:
            table["cpu"] = f"{cpu}m"
        if memory is not None:
            table["memory"] = str(memory)
    spec: dict[str, Any] = {"name": name, "image": "x", "resources": {"requests": requests, "limits": limits}}
    if c.restartable:
        spec["restartPolicy"] = "Always"
    return spec


def pod_of(containers: list[ContainerResources], inits: list[ContainerResources] | None = None) -> Pod:
    return Pod.model_validate({"metadata": {"name": "p", "uid": "u"}, "spec": {
        "containers": [_spec(f"c{i}", c) for i, c in enumerate(containers)],
        "initContainers": [_spec(f"i{i}", c) for i, c in enumerate(inits or [])],
    }})


@pytest.mark.parametrize(
    ("milli", "shares"),
    [
        pytest.param(0, 2, id="zero-is-min-not-kernel-default"),
        pytest.param(1, 2, id="rounds-below-min"),
        pytest.param(100, 102, id="100m"),
        pytest.param(250, 256, id="250m"),
        pytest.param(1000, 1024, id="one-cpu"),
        pytest.param(1500, 1536, id="1500m"),
        pytest.param(256000, 262144, id="at-max"),
        pytest.param(300000, 262144, id="clamped-to-max"),
    ],
)
def test_milli_cpu_to_shares(milli: int, shares: int) -> None:
    assert milli_cpu_to_shares(milli) == shares


@pytest.mark.parametrize(
    ("milli", "period", "quota"),
    [
        pytest.param(0, 100000, 0, id="zero-is-unset"),
        pytest.param(1, 100000, 1000, id="min-1ms"),
        pytest.param(10, 100000, 1000, id="10m-is-min"),
        pytest.param(100, 100000, 10000, id="100m"),
        pytest.param(1500, 100000, 150000, id="1500m"),
        pytest.param(1000, 50000, 50000, id="custom-period"),
        pytest.param(5, 10000, 1000, id="custom-period-min"),
    ],
)
def test_milli_cpu_to_quota(milli: int, period: int, quota: int) -> None:
    assert milli_cpu_to_quota(milli, period) == quota


@pytest.mark.parametrize(
    ("containers", "inits", "qos"),
    [
        pytest.param([cr()], [], BE, id="nothing-set"),
        pytest.param([cr(0, 0, 0, 0)], [], BE, id="zeros-ignored"),
        pytest.param([cr(mem_req=64 * Mi)], [], B, id="memory-request-only"),
        pytest.param([cr(None, 500, None, 128 * Mi)], [], G, id="limits-only-default-requests"),
        pytest.param([cr(500, 500, 128 * Mi, 128 * Mi)], [], G, id="requests-equal-limits"),
        pytest.param([cr(250, 500, 128 * Mi, 128 * Mi)], [], B, id="cpu-request-below-limit"),
        pytest.param([cr(500, 500, 128 * Mi, 128 * Mi), cr()], [], B, id="one-container-unlimited"),
        pytest.param([cr(500, 500)], [], B, id="cpu-only-limits"),
        pytest.param([cr(500, 500, 64 * Mi, 64 * Mi)], [cr()], B, id="init-without-limits"),
        pytest.param([cr(500, 500, 64 * Mi, 64 * Mi)], [cr(100, 100, 8 * Mi, 8 * Mi)], G, id="init-guaranteed"),
    ],
)
def test_pod_qos_from_figures(containers: list[ContainerResources], inits: list[ContainerResources],
                              qos: QOSClass) -> None:
    assert qos_class(pod_of(containers, inits)) is qos


@pytest.mark.parametrize(
    ("containers", "inits", "kwargs", "config"),
    [
        pytest.param([cr(1000, 1000, Gi, Gi)], [], {}, ResourceConfig(1024, 100000, 100000, Gi), id="guaranteed"),
        pytest.param([cr(1000, 1000, Gi, Gi)], [], {"cfs_quota_enabled": False},
                     ResourceConfig(1024, -1, 100000, Gi), id="guaranteed-cfs-quota-off"),
        pytest.param([cr(500, 500, Gi, Gi)], [], {"cpu_period": 50000},
                     ResourceConfig(512, 25000, 50000, Gi), id="custom-period"),
        pytest.param([cr(100, 200, 100 * Mi), cr(50, 100, 10 * Mi)], [], {},
                     ResourceConfig(153, 30000, 100000, None), id="burstable-cpu-limits-declared"),
        pytest.param([cr(100, 200, 100 * Mi, 200 * Mi), cr(50, None, 10 * Mi, 20 * Mi)], [], {},
                     ResourceConfig(153, None, None, 220 * Mi), id="burstable-one-cpu-limit-missing"),
        pytest.param([cr()], [], {}, ResourceConfig(cpu_shares=2), id="besteffort-two-shares"),
        pytest.param([cr()], [], {"pod_pids_limit": 1024}, ResourceConfig(cpu_shares=2, pids_limit=1024),
                     id="pod-pids-limit"),
        pytest.param([cr(100)], [], {"pod_pids_limit": -1}, ResourceConfig(cpu_shares=102), id="pids-default-unset"),
        pytest.param([cr(100, 200, 32 * Mi, 64 * Mi)], [cr(500, 500, 128 * Mi, 128 * Mi)], {},
                     ResourceConfig(512, 50000, 100000, 128 * Mi), id="init-container-dominates"),
        pytest.param([cr(100, 200, 64 * Mi, 64 * Mi)],
                     [cr(50, 50, 16 * Mi, 16 * Mi, sidecar=True), cr(300, 300, 32 * Mi, 32 * Mi)], {},
                     ResourceConfig(358, 35000, 100000, 80 * Mi), id="sidecar-adds-to-both"),
        pytest.param([cr(500, 500, Gi, Gi)], [], {"qos": B}, ResourceConfig(512, 50000, 100000, Gi),
                     id="qos-passed-in"),
    ],
)
def test_pod_resource_config(
    containers: list[ContainerResources], inits: list[ContainerResources], kwargs: dict[str, object],
    config: ResourceConfig,
) -> None:
    """The pod cgroup's values from a pod spec with those figures (the QoS class from the spec too),
    or, given `qos`, from the figures with that class."""
    if "qos" in kwargs:
        assert pod_resource_config(containers, inits, **kwargs) == config  # type: ignore[arg-type]
    else:
        assert pod_resources(pod_of(containers, inits), **kwargs).cgroup == config  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("container", "kwargs", "config"),
    [
        pytest.param(cr(250, 500, None, 128 * Mi), {}, ResourceConfig(256, 50000, 100000, 128 * Mi), id="limits"),
        pytest.param(cr(None, 500), {}, ResourceConfig(512, 50000, 100000), id="request-defaults-to-limit"),
        pytest.param(cr(), {}, ResourceConfig(2, None, 100000, None), id="nothing-period-still-written"),
        pytest.param(cr(None, 1), {}, ResourceConfig(2, 1000, 100000), id="min-quota"),
        pytest.param(cr(250, 500), {"cfs_quota_enabled": False}, ResourceConfig(cpu_shares=256), id="cfs-quota-off"),
        pytest.param(cr(250, 500), {"cpu_period": 10000}, ResourceConfig(256, 5000, 10000), id="custom-period"),
    ],
)
def test_container_resource_config(container: ContainerResources, kwargs: dict[str, object],
                                   config: ResourceConfig) -> None:
    assert container_resource_config(container, **kwargs) == config  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("root", "qos", "parent"),
    [
        pytest.param("/", G, "/kubepods", id="guaranteed-directly-under-kubepods"),
        pytest.param("/", B, "/kubepods/burstable", id="burstable"),
        pytest.param("/", BE, "/kubepods/besteffort", id="besteffort"),
        pytest.param("", G, "/kubepods", id="empty-root"),
        pytest.param("/custom", BE, "/custom/kubepods/besteffort", id="custom-root"),
    ],
)
def test_qos_parent(root: str, qos: QOSClass, parent: str) -> None:
    assert qos_parent(root, qos) == parent


def test_pod_and_container_paths() -> None:
    pod = pod_cgroup_path("/", B, "6f1c-42")
    assert pod == "/kubepods/burstable/pod6f1c-42"
    assert pod_cgroup_path("/", G, "u") == "/kubepods/podu"
    assert container_cgroup_path(pod, "abc123") == "/kubepods/burstable/pod6f1c-42/abc123"
    for bad in ("", "a/b", ".."):
        with pytest.raises(InvalidInput):
            container_cgroup_path(pod, bad)
    with pytest.raises(InvalidInput):
        pod_cgroup_path("/", B, "x/y")


@pytest.mark.parametrize(
    ("qos", "mem_request", "capacity", "kwargs", "adj"),
    [
        pytest.param(G, Gi, 8 * Gi, {}, -997, id="guaranteed"),
        pytest.param(BE, None, 8 * Gi, {}, 1000, id="besteffort"),
        pytest.param(B, Gi, 8 * Gi, {"node_critical": True}, -997, id="node-critical"),
        pytest.param(B, None, 8 * Gi, {}, 999, id="burstable-no-request-below-besteffort"),
        pytest.param(B, 1, 8 * Gi, {}, 999, id="burstable-tiny-request"),
        pytest.param(B, 100 * Mi, 1000 * Mi, {}, 900, id="ten-percent"),
        pytest.param(B, 996 * Mi, 1000 * Mi, {}, 4, id="just-above-floor"),
        pytest.param(B, 998 * Mi, 1000 * Mi, {}, 3, id="clamped-to-3"),
        pytest.param(B, 1000 * Mi, 1000 * Mi, {}, 3, id="whole-node"),
        pytest.param(B, 10 * Mi, 1000 * Mi, {"sidecar_min_regular_request": 500 * Mi}, 500,
                     id="sidecar-not-above-regular"),
        pytest.param(B, 600 * Mi, 1000 * Mi, {"sidecar_min_regular_request": 500 * Mi}, 400, id="sidecar-own-lower"),
    ],
)
def test_oom_score_adj(qos: QOSClass, mem_request: int | None, capacity: int, kwargs: dict[str, object],
                       adj: int) -> None:
    assert oom_score_adj(qos, mem_request, capacity, **kwargs) == adj  # type: ignore[arg-type]


def test_oom_score_adj_needs_capacity() -> None:
    with pytest.raises(InvalidInput):
        oom_score_adj(B, Mi, 0)

