"""cgroup layout detection, writers for pod and container limits (v1 and v2) and the kubelet's mapping.

    layout = detect()                      # or CgroupLayout.from_mountinfo(text, root=fixture)
    writer = new_writer(layout)            # V1Writer or V2Writer
    path = container_cgroup_path(pod_cgroup_path("/", qos, uid), container_id)
    writer.create(path)
    writer.set_resources(path, container_resource_config(resources))

Only kubeletapi.errors and the standard library are imported here.
"""

from __future__ import annotations

from kubeletapi.cgroups.layout import CgroupLayout, Hierarchy, cgroup_dir, cgroup_parts, detect
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
    "CgroupWriter",
    "ContainerResources",
    "CpuThrottling",
    "Hierarchy",
    "OsFs",
    "QOSClass",
    "ResourceConfig",
    "V1Writer",
    "V2Writer",
    "cgroup_dir",
    "cgroup_parts",
    "container_cgroup_path",
    "container_resource_config",
    "cpu_max_text",
    "cpu_shares_to_weight",
    "cpu_shares_to_weight_runc",
    "detect",
    "milli_cpu_to_quota",
    "milli_cpu_to_shares",
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
