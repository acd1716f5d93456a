"""cgroup layout detection, writers for pod and container limits (v1 and v2) and the stat readers
housekeeping samples with. What values to write is the container manager's policy (kubeletapi.cm).

    layout = detect()                      # or CgroupLayout.from_mountinfo(text, root=fixture)
    writer = new_writer(layout)            # V1Writer or V2Writer
    path = "/kubepods/burstable/pod<uid>/<container id>"   # kubeletapi.cm.cgroupnames names them
    writer.create(path)
    writer.set_resources(path, ResourceConfig(cpu_shares=512, memory_limit=64 << 20))
    sample = new_reader(layout).sample(path, now_ns)   # CgroupSample, or None once it is gone

Only kubeletapi.errors and the standard library are imported here.
"""

from __future__ import annotations

from kubeletapi.cgroups.layout import CgroupLayout, Hierarchy, cgroup_dir, cgroup_parts, cgroup_version, detect
from kubeletapi.cgroups.readers import (
    CgroupReader,
    OsReaderFs,
    ReaderFs,
    V1Reader,
    V2Reader,
    cpu_weight_to_shares,
    new_reader,
)
from kubeletapi.cgroups.stats import CgroupSample, CgroupSpec, CpuStats, DiskIOStats, MemoryStats
from kubeletapi.cgroups.units import MAX_SHARES, MIN_SHARES, cpu_shares_to_weight, cpu_shares_to_weight_runc
from kubeletapi.cgroups.write_v1 import V1Writer
from kubeletapi.cgroups.write_v2 import V2Writer, cpu_max_text
from kubeletapi.cgroups.writers import CgroupFs, CgroupWriter, CpuThrottling, OsFs, ResourceConfig


def new_writer(layout: CgroupLayout, fs: CgroupFs | None = None) -> CgroupWriter:
    """The writer for the layout's cgroup version."""
    return V2Writer(layout, fs) if layout.version == 2 else V1Writer(layout, fs)


__all__ = [
    "MAX_SHARES",
    "MIN_SHARES",
    "CgroupFs",
    "CgroupLayout",
    "CgroupReader",
    "CgroupSample",
    "CgroupSpec",
    "CgroupWriter",
    "CpuStats",
    "CpuThrottling",
    "DiskIOStats",
    "Hierarchy",
    "MemoryStats",
    "OsFs",
    "OsReaderFs",
    "ReaderFs",
    "ResourceConfig",
    "V1Reader",
    "V1Writer",
    "V2Reader",
    "V2Writer",
    "cgroup_dir",
    "cgroup_parts",
    "cgroup_version",
    "cpu_max_text",
    "cpu_shares_to_weight",
    "cpu_shares_to_weight_runc",
    "cpu_weight_to_shares",
    "detect",
    "new_reader",
    "new_writer",
]
