"""One housekeeping cycle: read every cgroup, process and filesystem the stats endpoints report.

`Collector.collect` is blocking (a few hundred small file reads) and runs in a worker thread; it
only reads, and everything it reads may vanish under it: a cgroup removed between the listing
and the read is skipped, an unreadable node source is recorded in `Snapshot.errors` (the summary
fails the way the kubelet's does) and never stops the cycle.

Without cgroups (not root, or no cgroup hierarchy) pods and containers are measured from their
process trees (/proc/<pid>/stat): Observed with source PROCESS_TREE, which the cAdvisor endpoint
does not export (there is no cgroup to name); a CRI runtime's reports are source RUNTIME.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kubeletapi.cgroups.read_common import CgroupReader
from kubeletapi.cgroups.stats import CgroupSample, CpuStats, MemoryStats
from kubeletapi.cm.cgroupnames import QOS_CHILDREN
from kubeletapi.errors import KubeletError
from kubeletapi.procread import read_stat
from kubeletapi.runtime.stats import RuntimeStats, RuntimeUsage
from kubeletapi.stats.diskstats import read_diskstats
from kubeletapi.stats.hostfs import HostFs, OsHostFs, VolumeUsageCache
from kubeletapi.stats.inventory import ContainerRef, PodRef
from kubeletapi.stats.machine import MachineInfo, boot_time, machine_info
from kubeletapi.stats.netdev import (
    KUBELET_DEFAULT_INTERFACE,
    InterfaceStats,
    default_interface,
    read_interfaces,
    summary_interface,
)
from kubeletapi.stats.node import NodeMemory, cpu_usage, load_average, node_memory, rlimit
from kubeletapi.stats.proctree import CLK_TCK, ProcessTable, ProcessTreeStats
from kubeletapi.stats.snapshot import (
    NS_PER_S,
    ContainerSnap,
    FsSample,
    FsUsage,
    NodeSnap,
    Observed,
    PodSnap,
    SampleSource,
    Snapshot,
    SystemContainer,
    VolumeSnap,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class NodeRoots:
    """Where the node's kernel and configuration files are (fixture trees in tests)."""

    proc: Path = Path("/proc")
    sys: Path = Path("/sys")
    etc: Path = Path("/etc")


@dataclass(frozen=True)
class CollectorConfig:
    node_name: str
    root_dir: Path  # the agent's --root-dir: its filesystem is the node rootfs
    runtime_dir: Path | None  # the process runtime's state: its filesystem is the imagefs (None: CRI ImageFsInfo)
    pod_logs_dir: Path
    pods_cgroup: str | None  # the kubepods root ("/kubepods"); None without cgroups
    agent_pid: int
    agent_start_ns: int
    kubelet_cgroup: str = ""  # kubeletCgroups ("" = the agent's own process)
    runtime_cgroup: str = ""  # the CRI runtime's cgroup ("" = the process runtime's shims)
    system_cgroup: str = ""  # systemCgroups ("" = no `misc` entry)
    roots: NodeRoots = field(default_factory=NodeRoots)


class Collector:
    """Builds Snapshots; holds only what is constant (machine info) and caches (mounts, volume usage)."""

    def __init__(self, cfg: CollectorConfig, reader: CgroupReader | None, now_ns: Callable[[], int],
                 host_fs: HostFs | None = None, volumes: VolumeUsageCache | None = None) -> None:
        self.cfg = cfg
        self.reader = reader
        self.now_ns = now_ns
        self.host_fs: HostFs = host_fs or OsHostFs(cfg.roots.proc, now_ns)
        self.volumes = volumes or VolumeUsageCache()
        self.machine: MachineInfo = machine_info(cfg.roots.proc, cfg.roots.sys, cfg.roots.etc)

    def measure_new_volumes(self, pods: Sequence[PodRef]) -> None:
        """Measure the volumes of `pods` not measured yet (a new pod's, in its first cycle), keeping
        every other figure."""
        self.volumes.add_new((v.path for p in pods for v in p.volumes), self.host_fs)

    def refresh_volumes(self, pods: Sequence[PodRef]) -> None:
        """Measure every volume of `pods` again, and the process runtime's state directory (the
        imageFs usage); blocking (directory walks), so housekeeping runs it in a worker thread."""
        paths = [v.path for p in pods for v in p.volumes]
        if self.cfg.runtime_dir is not None:
            paths.append(self.cfg.runtime_dir)
        self.volumes.refresh(paths, self.host_fs)

    def collect(self, pods: Sequence[PodRef], runtime_pids: Sequence[int], prev: Snapshot | None,
                generation: int, runtime: RuntimeStats | None = None) -> Snapshot:
        """One cycle; `runtime`: what a CRI runtime reported this cycle (stats/runtimestats.py)."""
        cpu_start = time.thread_time()
        cycle = _Cycle(self, prev, runtime)
        node = cycle.node()
        system = cycle.system(pods, runtime_pids)
        cgroups = cycle.cgroups()
        pod_snaps = tuple(cycle.pod(p) for p in pods)
        if self.cfg.pods_cgroup is None:
            system = cycle.with_pods_sum(system, pod_snaps)
        return Snapshot(
            generation=generation, time_ns=cycle.now, node=node, system=system, cgroups=cgroups,
            pods=pod_snaps, errors=tuple(cycle.errors), collect_cpu_s=time.thread_time() - cpu_start,
        )


class _Cycle:
    """The state of one collection: its time, the previous samples, the errors so far."""

    def __init__(self, collector: Collector, prev: Snapshot | None, runtime: RuntimeStats | None = None) -> None:
        self.collector = collector
        self.cfg = collector.cfg
        self.now = collector.now_ns()
        self.errors: list[str] = []
        self._prev = _previous_samples(prev)
        self._table: ProcessTable | None = None
        self._runtime = runtime
        self._prev_node = prev.node if prev is not None else None

    # --- observation ---------------------------------------------------------------------------
    def observe(self, sample: CgroupSample | None, source: SampleSource = SampleSource.CGROUP) -> Observed | None:
        if sample is None:
            return None
        before = self._prev.get((source, sample.path))
        if before is not None and before.created_ns != sample.created_ns:
            before = None  # another cgroup (or process) under the same name
        return Observed(sample, before, source)

    def cgroup(self, path: str) -> Observed | None:
        reader = self.collector.reader
        if reader is None or not path:
            return None
        try:
            return self.observe(reader.sample(path, self.collector.now_ns()))
        except KubeletError as exc:
            log.warning("stats: cannot read cgroup %s: %s", path, exc)
            return None

    def table(self) -> ProcessTable:
        if self._table is None:
            self._table = ProcessTable.read(self.cfg.roots.proc)
        return self._table

    # --- node ----------------------------------------------------------------------------------
    def node(self) -> NodeSnap:
        roots = self.cfg.roots
        meminfo = self._meminfo()
        root = self.cgroup("/") or self.observe(self._root_from_proc(meminfo))
        if root is None:
            self.errors.append("failed to get root cgroup stats: no cgroup or /proc data")
        try:
            interfaces: tuple[InterfaceStats, ...] = tuple(read_interfaces(roots.proc))
        except KubeletError as exc:
            log.warning("stats: %s", exc)
            interfaces = ()
        network_ns = self.collector.now_ns()
        names = [i.name for i in interfaces]
        route = None if KUBELET_DEFAULT_INTERFACE in names else default_interface(roots.proc)
        flattened = summary_interface(names, route)
        rootfs = self._fs(self.cfg.root_dir, "rootFs")
        imagefs, imagefs_used = self._image_fs()
        logsfs = self._fs(self.cfg.pod_logs_dir, "")
        machine = self.collector.machine
        return NodeSnap(
            name=self.cfg.node_name, boot_ns=(machine.boot_time or 0) * NS_PER_S, machine=machine, root=root,
            meminfo=meminfo, load=load_average(roots.proc), interfaces=interfaces,
            default_interface=flattened, network_ns=network_ns,
            rootfs=rootfs, imagefs=imagefs, imagefs_used=imagefs_used,
            logsfs=logsfs, disks=tuple(read_diskstats(roots.proc)), rlimit=rlimit(roots.proc),
            rlimit_ns=self.collector.now_ns(),
        )

    def _image_fs(self) -> tuple[FsSample | None, FsUsage | None]:
        """The runtime's image filesystem: ImageFsInfo's mountpoint and usage with a CRI runtime
        (the last known figures when the runtime did not answer this cycle), else the filesystem
        of the process runtime's state directory and what that directory takes."""
        if self.cfg.runtime_dir is not None:
            return self._fs(self.cfg.runtime_dir, "imageFs"), self.collector.volumes.get(self.cfg.runtime_dir)
        info = self._runtime.image_fs if self._runtime is not None else None
        if info is None:
            prev = self._prev_node
            if prev is not None and prev.imagefs is not None:
                return prev.imagefs, prev.imagefs_used
            self.errors.append("failed to get imageFs stats: the container runtime reported no image filesystem")
            return None, None
        used = None
        if info.used_bytes is not None:
            used = FsUsage(info.used_bytes, info.inodes_used or 0, info.timestamp_ns)
        return self._fs(info.mountpoint, "imageFs"), used

    def runtime_observed(self, key: str, usage: RuntimeUsage | None, created_ns: int) -> Observed | None:
        """A runtime's report as an Observed sample (source RUNTIME, path `key`), so CPU rates come
        from the cumulative counters of two cycles like every other sample."""
        if usage is None or (usage.cpu_usage_ns is None and usage.memory is None):
            return None
        cpu = CpuStats(usage_ns=usage.cpu_usage_ns) if usage.cpu_usage_ns is not None else None
        return self.observe(CgroupSample(path=key, timestamp_ns=usage.timestamp_ns, cpu=cpu,
                                         memory=usage.memory, created_ns=created_ns), SampleSource.RUNTIME)

    def _meminfo(self) -> NodeMemory:
        try:
            return node_memory(self.cfg.roots.proc)
        except KubeletError as exc:
            self.errors.append(f"failed to get node info: {exc}")
            return NodeMemory(0, 0, None, 0, 0, 0, 0, 0, 0, 0, 0)

    def _root_from_proc(self, mem: NodeMemory) -> CgroupSample | None:
        """The root's figures without a cgroup hierarchy: /proc/stat and /proc/meminfo."""
        try:
            cpu = cpu_usage(self.cfg.roots.proc)
        except KubeletError:
            return None
        return CgroupSample(
            path="/", timestamp_ns=self.collector.now_ns(),
            cpu=CpuStats(usage_ns=cpu.usage_ns, user_ns=cpu.user_ns, system_ns=cpu.system_ns),
            memory=MemoryStats(usage=mem.usage, working_set=mem.working_set, rss=mem.anon,
                               cache=mem.cached + mem.buffers, swap=mem.swap_used,
                               active_file=mem.active_file, inactive_file=mem.inactive_file),
        )

    def _fs(self, path: Path, what: str) -> FsSample | None:
        try:
            return FsSample(self.collector.host_fs.stats(path), self.collector.now_ns())
        except KubeletError as exc:
            if what:
                self.errors.append(f"failed to get {what} stats: {exc}")
            return None

    # --- system containers and other cgroups ---------------------------------------------------
    def system(self, pods: Sequence[PodRef], runtime_pids: Sequence[int]) -> tuple[SystemContainer, ...]:
        cfg = self.cfg
        out = []
        kubelet = self.cgroup(cfg.kubelet_cgroup) if cfg.kubelet_cgroup else self._processes("kubelet", [cfg.agent_pid])
        if kubelet is not None:
            out.append(SystemContainer("kubelet", kubelet, cfg.agent_start_ns))
        runtime = self.cgroup(cfg.runtime_cgroup) if cfg.runtime_cgroup else self._processes("runtime", runtime_pids)
        if runtime is not None:
            out.append(SystemContainer("runtime", runtime, runtime.cur.created_ns or cfg.agent_start_ns))
        if cfg.system_cgroup:
            misc = self.cgroup(cfg.system_cgroup)
            if misc is not None:
                out.append(SystemContainer("misc", misc, misc.cur.created_ns))
        if cfg.pods_cgroup is not None:
            pods_obs = self.cgroup(cfg.pods_cgroup)
            if pods_obs is not None:
                out.append(SystemContainer("pods", pods_obs, pods_obs.cur.created_ns))
        return tuple(out)

    def with_pods_sum(
        self, system: tuple[SystemContainer, ...], pods: Sequence[PodSnap]
    ) -> tuple[SystemContainer, ...]:
        """Without cgroups, the `pods` system container is the sum of every pod's process trees."""
        parts = [p.stats.cur for p in pods if p.stats is not None]
        summed = self.observe(_sum_samples("pods", self.collector.now_ns(), parts, 0), SampleSource.PROCESS_TREE)
        return (*system, SystemContainer("pods", summed, self.cfg.agent_start_ns)) if summed else system

    def cgroups(self) -> tuple[Observed, ...]:
        """The root and the kubepods QoS levels, for the cAdvisor endpoint."""
        out = []
        paths = ["/"]
        if self.cfg.pods_cgroup is not None:
            base = self.cfg.pods_cgroup
            paths += [base, *(base.rstrip("/") + "/" + q for q in QOS_CHILDREN.values())]
        for path in paths:
            observed = self.cgroup(path)
            if observed is not None:
                out.append(observed)
        return tuple(out)

    # --- processes -------------------------------------------------------------------------------
    def _processes(self, name: str, pids: Sequence[int]) -> Observed | None:
        """The summed figures of these processes themselves (not their children)."""
        entries = []
        for pid in pids:
            try:
                entries.append(read_stat(pid, self.cfg.roots.proc))
            except (OSError, ValueError, IndexError):
                continue
        table = ProcessTable(entries)
        stats = table.tree_stats(e.pid for e in entries) if entries else ProcessTreeStats(0, 0, 0, 0, 0, 0)
        start = min((e.start_ticks for e in entries), default=0)
        sample = _tree_sample(name, self.collector.now_ns(), stats, self._start_ns(start))
        return self.observe(sample, SampleSource.PROCESS_TREE)

    def _start_ns(self, ticks: int) -> int:
        boot = self.collector.machine.boot_time or 0
        return boot * NS_PER_S + ticks * NS_PER_S // CLK_TCK if ticks else 0

    # --- pods ----------------------------------------------------------------------------------
    def pod(self, ref: PodRef) -> PodSnap:
        containers = tuple(self.container(c) for c in ref.containers if c.running)
        if ref.cgroup and self.collector.reader is not None:
            stats = self.cgroup(ref.cgroup)
        else:
            parts = [c.stats.cur for c in containers if c.stats is not None]
            stats = self.observe(_sum_samples("pod:" + ref.uid, self.collector.now_ns(), parts, ref.created_ns),
                                 SampleSource.PROCESS_TREE)
        volumes = tuple(
            VolumeSnap(v, self._fs(v.path, ""), self.collector.volumes.get(v.path)) for v in ref.volumes
        )
        counts = [_processes_of(c.stats.cur) for c in containers if c.stats is not None and not c.ref.sandbox]
        process_count = sum(counts) if counts else None
        reported = self._runtime.pods.get(ref.uid) if self._runtime is not None else None
        if reported is not None and reported.process_count is not None:
            process_count = reported.process_count
        return PodSnap(ref, stats, containers, volumes, process_count,
                       runtime=self.runtime_observed("pod:" + ref.uid, reported, ref.created_ns),
                       runtime_nano_cores=reported.nano_cores or None if reported is not None else None)

    def container(self, ref: ContainerRef) -> ContainerSnap:
        if ref.cgroup and self.collector.reader is not None:
            stats = self.cgroup(ref.cgroup)
        elif ref.pid:
            tree = self.table().tree_stats([ref.pid])
            sample = _tree_sample(ref.id, self.collector.now_ns(), tree, ref.started_ns)
            stats = self.observe(sample, SampleSource.PROCESS_TREE)
        else:
            stats = None
        logs = self.collector.host_fs.files_usage(ref.log_dir) if ref.log_dir is not None else None
        reported = self._runtime.containers.get(ref.id) if self._runtime is not None else None
        if reported is None:
            return ContainerSnap(ref, stats, logs)
        rootfs = None
        if reported.rootfs_used is not None:
            rootfs = FsUsage(reported.rootfs_used, reported.rootfs_inodes or 0, reported.timestamp_ns)
        return ContainerSnap(ref, stats, logs, runtime=self.runtime_observed(ref.id, reported, ref.created_ns),
                             runtime_nano_cores=reported.nano_cores or None, rootfs=rootfs)


def _previous_samples(prev: Snapshot | None) -> dict[tuple[SampleSource, str], CgroupSample]:
    if prev is None:
        return {}
    out: dict[tuple[SampleSource, str], CgroupSample] = {}
    observed: list[Observed | None] = [prev.node.root, *(s.stats for s in prev.system), *prev.cgroups]
    for pod in prev.pods:
        observed += [pod.stats, pod.runtime]
        for c in pod.containers:
            observed += [c.stats, c.runtime]
    for obs in observed:
        if obs is not None:
            out[(obs.source, obs.cur.path)] = obs.cur
    return out


def _tree_sample(path: str, now_ns: int, t: ProcessTreeStats, created_ns: int) -> CgroupSample:
    return CgroupSample(
        path=path, timestamp_ns=now_ns, created_ns=created_ns,
        cpu=CpuStats(usage_ns=t.cpu_ns, user_ns=t.user_ns, system_ns=t.system_ns),
        memory=MemoryStats(usage=t.rss, working_set=t.rss, rss=t.rss),
        pids=t.threads, threads=t.threads, processes=t.process_count,
    )


def _sum_samples(path: str, now_ns: int, parts: Sequence[CgroupSample], created_ns: int) -> CgroupSample | None:
    if not parts:
        return None
    cpu = [p.cpu for p in parts if p.cpu is not None]
    mem = [p.memory for p in parts if p.memory is not None]
    return CgroupSample(
        path=path, timestamp_ns=now_ns, created_ns=created_ns,
        cpu=CpuStats(usage_ns=sum(c.usage_ns for c in cpu), user_ns=sum(c.user_ns or 0 for c in cpu),
                     system_ns=sum(c.system_ns or 0 for c in cpu)),
        memory=MemoryStats(usage=sum(m.usage for m in mem), working_set=sum(m.working_set for m in mem),
                           rss=sum(m.rss or 0 for m in mem)),
        pids=sum(p.pids or 0 for p in parts), processes=sum(_processes_of(p) for p in parts),
    )


def _processes_of(sample: CgroupSample) -> int:
    return sample.processes or 0


def own_start_ns(proc_root: Path = Path("/proc"), pid: int | None = None) -> int:
    """This process's start time (Unix ns), from its stat start ticks and the boot time."""
    pid = os.getpid() if pid is None else pid
    entry = read_stat(pid, proc_root)
    return ((boot_time(proc_root) or 0) * NS_PER_S) + entry.start_ticks * NS_PER_S // CLK_TCK

