"""The /metrics/cadvisor family table: one spec per family, as cAdvisor's Prometheus collectors
(metrics/prometheus.go, metrics/prometheus_machine.go) declare them for the kubelet.

Names, HELP texts (cAdvisor's carry no stability prefix), types, extra labels, metric sets and
emission conditions are cAdvisor's; the value functions read the stats Snapshot instead of
cAdvisor's ContainerStats. cadvisor.py turns the table into text; see its docstring for the
choices made where the Snapshot and cAdvisor's data differ.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from kubeletapi.cgroups.stats import PSI, CgroupSample, CgroupSpec, CpuStats, DiskIOStats, MemoryStats, PSIData
from kubeletapi.stats.fs import FsStats
from kubeletapi.stats.machine import MachineInfo
from kubeletapi.stats.netdev import InterfaceStats
from kubeletapi.stats.snapshot import DiskIO

# cAdvisor's metric sets (container.MetricKind) that the kubelet includes (server.go); `pressure`
# with KubeletPSI, on by default since 1.34.
DEFAULT_SETS: frozenset[str] = frozenset(
    {"cpu", "memory", "cpuLoad", "diskIO", "disk", "network", "app", "process", "oom", "pressure"}
)

NS_PER_S = 1e9  # a float divisor: int / float converts the int first, like Go's float64(v) / 1e9
# cAdvisor divides /proc/diskstats milliseconds by time.Second (1e9) for its *_seconds_total
# filesystem families: the exported figure is ms x 1e-9, reproduced as is.
DISKSTATS_TIME_DIVISOR = 1e9
MAX_MEMORY = 1 << 62  # spec memory values above this are "unlimited" and exported as 0
# cAdvisor's DiskMap (sysfs GetBlockDeviceInfo) leaves these out, so their I/O has device="".
IGNORED_DISK_PREFIXES = ("loop", "ram", "sr")
# cAdvisor's fs.go partitionRegex: only these /proc/diskstats entries feed the root's filesystems.
FS_DISKSTATS_NAME = re.compile(r"^(?:(?:s|v|xv)d[a-z]+\d*|dm-\d+)$")

Rows = Sequence[tuple[tuple[str, ...], float]]
Stamp = Literal["sample", "none", "snapshot"]
Kind = Literal["counter", "gauge"]

EMPTY_CPU = CpuStats(usage_ns=0)
EMPTY_MEMORY = MemoryStats(usage=0, working_set=0)


@dataclass(frozen=True, slots=True)
class FsRow:
    """One of the root container's filesystems, with its device's /proc/diskstats counters."""

    device: str
    stats: FsStats
    disk: DiskIO | None


class Target:
    """One exported cgroup ("container" in cAdvisor's terms): its sample and what the families read.

    `key` holds the base label values in label-name order (container, id, image, name,
    namespace, pod); `frags` the same labels pre-escaped as `name="value"`; `base` them joined;
    `ts` the line ending with the sample's timestamp in ms.
    """

    __slots__ = (
        "base", "cpu", "frags", "fs", "has_cpu", "has_memory", "interfaces", "io", "key", "last_seen",
        "mem", "quota", "sample", "spec", "ts",
    )

    def __init__(self, sample: CgroupSample, key: tuple[str, ...], frags: tuple[str, ...], has_memory: bool,
                 io: tuple[tuple[str, DiskIOStats], ...], fs: tuple[FsRow, ...],
                 interfaces: tuple[InterfaceStats, ...], last_seen: int) -> None:
        self.sample = sample
        self.key = key
        self.frags = frags
        self.base = ",".join(frags)
        self.ts = f" {sample.timestamp_ns // 1_000_000}\n"
        self.cpu = sample.cpu or EMPTY_CPU
        self.mem = sample.memory or EMPTY_MEMORY
        self.spec: CgroupSpec = sample.spec
        self.has_cpu = sample.cpu is not None
        self.has_memory = has_memory
        self.quota = bool(sample.spec.cpu_quota_us)
        self.io = io
        self.fs = fs
        self.interfaces = interfaces
        self.last_seen = last_seen


Value = Callable[[Target], float | None]
RowsFn = Callable[[Target], Rows]


@dataclass(frozen=True, slots=True)
class ContainerFamily:
    """A container_* family. Exactly one of `value` (one series, no extra labels; None: no series)
    and `rows` (zero or more (extra label values, value) series) is set. `metric_set` None means
    always emitted (cAdvisor's spec families are not gated by includedMetrics)."""

    name: str
    help: str
    type: Kind
    metric_set: str | None
    value: Value | None = None
    rows: RowsFn | None = None
    extra_labels: tuple[str, ...] = ()
    stamp: Stamp = "sample"


@dataclass(frozen=True, slots=True)
class MachineFamily:
    name: str
    help: str
    rows: Callable[[MachineInfo], Rows]
    extra_labels: tuple[str, ...] = ()


# --- value helpers -----------------------------------------------------------------------------


def _ns(value: int | None) -> float:
    return (value or 0) / NS_PER_S


def _spec_memory(value: int | None) -> int:
    """cAdvisor's specMemoryValue; None is how the readers spell unlimited (exported as 0 too)."""
    return 0 if value is None or value > MAX_MEMORY else value


def _cpu_usage(t: Target) -> Rows:
    # Without per-CPU usage (the kubelet leaves percpu out) cAdvisor emits cpu="total" only when
    # the total is above zero.
    usage = t.cpu.usage_ns
    return ((("total",), usage / NS_PER_S),) if usage > 0 else ()


def _cfs(read: Callable[[CpuStats], float]) -> Value:
    """CFS families exist only for cgroups with a CPU quota (cAdvisor: Spec.Cpu.Quota != 0)."""
    return lambda t: read(t.cpu) if t.quota else None


TASK_STATES: Rows = tuple(((state,), 0) for state in ("sleeping", "running", "stopped", "uninterruptible", "iowaiting"))


def _failures(t: Target) -> Rows:
    m = t.mem
    return (
        (("pgfault", "container"), m.container_pgfault or 0),
        (("pgmajfault", "container"), m.container_pgmajfault or 0),
        (("pgfault", "hierarchy"), m.pgfault or 0),
        (("pgmajfault", "hierarchy"), m.pgmajfault or 0),
    )


def _v2(read: Callable[[MemoryStats], int | None]) -> Value:
    return lambda t: read(t.mem)


def _pressure(resource: str, line: str) -> Value:
    """A *.pressure file's `full` or `some` total in seconds (cAdvisor's asMicrosecondsToSeconds)."""
    def read(t: Target) -> float:
        pressure = t.sample.pressure
        psi: PSI = getattr(pressure, resource) if pressure is not None else PSI()
        data: PSIData = getattr(psi, line)
        return data.total_us / 1e6
    return read


def _fs(read: Callable[[FsRow], float]) -> RowsFn:
    return lambda t: tuple(((row.device,), read(row)) for row in t.fs)


def _disk(read: Callable[[DiskIO], int]) -> Callable[[FsRow], float]:
    return lambda row: read(row.disk) if row.disk is not None else 0


def _disk_time(read: Callable[[DiskIO], int]) -> Callable[[FsRow], float]:
    return lambda row: read(row.disk) / DISKSTATS_TIME_DIVISOR if row.disk is not None else 0


def _io(read: Callable[[DiskIOStats], int], fs_read: Callable[[FsRow], float] | None) -> RowsFn:
    """cAdvisor's ioValues: a series per block device of the cgroup's I/O, then (root only) one per
    filesystem. A repeated device label (two unnamed devices) keeps the first, as client_golang's
    gatherer drops a duplicate series."""

    def rows(t: Target) -> Rows:
        if not t.io and not (fs_read and t.fs):
            return ()
        out: dict[str, float] = {}
        for device, stats in t.io:
            out.setdefault(device, read(stats))
        if fs_read is not None:
            for row in t.fs:
                out.setdefault(row.device, fs_read(row))
        return tuple(((device,), value) for device, value in out.items())

    return rows


def _blkio(t: Target) -> Rows:
    rows: list[tuple[tuple[str, ...], float]] = []
    for device, s in t.io:
        major, minor = str(s.major), str(s.minor)
        rows.append(((device, major, minor, "Read"), s.read_bytes))
        rows.append(((device, major, minor, "Write"), s.write_bytes))
    return rows


def _net(read: Callable[[InterfaceStats], int]) -> RowsFn:
    return lambda t: tuple(((i.name,), read(i)) for i in t.interfaces)


def _constant(value: float) -> Value:
    return lambda _t: value


# --- the container families ----------------------------------------------------------------------

C: Kind = "counter"
G: Kind = "gauge"
DEV, IFACE = ("device",), ("interface",)

CONTAINER_FAMILIES: tuple[ContainerFamily, ...] = (
    # Always emitted (no metric set).
    ContainerFamily("container_last_seen", "Last time a container was seen by the exporter", G, None,
                    value=lambda t: t.last_seen, stamp="snapshot"),
    ContainerFamily("container_start_time_seconds", "Start time of the container since unix epoch in seconds.", G,
                    None, value=lambda t: t.sample.created_ns // 1_000_000_000, stamp="none"),
    ContainerFamily("container_spec_cpu_period", "CPU period of the container.", G, None,
                    value=lambda t: (t.spec.cpu_period_us or 0) if t.has_cpu else None, stamp="none"),
    ContainerFamily("container_spec_cpu_quota", "CPU quota of the container.", G, None,
                    value=lambda t: t.spec.cpu_quota_us if t.has_cpu and t.quota else None, stamp="none"),
    ContainerFamily("container_spec_cpu_shares", "CPU share of the container.", G, None,
                    value=lambda t: (t.spec.cpu_shares or 0) if t.has_cpu else None, stamp="none"),
    ContainerFamily("container_spec_memory_limit_bytes", "Memory limit for the container.", G, None,
                    value=lambda t: _spec_memory(t.spec.memory_limit) if t.has_memory else None, stamp="none"),
    ContainerFamily("container_spec_memory_swap_limit_bytes", "Memory swap limit for the container.", G, None,
                    value=lambda t: _spec_memory(t.spec.swap_limit) if t.has_memory else None, stamp="none"),
    ContainerFamily("container_spec_memory_reservation_limit_bytes", "Memory reservation limit for the container.",
                    G, None, value=lambda t: _spec_memory(t.spec.memory_reservation) if t.has_memory else None,
                    stamp="none"),
    # cpu
    ContainerFamily("container_cpu_user_seconds_total", "Cumulative user cpu time consumed in seconds.", C, "cpu",
                    value=lambda t: _ns(t.cpu.user_ns)),
    ContainerFamily("container_cpu_system_seconds_total", "Cumulative system cpu time consumed in seconds.", C,
                    "cpu", value=lambda t: _ns(t.cpu.system_ns)),
    ContainerFamily("container_cpu_usage_seconds_total", "Cumulative cpu time consumed in seconds.", C, "cpu",
                    rows=_cpu_usage, extra_labels=("cpu",)),
    ContainerFamily("container_cpu_cfs_periods_total", "Number of elapsed enforcement period intervals.", C, "cpu",
                    value=_cfs(lambda c: c.periods or 0)),
    ContainerFamily("container_cpu_cfs_throttled_periods_total", "Number of throttled period intervals.", C, "cpu",
                    value=_cfs(lambda c: c.throttled_periods or 0)),
    ContainerFamily("container_cpu_cfs_throttled_seconds_total",
                    "Total time duration the container has been throttled.", C, "cpu",
                    value=_cfs(lambda c: _ns(c.throttled_ns))),
    # cpuLoad: the kubelet runs no load reader, so cAdvisor's figures are all zero.
    ContainerFamily("container_cpu_load_average_10s",
                    "Value of container cpu load average over the last 10 seconds.", G, "cpuLoad",
                    value=_constant(0)),
    ContainerFamily("container_cpu_load_d_average_10s",
                    "Value of container cpu load.d average over the last 10 seconds.", G, "cpuLoad",
                    value=_constant(0)),
    ContainerFamily("container_tasks_state", "Number of tasks in given state", G, "cpuLoad",
                    rows=lambda _t: TASK_STATES, extra_labels=("state",)),
    # memory
    ContainerFamily("container_memory_cache", "Number of bytes of page cache memory.", G, "memory",
                    value=lambda t: t.mem.cache or 0),
    ContainerFamily("container_memory_rss", "Size of RSS in bytes.", G, "memory", value=lambda t: t.mem.rss or 0),
    ContainerFamily("container_memory_kernel_usage", "Size of kernel memory allocated in bytes.", G, "memory",
                    value=lambda t: t.mem.kernel or 0),
    ContainerFamily("container_memory_mapped_file", "Size of memory mapped files in bytes.", G, "memory",
                    value=lambda t: t.mem.mapped_file or 0),
    ContainerFamily("container_memory_swap", "Container swap usage in bytes.", G, "memory",
                    value=lambda t: t.mem.swap or 0),
    ContainerFamily("container_memory_failcnt", "Number of memory usage hits limits", C, "memory",
                    value=lambda t: t.mem.failcnt or 0),
    ContainerFamily("container_memory_usage_bytes",
                    "Current memory usage in bytes, including all memory regardless of when it was accessed", G,
                    "memory", value=lambda t: t.mem.usage),
    ContainerFamily("container_memory_max_usage_bytes", "Maximum memory usage recorded in bytes", G, "memory",
                    value=lambda t: t.mem.max_usage or 0),
    ContainerFamily("container_memory_working_set_bytes", "Current working set in bytes.", G, "memory",
                    value=lambda t: t.mem.working_set),
    ContainerFamily("container_memory_total_active_file_bytes", "Current total active file in bytes.", G, "memory",
                    value=lambda t: t.mem.active_file or 0),
    ContainerFamily("container_memory_total_inactive_file_bytes", "Current total inactive file in bytes.", G,
                    "memory", value=lambda t: t.mem.inactive_file or 0),
    ContainerFamily("container_memory_failures_total", "Cumulative count of memory allocation failures.", C,
                    "memory", rows=_failures, extra_labels=("failure_type", "scope")),
    # memory, cgroup v2 only: newer cAdvisor's families, emitted only when the sample has the field.
    ContainerFamily("container_memory_events_high_total",
                    "Cumulative count of memory.high throttle events for the container", C, "memory",
                    value=_v2(lambda m: m.events_high)),
    ContainerFamily("container_memory_events_max_total",
                    "Cumulative count of memory.max limit hit events for the container", C, "memory",
                    value=_v2(lambda m: None if m.events_high is None else m.failcnt or 0)),
    ContainerFamily("container_memory_file_dirty_bytes",
                    "Number of bytes of file cache that has been modified but not yet written back to disk.", G,
                    "memory", value=_v2(lambda m: m.file_dirty)),
    ContainerFamily("container_memory_file_writeback_bytes",
                    "Number of bytes of file cache that is currently being written back to disk.", G, "memory",
                    value=_v2(lambda m: m.file_writeback)),
    ContainerFamily("container_memory_pgscan_total",
                    "Cumulative number of pages scanned by the page reclaim algorithm.", C, "memory",
                    value=_v2(lambda m: m.pgscan)),
    ContainerFamily("container_memory_pgsteal_total",
                    "Cumulative number of pages reclaimed by the page reclaim algorithm.", C, "memory",
                    value=_v2(lambda m: m.pgsteal)),
    ContainerFamily("container_memory_workingset_refault_file_total",
                    "Cumulative number of refaults of previously evicted file pages.", C, "memory",
                    value=_v2(lambda m: m.workingset_refault_file)),
    ContainerFamily("container_memory_workingset_refault_anon_total",
                    "Cumulative number of refaults of previously evicted anonymous pages.", C, "memory",
                    value=_v2(lambda m: m.workingset_refault_anon)),
    # pressure: the cgroup's *.pressure totals (us -> s); 0 without them (cgroup v1), as cAdvisor's zero value
    *[ContainerFamily(f"container_pressure_{resource}_{kind}_seconds_total",
                      f"Total time duration {who} in the container {what} due to {name} congestion.", C, "pressure",
                      value=_pressure(resource, line))
      for resource, name in (("cpu", "CPU"), ("memory", "memory"), ("io", "IO"))
      for kind, who, what, line in (("stalled", "no tasks", "could make progress", "full"),
                                    ("waiting", "tasks", "have waited", "some"))],
    # oom
    ContainerFamily("container_oom_events_total", "Count of out of memory events observed for the container", C,
                    "oom", value=lambda t: t.mem.oom_events or 0),
    # disk (the root container's filesystems)
    ContainerFamily("container_fs_inodes_free", "Number of available Inodes", G, "disk",
                    rows=_fs(lambda r: r.stats.inodes_free), extra_labels=DEV),
    ContainerFamily("container_fs_inodes_total", "Number of Inodes", G, "disk",
                    rows=_fs(lambda r: r.stats.inodes), extra_labels=DEV),
    ContainerFamily("container_fs_limit_bytes",
                    "Number of bytes that can be consumed by the container on this filesystem.", G, "disk",
                    rows=_fs(lambda r: r.stats.capacity), extra_labels=DEV),
    ContainerFamily("container_fs_usage_bytes",
                    "Number of bytes that are consumed by the container on this filesystem.", G, "disk",
                    rows=_fs(lambda r: r.stats.used), extra_labels=DEV),
    # diskIO: the cgroup's block I/O per device; the root adds its filesystems' /proc/diskstats.
    ContainerFamily("container_fs_reads_bytes_total", "Cumulative count of bytes read", C, "diskIO",
                    rows=_io(lambda s: s.read_bytes, None), extra_labels=DEV),
    ContainerFamily("container_fs_reads_total", "Cumulative count of reads completed", C, "diskIO",
                    rows=_io(lambda s: s.reads, _disk(lambda d: d.reads)), extra_labels=DEV),
    ContainerFamily("container_fs_sector_reads_total", "Cumulative count of sector reads completed", C, "diskIO",
                    rows=_fs(_disk(lambda d: d.sectors_read)), extra_labels=DEV),
    ContainerFamily("container_fs_reads_merged_total", "Cumulative count of reads merged", C, "diskIO",
                    rows=_fs(_disk(lambda d: d.reads_merged)), extra_labels=DEV),
    ContainerFamily("container_fs_read_seconds_total", "Cumulative count of seconds spent reading", C, "diskIO",
                    rows=_fs(_disk_time(lambda d: d.read_ms)), extra_labels=DEV),
    ContainerFamily("container_fs_writes_bytes_total", "Cumulative count of bytes written", C, "diskIO",
                    rows=_io(lambda s: s.write_bytes, None), extra_labels=DEV),
    ContainerFamily("container_fs_writes_total", "Cumulative count of writes completed", C, "diskIO",
                    rows=_io(lambda s: s.writes, _disk(lambda d: d.writes)), extra_labels=DEV),
    ContainerFamily("container_fs_sector_writes_total", "Cumulative count of sector writes completed", C, "diskIO",
                    rows=_fs(_disk(lambda d: d.sectors_written)), extra_labels=DEV),
    ContainerFamily("container_fs_writes_merged_total", "Cumulative count of writes merged", C, "diskIO",
                    rows=_fs(_disk(lambda d: d.writes_merged)), extra_labels=DEV),
    ContainerFamily("container_fs_write_seconds_total", "Cumulative count of seconds spent writing", C, "diskIO",
                    rows=_fs(_disk_time(lambda d: d.write_ms)), extra_labels=DEV),
    ContainerFamily("container_fs_io_current", "Number of I/Os currently in progress", G, "diskIO",
                    rows=_fs(_disk(lambda d: d.io_in_progress)), extra_labels=DEV),
    ContainerFamily("container_fs_io_time_seconds_total", "Cumulative count of seconds spent doing I/Os", C,
                    "diskIO", rows=_fs(_disk_time(lambda d: d.io_ms)), extra_labels=DEV),
    ContainerFamily("container_fs_io_time_weighted_seconds_total", "Cumulative weighted I/O time in seconds", C,
                    "diskIO", rows=_fs(_disk_time(lambda d: d.weighted_io_ms)), extra_labels=DEV),
    ContainerFamily("container_blkio_device_usage_total", "Blkio Device bytes usage", C, "diskIO",
                    rows=_blkio, extra_labels=("device", "major", "minor", "operation")),
    # network (the root container: the host's interfaces)
    ContainerFamily("container_network_receive_bytes_total", "Cumulative count of bytes received", C, "network",
                    rows=_net(lambda i: i.rx_bytes), extra_labels=IFACE),
    ContainerFamily("container_network_receive_packets_total", "Cumulative count of packets received", C,
                    "network", rows=_net(lambda i: i.rx_packets), extra_labels=IFACE),
    ContainerFamily("container_network_receive_packets_dropped_total",
                    "Cumulative count of packets dropped while receiving", C, "network",
                    rows=_net(lambda i: i.rx_dropped), extra_labels=IFACE),
    ContainerFamily("container_network_receive_errors_total",
                    "Cumulative count of errors encountered while receiving", C, "network",
                    rows=_net(lambda i: i.rx_errors), extra_labels=IFACE),
    ContainerFamily("container_network_transmit_bytes_total", "Cumulative count of bytes transmitted", C,
                    "network", rows=_net(lambda i: i.tx_bytes), extra_labels=IFACE),
    ContainerFamily("container_network_transmit_packets_total", "Cumulative count of packets transmitted", C,
                    "network", rows=_net(lambda i: i.tx_packets), extra_labels=IFACE),
    ContainerFamily("container_network_transmit_packets_dropped_total",
                    "Cumulative count of packets dropped while transmitting", C, "network",
                    rows=_net(lambda i: i.tx_dropped), extra_labels=IFACE),
    ContainerFamily("container_network_transmit_errors_total",
                    "Cumulative count of errors encountered while transmitting", C, "network",
                    rows=_net(lambda i: i.tx_errors), extra_labels=IFACE),
    # process (container_file_descriptors, container_sockets and container_ulimits_soft: see cadvisor.py)
    ContainerFamily("container_processes", "Number of processes running inside the container.", G, "process",
                    value=lambda t: t.sample.processes or 0),
    ContainerFamily("container_threads", "Number of threads running inside the container", G, "process",
                    value=lambda t: t.sample.pids or 0),
    ContainerFamily("container_threads_max",
                    "Maximum number of threads allowed inside the container, infinity if value is zero", G,
                    "process", value=lambda t: t.spec.pids_limit or 0),
)

# --- the machine families (PrometheusMachineCollector) -------------------------------------------

MACHINE_LABELS = ("boot_id", "machine_id", "system_uuid")

MACHINE_FAMILIES: tuple[MachineFamily, ...] = (
    MachineFamily("machine_cpu_physical_cores", "Number of physical CPU cores.",
                  lambda m: (((), m.num_physical_cores),)),
    MachineFamily("machine_cpu_cores", "Number of logical CPU cores.", lambda m: (((), m.num_cores),)),
    MachineFamily("machine_cpu_sockets", "Number of CPU sockets.", lambda m: (((), m.num_sockets),)),
    MachineFamily("machine_memory_bytes", "Amount of memory installed on the machine.",
                  lambda m: (((), m.memory_capacity),)),
    MachineFamily("machine_swap_bytes", "Amount of swap memory available on the machine.",
                  lambda m: (((), m.swap_capacity),)),
    # Without libipmctl (the kubelet's build) the NVM figures are zero but still exported.
    MachineFamily("machine_nvm_avg_power_budget_watts", "NVM power budget.", lambda _m: (((), 0),)),
    MachineFamily("machine_nvm_capacity",
                  "NVM capacity value labeled by NVM mode (memory mode or app direct mode).",
                  lambda _m: ((("memory_mode",), 0), (("app_direct_mode",), 0)), extra_labels=("mode",)),
)

SCRAPE_ERROR_HELP = "1 if there was an error while getting container metrics, 0 otherwise"
MACHINE_SCRAPE_ERROR_HELP = "1 if there was an error while getting machine metrics, 0 otherwise."
VERSION_INFO_HELP = (
    "A metric with a constant '1' value labeled by kernel version, OS version, docker version, "
    "cadvisor version & cadvisor revision."
)
