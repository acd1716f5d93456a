"""Per-container figures without cgroups: a container is a host process tree.

One scan of /proc/<pid>/stat per housekeeping cycle (ProcessTable.read, with procread.read_stat) gives every process's
parent, CPU times, threads and RSS; each container's figures are then a walk of that snapshot from
its root pids. One stat read per process is about 8x cheaper than psutil.process_iter with the same
attributes (5.7 us against 46 us per process, measured on a 2-vCPU VM), and psutil's
children(recursive=True) rescans all of /proc on every call: 20 containers walked with psutil cost
18 ms of CPU, against 0.6 ms for the scan plus 30 us for the 20 walks here. A process that exits
between the directory listing and the read is skipped; a root pid missing from the snapshot
contributes nothing.

CPU includes cutime/cstime: the time of children that exited and were reaped by a process of the
tree. That keeps cpu_ns a monotonic counter across child exits (a cgroup's cpuacct.usage keeps the
time of exited tasks too), so rates computed from two samples do not go negative.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from kubeletapi.procread import ProcStat, read_stat

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


class ProcessTreeStats(NamedTuple):
    cpu_ns: int  # user_ns + system_ns
    user_ns: int  # utime + cutime
    system_ns: int  # stime + cstime
    rss: int  # bytes; a sum over processes, so shared pages count once per process
    process_count: int  # processes (zombies included: cgroup.procs lists them too)
    threads: int


class ProcessTable:
    """A snapshot of every process: entries by pid and children by parent pid."""

    def __init__(self, entries: Iterable[ProcStat], clk_tck: int = CLK_TCK, page_size: int = PAGE_SIZE) -> None:
        self.entries: dict[int, ProcStat] = {e.pid: e for e in entries}
        self.children: dict[int, list[int]] = {}
        for entry in self.entries.values():
            self.children.setdefault(entry.ppid, []).append(entry.pid)
        self._clk_tck = clk_tck
        self._page_size = page_size

    @classmethod
    def read(cls, proc_root: Path = Path("/proc"), clk_tck: int = CLK_TCK, page_size: int = PAGE_SIZE) -> ProcessTable:
        """Scan proc_root/<pid>/stat for every numeric entry; vanished or unreadable ones are skipped."""
        root = os.fspath(proc_root)  # plain strings: a Path per process costs more than the read
        entries: list[ProcStat] = []
        for name in os.listdir(root):
            if not name.isdigit():
                continue
            try:
                entries.append(read_stat(int(name), root))
            except (OSError, ValueError, IndexError):
                continue  # exited mid-scan (ENOENT/ESRCH) or a torn read
        return cls(entries, clk_tck, page_size)

    def descendants(self, roots: Iterable[int]) -> set[int]:
        """The roots present in the snapshot and all their descendants."""
        found: set[int] = set()
        stack = [pid for pid in roots if pid in self.entries]
        while stack:
            pid = stack.pop()
            if pid in found:
                continue
            found.add(pid)
            stack.extend(self.children.get(pid, ()))
        return found

    def tree_stats(self, roots: Iterable[int]) -> ProcessTreeStats:
        """Summed figures of the roots and their descendants."""
        user = system = rss = threads = 0
        pids = self.descendants(roots)
        for pid in pids:
            e = self.entries[pid]
            user += e.utime + e.cutime
            system += e.stime + e.cstime
            rss += e.rss_pages
            threads += e.threads
        user_ns, system_ns = self._ns(user), self._ns(system)
        return ProcessTreeStats(user_ns + system_ns, user_ns, system_ns, rss * self._page_size, len(pids), threads)

    def _ns(self, ticks: int) -> int:
        return ticks * 1_000_000_000 // self._clk_tck


def process_tree_stats(
    pids: Iterable[int], proc_root: Path = Path("/proc"), table: ProcessTable | None = None
) -> ProcessTreeStats:
    """Figures of `pids` and all their descendants; pass the cycle's `table` to avoid a rescan."""
    return (table if table is not None else ProcessTable.read(proc_root)).tree_stats(pids)
