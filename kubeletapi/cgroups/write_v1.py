"""cgroup v1 writer: one directory per mounted hierarchy, like the kubelet's cgroupfs driver via runc.

The cgroup is created in every mounted hierarchy runc's fs driver joins (cpu, cpuacct, cpuset,
memory, pids, blkio, hugetlb, devices, freezer, net_cls/net_prio, perf_event, rdma, misc and the
named systemd one); limits go to cpu (cpu.shares, cpu.cfs_period_us, cpu.cfs_quota_us), memory
(memory.limit_in_bytes) and pids (pids.max). Quirks kept from runc's fs package:
- a new cpuset cgroup starts with empty cpuset.cpus/mems (clone_children=0) and no task may join it
  until they are copied from the parent, level by level;
- cpu.shares is read back because the kernel clamps it silently;
- a shorter cfs period can be refused (EINVAL) until the new quota is in, so it is retried after;
- memory.memsw.limit_in_bytes is only touched to lift it together with an unlimited memory limit.
"""

from __future__ import annotations

import errno
from pathlib import Path

from kubeletapi.cgroups.layout import V1_CONTROLLERS, CgroupLayout, Hierarchy, cgroup_dir, cgroup_parts
from kubeletapi.cgroups.writers import (
    BaseWriter,
    CgroupFs,
    CpuThrottling,
    ResourceConfig,
    limit_text,
    read_file,
    read_int,
    read_keyed,
    write_file,
)
from kubeletapi.errors import InvalidInput, NotSupported, Unavailable

# Hierarchies runc's fs driver creates the cgroup in ("debug" is never joined).
MANAGED_CONTROLLERS = (V1_CONTROLLERS - {"debug"}) | {"name=systemd"}
# The kubelet's existence check looks only at these (cgroup_v1_manager_linux.go Validate).
CHECKED_CONTROLLERS = frozenset({"cpu", "cpuacct", "cpuset", "memory", "pids", "hugetlb", "name=systemd"})
CPUSET_FILES = ("cpuset.cpus", "cpuset.mems")
MEMSW_LIMIT = "memory.memsw.limit_in_bytes"


class V1Writer(BaseWriter):
    """CgroupWriter for cgroup v1 (and hybrid nodes, whose unified mount is left alone)."""

    def __init__(self, layout: CgroupLayout, fs: CgroupFs | None = None) -> None:
        if layout.version != 1:
            raise InvalidInput(f"V1Writer needs a cgroup v1 layout, got v{layout.version}")
        super().__init__(layout, fs)
        self._managed: tuple[Hierarchy, ...] = tuple(
            h for h in layout.hierarchies if h.controllers & MANAGED_CONTROLLERS
        )

    def _dirs(self, path: str) -> list[Path]:
        return [cgroup_dir(h.mount_point, path) for h in self._managed]

    def _existence_dirs(self, path: str) -> list[Path]:
        return [cgroup_dir(h.mount_point, path) for h in self._managed if h.controllers & CHECKED_CONTROLLERS]

    def create(self, path: str) -> None:
        parts = cgroup_parts(path)
        if not parts:
            raise InvalidInput("refusing to create the root cgroup")
        for hierarchy in self._managed:
            for parent, child in self._mkdirs(hierarchy.mount_point, parts):
                if "cpuset" in hierarchy.controllers:
                    self._inherit_cpuset(parent, child)

    def set_resources(self, path: str, config: ResourceConfig) -> None:
        cgroup_parts(path)
        if config.cpu_shares or config.cpu_quota or config.cpu_period:
            self._set_cpu(self._controller_dir("cpu", path), config)
        if config.memory_limit:
            self._set_memory(self._controller_dir("memory", path), config.memory_limit)
        if config.pids_limit:
            write_file(self.fs, self._controller_dir("pids", path) / "pids.max", limit_text(config.pids_limit))
        if config.cpuset_mems:
            write_file(self.fs, self._controller_dir("cpuset", path) / "cpuset.mems", config.cpuset_mems)

    def oom_kill_count(self, path: str) -> int:
        # The oom_kill line exists since Linux 4.13; older kernels report no kills.
        return read_keyed(self.fs, self._controller_dir("memory", path) / "memory.oom_control").get("oom_kill", 0)

    def throttled(self, path: str) -> CpuThrottling:
        stat = read_keyed(self.fs, self._controller_dir("cpu", path) / "cpu.stat")
        return CpuThrottling(
            periods=stat.get("nr_periods", 0),
            throttled_periods=stat.get("nr_throttled", 0),
            throttled_usec=stat.get("throttled_time", 0) // 1000,  # v1 reports nanoseconds
        )

    def _controller_dir(self, controller: str, path: str) -> Path:
        mount = self.layout.mount_point(controller)
        if mount is None:
            raise NotSupported(f"the cgroup v1 {controller} controller is not mounted on this node")
        return cgroup_dir(mount, path)

    def _inherit_cpuset(self, parent: Path, child: Path) -> None:
        for name in CPUSET_FILES:
            if not read_file(self.fs, child / name).strip():
                write_file(self.fs, child / name, read_file(self.fs, parent / name).strip())

    def _set_cpu(self, directory: Path, config: ResourceConfig) -> None:
        if config.cpu_shares:
            shares_file = directory / "cpu.shares"
            write_file(self.fs, shares_file, str(config.cpu_shares))
            applied = read_int(self.fs, shares_file)
            if applied != config.cpu_shares:
                raise InvalidInput(
                    f"{shares_file}: the kernel set cpu.shares to {applied}, not {config.cpu_shares}"
                )
        period_later = False
        if config.cpu_period:
            try:
                write_file(self.fs, directory / "cpu.cfs_period_us", str(config.cpu_period))
            except InvalidInput:
                # old quota / new period may exceed the parent's bandwidth until the quota is set.
                if not config.cpu_quota:
                    raise
                period_later = True
        if config.cpu_quota:
            write_file(self.fs, directory / "cpu.cfs_quota_us", str(config.cpu_quota))
            if period_later:
                write_file(self.fs, directory / "cpu.cfs_period_us", str(config.cpu_period))

    def _set_memory(self, directory: Path, limit: int) -> None:
        if limit < 0 and (directory / MEMSW_LIMIT).exists():
            # memsw must stay >= memory, so an unlimited memory limit lifts memsw first (runc).
            write_file(self.fs, directory / MEMSW_LIMIT, "-1")
        try:
            write_file(self.fs, directory / "memory.limit_in_bytes", str(-1 if limit < 0 else limit))
        except Unavailable as err:
            cause = err.__cause__
            if isinstance(cause, OSError) and cause.errno == errno.EBUSY:
                usage = read_file(self.fs, directory / "memory.usage_in_bytes").strip()
                raise Unavailable(f"{err} (current usage {usage} bytes is above the new limit {limit})") from cause
            raise
