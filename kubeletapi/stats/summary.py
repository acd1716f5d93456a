"""The /stats/summary document (stats/v1alpha1) built from a Snapshot, as the kubelet builds it.

Full summary: node (boot time as startTime, CPU, memory, network, rootfs, imagefs, rlimit, swap,
system containers) and every pod with a running container (cgroup CPU/memory/swap, running
containers with their logs, host network, volumes, ephemeral-storage, process count). A pod
without one (a crash-looping container waiting in back-off) is left out of both variants, as the
kubelet's CRI stats provider builds its pods from the running containers' stats. The CPU-and-memory variant
(only_cpu_and_memory=true, what metrics-server <= 0.5 and /metrics/resource read) keeps node and
pod CPU, memory and swap, the system containers' CPU and memory, and the root cgroup's start as
the node startTime.

Values the kubelet derives: memory availableBytes = limit - working set (omitted without a
limit; the node's limit is its capacity), swapAvailableBytes = swap limit - swap usage,
usageNanoCores from the last two samples (omitted before the second sample or after a reset).

Pressure (KubeletPSI, on by default since 1.34): every CPU and memory object carries `psi`, and the
full summary an `io` object (its time and psi) at node, system-container, pod and container level,
from the cgroup's cpu/memory/io.pressure (cgroup v2); without them (cgroup v1, a process tree, a
kernel without PSI) all zeros, as the kubelet writes what cAdvisor's zero value holds.
"""

from __future__ import annotations

from kubeletapi.api import stats_v1alpha1 as api
from kubeletapi.api.gojson import dumps
from kubeletapi.cgroups.stats import PSI, CgroupSample, PSIData
from kubeletapi.errors import KubeletError
from kubeletapi.stats.snapshot import ContainerSnap, FsSample, FsUsage, Observed, PodSnap, Snapshot, VolumeSnap


class SummaryError(KubeletError):
    """The summary cannot be built (the kubelet answers 500 `Internal Error: <reason>`)."""


def full_summary(snap: Snapshot) -> api.Summary:
    if snap.errors:
        raise SummaryError(snap.errors[0])
    node = snap.node
    root = _root(snap)
    memory_limit, swap_limit = node.machine.memory_capacity, node.machine.swap_capacity
    stats = api.NodeStats(
        node_name=node.name,
        start_time=node.boot_ns,
        system_containers=[
            _container(s.name, s.start_ns, s.stats, with_io=True) for s in snap.system
        ],
        cpu=_cpu(root),
        memory=_memory(root, memory_limit),
        io=_io(root),
        network=_network(snap),
        fs=_fs(node.rootfs, node.rootfs.stats.used if node.rootfs else None,
               node.rootfs.stats.inodes_used if node.rootfs else None),
        rlimit=api.RlimitStats(node.rlimit_ns, node.rlimit.maxpid, node.rlimit.curproc),
        swap=_node_swap(root, snap, swap_limit),
    )
    used = node.imagefs_used
    stats.image_fs = _fs(node.imagefs, used.used if used else None, used.inodes_used if used else None)
    stats.container_fs = stats.image_fs
    return api.Summary(stats, [_pod(snap, pod) for pod in snap.pods if pod.workload])


def cpu_and_memory_summary(snap: Snapshot) -> api.Summary:
    root = _root(snap)
    node = api.NodeStats(
        node_name=snap.node.name,
        start_time=root.cur.created_ns,
        system_containers=[
            _container(s.name, s.start_ns, s.stats) for s in snap.system
        ],
        cpu=_cpu(root),
        memory=_memory(root, snap.node.machine.memory_capacity),
        swap=_node_swap(root, snap, snap.node.machine.swap_capacity),
    )
    pods = []
    for pod in (p for p in snap.pods if p.workload):
        stats = api.PodStats(
            pod.ref.name, pod.ref.namespace, pod.ref.uid, pod.ref.created_ns,
            containers=[_workload_container(c) for c in pod.workload],
        )
        stats.cpu, stats.memory, stats.swap = _figures(pod)
        pods.append(stats)
    return api.Summary(node, pods)


def encode(summary: api.Summary) -> bytes:
    """Pretty-printed with one-space indentation, as go-restful's WriteAsJson does."""
    return dumps(summary.to_wire(), indent=1)


# --- pieces ----------------------------------------------------------------------------------
def _root(snap: Snapshot) -> Observed:
    if snap.node.root is None:
        raise SummaryError("failed to get root cgroup stats")
    return snap.node.root


def _cpu(obs: Observed) -> api.CPUStats | None:
    cpu = obs.cur.cpu
    if cpu is None:
        return None
    return api.CPUStats(obs.time_ns, usage_nano_cores=obs.cpu_nanocores(), usage_core_nano_seconds=cpu.usage_ns,
                        psi=_psi(obs, "cpu"))


def _psi(obs: Observed | None, resource: str) -> api.PSIStats:
    """The cgroup's pressure for cpu, memory or io; zeros where it has none (see above)."""
    pressure = obs.cur.pressure if obs is not None else None
    found: PSI = getattr(pressure, resource) if pressure is not None else PSI()
    return api.PSIStats(_psi_data(found.full), _psi_data(found.some))


def _psi_data(data: PSIData) -> api.PSIData:
    return api.PSIData(data.total_us, data.avg10, data.avg60, data.avg300)


def _io(obs: Observed | None) -> api.IOStats | None:
    """Only for a sample that read something (cAdvisor's: a cgroup with the I/O controller)."""
    if obs is None or (obs.cur.cpu is None and obs.cur.memory is None):
        return None
    return api.IOStats(obs.time_ns, _psi(obs, "io"))


def _memory(obs: Observed, limit: int | None) -> api.MemoryStats | None:
    mem = obs.cur.memory
    if mem is None:
        return None
    if limit is None:
        limit = obs.cur.spec.memory_limit
    return api.MemoryStats(
        obs.time_ns,
        available_bytes=max(0, limit - mem.working_set) if limit is not None else None,
        usage_bytes=mem.usage,
        working_set_bytes=mem.working_set,
        rss_bytes=mem.rss if mem.rss is not None else None,
        page_faults=mem.container_pgfault if mem.container_pgfault is not None else mem.pgfault,
        major_page_faults=mem.container_pgmajfault if mem.container_pgmajfault is not None else mem.pgmajfault,
        psi=_psi(obs, "memory"),
    )


def _swap(sample: CgroupSample, limit: int | None) -> api.SwapStats | None:
    mem = sample.memory
    if mem is None:
        return None
    usage = mem.swap or 0
    if limit is None:
        limit = sample.spec.swap_limit
    return api.SwapStats(
        sample.timestamp_ns,
        swap_available_bytes=max(0, limit - usage) if limit is not None else None,
        swap_usage_bytes=usage,
    )


def _node_swap(root: Observed, snap: Snapshot, capacity: int) -> api.SwapStats | None:
    mem = root.cur.memory
    if mem is None:
        return None
    usage = mem.swap if mem.swap is not None else snap.node.meminfo.swap_used
    return api.SwapStats(root.time_ns, swap_available_bytes=max(0, capacity - usage), swap_usage_bytes=usage)


def _container(name: str, start_ns: int, obs: Observed | None, with_io: bool = False) -> api.ContainerStats:
    out = api.ContainerStats(name, start_ns)
    if obs is not None:
        out.cpu, out.memory, out.swap = _cpu(obs), _memory(obs, None), _swap(obs.cur, None)
        out.io = _io(obs) if with_io else None
    return out


def _figures(item: ContainerSnap | PodSnap) -> tuple[api.CPUStats | None, api.MemoryStats | None,
                                                      api.SwapStats | None]:
    """CPU, memory and swap of a container or pod: what a CRI runtime reported when it did (its own
    usageNanoCores when non-zero, else the rate of two cycles), else its cgroup's. The limit behind
    availableBytes and the swap figures come from the cgroup (CRI has neither)."""
    obs = item.usage
    if obs is None:
        return None, None, None
    cpu = _cpu(obs)
    if cpu is not None and item.runtime is not None and item.runtime_nano_cores:
        cpu.usage_nano_cores = item.runtime_nano_cores
    cgroup = item.stats
    limit = cgroup.cur.spec.memory_limit if cgroup is not None else None
    swap = _swap(cgroup.cur, None) if cgroup is not None else _swap(obs.cur, None)
    memory = _memory(obs, limit)
    if cgroup is not None:  # a runtime's report has no pressure: the cgroup's (as cAdvisor's in the kubelet)
        if cpu is not None:
            cpu.psi = _psi(cgroup, "cpu")
        if memory is not None:
            memory.psi = _psi(cgroup, "memory")
    return cpu, memory, swap


def _workload_container(c: ContainerSnap) -> api.ContainerStats:
    out = api.ContainerStats(c.ref.name, c.ref.created_ns)
    out.cpu, out.memory, out.swap = _figures(c)
    return out


def _network(snap: Snapshot) -> api.NetworkStats:
    node = snap.node
    wire = [
        api.InterfaceStats(i.name, i.rx_bytes, i.rx_errors, i.tx_bytes, i.tx_errors) for i in node.interfaces
    ]
    default = next((i for i in wire if i.name == node.default_interface), api.InterfaceStats(""))
    return api.NetworkStats(node.network_ns, default, wire)


def _fs(sample: FsSample | None, used: int | None, inodes_used: int | None) -> api.FsStats | None:
    if sample is None:
        return None
    fs = sample.stats
    return api.FsStats(
        sample.time_ns, available_bytes=fs.available, capacity_bytes=fs.capacity, used_bytes=used,
        inodes_free=fs.inodes_free, inodes=fs.inodes, inodes_used=inodes_used,
    )


def _usage_fs(fs: FsSample | None, usage: FsUsage | None) -> api.FsStats | None:
    """Task-specific usage (a log dir, a volume) on its filesystem's figures."""
    if fs is None and usage is None:
        return None
    out = api.FsStats(usage.time_ns if usage else fs.time_ns if fs else 0)
    if fs is not None:
        out.available_bytes, out.capacity_bytes = fs.stats.available, fs.stats.capacity
        out.inodes_free, out.inodes = fs.stats.inodes_free, fs.stats.inodes
    if usage is not None:
        out.used_bytes, out.inodes_used = usage.used, usage.inodes_used
    return out


def _is_ephemeral(volume: VolumeSnap) -> bool:
    return volume.ref.kind == "emptyDir"


def _pod(snap: Snapshot, pod: PodSnap) -> api.PodStats:
    ref = pod.ref
    out = api.PodStats(ref.name, ref.namespace, ref.uid, ref.created_ns)
    out.containers = [_full_container(snap, c) for c in pod.workload]
    out.cpu, out.memory, out.swap = _figures(pod)
    out.io = _io(pod.stats or pod.usage)
    out.network = _network(snap)
    ordered = sorted(pod.volumes, key=lambda v: not _is_ephemeral(v))  # ephemeral first, stable
    volumes = [(v, _usage_fs(v.fs, v.usage)) for v in ordered]
    out.volume = [api.VolumeStats(v.ref.name, fs) for v, fs in volumes if fs is not None] or None
    out.ephemeral_storage = _ephemeral(snap, pod, [fs for v, fs in volumes if fs is not None and _is_ephemeral(v)])
    out.process_count = pod.process_count
    return out


def _full_container(snap: Snapshot, c: ContainerSnap) -> api.ContainerStats:
    out = _workload_container(c)
    out.io = _io(c.stats or c.usage)
    if c.rootfs is not None:
        out.rootfs = _usage_fs(snap.node.imagefs, c.rootfs)
    out.logs = _usage_fs(snap.node.logsfs, c.logs)
    return out


def _ephemeral(snap: Snapshot, pod: PodSnap, volumes: list[api.FsStats]) -> api.FsStats | None:
    """The kubelet's calcEphemeralStorage: rootfs figures, used = container logs + writable layers
    (a CRI runtime's; the process runtime has none) + local ephemeral volumes; time = the newest of
    those measurements."""
    rootfs = snap.node.rootfs
    if rootfs is None:
        return None
    out = _usage_fs(rootfs, None)
    assert out is not None
    used = inodes = 0
    newest = rootfs.time_ns
    for c in pod.workload:
        for part in (c.logs, c.rootfs):
            if part is not None:
                used, inodes = used + part.used, inodes + part.inodes_used
                newest = max(newest, part.time_ns)
    for v in volumes:
        used, inodes = used + (v.used_bytes or 0), inodes + (v.inodes_used or 0)
        newest = max(newest, v.time)
    out.time, out.used_bytes, out.inodes_used = newest, used, inodes
    return out
