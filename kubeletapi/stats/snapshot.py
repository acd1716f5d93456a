"""The stats cache: one immutable Snapshot per housekeeping cycle, read by every stats endpoint.

Housekeeping builds a Snapshot in a worker thread and swaps it in whole, so a request sees one
consistent cycle and never a half-updated one; renderers cache their output per `generation`.
Each cgroup (or process tree, without cgroups, or runtime report) is an Observed: the latest
sample and the one before it, which is all a rate needs (cAdvisor keeps the same two for the
kubelet's summary), tagged with its SampleSource.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from kubeletapi.cgroups.stats import CgroupSample
from kubeletapi.stats.fs import FsStats
from kubeletapi.stats.inventory import ContainerRef, PodRef, VolumeRef
from kubeletapi.stats.machine import MachineInfo
from kubeletapi.stats.netdev import InterfaceStats
from kubeletapi.stats.node import LoadAvg, NodeMemory, Rlimit

NS_PER_S = 1_000_000_000


class SampleSource(enum.Enum):
    """What an Observed measured, and so what its samples' path names. Only cgroups are exported
    to the cAdvisor endpoint; the others have no cgroup to name."""

    CGROUP = "cgroup"  # path: the cgroup's (without cgroups, the node root "/" is read from /proc)
    PROCESS_TREE = "process tree"  # host processes; path: a container id, pod:<uid>, or a system container
    RUNTIME = "runtime"  # what a CRI runtime reported; path: a container id or pod:<uid>


@dataclass(frozen=True)
class Observed:
    """A cgroup's (or process tree's, or runtime report's) latest sample and, when it was also
    seen the cycle before, that sample."""

    cur: CgroupSample
    prev: CgroupSample | None = None
    source: SampleSource = SampleSource.CGROUP

    @property
    def time_ns(self) -> int:
        return self.cur.timestamp_ns

    def cpu_nanocores(self) -> int | None:
        """CPU usage rate in nanocores (core-ns per second) over the last two samples; None before
        the second sample, or when the counter went backwards (a recreated cgroup, a reset)."""
        prev, cur = self.prev, self.cur
        if prev is None or cur.cpu is None or prev.cpu is None:
            return None
        elapsed = cur.timestamp_ns - prev.timestamp_ns
        used = cur.cpu.usage_ns - prev.cpu.usage_ns
        if elapsed <= 0 or used < 0:
            return None
        return used * NS_PER_S // elapsed


@dataclass(frozen=True)
class FsUsage:
    """Bytes and inodes a set of files takes on its filesystem (a log dir, a volume), measured at time_ns."""

    used: int
    inodes_used: int
    time_ns: int


@dataclass(frozen=True)
class FsSample:
    """A filesystem's capacity figures (statvfs) at time_ns."""

    stats: FsStats
    time_ns: int


@dataclass(frozen=True)
class DiskIO:
    """One block device's /proc/diskstats counters (cAdvisor's root-container disk I/O)."""

    major: int
    minor: int
    name: str  # kernel name (vda, sda1): the device label is /dev/<name>
    reads: int
    reads_merged: int
    sectors_read: int
    read_ms: int
    writes: int
    writes_merged: int
    sectors_written: int
    write_ms: int
    io_in_progress: int
    io_ms: int
    weighted_io_ms: int


@dataclass(frozen=True)
class SystemContainer:
    """A `systemContainers` entry: kubelet, runtime, misc or pods."""

    name: str
    stats: Observed
    start_ns: int


@dataclass(frozen=True)
class VolumeSnap:
    ref: VolumeRef
    fs: FsSample | None  # the filesystem holding the volume (None: unreadable)
    usage: FsUsage | None  # None until measured, or when the tree was too large to walk


@dataclass(frozen=True)
class ContainerSnap:
    ref: ContainerRef
    stats: Observed | None  # None until first sampled (or its cgroup is gone)
    logs: FsUsage | None
    # What a CRI runtime reported (runtimestats.py): the summary's source when present.
    runtime: Observed | None = None
    runtime_nano_cores: int | None = None  # the runtime's own rate, when it gave one
    rootfs: FsUsage | None = None  # the writable layer

    @property
    def usage(self) -> Observed | None:
        """The summary's CPU and memory: the runtime's figures, else the cgroup's."""
        return self.runtime if self.runtime is not None else self.stats


@dataclass(frozen=True)
class PodSnap:
    ref: PodRef
    stats: Observed | None  # the pod cgroup; without cgroups, the sum of its process trees
    containers: tuple[ContainerSnap, ...]
    volumes: tuple[VolumeSnap, ...]
    process_count: int | None
    runtime: Observed | None = None  # the pod as a CRI runtime reported it (runtimestats.py)
    runtime_nano_cores: int | None = None

    @property
    def usage(self) -> Observed | None:
        return self.runtime if self.runtime is not None else self.stats

    @property
    def workload(self) -> tuple[ContainerSnap, ...]:
        """The pod's containers without its sandbox (the pause container, reported to cAdvisor only)."""
        return tuple(c for c in self.containers if not c.ref.sandbox)


@dataclass(frozen=True)
class NodeSnap:
    name: str
    boot_ns: int
    machine: MachineInfo
    root: Observed | None  # the root cgroup "/" (node CPU and memory)
    meminfo: NodeMemory
    load: LoadAvg | None
    interfaces: tuple[InterfaceStats, ...]
    default_interface: str  # the one the summary flattens (eth0 when present; "" for none)
    network_ns: int
    rootfs: FsSample | None  # the filesystem of the agent's root directory
    imagefs: FsSample | None  # the filesystem of the runtime's state (its "images")
    imagefs_used: FsUsage | None  # what the runtime's state takes on it
    logsfs: FsSample | None  # the filesystem of the pod logs directory
    disks: tuple[DiskIO, ...]
    rlimit: Rlimit
    rlimit_ns: int


@dataclass(frozen=True)
class Snapshot:
    """Everything one housekeeping cycle saw. `cgroups` are the non-pod cgroups cAdvisor would
    export besides the system containers: the root, the kubepods root and its QoS children."""

    generation: int
    time_ns: int
    node: NodeSnap
    system: tuple[SystemContainer, ...]
    cgroups: tuple[Observed, ...]
    pods: tuple[PodSnap, ...]
    errors: tuple[str, ...] = ()  # what could not be read, as the kubelet words it ("failed to get rootFs stats: ...")
    collect_cpu_s: float = 0.0  # CPU time the cycle took (the housekeeping cost)
