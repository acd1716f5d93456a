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

import functools
from collections.abc import Callable, Sequence
from decimal import Decimal
from enum import Enum

from kubeletapi.api.core_v1 import Pod
from kubeletapi.eviction import thresholds as t
from kubeletapi.eviction.signals import DiskUse, PodUse

Stats = Callable[[Pod], PodUse | None]
Cmp = Callable[[Pod, Pod], int]


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


def _cmp_bool(a: bool, b: bool) -> int:
    """true before false."""
    return 0 if a == b else (-1 if a else 1)


def _with_stats(stats: Stats, compare: Callable[[Pod, PodUse, Pod, PodUse], int]) -> Cmp:
    def cmp(p1: Pod, p2: Pod) -> int:
        s1, s2 = stats(p1), stats(p2)
        if s1 is None or s2 is None:
            return _cmp_bool(s1 is None, s2 is None)  # no stats: evicted first
        return compare(p1, s1, p2, s2)
    return cmp


def by_priority(p1: Pod, p2: Pod) -> int:
    a, b = priority(p1), priority(p2)
    return 0 if a == b else (1 if a > b else -1)


def _memory(use: PodUse) -> Decimal:
    return Decimal(use.working_set or 0)


def exceeds_memory_requests(stats: Stats) -> Cmp:
    return _with_stats(stats, lambda p1, s1, p2, s2: _cmp_bool(
        _memory(s1) > request(p1, t.MEMORY), _memory(s2) > request(p2, t.MEMORY)))


def memory_above_request(stats: Stats) -> Cmp:
    def compare(p1: Pod, s1: PodUse, p2: Pod, s2: PodUse) -> int:
        a, b = _memory(s1) - request(p1, t.MEMORY), _memory(s2) - request(p2, t.MEMORY)
        return (b > a) - (b < a)  # the larger first
    return _with_stats(stats, compare)


def processes(stats: Stats) -> Cmp:
    return _with_stats(stats, lambda p1, s1, p2, s2: (s2.process_count or 0) - (s1.process_count or 0))


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


def exceeds_disk_requests(stats: Stats, measure: Sequence[FsStats], resource: str) -> Cmp:
    return _with_stats(stats, lambda p1, s1, p2, s2: _cmp_bool(
        _disk(p1, s1, measure, resource) > request(p1, resource),
        _disk(p2, s2, measure, resource) > request(p2, resource)))


def disk_above_request(stats: Stats, measure: Sequence[FsStats], resource: str) -> Cmp:
    """The kubelet subtracts the ephemeral-storage request, for inodes too."""
    def compare(p1: Pod, s1: PodUse, p2: Pod, s2: PodUse) -> int:
        a = _disk(p1, s1, measure, resource) - request(p1, t.EPHEMERAL_STORAGE)
        b = _disk(p2, s2, measure, resource) - request(p2, t.EPHEMERAL_STORAGE)
        return (b > a) - (b < a)
    return _with_stats(stats, compare)


def ordered(pods: Sequence[Pod], *cmps: Cmp) -> list[Pod]:
    """multiSorter: by the first comparison that tells two pods apart."""
    def cmp(p1: Pod, p2: Pod) -> int:
        for compare in cmps:
            found = compare(p1, p2)
            if found:
                return found
        return 0
    return sorted(pods, key=functools.cmp_to_key(cmp))


Rank = Callable[[Sequence[Pod], Stats], list[Pod]]


def rank_memory(pods: Sequence[Pod], stats: Stats) -> list[Pod]:
    return ordered(pods, exceeds_memory_requests(stats), by_priority, memory_above_request(stats))


def rank_pids(pods: Sequence[Pod], stats: Stats) -> list[Pod]:
    return ordered(pods, by_priority, processes(stats))


def rank_disk(measure: Sequence[FsStats], resource: str) -> Rank:
    def rank(pods: Sequence[Pod], stats: Stats) -> list[Pod]:
        return ordered(pods, exceeds_disk_requests(stats, measure, resource), by_priority,
                       disk_above_request(stats, measure, resource))
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
