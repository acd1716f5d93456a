"""cgroup v2 writer: one directory in the unified hierarchy, like runc's fs2 driver under the kubelet.

Before each level is created its parent's cgroup.subtree_control enables the controllers the
kubelet uses (cpuset cpu io memory hugetlb pids, as far as the parent's cgroup.controllers offers
them); the leaf enables nothing, so processes may live in it. Limits: cpu.weight (converted from
shares), cpu.max (`<quota> <period>`, `max <period>` when unlimited), memory.max, pids.max.
An unlimited memory limit also lifts memory.swap.max when the node has swap accounting (runc).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

from kubeletapi.cgroups.layout import CgroupLayout, cgroup_dir, cgroup_parts
from kubeletapi.cgroups.units import cpu_shares_to_weight
from kubeletapi.cgroups.writers import (
    BaseWriter,
    CgroupFs,
    CpuThrottling,
    ResourceConfig,
    limit_text,
    read_file,
    read_keyed,
    write_file,
)
from kubeletapi.errors import InvalidInput, NotFound, Unavailable

# Kernel order, as cgroup.controllers lists them; "io" is enabled too so io.stat exists per cgroup.
SUBTREE_CONTROLLERS = ("cpuset", "cpu", "io", "memory", "hugetlb", "pids")
SUBTREE_CONTROL = "cgroup.subtree_control"


def cpu_max_text(quota: int | None, period: int | None) -> str:
    """cpu.max content: a positive quota, else `max`; the period only when one is given."""
    text = str(quota) if quota is not None and quota > 0 else "max"
    return f"{text} {period}" if period else text


class V2Writer(BaseWriter):
    """CgroupWriter for the unified hierarchy."""

    def __init__(
        self,
        layout: CgroupLayout,
        fs: CgroupFs | None = None,
        shares_to_weight: Callable[[int], int] = cpu_shares_to_weight,
    ) -> None:
        if layout.version != 2:
            raise InvalidInput(f"V2Writer needs a cgroup v2 layout, got v{layout.version}")
        super().__init__(layout, fs)
        self._mount = layout.hierarchies[0].mount_point
        self._shares_to_weight = shares_to_weight

    def _dirs(self, path: str) -> list[Path]:
        return [cgroup_dir(self._mount, path)]

    def create(self, path: str) -> None:
        parts = cgroup_parts(path)
        if not parts:
            raise InvalidInput("refusing to create the root cgroup")
        current = self._mount
        for part in parts:
            self.enable_controllers(current)
            current = current / part
            self._mkdir(current)

    def enable_controllers(self, directory: Path) -> list[str]:
        """Enable the kubelet's controllers for `directory`'s children; returns those now enabled.

        Like runc, a controller the kernel refuses (a parent with processes of its own, a delegation
        that lacks it) is skipped here: writing its files later fails and names the file.
        """
        available = read_file(self.fs, directory / "cgroup.controllers").split()
        file = directory / SUBTREE_CONTROL
        enabled = set(read_file(self.fs, file).split())
        missing = [c for c in SUBTREE_CONTROLLERS if c in available and c not in enabled]
        if missing:
            try:
                write_file(self.fs, file, " ".join(f"+{c}" for c in missing))
            except (InvalidInput, Unavailable):
                for controller in missing:
                    with suppress(InvalidInput, Unavailable):
                        write_file(self.fs, file, f"+{controller}")
            enabled = set(read_file(self.fs, file).split())
        return [c for c in SUBTREE_CONTROLLERS if c in enabled]

    def set_resources(self, path: str, config: ResourceConfig) -> None:
        directory = cgroup_dir(self._mount, path)
        if config.cpu_shares:
            write_file(self.fs, directory / "cpu.weight", str(self._shares_to_weight(config.cpu_shares)))
        if config.cpu_quota or config.cpu_period:
            write_file(self.fs, directory / "cpu.max", cpu_max_text(config.cpu_quota, config.cpu_period))
        if config.memory_limit:
            if config.memory_limit < 0 and (directory / "memory.swap.max").exists():
                write_file(self.fs, directory / "memory.swap.max", "max")
            write_file(self.fs, directory / "memory.max", limit_text(config.memory_limit))
        if config.pids_limit:
            write_file(self.fs, directory / "pids.max", limit_text(config.pids_limit))
        if config.cpuset_mems:
            write_file(self.fs, directory / "cpuset.mems", config.cpuset_mems)

    def oom_kill_count(self, path: str) -> int:
        # memory.events counts the cgroup and its descendants (unless mounted with memory_localevents).
        return read_keyed(self.fs, cgroup_dir(self._mount, path) / "memory.events").get("oom_kill", 0)

    def throttled(self, path: str) -> CpuThrottling:
        directory = cgroup_dir(self._mount, path)
        if not directory.is_dir():
            raise NotFound(f"cgroup {path} does not exist under {self._mount}")
        # The nr_* and throttled_usec keys only appear while the cpu controller is enabled.
        stat = read_keyed(self.fs, directory / "cpu.stat")
        return CpuThrottling(
            periods=stat.get("nr_periods", 0),
            throttled_periods=stat.get("nr_throttled", 0),
            throttled_usec=stat.get("throttled_usec", 0),
        )
