"""The kubelet's mapping from pod and container resources to cgroup values.

Mirrors pkg/kubelet/cm/helpers_linux.go (MilliCPUToShares, MilliCPUToQuota, ResourceConfigForPod),
the QoS computation of pkg/apis/core/v1/helper/qos, the QoS cgroup names of
qos_container_manager_linux.go, the container values of kuberuntime's calculateLinuxResources and the
oom_score_adj policy of pkg/kubelet/qos/policy.go. Inputs are plain numbers (milliCPU, bytes) so this
module does not depend on the Pod model.
"""

from __future__ import annotations

import math
import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from kubeletapi.errors import InvalidInput

MIN_SHARES = 2
MAX_SHARES = 262144
SHARES_PER_CPU = 1024
MILLI_CPU_TO_CPU = 1000
QUOTA_PERIOD = 100000  # µs: 100 ms, the kubelet's default cpuCFSQuotaPeriod
MIN_QUOTA_PERIOD = 1000  # µs: the kernel refuses a quota under 1 ms
MIN_WEIGHT = 1
MAX_WEIGHT = 10000

NODE_ALLOCATABLE_CGROUP = "kubepods"
POD_CGROUP_PREFIX = "pod"

GUARANTEED_OOM_SCORE_ADJ = -997
BEST_EFFORT_OOM_SCORE_ADJ = 1000
KUBELET_OOM_SCORE_ADJ = -999


class QOSClass(StrEnum):
    """A pod's quality-of-service class (v1.PodQOSClass)."""

    GUARANTEED = "Guaranteed"
    BURSTABLE = "Burstable"
    BEST_EFFORT = "BestEffort"


@dataclass(frozen=True)
class ResourceConfig:
    """Values to write to a cgroup. None (and, as runc reads them, 0) leaves the current value.

    cpu_quota -1 and memory_limit / pids_limit below 0 mean unlimited (written as -1 or `max`).
    """

    cpu_shares: int | None = None
    cpu_quota: int | None = None
    cpu_period: int | None = None
    memory_limit: int | None = None
    pids_limit: int | None = None


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


def cpu_shares_to_weight(shares: int) -> int:
    """cgroup v2 cpu.weight for cpu.shares, the kubelet's linear KEP-2254 formula ([2, 262144] → [1, 10000])."""
    if shares <= MIN_SHARES:
        return MIN_WEIGHT
    if shares >= MAX_SHARES:
        return MAX_WEIGHT
    return 1 + ((shares - 2) * 9999) // 262142


def cpu_shares_to_weight_runc(shares: int) -> int:
    """The formula of runc >= 1.3 / opencontainers/cgroups (1024 shares → weight 100, not 39).

    The kubelet still uses the linear one for pod and QoS cgroups; runtimes built on newer runc use
    this one for container cgroups (kubernetes issue 131216).
    """
    if shares <= MIN_SHARES:
        return MIN_WEIGHT
    if shares >= MAX_SHARES:
        return MAX_WEIGHT
    log = math.log2(shares)
    exponent = (log * log + 125 * log) / 612.0 - 7.0 / 34.0
    return math.ceil(math.pow(10, exponent))


def pod_qos(containers: Iterable[ContainerResources], init_containers: Iterable[ContainerResources] = ()) -> QOSClass:
    """The pod's QoS class (ComputePodQOS): only CPU and memory count, zero quantities are ignored."""
    requests: dict[str, int] = {}
    limits: dict[str, int] = {}
    guaranteed = True
    for c in (x.defaulted() for x in (*containers, *init_containers)):
        for name, value in (("cpu", c.cpu_request), ("memory", c.memory_request)):
            if value:
                requests[name] = requests.get(name, 0) + value
        found = set()
        for name, value in (("cpu", c.cpu_limit), ("memory", c.memory_limit)):
            if value:
                limits[name] = limits.get(name, 0) + value
                found.add(name)
        if found != {"cpu", "memory"}:
            guaranteed = False
    if not requests and not limits:
        return QOSClass.BEST_EFFORT
    if guaranteed and requests == limits:
        return QOSClass.GUARANTEED
    return QOSClass.BURSTABLE


def pod_resource_config(
    containers: Sequence[ContainerResources],
    init_containers: Sequence[ContainerResources] = (),
    *,
    qos: QOSClass | None = None,
    pod_pids_limit: int | None = None,
    cfs_quota_enabled: bool = True,
    cpu_period: int = QUOTA_PERIOD,
) -> ResourceConfig:
    """The pod cgroup's values (ResourceConfigForPod plus the pod pids limit).

    Requests and limits aggregate like the kubelet (sum of containers, at least the largest init
    step, sidecars counted in both). A limit is only applied when every container declares it.
    """
    qos = qos if qos is not None else pod_qos(containers, init_containers)
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


def qos_cgroup_configs(burstable_cpu_requests: int) -> dict[QOSClass, ResourceConfig]:
    """QoS-tier cgroup values: BestEffort always 2 shares, Burstable the shares of its pods' CPU requests.

    `burstable_cpu_requests` is the sum of the CPU requests (milliCPU) of the Burstable pods.
    """
    return {
        QOSClass.BURSTABLE: ResourceConfig(cpu_shares=milli_cpu_to_shares(burstable_cpu_requests)),
        QOSClass.BEST_EFFORT: ResourceConfig(cpu_shares=MIN_SHARES),
    }


def node_allocatable_config(
    cpu_milli: int, memory_bytes: int | None = None, pids_limit: int | None = None
) -> ResourceConfig:
    """The `kubepods` cgroup's values from node allocatable (getCgroupConfig in node_container_manager)."""
    return ResourceConfig(
        cpu_shares=milli_cpu_to_shares(cpu_milli), memory_limit=memory_bytes, pids_limit=_pids(pids_limit)
    )


def qos_parent(cgroup_root: str, qos: QOSClass) -> str:
    """The cgroup holding a QoS class's pods: Guaranteed pods sit directly in `<root>/kubepods`."""
    base = posixpath.join("/", cgroup_root or "/", NODE_ALLOCATABLE_CGROUP)
    if qos is QOSClass.GUARANTEED:
        return base
    return posixpath.join(base, "besteffort" if qos is QOSClass.BEST_EFFORT else "burstable")


def pod_cgroup_name(pod_uid: str) -> str:
    """The pod cgroup's own name: `pod<uid>` (GetPodCgroupNameSuffix)."""
    if not pod_uid or "/" in pod_uid:
        raise InvalidInput(f"invalid pod UID {pod_uid!r} for a cgroup name")
    return POD_CGROUP_PREFIX + pod_uid


def pod_cgroup_path(cgroup_root: str, qos: QOSClass, pod_uid: str) -> str:
    """`/kubepods/burstable/pod<uid>` and the like."""
    return posixpath.join(qos_parent(cgroup_root, qos), pod_cgroup_name(pod_uid))


def container_cgroup_path(pod_path: str, container_id: str) -> str:
    """A container's cgroup under its pod's, named by the container ID (cgroupfs driver)."""
    if not container_id or "/" in container_id or container_id in {".", ".."}:
        raise InvalidInput(f"invalid container ID {container_id!r} for a cgroup name")
    return posixpath.join(pod_path, container_id)


def oom_score_adj(
    qos: QOSClass,
    memory_request: int | None,
    memory_capacity: int,
    *,
    node_critical: bool = False,
    sidecar_min_regular_request: int | None = None,
) -> int:
    """A container's oom_score_adj (GetContainerOOMScoreAdjust).

    Guaranteed and node-critical pods get -997, BestEffort 1000, Burstable
    `1000 - 1000*request/capacity` kept within [3, 999]. For a sidecar pass the smallest memory
    request of the pod's regular containers: its score never exceeds theirs.
    """
    if node_critical or qos is QOSClass.GUARANTEED:
        return GUARANTEED_OOM_SCORE_ADJ
    if qos is QOSClass.BEST_EFFORT:
        return BEST_EFFORT_OOM_SCORE_ADJ
    if memory_capacity <= 0:
        raise InvalidInput(f"memory capacity must be positive, got {memory_capacity}")
    adj = _burstable_adj(memory_request or 0, memory_capacity)
    if sidecar_min_regular_request is not None:
        adj = min(adj, _burstable_adj(sidecar_min_regular_request, memory_capacity))
    if adj < 1000 + GUARANTEED_OOM_SCORE_ADJ:
        return 1000 + GUARANTEED_OOM_SCORE_ADJ
    if adj == BEST_EFFORT_OOM_SCORE_ADJ:
        return adj - 1
    return adj


def _burstable_adj(request: int, capacity: int) -> int:
    # Go's int64 division truncates toward zero; requests are non-negative so // matches.
    return 1000 - (1000 * request) // capacity


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
