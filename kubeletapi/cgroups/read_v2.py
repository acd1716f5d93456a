"""cgroup v2 stat reader: one directory in the unified hierarchy, read the way cAdvisor (via runc) reads it.

- CPU: cpu.stat usage_usec, user_usec, system_usec, nr_periods, nr_throttled, throttled_usec
  (µs → ns). The nr_* keys exist only while the cpu controller is enabled for the cgroup.
- Memory: memory.current, memory.peak (Linux 5.19+), memory.stat (all hierarchical in v2: anon,
  file, file_mapped, active_file, inactive_file, kernel, pgfault ...), memory.swap.current,
  memory.events (max → failcnt, oom_kill, high). working_set = usage - inactive_file. Before
  Linux 5.18 memory.stat has no `kernel` key; the sum of what the kernel documents it to include
  (kernel_stack, pagetables, percpu, vmalloc, slab) stands in.
- The root cgroup has no memory.current or memory.swap.current: like runc, usage is anon + file
  from its memory.stat and swap is SwapTotal - SwapFree from <root>/proc/meminfo.
- pids.current, cgroup.procs (cAdvisor's container_processes), io.stat rbytes/wbytes/rios/wios
  per major:minor.
- Spec: cpu.weight converted back to shares (the inverse of the kubelet's linear formula, as
  cAdvisor does, so 1024 shares written as weight 39 read back as 998), cpu.max, memory.max,
  memory.low (the v2 home of the v1 soft limit, where runc writes MemoryReservation),
  memory.swap.max (swap only, unlike v1 memsw), pids.max; `max` reads as None.

`threads` stays None for the reason given in read_v1.
"""

from __future__ import annotations

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
    scaled,
    value,
    working_set,
)
from kubeletapi.cgroups.stats import (
    PSI,
    CgroupSample,
    CgroupSpec,
    CpuStats,
    DiskIOStats,
    MemoryStats,
    Pressure,
    PSIData,
)
from kubeletapi.cgroups.units import MAX_SHARES, MAX_WEIGHT, MIN_SHARES, MIN_WEIGHT
from kubeletapi.errors import InvalidInput
from kubeletapi.procread import to_int

NS_PER_US = 1000
KIB = 1024
# What memory.stat's `kernel` (Linux 5.18+) is documented to include.
KERNEL_PARTS = (b"kernel_stack", b"pagetables", b"percpu", b"vmalloc", b"slab")
IO_KEYS = {b"rbytes": 0, b"wbytes": 1, b"rios": 2, b"wios": 3}


def cpu_weight_to_shares(weight: int) -> int:
    """cpu.shares for a cpu.weight: the inverse of cpu_shares_to_weight (cAdvisor's convertCPUWeightToCPULimit)."""
    weight = max(MIN_WEIGHT, min(MAX_WEIGHT, weight))
    return MIN_SHARES + ((weight - 1) * (MAX_SHARES - MIN_SHARES)) // (MAX_WEIGHT - 1)


class V2Reader(BaseReader):
    """CgroupReader for the unified hierarchy."""

    def __init__(self, layout: CgroupLayout, fs: ReaderFs | None = None) -> None:
        if layout.version != 2:
            raise InvalidInput(f"V2Reader needs a cgroup v2 layout, got v{layout.version}")
        super().__init__(fs)
        self._mount = str(layout.hierarchies[0].mount_point)
        self._meminfo = str(layout.root / "proc" / "meminfo")

    def _anchor_dirs(self, rel: str) -> list[str]:
        return [join(self._mount, rel)]

    def sample(self, path: str, now_ns: int) -> CgroupSample | None:
        rel = relative(path)
        found = self._anchor(rel)
        if found is None:
            return None
        directory, created = found
        probe = Probe(self.fs)
        sample = CgroupSample(
            path=f"/{rel}",
            timestamp_ns=now_ns,
            cpu=_cpu(probe.keyed(f"{directory}/cpu.stat")),
            memory=self._memory(probe, directory, is_root=not rel),
            pids=probe.integer(f"{directory}/pids.current"),
            processes=count_lines(probe.read(f"{directory}/cgroup.procs")),
            io=_io(probe.read(f"{directory}/io.stat")),
            spec=_spec(probe, directory),
            created_ns=created,
            pressure=_pressure(probe, directory),
        )
        return None if self._vanished(probe, directory) else sample

    def _memory(self, probe: Probe, directory: str, is_root: bool) -> MemoryStats | None:
        stat = probe.keyed(f"{directory}/memory.stat")
        usage = probe.integer(f"{directory}/memory.current")
        swap = probe.integer(f"{directory}/memory.swap.current")
        if usage is None and is_root and stat:
            usage = (value(stat, b"anon") or 0) + (value(stat, b"file") or 0)
            swap = self._root_swap(probe)
        if usage is None:
            return None
        events = probe.keyed(f"{directory}/memory.events")
        inactive_file = value(stat, b"inactive_file")
        pgfault, pgmajfault = value(stat, b"pgfault"), value(stat, b"pgmajfault")
        return MemoryStats(
            usage=usage,
            working_set=working_set(usage, inactive_file),
            max_usage=probe.integer(f"{directory}/memory.peak"),
            rss=value(stat, b"anon"),
            cache=value(stat, b"file"),
            swap=swap,
            mapped_file=value(stat, b"file_mapped"),
            active_file=value(stat, b"active_file"),
            inactive_file=inactive_file,
            kernel=_kernel(stat),
            pgfault=pgfault,
            pgmajfault=pgmajfault,
            failcnt=value(events, b"max"),
            oom_events=value(events, b"oom_kill"),
            container_pgfault=pgfault,
            container_pgmajfault=pgmajfault,
            **_v2_only(stat, events),
        )

    def _root_swap(self, probe: Probe) -> int | None:
        meminfo = _meminfo(probe.read(self._meminfo))
        total, free = meminfo.get(b"SwapTotal"), meminfo.get(b"SwapFree")
        return None if total is None or free is None else (total - free) * KIB


def _cpu(stat: Stat) -> CpuStats | None:
    usage = scaled(stat, b"usage_usec", NS_PER_US)
    if usage is None:
        return None
    return CpuStats(
        usage_ns=usage,
        user_ns=scaled(stat, b"user_usec", NS_PER_US),
        system_ns=scaled(stat, b"system_usec", NS_PER_US),
        periods=value(stat, b"nr_periods"),
        throttled_periods=value(stat, b"nr_throttled"),
        throttled_ns=scaled(stat, b"throttled_usec", NS_PER_US),
    )


def _kernel(stat: Stat) -> int | None:
    kernel = value(stat, b"kernel")
    if kernel is not None:
        return kernel
    parts = [v for v in (value(stat, key) for key in KERNEL_PARTS) if v is not None]
    return sum(parts) if parts else None


def _v2_only(stat: Stat, events: Stat) -> dict[str, int | None]:
    return {
        "events_high": value(events, b"high"),
        "file_dirty": value(stat, b"file_dirty"),
        "file_writeback": value(stat, b"file_writeback"),
        "pgscan": value(stat, b"pgscan"),
        "pgsteal": value(stat, b"pgsteal"),
        "workingset_refault_anon": value(stat, b"workingset_refault_anon"),
        "workingset_refault_file": value(stat, b"workingset_refault_file"),
    }


def _meminfo(data: bytes | None) -> dict[bytes, int]:
    """SwapTotal and SwapFree of /proc/meminfo (`SwapTotal:  2097148 kB`), in KiB."""
    out: dict[bytes, int] = {}
    for line in (data or b"").splitlines():
        key, _, rest = line.partition(b":")
        amount = to_int(rest.split()[0]) if key in {b"SwapTotal", b"SwapFree"} and rest.split() else None
        if amount is not None:
            out[key] = amount
    return out


def _io(data: bytes | None) -> tuple[DiskIOStats, ...]:
    devices: list[DiskIOStats] = []
    for line in (data or b"").splitlines():
        # "8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0"
        device, *fields = line.split() or [b""]
        major, _, minor = device.partition(b":")
        counts = [0, 0, 0, 0]
        for field in fields:
            key, _, raw = field.partition(b"=")
            index = IO_KEYS.get(key)
            if index is not None:
                counts[index] = to_int(raw) or 0
        try:
            devices.append(DiskIOStats(int(major), int(minor), *counts))
        except ValueError:
            continue
    return tuple(sorted(devices, key=lambda d: (d.major, d.minor)))


def _spec(probe: Probe, directory: str) -> CgroupSpec:
    weight = probe.integer(f"{directory}/cpu.weight")
    quota, period = _cpu_max(probe.read(f"{directory}/cpu.max"))
    return CgroupSpec(
        cpu_shares=None if weight is None else cpu_weight_to_shares(weight),
        cpu_quota_us=quota,
        cpu_period_us=period,
        memory_limit=limit(probe.read(f"{directory}/memory.max")),
        memory_reservation=limit(probe.read(f"{directory}/memory.low")),
        swap_limit=limit(probe.read(f"{directory}/memory.swap.max")),
        pids_limit=limit(probe.read(f"{directory}/pids.max")),
    )


def _cpu_max(data: bytes | None) -> tuple[int | None, int | None]:
    """cpu.max `<quota|max> <period>` → (quota or None when unlimited, period)."""
    fields = (data or b"").split()
    quota = limit(fields[0]) if fields else None
    period = to_int(fields[1]) if len(fields) > 1 else None
    return quota, period



def _pressure(probe: Probe, directory: str) -> Pressure | None:
    """cpu.pressure, memory.pressure and io.pressure; None when the kernel writes none (no PSI)."""
    read = [parse_psi(probe.read(f"{directory}/{kind}.pressure")) for kind in ("cpu", "memory", "io")]
    if all(p is None for p in read):
        return None
    cpu, memory, io = (p or PSI() for p in read)
    return Pressure(cpu, memory, io)


def parse_psi(data: bytes | None) -> PSI | None:
    """`some avg10=0.12 avg60=0.05 avg300=0.01 total=12345` and the `full` line (absent for the
    root's cpu.pressure before 5.13: then zeros, as cAdvisor reads it)."""
    if data is None:
        return None
    lines: dict[bytes, PSIData] = {}
    for line in data.splitlines():
        kind, _, rest = line.partition(b" ")
        fields = dict(item.partition(b"=")[::2] for item in rest.split())
        try:
            lines[kind] = PSIData(int(fields.get(b"total", b"0")), float(fields.get(b"avg10", b"0")),
                                  float(fields.get(b"avg60", b"0")), float(fields.get(b"avg300", b"0")))
        except ValueError:
            continue
    return PSI(lines.get(b"some", PSIData()), lines.get(b"full", PSIData()))
