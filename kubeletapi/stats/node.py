"""Node-level readers that need no cgroup: memory, CPU time, load, rlimit (and, re-exported from
their modules, machine info, interfaces, filesystems and process trees).

Every reader takes the /proc root so tests point it at fixture trees; each reads its file with raw
os.read calls (procread). Figures are the kernel's cumulative counters and gauges; rates and
timestamps belong to the housekeeping sampler.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kubeletapi.errors import InvalidInput, Unavailable
from kubeletapi.procread import read_bytes, read_head, read_int, read_optional
from kubeletapi.stats.fs import FsStats, MountTable, fs_stats
from kubeletapi.stats.machine import MachineInfo, machine_info
from kubeletapi.stats.netdev import (
    KUBELET_DEFAULT_INTERFACE,
    InterfaceStats,
    default_interface,
    read_interfaces,
    summary_interface,
)
from kubeletapi.stats.proctree import ProcessTable, ProcessTreeStats, process_tree_stats

__all__ = [
    "KUBELET_DEFAULT_INTERFACE",
    "CpuUsage",
    "FsStats",
    "InterfaceStats",
    "LoadAvg",
    "MachineInfo",
    "MountTable",
    "NodeMemory",
    "ProcessTable",
    "ProcessTreeStats",
    "Rlimit",
    "cpu_usage",
    "default_interface",
    "fs_stats",
    "load_average",
    "machine_info",
    "node_memory",
    "process_tree_stats",
    "read_interfaces",
    "rlimit",
    "summary_interface",
]

CLK_TCK = os.sysconf("SC_CLK_TCK")

_MEMINFO_KEYS = {
    b"MemTotal": "total",
    b"MemFree": "free",
    b"MemAvailable": "available",
    b"Buffers": "buffers",
    b"Cached": "cached",
    b"SwapCached": "swap_cached",
    b"AnonPages": "anon",
    b"Active(file)": "active_file",
    b"Inactive(file)": "inactive_file",
    b"SwapTotal": "swap_total",
    b"SwapFree": "swap_free",
}


@dataclass(frozen=True)
class NodeMemory:
    """One /proc/meminfo sample, in bytes."""

    total: int
    free: int
    available: int | None  # MemAvailable (kernels >= 3.14)
    buffers: int
    cached: int
    swap_cached: int
    anon: int  # AnonPages
    active_file: int
    inactive_file: int
    swap_total: int
    swap_free: int

    @property
    def usage(self) -> int:
        """The root memory cgroup's usage, recomputed from global counters.

        For the root, the kernel's memory.usage_in_bytes (cgroup v1, mem_cgroup_usage) is
        NR_FILE_PAGES + NR_ANON_MAPPED, and meminfo shows NR_FILE_PAGES split as Cached +
        Buffers + SwapCached and NR_ANON_MAPPED as AnonPages. On cgroup v2, runc emulates the
        root's usage as memory.stat anon + file, the same two counters.
        """
        return self.anon + self.buffers + self.cached + self.swap_cached

    @property
    def working_set(self) -> int:
        """The kubelet's node working set without reading a cgroup: usage - Inactive(file), >= 0.

        cAdvisor's working set is usage - total_inactive_file of the root memory cgroup (v1;
        v2: inactive_file). Checked on this kernel (6.18, cgroup v1): usage above equals
        memory.usage_in_bytes exactly and the working set agrees within 0.2%.
        """
        return max(0, self.usage - self.inactive_file)

    @property
    def swap_used(self) -> int:
        """SwapTotal - SwapFree: the root's swap usage (runc's root emulation on cgroup v2)."""
        return self.swap_total - self.swap_free


def parse_meminfo(data: bytes) -> NodeMemory:
    """Parse /proc/meminfo; InvalidInput when a counter other than MemAvailable is missing."""
    found: dict[str, int] = {}
    for line in data.split(b"\n"):
        key, _, rest = line.partition(b":")
        attr = _MEMINFO_KEYS.get(key)
        if attr is not None:
            found[attr] = int(rest.split()[0]) * 1024  # every kept key is in kB
    available = found.pop("available", None)
    missing = [key.decode() for key, attr in _MEMINFO_KEYS.items() if attr not in found and attr != "available"]
    if missing:
        raise InvalidInput(f"/proc/meminfo lacks {', '.join(missing)}")
    return NodeMemory(available=available, **found)


def node_memory(proc_root: Path = Path("/proc")) -> NodeMemory:
    """A /proc/meminfo sample; Unavailable when the file cannot be read."""
    path = proc_root / "meminfo"
    try:
        return parse_meminfo(read_bytes(path))
    except OSError as exc:
        raise Unavailable(f"cannot read {path}: {exc}") from exc


@dataclass(frozen=True)
class CpuUsage:
    """Cumulative node CPU time, nanoseconds, from the aggregate `cpu` line of /proc/stat."""

    usage_ns: int  # user_ns + system_ns + steal_ns: the root cgroup's usage
    user_ns: int  # user + nice (guest time is already inside user)
    system_ns: int  # system + irq + softirq
    steal_ns: int
    idle_ns: int
    iowait_ns: int


def parse_cpu_line(line: bytes, clk_tck: int = CLK_TCK) -> CpuUsage:
    """The `cpu  user nice system idle iowait irq softirq steal guest guest_nice` line (USER_HZ ticks).

    The split follows the kernel's root_cgroup_cputime (kernel/cgroup/rstat.c), which produces
    the root's cpu.stat on cgroup v2 (the cAdvisor/kubelet root usage): user = user + nice,
    system = system + irq + softirq, usage = user + system + steal. On cgroup v1 the root's
    cpuacct.usage is the scheduler's exact runtime without steal; tick sampling makes /proc/stat
    differ from it by a few percent (2.7% lower measured here).
    """
    fields = line.split()
    if not fields or fields[0] != b"cpu" or len(fields) < 5:
        raise InvalidInput(f"/proc/stat: malformed cpu line {line!r}")
    ticks = [int(f) for f in fields[1:9]] + [0] * (9 - len(fields))
    user, nice, system, idle, iowait, irq, softirq, steal = ticks

    def ns(t: int) -> int:
        return t * 1_000_000_000 // clk_tck

    user_ns, system_ns, steal_ns = ns(user + nice), ns(system + irq + softirq), ns(steal)
    return CpuUsage(user_ns + system_ns + steal_ns, user_ns, system_ns, steal_ns, ns(idle), ns(iowait))


def cpu_usage(proc_root: Path = Path("/proc"), clk_tck: int = CLK_TCK) -> CpuUsage:
    """Node CPU time from /proc/stat, for when the root cgroup cannot be read."""
    path = proc_root / "stat"
    try:
        data = read_head(path)  # the aggregate line comes first; the intr line can be tens of KiB
    except OSError as exc:
        raise Unavailable(f"cannot read {path}: {exc}") from exc
    return parse_cpu_line(data.split(b"\n", 1)[0], clk_tck)


@dataclass(frozen=True)
class LoadAvg:
    """/proc/loadavg: `0.07 0.42 0.55 1/87 31543`."""

    load1: float
    load5: float
    load15: float
    runnable: int  # tasks runnable right now
    tasks: int  # kernel scheduling entities (threads) that exist


def load_average(proc_root: Path = Path("/proc")) -> LoadAvg | None:
    """The kernel's load averages and task counts; None when /proc/loadavg is unreadable.

    Not cAdvisor's container_cpu_load_average_10s (its own sampler, off in the kubelet).
    """
    data = read_optional(proc_root / "loadavg")
    fields = data.split() if data else []
    running, _, total = fields[3].partition(b"/") if len(fields) >= 5 else (b"", b"", b"")
    if not (running.isdigit() and total.isdigit()):
        return None
    return LoadAvg(float(fields[0]), float(fields[1]), float(fields[2]), int(running), int(total))


@dataclass(frozen=True)
class Rlimit:
    """The Summary's node.rlimit (RlimitStats)."""

    maxpid: int | None
    curproc: int | None


def rlimit(proc_root: Path = Path("/proc")) -> Rlimit:
    """As the kubelet's pkg/kubelet/stats/pidlimit/pidlimit_linux.go Stats().

    maxpid = min(kernel.pid_max, kernel.threads-max) over the files that parse (both bound the
    number of tasks), None when neither does. curproc = the total after the slash in the fourth
    field of /proc/loadavg: every task (thread) that exists, not just running ones (the kubelet
    prefers it to sysinfo(2).procs, which truncates above 65535, kubernetes#107107; it falls back
    to sysinfo when loadavg is unreadable, we report None).
    """
    limits = [
        value
        for value in (read_int(proc_root / "sys/kernel/pid_max"), read_int(proc_root / "sys/kernel/threads-max"))
        if value is not None
    ]
    load = load_average(proc_root)
    return Rlimit(min(limits) if limits else None, load.tasks if load else None)
