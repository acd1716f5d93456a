"""Which pod goes first: the kubelet's ranking functions (eviction/helpers.go).

- memory (rankMemoryPressure): pods whose working set exceeds their memory request first, then
  lower priority first, then the largest working set above its request first;
- disk (rankDiskPressureFunc): pods whose disk (or inode) use exceeds their ephemeral-storage
  request first, then lower priority, then the largest use above the request; what counts as a
  pod's use depends on the filesystems (writable layers, logs, local volumes);
- pid (rankPIDPressure): lower priority first, then the most processes.

A pod without stats ranks before any pod with them (the kubelet evicts what it cannot measure
first). Requests are the pod's (pod-level resources when set), else the sum of its containers'
with the largest init container's as a floor, plus the pod overhead; a request the manifest
leaves out defaults to its limit, as the API's defaulting does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal
from enum import Enum

from kubeletapi.api.core_v1 import Pod
from kubeletapi.eviction import thresholds as t
from kubeletapi.eviction.signals import DiskUse, PodUse

Stats = Callable[[Pod], PodUse | None]


class FsStats(Enum):
    """fsStatsType: what of a pod's disk use a signal measures."""

    ROOT = "root"  # the containers' writable layers
    LOGS = "logs"
    LOCAL_VOLUMES = "localVolumeSource"
    IMAGES = "images"  # counted by the kubelet only for the node; nothing per pod


def request(pod: Pod, resource: str) -> Decimal:
    """GetResourceRequestQuantity (requests defaulted from limits)."""
    def of(resources: object) -> Decimal | None:
        requests = getattr(resources, "requests", {}) or {}
        limits = getattr(resources, "limits", {}) or {}
        found = requests.get(resource, limits.get(resource))
        return found.amount if found is not None else None

    if pod.spec.resources is not None and (level := of(pod.spec.resources)) is not None:
        return level
    total = sum((of(c.resources) or Decimal(0) for c in pod.spec.containers), Decimal(0))
    for init in pod.spec.init_containers:
        total = max(total, of(init.resources) or Decimal(0))
    overhead = (pod.spec.overhead or {}).get(resource)
    return total + (overhead.amount if overhead is not None else Decimal(0))


def priority(pod: Pod) -> int:
    return pod.spec.priority if pod.spec.priority is not None else 0


def _memory(use: PodUse) -> Decimal:
    return Decimal(use.working_set or 0)


# Each ranking is the kubelet's multiSorter (compare by the first function that tells two pods
# apart), written as one sort key per pod: every comparison there is of one value per pod, and
# "a pod without stats first" makes the stats-based parts constant for such pods. One key per
# pod keeps a cycle at 110 pods well under a millisecond (comparators took ~13 ms).
def _memory_key(pod: Pod, use: PodUse | None) -> tuple[object, ...]:
    if use is None:
        return (0, 0, priority(pod), 0)
    above = _memory(use) - request(pod, t.MEMORY)
    return (1, 0 if above > 0 else 1, priority(pod), -above)  # over its request first, then priority


def _pid_key(pod: Pod, use: PodUse | None) -> tuple[object, ...]:
    if use is None:
        return (priority(pod), 0, 0)
    return (priority(pod), 1, -(use.process_count or 0))


def local_volume_names(pod: Pod) -> list[str]:
    """localVolumeNames: hostPath volumes and local ephemeral ones (emptyDir on disk, configMap,
    gitRepo)."""
    names = []
    for volume in pod.spec.volumes:
        empty_dir = volume.empty_dir
        if (volume.host_path is not None or volume.config_map is not None or volume.git_repo is not None
                or (empty_dir is not None and not (empty_dir.medium or ""))):
            names.append(volume.name)
    return names


def disk_usage(pod: Pod, use: PodUse, measure: Sequence[FsStats]) -> DiskUse:
    """podDiskUsage over the chosen kinds of use."""
    total = DiskUse()
    for c in use.containers:
        if FsStats.ROOT in measure and c.rootfs is not None:
            total = total + c.rootfs
        if FsStats.LOGS in measure and c.logs is not None:
            total = total + c.logs
    if FsStats.LOCAL_VOLUMES in measure:
        for name in local_volume_names(pod):
            total = total + use.volumes.get(name, DiskUse())
    return total


def _disk(pod: Pod, use: PodUse, measure: Sequence[FsStats], resource: str) -> Decimal:
    found = disk_usage(pod, use, measure)
    return Decimal(found.inodes if resource == t.INODES else found.bytes)


def _disk_key(measure: Sequence[FsStats], resource: str) -> Callable[[Pod, PodUse | None], tuple[object, ...]]:
    """Over its request of `resource` first, then priority, then the most use above its
    ephemeral-storage request (the kubelet subtracts that one, for inodes too)."""
    def key(pod: Pod, use: PodUse | None) -> tuple[object, ...]:
        if use is None:
            return (0, 0, priority(pod), 0)
        used = _disk(pod, use, measure, resource)
        exceeds = used > request(pod, resource)
        return (1, 0 if exceeds else 1, priority(pod), -(used - request(pod, t.EPHEMERAL_STORAGE)))
    return key


def _ordered(pods: Sequence[Pod], stats: Stats, key: Callable[[Pod, PodUse | None], tuple[object, ...]]) -> list[Pod]:
    keyed = [(key(pod, stats(pod)), index, pod) for index, pod in enumerate(pods)]
    return [pod for _, _, pod in sorted(keyed, key=lambda item: (item[0], item[1]))]


Rank = Callable[[Sequence[Pod], Stats], list[Pod]]


def rank_memory(pods: Sequence[Pod], stats: Stats) -> list[Pod]:
    """rankMemoryPressure: exceedMemoryRequests, priority, memory."""
    return _ordered(pods, stats, _memory_key)


def rank_pids(pods: Sequence[Pod], stats: Stats) -> list[Pod]:
    """rankPIDPressure: priority, process."""
    return _ordered(pods, stats, _pid_key)


def rank_disk(measure: Sequence[FsStats], resource: str) -> Rank:
    """rankDiskPressureFunc: exceedDiskRequests, priority, disk."""
    key = _disk_key(measure, resource)

    def rank(pods: Sequence[Pod], stats: Stats) -> list[Pod]:
        return _ordered(pods, stats, key)
    return rank


def rankers(dedicated_imagefs: bool) -> dict[str, Rank]:
    """buildSignalToRankFunc (no split container filesystem)."""
    out: dict[str, Rank] = {t.MEMORY_AVAILABLE: rank_memory, t.ALLOCATABLE_MEMORY_AVAILABLE: rank_memory,
                            t.PID_AVAILABLE: rank_pids}
    node: tuple[FsStats, ...]
    image: tuple[FsStats, ...]
    if dedicated_imagefs:
        node = (FsStats.LOGS, FsStats.LOCAL_VOLUMES)
        image = (FsStats.ROOT, FsStats.IMAGES)
    else:
        node = image = (FsStats.IMAGES, FsStats.ROOT, FsStats.LOGS, FsStats.LOCAL_VOLUMES)
    out[t.NODEFS_AVAILABLE] = rank_disk(node, t.EPHEMERAL_STORAGE)
    out[t.NODEFS_INODES_FREE] = rank_disk(node, t.INODES)
    out[t.IMAGEFS_AVAILABLE] = rank_disk(image, t.EPHEMERAL_STORAGE)
    out[t.IMAGEFS_INODES_FREE] = rank_disk(image, t.INODES)
    out[t.CONTAINERFS_AVAILABLE] = out[t.IMAGEFS_AVAILABLE if dedicated_imagefs else t.NODEFS_AVAILABLE]
    out[t.CONTAINERFS_INODES_FREE] = out[t.IMAGEFS_INODES_FREE if dedicated_imagefs else t.NODEFS_INODES_FREE]
    return out
