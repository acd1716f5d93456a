"""cgroup layout detection, writers for pod and container limits (v1 and v2), the kubelet's mapping
and the stat readers housekeeping samples with.

    layout = detect()                      # or CgroupLayout.from_mountinfo(text, root=fixture)
    writer = new_writer(layout)            # V1Writer or V2Writer
    path = container_cgroup_path(pod_cgroup_path("/", qos, uid), container_id)
    writer.create(path)
    writer.set_resources(path, container_resource_config(resources))
    sample = new_reader(layout).sample(path, now_ns)   # CgroupSample, or None once it is gone

Only kubeletapi.errors and the standard library are imported here.
"""

from __future__ import annotations

from kubeletapi.cgroups.layout import CgroupLayout, Hierarchy, cgroup_dir, cgroup_parts, detect
from kubeletapi.cgroups.readers import (
    CgroupReader,
    OsReaderFs,
    ReaderFs,
    V1Reader,
    V2Reader,
    cpu_weight_to_shares,
    new_reader,
)
from kubeletapi.cgroups.resources import (
    BEST_EFFORT_OOM_SCORE_ADJ,
    GUARANTEED_OOM_SCORE_ADJ,
    MAX_SHARES,
    MIN_SHARES,
    QUOTA_PERIOD,
    ContainerResources,
    QOSClass,
    ResourceConfig,
    container_cgroup_path,
    container_resource_config,
    cpu_shares_to_weight,
    cpu_shares_to_weight_runc,
    milli_cpu_to_quota,
    milli_cpu_to_shares,
    node_allocatable_config,
    oom_score_adj,
    pod_cgroup_name,
    pod_cgroup_path,
    pod_qos,
    pod_resource_config,
    qos_cgroup_configs,
    qos_parent,
)
from kubeletapi.cgroups.stats import CgroupSample, CgroupSpec, CpuStats, DiskIOStats, MemoryStats
from kubeletapi.cgroups.v1 import V1Writer
from kubeletapi.cgroups.v2 import V2Writer, cpu_max_text
from kubeletapi.cgroups.writers import CgroupFs, CgroupWriter, CpuThrottling, OsFs


def new_writer(layout: CgroupLayout, fs: CgroupFs | None = None) -> CgroupWriter:
    """The writer for the layout's cgroup version."""
    return V2Writer(layout, fs) if layout.version == 2 else V1Writer(layout, fs)


__all__ = [
    "BEST_EFFORT_OOM_SCORE_ADJ",
    "GUARANTEED_OOM_SCORE_ADJ",
    "MAX_SHARES",
    "MIN_SHARES",
    "QUOTA_PERIOD",
    "CgroupFs",
    "CgroupLayout",
    "CgroupReader",
    "CgroupSample",
    "CgroupSpec",
    "CgroupWriter",
    "ContainerResources",
    "CpuStats",
    "CpuThrottling",
    "DiskIOStats",
    "Hierarchy",
    "MemoryStats",
    "OsFs",
    "OsReaderFs",
    "QOSClass",
    "ReaderFs",
    "ResourceConfig",
    "V1Reader",
    "V1Writer",
    "V2Reader",
    "V2Writer",
    "cgroup_dir",
    "cgroup_parts",
    "container_cgroup_path",
    "container_resource_config",
    "cpu_max_text",
    "cpu_shares_to_weight",
    "cpu_shares_to_weight_runc",
    "cpu_weight_to_shares",
    "detect",
    "milli_cpu_to_quota",
    "milli_cpu_to_shares",
    "new_reader",
    "new_writer",
    "node_allocatable_config",
    "oom_score_adj",
    "pod_cgroup_name",
    "pod_cgroup_path",
    "pod_qos",
    "pod_resource_config",
    "qos_cgroup_configs",
    "qos_parent",
]
