"""What one read of a cgroup yields: counters and gauges at a moment, v1 and v2 alike.

Readers fill what their hierarchy offers and leave the rest None (a missing controller, a file
the kernel does not have). Units are the kernel's where they are exact: nanoseconds for CPU time,
bytes for memory and I/O, counts for events. Samples are immutable; rates come from two of them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CpuStats:
    usage_ns: int  # cumulative CPU time of all tasks (cpuacct.usage / cpu.stat usage_usec x 1000)
    user_ns: int | None = None
    system_ns: int | None = None
    periods: int | None = None  # CFS enforcement periods elapsed
    throttled_periods: int | None = None
    throttled_ns: int | None = None


@dataclass(frozen=True)
class MemoryStats:
    usage: int  # memory.usage_in_bytes / memory.current
    working_set: int  # usage - total_inactive_file (v2: inactive_file), floored at 0
    max_usage: int | None = None  # v1 memory.max_usage_in_bytes / v2 memory.peak
    rss: int | None = None  # v1 total_rss / v2 anon
    cache: int | None = None  # v1 total_cache / v2 file
    swap: int | None = None  # v1 total_swap / v2 memory.swap.current
    mapped_file: int | None = None  # v1 total_mapped_file / v2 file_mapped
    active_file: int | None = None
    inactive_file: int | None = None
    kernel: int | None = None  # v1 memory.kmem.usage_in_bytes / v2 kernel
    pgfault: int | None = None
    pgmajfault: int | None = None
    failcnt: int | None = None  # v1 memory.failcnt / v2 memory.events max
    oom_events: int | None = None  # OOM kills in this cgroup (v1 oom_control / v2 memory.events)
    # pgfault/pgmajfault above are hierarchical (v1 total_pgfault). These are the cgroup's own
    # (v1 pgfault; v2 has only hierarchical counters, so the same value): cAdvisor fills both of its
    # container_memory_failures_total scopes, and the kubelet's summary pageFaults, from this one.
    container_pgfault: int | None = None
    container_pgmajfault: int | None = None
    # cgroup v2 only (cAdvisor's v2-only families); None on v1.
    events_high: int | None = None  # memory.events high: times memory.high throttled reclaim
    file_dirty: int | None = None
    file_writeback: int | None = None
    pgscan: int | None = None
    pgsteal: int | None = None
    workingset_refault_anon: int | None = None
    workingset_refault_file: int | None = None


@dataclass(frozen=True)
class DiskIOStats:
    """I/O of one block device (major:minor) from blkio (v1) or io.stat (v2)."""

    major: int
    minor: int
    read_bytes: int = 0
    write_bytes: int = 0
    reads: int = 0
    writes: int = 0


@dataclass(frozen=True)
class CgroupSpec:
    """The cgroup's configured limits (None: unlimited or not set)."""

    cpu_shares: int | None = None  # v2: cpu.weight converted back to shares
    cpu_quota_us: int | None = None
    cpu_period_us: int | None = None
    memory_limit: int | None = None
    memory_reservation: int | None = None  # v1 soft_limit_in_bytes / v2 memory.low
    swap_limit: int | None = None
    pids_limit: int | None = None


@dataclass(frozen=True)
class PSIData:
    """One line of a *.pressure file: the share of time tasks stalled, averaged over 10, 60 and 300 s
    (percent), and the cumulative stall time (microseconds)."""

    total_us: int = 0
    avg10: float = 0.0
    avg60: float = 0.0
    avg300: float = 0.0


@dataclass(frozen=True)
class PSI:
    """A *.pressure file: `some` task stalled, `full`: all non-idle tasks stalled at once."""

    some: PSIData = PSIData()
    full: PSIData = PSIData()


@dataclass(frozen=True)
class Pressure:
    """Pressure stall information of a cgroup (v2 cpu/memory/io.pressure); cgroup v1 has none."""

    cpu: PSI = PSI()
    memory: PSI = PSI()
    io: PSI = PSI()


@dataclass(frozen=True)
class CgroupSample:
    """One read of one cgroup."""

    path: str  # the cgroup path (e.g. /kubepods/burstable/pod<uid>/<id>)
    timestamp_ns: int  # when it was read (wall clock, Unix ns)
    cpu: CpuStats | None = None
    memory: MemoryStats | None = None
    pids: int | None = None  # tasks in the cgroup (pids.current, or counted)
    threads: int | None = None
    processes: int | None = None  # lines of cgroup.procs of the cgroup itself (cAdvisor container_processes)
    io: tuple[DiskIOStats, ...] = ()
    spec: CgroupSpec = CgroupSpec()
    created_ns: int = 0  # the cgroup directory's creation (change) time, Unix ns
    pressure: Pressure | None = None  # v2 only: None on v1 or without PSI in the kernel
