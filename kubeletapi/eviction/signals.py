"""Eviction signals observed in a housekeeping Snapshot, as the kubelet's makeSignalObservations
reads them from the summary (the same figures /stats/summary reports):

- memory.available: node memory capacity - the root cgroup's working set (floored at 0), over the
  capacity (available + working set);
- nodefs.available / nodefs.inodesFree: the filesystem of the root directory (statvfs f_bavail
  bytes, f_ffree inodes) over its capacity / inodes;
- imagefs.available / imagefs.inodesFree: the runtime's image filesystem, likewise;
- pid.available: rlimit maxpid (min of pid_max and threads-max) - the tasks that exist.

And, per pod, what ranking and the eviction message read: the pod's and each container's memory
working set, disk usage (container writable layers and logs, local volumes) and process count.
These are eviction's own small types rather than the Snapshot's (PodSnap, stats.snapshot.FsUsage):
a pod's disk use is a sum of measurements taken at different times (DiskUse adds, FsUsage is one
measurement at its time_ns), and ranking and the message read one flat value each, chosen here
once (the runtime's figures over the cgroup's, the sandbox left out), where the Snapshot's layout
stays known to this module alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubeletapi.eviction import thresholds as t
from kubeletapi.stats.snapshot import FsSample, PodSnap, Snapshot


@dataclass(frozen=True)
class Observation:
    available: int
    capacity: int
    time_ns: int


@dataclass(frozen=True)
class DiskUse:
    bytes: int = 0
    inodes: int = 0

    def __add__(self, other: DiskUse) -> DiskUse:
        return DiskUse(self.bytes + other.bytes, self.inodes + other.inodes)


@dataclass(frozen=True)
class ContainerUse:
    name: str
    working_set: int | None  # None: no memory figures
    rootfs: DiskUse | None  # the writable layer (a CRI runtime's; None for the process runtime)
    logs: DiskUse | None


@dataclass(frozen=True)
class PodUse:
    """What the stats say one pod uses (the kubelet's statsFunc result)."""

    working_set: int | None
    process_count: int | None
    containers: tuple[ContainerUse, ...] = ()
    volumes: dict[str, DiskUse] = field(default_factory=dict)  # local volumes' usage, by volume name


Observations = dict[str, Observation]


def observe(snap: Snapshot) -> Observations:
    """The signals the Snapshot can tell; a signal without figures is left out (never met)."""
    out: Observations = {}
    node = snap.node
    root = node.root
    if root is not None and root.cur.memory is not None:
        capacity = node.machine.memory_capacity
        working_set = root.cur.memory.working_set
        available = max(0, capacity - working_set)
        out[t.MEMORY_AVAILABLE] = Observation(available, available + working_set, root.time_ns)
    _fs(out, node.rootfs, t.NODEFS_AVAILABLE, t.NODEFS_INODES_FREE)
    _fs(out, node.imagefs, t.IMAGEFS_AVAILABLE, t.IMAGEFS_INODES_FREE)
    if node.rlimit.maxpid is not None and node.rlimit.curproc is not None:
        out[t.PID_AVAILABLE] = Observation(node.rlimit.maxpid - node.rlimit.curproc, node.rlimit.maxpid,
                                           node.rlimit_ns)
    return out


def _fs(out: Observations, sample: FsSample | None, available: str, inodes_free: str) -> None:
    if sample is None:
        return
    fs = sample.stats
    out[available] = Observation(fs.available, fs.capacity, sample.time_ns)
    out[inodes_free] = Observation(fs.inodes_free, fs.inodes, sample.time_ns)


def dedicated_imagefs(snap: Snapshot) -> bool:
    """HasDedicatedImageFs: the image filesystem is another device than the root directory's."""
    rootfs, imagefs = snap.node.rootfs, snap.node.imagefs
    if rootfs is None or imagefs is None:
        return False
    return (rootfs.stats.major, rootfs.stats.minor) != (imagefs.stats.major, imagefs.stats.minor)


def pod_usage(snap: Snapshot) -> dict[str, PodUse]:
    """Every pod the Snapshot has figures for, by UID (cachedStatsFunc). Only pods with a
    running container are in the summary the kubelet reads; the same here."""
    return {pod.ref.uid: _pod(pod) for pod in snap.pods if pod.workload}


def _pod(pod: PodSnap) -> PodUse:
    usage = pod.usage
    working_set = usage.cur.memory.working_set if usage is not None and usage.cur.memory is not None else None
    containers = []
    for c in pod.workload:
        mem = c.usage.cur.memory if c.usage is not None else None
        containers.append(ContainerUse(
            c.ref.name, mem.working_set if mem is not None else None,
            DiskUse(c.rootfs.used, c.rootfs.inodes_used) if c.rootfs is not None else None,
            DiskUse(c.logs.used, c.logs.inodes_used) if c.logs is not None else None,
        ))
    volumes = {v.ref.name: DiskUse(v.usage.used, v.usage.inodes_used)
               for v in pod.volumes if v.usage is not None}
    return PodUse(working_set, pod.process_count, tuple(containers), volumes)
