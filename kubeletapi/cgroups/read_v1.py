"""cgroup v1 stat reader: one directory per controller hierarchy, read the way cAdvisor reads them.

- CPU (cpuacct): cpuacct.usage, cpuacct.usage_user/usage_sys (older kernels: cpuacct.stat in
  USER_HZ ticks); CFS throttling from the cpu hierarchy's cpu.stat (throttled_time is already ns).
- Memory: memory.usage_in_bytes, max_usage, failcnt, kmem.usage, oom_control's oom_kill and
  memory.stat, where the hierarchical total_* keys win over the cgroup's own (a pod cgroup has no
  tasks of its own, so its own rss/cache are 0). working_set = usage - total_inactive_file.
- pids.current; the line count of cgroup.procs (cAdvisor's container_processes, read from the cpu
  directory); blkio from the throttle layer (blkio.throttle.io_service{_bytes,d}_recursive, else
  the non-recursive files), Read and Write per major:minor.
- Spec: cpu.shares, cpu.cfs_quota_us (-1: None), cpu.cfs_period_us, memory.limit_in_bytes,
  memory.soft_limit_in_bytes, memory.memsw.limit_in_bytes (memory + swap, as the kernel and
  cAdvisor report it), pids.max; unlimited values read as None.

`threads` stays None: cAdvisor's container_threads is pids.current (`pids`, the kernel's
hierarchical task count); counting `tasks` would cost a read per sample for a different number.
A cgroup that exists in only some hierarchies (a process's own cgroup often does) is read where
it exists. It is dated by its cpu directory's ctime, else cpuacct's, memory's, pids', blkio's, and
children() lists that same first existing directory: the kubelet creates its cgroups in every
hierarchy, so one listing is enough and costs one scandir instead of five.
"""

from __future__ import annotations

import os

from kubeletapi.cgroups.layout import CgroupLayout
from kubeletapi.cgroups.read_common import (
    BaseReader,
    Probe,
    ReaderFs,
    Stat,
    count_lines,
    join,
    limit,
    relative,
    value,
    working_set,
)
from kubeletapi.cgroups.stats import CgroupSample, CgroupSpec, CpuStats, DiskIOStats, MemoryStats
from kubeletapi.errors import InvalidInput

CONTROLLERS = ("cpu", "cpuacct", "memory", "pids", "blkio")  # also the order cgroups are dated in
USER_HZ = os.sysconf("SC_CLK_TCK")  # cpuacct.stat unit
NS_PER_S = 1_000_000_000
BLKIO_FILES = (
    ("blkio.throttle.io_service_bytes_recursive", "blkio.throttle.io_service_bytes"),
    ("blkio.throttle.io_serviced_recursive", "blkio.throttle.io_serviced"),
)
BLKIO_OPS = {b"Read": 0, b"Write": 1}


class V1Reader(BaseReader):
    """CgroupReader for cgroup v1 (and hybrid nodes, whose unified mount carries no stats)."""

    def __init__(self, layout: CgroupLayout, fs: ReaderFs | None = None) -> None:
        if layout.version != 1:
            raise InvalidInput(f"V1Reader needs a cgroup v1 layout, got v{layout.version}")
        super().__init__(fs)
        mounts = {c: layout.mount_point(c) for c in CONTROLLERS}
        self._mounts = {c: str(m) for c, m in mounts.items() if m is not None}
        self._anchor_mounts = list(dict.fromkeys(self._mounts[c] for c in CONTROLLERS if c in self._mounts))

    def _anchor_dirs(self, rel: str) -> list[str]:
        return [join(mount, rel) for mount in self._anchor_mounts]

    def sample(self, path: str, now_ns: int) -> CgroupSample | None:
        rel = relative(path)
        found = self._anchor(rel)
        if found is None:
            return None
        anchor, created = found
        dirs = {c: join(m, rel) for c, m in self._mounts.items()}
        cpu_dir, acct_dir, mem_dir, pids_dir = (dirs.get(c) for c in ("cpu", "cpuacct", "memory", "pids"))
        probe = Probe(self.fs)
        sample = CgroupSample(
            path=f"/{rel}",
            timestamp_ns=now_ns,
            cpu=_cpu(probe, acct_dir, cpu_dir) if acct_dir else None,
            memory=_memory(probe, mem_dir) if mem_dir else None,
            pids=probe.integer(f"{pids_dir}/pids.current") if pids_dir else None,
            processes=count_lines(probe.read(f"{anchor}/cgroup.procs")),
            io=_blkio(probe, dirs["blkio"]) if "blkio" in dirs else (),
            spec=_spec(probe, cpu_dir, mem_dir, pids_dir),
            created_ns=created,
        )
        return None if self._vanished(probe, anchor) else sample


def _cpu(probe: Probe, acct_dir: str, cpu_dir: str | None) -> CpuStats | None:
    usage = probe.integer(f"{acct_dir}/cpuacct.usage")
    if usage is None:
        return None
    user = probe.integer(f"{acct_dir}/cpuacct.usage_user")
    system = probe.integer(f"{acct_dir}/cpuacct.usage_sys") if user is not None else None
    if user is None:  # before Linux 4.7: only cpuacct.stat, in USER_HZ ticks
        ticks = probe.keyed(f"{acct_dir}/cpuacct.stat")
        user, system = _ticks_ns(ticks, b"user"), _ticks_ns(ticks, b"system")
    stat = probe.keyed(f"{cpu_dir}/cpu.stat") if cpu_dir else {}
    return CpuStats(
        usage_ns=usage,
        user_ns=user,
        system_ns=system,
        periods=value(stat, b"nr_periods"),
        throttled_periods=value(stat, b"nr_throttled"),
        throttled_ns=value(stat, b"throttled_time"),
    )


def _ticks_ns(stat: Stat, key: bytes) -> int | None:
    ticks = value(stat, key)
    return None if ticks is None else ticks * NS_PER_S // USER_HZ


def _memory(probe: Probe, directory: str) -> MemoryStats | None:
    usage = probe.integer(f"{directory}/memory.usage_in_bytes")
    if usage is None:
        return None
    stat = probe.keyed(f"{directory}/memory.stat")

    def hierarchical(key: bytes) -> int | None:
        total = value(stat, b"total_" + key)
        return value(stat, key) if total is None else total

    inactive_file = hierarchical(b"inactive_file")
    return MemoryStats(
        usage=usage,
        working_set=working_set(usage, inactive_file),
        max_usage=probe.integer(f"{directory}/memory.max_usage_in_bytes"),
        rss=hierarchical(b"rss"),
        cache=hierarchical(b"cache"),
        swap=hierarchical(b"swap"),
        mapped_file=hierarchical(b"mapped_file"),
        active_file=hierarchical(b"active_file"),
        inactive_file=inactive_file,
        kernel=probe.integer(f"{directory}/memory.kmem.usage_in_bytes"),
        pgfault=hierarchical(b"pgfault"),
        pgmajfault=hierarchical(b"pgmajfault"),
        failcnt=probe.integer(f"{directory}/memory.failcnt"),
        # oom_kill is in memory.oom_control since Linux 4.13.
        oom_events=value(probe.keyed(f"{directory}/memory.oom_control"), b"oom_kill"),
        container_pgfault=value(stat, b"pgfault"),
        container_pgmajfault=value(stat, b"pgmajfault"),
    )


def _blkio(probe: Probe, directory: str) -> tuple[DiskIOStats, ...]:
    devices: dict[tuple[int, int], list[int]] = {}
    for offset, names in zip((0, 2), BLKIO_FILES, strict=True):
        data = probe.read(f"{directory}/{names[0]}")
        if data is None:
            data = probe.read(f"{directory}/{names[1]}")
        for line in (data or b"").splitlines():
            fields = line.split()
            # "8:0 Read 4096"; Sync/Async/Discard/Total lines and the closing "Total N" are skipped.
            if len(fields) != 3 or fields[1] not in BLKIO_OPS:
                continue
            major, _, minor = fields[0].partition(b":")
            try:
                device, count = (int(major), int(minor)), int(fields[2])
            except ValueError:
                continue
            devices.setdefault(device, [0, 0, 0, 0])[offset + BLKIO_OPS[fields[1]]] = count
    return tuple(DiskIOStats(major, minor, *counts) for (major, minor), counts in sorted(devices.items()))


def _spec(probe: Probe, cpu_dir: str | None, mem_dir: str | None, pids_dir: str | None) -> CgroupSpec:
    quota = probe.integer(f"{cpu_dir}/cpu.cfs_quota_us") if cpu_dir else None
    return CgroupSpec(
        cpu_shares=probe.integer(f"{cpu_dir}/cpu.shares") if cpu_dir else None,
        cpu_quota_us=None if quota is None or quota < 0 else quota,
        cpu_period_us=probe.integer(f"{cpu_dir}/cpu.cfs_period_us") if cpu_dir else None,
        memory_limit=limit(probe.read(f"{mem_dir}/memory.limit_in_bytes")) if mem_dir else None,
        memory_reservation=limit(probe.read(f"{mem_dir}/memory.soft_limit_in_bytes")) if mem_dir else None,
        swap_limit=limit(probe.read(f"{mem_dir}/memory.memsw.limit_in_bytes")) if mem_dir else None,
        pids_limit=limit(probe.read(f"{pids_dir}/pids.max")) if pids_dir else None,
    )
