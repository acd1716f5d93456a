"""The measurement/tag/field schema of Telegraf's `inputs.kubernetes`, built from one Snapshot.

Telegraf reads /stats/summary and /pods and writes kubernetes_node, kubernetes_system_container,
kubernetes_pod_container, kubernetes_pod_volume and kubernetes_pod_network (plugins/inputs/kubernetes);
dashboards built on that data work on ours unchanged. As in Telegraf, every field is an int64 and
a figure the summary leaves out is written as 0; every point of a cycle carries the cycle's time.
Pod labels are not tags (Telegraf's default `label_exclude = ["*"]`).
"""

from __future__ import annotations

from collections.abc import Mapping

from kubeletapi.api import stats_v1alpha1 as api
from kubeletapi.sinks.lineprotocol import Point
from kubeletapi.stats.snapshot import Snapshot
from kubeletapi.stats.summary import full_summary

NODE = "kubernetes_node"
SYSTEM_CONTAINER = "kubernetes_system_container"
POD_CONTAINER = "kubernetes_pod_container"
POD_VOLUME = "kubernetes_pod_volume"
POD_NETWORK = "kubernetes_pod_network"

ImageKey = tuple[str, str, str]  # (namespace, pod, container)


def snapshot_points(snap: Snapshot) -> list[Point]:
    """Every point of one housekeeping cycle (raises SummaryError when the cycle has no root stats)."""
    images = {(p.ref.namespace, p.ref.name, c.ref.name): c.ref.image for p in snap.pods for c in p.workload}
    return summary_points(full_summary(snap), images, snap.time_ns)


def summary_points(summary: api.Summary, images: Mapping[ImageKey, str], time_ns: int) -> list[Point]:
    node = summary.node
    node_tags = {"node_name": node.node_name}
    points = [Point(NODE, node_tags, _node_fields(node), time_ns)]
    points += [
        Point(SYSTEM_CONTAINER, {**node_tags, "container_name": c.name}, _container_fields(c, False), time_ns)
        for c in node.system_containers
    ]
    for pod in summary.pods:
        pod_tags = {**node_tags, "pod_name": pod.name, "namespace": pod.namespace}
        for c in pod.containers:
            tags = {**pod_tags, "container_name": c.name, **image_tags(images.get((pod.namespace, pod.name, c.name)))}
            points.append(Point(POD_CONTAINER, tags, _container_fields(c, True), time_ns))
        for v in pod.volume or ():
            fields = {"available_bytes": _int(v.fs.available_bytes), "capacity_bytes": _int(v.fs.capacity_bytes),
                      "used_bytes": _int(v.fs.used_bytes)}
            points.append(Point(POD_VOLUME, {**pod_tags, "volume_name": v.name}, fields, time_ns))
        points.append(Point(POD_NETWORK, pod_tags, _network_fields(pod.network, ""), time_ns))
    return points


def image_tags(image: str | None) -> dict[str, str]:
    """Telegraf's split of the spec image on ':': `image` is the first part and `version` the second,
    only when there are exactly two parts (so `registry:5000/app:1.0` tags image=registry and no
    version: a quirk kept, since dashboards group by these tags)."""
    if not image:
        return {}
    parts = image.split(":")
    tags = {"image": parts[0]}
    if len(parts) == 2:
        tags["version"] = parts[1]
    return tags


def _int(value: int | None) -> int:
    return int(value) if value is not None else 0


def _cpu_memory_fields(cpu: api.CPUStats | None, memory: api.MemoryStats | None) -> dict[str, int]:
    return {
        "cpu_usage_nanocores": _int(cpu.usage_nano_cores) if cpu else 0,
        "cpu_usage_core_nanoseconds": _int(cpu.usage_core_nano_seconds) if cpu else 0,
        "memory_usage_bytes": _int(memory.usage_bytes) if memory else 0,
        "memory_working_set_bytes": _int(memory.working_set_bytes) if memory else 0,
        "memory_rss_bytes": _int(memory.rss_bytes) if memory else 0,
        "memory_page_faults": _int(memory.page_faults) if memory else 0,
        "memory_major_page_faults": _int(memory.major_page_faults) if memory else 0,
    }


def _fs_fields(prefix: str, fs: api.FsStats | None, used: bool) -> dict[str, int]:
    out = {f"{prefix}_available_bytes": _int(fs.available_bytes) if fs else 0,
           f"{prefix}_capacity_bytes": _int(fs.capacity_bytes) if fs else 0}
    if used:
        out[f"{prefix}_used_bytes"] = _int(fs.used_bytes) if fs else 0
    return out


def _container_fields(c: api.ContainerStats, used: bool) -> dict[str, int]:
    """A system container's fields; a pod container's (`used`) add rootfs and logs usage."""
    return {**_cpu_memory_fields(c.cpu, c.memory), **_fs_fields("rootfs", c.rootfs, used),
            **_fs_fields("logsfs", c.logs, used)}


def _network_fields(network: api.NetworkStats | None, prefix: str) -> dict[str, int]:
    iface = network.default if network else api.InterfaceStats("")
    return {f"{prefix}rx_bytes": _int(iface.rx_bytes), f"{prefix}rx_errors": _int(iface.rx_errors),
            f"{prefix}tx_bytes": _int(iface.tx_bytes), f"{prefix}tx_errors": _int(iface.tx_errors)}


def _node_fields(node: api.NodeStats) -> dict[str, int]:
    memory = node.memory
    return {
        **_cpu_memory_fields(node.cpu, memory),
        "memory_available_bytes": _int(memory.available_bytes) if memory else 0,
        **_network_fields(node.network, "network_"),
        **_fs_fields("fs", node.fs, True),
        **_fs_fields("runtime_image_fs", node.image_fs, True),
    }
