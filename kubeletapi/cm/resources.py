"""From a pod's requests and limits to the values of its cgroups, as the kubelet computes them.

Mirrors pkg/kubelet/cm/helpers_linux.go (MilliCPUToShares, MilliCPUToQuota, ResourceConfigForPod)
and kuberuntime's calculateLinuxResources. `pod_resources` reads a pod spec once: its QoS class,
each container's requests and limits, the pod cgroup's values; everything per container then
looks them up, so the work of a sync grows with the number of containers, never its square.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kubeletapi.api.core_v1 import Container, Pod
from kubeletapi.api.quantity import Quantity
from kubeletapi.cgroups.units import MAX_SHARES, MIN_SHARES
from kubeletapi.cgroups.writers import ResourceConfig
from kubeletapi.cm.qos import QOSClass, qos_class

SHARES_PER_CPU = 1024
MILLI_CPU_TO_CPU = 1000
QUOTA_PERIOD = 100000  # µs: 100 ms, the kubelet's default cpuCFSQuotaPeriod
MIN_QUOTA_PERIOD = 1000  # µs: the kernel refuses a quota under 1 ms


@dataclass(frozen=True)
class ContainerResources:
    """One container's requests and limits: CPU in milliCPU, memory in bytes; None when absent.

    `restartable` marks a sidecar (an init container with restartPolicy Always).
    """

    cpu_request: int | None = None
    cpu_limit: int | None = None
    memory_request: int | None = None
    memory_limit: int | None = None
    restartable: bool = False

    def defaulted(self) -> ContainerResources:
        """API defaulting (SetDefaults_Pod, also applied to static pods): a missing request is the limit."""
        return ContainerResources(
            self.cpu_limit if self.cpu_request is None else self.cpu_request,
            self.cpu_limit,
            self.memory_limit if self.memory_request is None else self.memory_request,
            self.memory_limit,
            self.restartable,
        )


@dataclass(frozen=True)
class PodResources:
    """A pod's resource figures, computed once per pod spec."""

    qos: QOSClass
    containers: Mapping[str, ContainerResources]  # every init and app container, by name
    cgroup: ResourceConfig  # the pod cgroup's values


def container_resources(container: Container, *, init: bool = False) -> ContainerResources:
    """A container's CPU (milliCPU) and memory (bytes) requests and limits."""
    req, lim = container.resources.requests, container.resources.limits

    def milli(q: Quantity | None) -> int | None:
        return q.milli_value() if q is not None else None

    def value(q: Quantity | None) -> int | None:
        return q.value() if q is not None else None

    return ContainerResources(
        cpu_request=milli(req.get("cpu")), cpu_limit=milli(lim.get("cpu")),
        memory_request=value(req.get("memory")), memory_limit=value(lim.get("memory")),
        restartable=init and container.restart_policy == "Always",
    )


def pod_resources(
    pod: Pod, *, pod_pids_limit: int | None = None, cfs_quota_enabled: bool = True, cpu_period: int = QUOTA_PERIOD,
) -> PodResources:
    """The pod's QoS class, its containers' requests and limits, and its pod cgroup's values."""
    apps = {c.name: container_resources(c) for c in pod.spec.containers}
    inits = {c.name: container_resources(c, init=True) for c in pod.spec.init_containers}
    qos = qos_class(pod)
    cgroup = pod_resource_config(list(apps.values()), list(inits.values()), qos=qos, pod_pids_limit=pod_pids_limit,
                                 cfs_quota_enabled=cfs_quota_enabled, cpu_period=cpu_period)
    return PodResources(qos, {**inits, **apps}, cgroup)


def milli_cpu_to_shares(milli_cpu: int) -> int:
    """cpu.shares for a CPU request; 0 maps to the minimum 2, not the kernel default 1024."""
    if milli_cpu == 0:
        return MIN_SHARES
    shares = (milli_cpu * SHARES_PER_CPU) // MILLI_CPU_TO_CPU
    return max(MIN_SHARES, min(MAX_SHARES, shares))


def milli_cpu_to_quota(milli_cpu: int, period: int = QUOTA_PERIOD) -> int:
    """CFS quota (µs per `period`) for a CPU limit; 0 means no limit, else at least 1 ms."""
    if milli_cpu == 0:
        return 0
    return max(MIN_QUOTA_PERIOD, (milli_cpu * period) // MILLI_CPU_TO_CPU)


def pod_resource_config(
    containers: Sequence[ContainerResources],
    init_containers: Sequence[ContainerResources] = (),
    *,
    qos: QOSClass,
    pod_pids_limit: int | None = None,
    cfs_quota_enabled: bool = True,
    cpu_period: int = QUOTA_PERIOD,
) -> ResourceConfig:
    """The pod cgroup's values (ResourceConfigForPod plus the pod pids limit).

    Requests and limits aggregate like the kubelet (sum of containers, at least the largest init
    step, sidecars counted in both). A limit is only applied when every container declares it.
    """
    if qos is QOSClass.BEST_EFFORT:
        return ResourceConfig(cpu_shares=MIN_SHARES, pids_limit=_pids(pod_pids_limit))
    cpu_request, _ = _aggregate(containers, init_containers, "cpu_request")
    cpu_limit, cpu_declared = _aggregate(containers, init_containers, "cpu_limit")
    memory_limit, memory_declared = _aggregate(containers, init_containers, "memory_limit")
    quota = milli_cpu_to_quota(cpu_limit, cpu_period) if cfs_quota_enabled else -1
    set_cpu = qos is QOSClass.GUARANTEED or cpu_declared
    set_memory = qos is QOSClass.GUARANTEED or memory_declared
    return ResourceConfig(
        cpu_shares=milli_cpu_to_shares(cpu_request),
        cpu_quota=quota if set_cpu else None,
        cpu_period=cpu_period if set_cpu else None,
        memory_limit=memory_limit if set_memory else None,
        pids_limit=_pids(pod_pids_limit),
    )


def container_resource_config(
    container: ContainerResources, *, cfs_quota_enabled: bool = True, cpu_period: int = QUOTA_PERIOD
) -> ResourceConfig:
    """A container cgroup's values (kuberuntime calculateLinuxResources).

    Without a CPU limit the quota is left unset (CRI quota 0) but the period is still written, so
    v1 keeps cfs_quota_us -1 and v2 writes `max <period>`.
    """
    c = container.defaulted()
    quota = milli_cpu_to_quota(c.cpu_limit or 0, cpu_period) if cfs_quota_enabled else None
    return ResourceConfig(
        cpu_shares=milli_cpu_to_shares(c.cpu_request or 0),
        cpu_quota=quota or None,
        cpu_period=cpu_period if cfs_quota_enabled else None,
        memory_limit=c.memory_limit or None,
    )


def _pids(limit: int | None) -> int | None:
    # The kubelet sets the pod pids limit only when podPidsLimit > 0 (the default -1 leaves it).
    return limit if limit is not None and limit > 0 else None


def _aggregate(
    containers: Sequence[ContainerResources], init_containers: Sequence[ContainerResources], attr: str
) -> tuple[int, bool]:
    """(pod total, declared by every container) of one request or limit field.

    Like resourcehelper.PodRequests/PodLimits: regular containers and sidecars add up; each plain
    init container runs alongside the sidecars started before it; the pod needs the larger of the
    sum and the largest init step. `declared` turns false when any container (or init step) has 0.
    """
    total, declared = 0, True
    for c in containers:
        value = getattr(c.defaulted(), attr) or 0
        declared = declared and value > 0
        total += value
    sidecars, largest_init = 0, 0
    for c in init_containers:
        value = getattr(c.defaulted(), attr) or 0
        if c.restartable:
            total += value
            sidecars += value
            step = sidecars
        else:
            step = value + sidecars
        declared = declared and step > 0
        largest_init = max(largest_init, step)
    return max(total, largest_init), declared
