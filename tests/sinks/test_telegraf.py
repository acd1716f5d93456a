"""The Telegraf kubernetes schema (plugins/inputs/kubernetes): measurements, tags and fields from a summary."""

from __future__ import annotations

import pytest

from kubeletapi.api import stats_v1alpha1 as api
from kubeletapi.sinks.telegraf import image_tags, summary_points

CPU_MEMORY = {"cpu_usage_nanocores", "cpu_usage_core_nanoseconds", "memory_usage_bytes",
              "memory_working_set_bytes", "memory_rss_bytes", "memory_page_faults", "memory_major_page_faults"}
FIELDS = {
    "kubernetes_node": CPU_MEMORY | {
        "memory_available_bytes", "network_rx_bytes", "network_rx_errors", "network_tx_bytes",
        "network_tx_errors", "fs_available_bytes", "fs_capacity_bytes", "fs_used_bytes",
        "runtime_image_fs_available_bytes", "runtime_image_fs_capacity_bytes", "runtime_image_fs_used_bytes"},
    "kubernetes_system_container": CPU_MEMORY | {
        "rootfs_available_bytes", "rootfs_capacity_bytes", "logsfs_available_bytes", "logsfs_capacity_bytes"},
    "kubernetes_pod_container": CPU_MEMORY | {
        "rootfs_available_bytes", "rootfs_capacity_bytes", "rootfs_used_bytes", "logsfs_available_bytes",
        "logsfs_capacity_bytes", "logsfs_used_bytes"},
    "kubernetes_pod_volume": {"available_bytes", "capacity_bytes", "used_bytes"},
    "kubernetes_pod_network": {"rx_bytes", "rx_errors", "tx_bytes", "tx_errors"},
}
TAGS = {
    "kubernetes_node": {"node_name"},
    "kubernetes_system_container": {"node_name", "container_name"},
    "kubernetes_pod_container": {"node_name", "namespace", "container_name", "pod_name", "image", "version"},
    "kubernetes_pod_volume": {"node_name", "pod_name", "namespace", "volume_name"},
    "kubernetes_pod_network": {"node_name", "pod_name", "namespace"},
}
T = 1_700_000_000_000_000_000


def _summary() -> api.Summary:
    fs = api.FsStats(T, available_bytes=70, capacity_bytes=100, used_bytes=30)
    node = api.NodeStats(
        "n1", T, system_containers=[api.ContainerStats("kubelet", T, cpu=api.CPUStats(T, 5, 50))],
        cpu=api.CPUStats(T, 1000, 2000), memory=api.MemoryStats(T, 10, 20, 15, 5, 3, 1),
        network=api.NetworkStats(T, api.InterfaceStats("eth0", 11, 1, 22, 2)), fs=fs, image_fs=fs,
    )
    web = api.ContainerStats("web", T, cpu=api.CPUStats(T, None, 99), memory=api.MemoryStats(T, working_set_bytes=7),
                             logs=api.FsStats(T, 70, 100, 4))
    pod = api.PodStats("p", "ns", "uid", T, containers=[web], network=node.network,
                       volume=[api.VolumeStats("data", fs)])
    return api.Summary(node, [pod])


def test_every_measurement_has_telegrafs_tags_and_fields() -> None:
    points = summary_points(_summary(), {("ns", "p", "web"): "busybox:1.36"}, T)
    assert [p.measurement for p in points] == [
        "kubernetes_node", "kubernetes_system_container", "kubernetes_pod_container", "kubernetes_pod_volume",
        "kubernetes_pod_network"]
    for p in points:
        assert set(p.fields) == FIELDS[p.measurement], p.measurement
        assert set(p.tags) == TAGS[p.measurement], p.measurement
        assert all(isinstance(v, int) for v in p.fields.values())
        assert p.time_ns == T


def test_values_come_from_the_summary_and_missing_ones_are_zero() -> None:
    node, system, container, volume, network = summary_points(_summary(), {}, T)
    assert node.fields["cpu_usage_nanocores"] == 1000 and node.fields["memory_available_bytes"] == 10
    assert node.fields["network_tx_bytes"] == 22 and node.fields["runtime_image_fs_used_bytes"] == 30
    assert system.tags["container_name"] == "kubelet" and system.fields["cpu_usage_core_nanoseconds"] == 50
    assert system.fields["rootfs_capacity_bytes"] == 0  # no rootfs in the summary: 0, as Telegraf
    assert container.fields["cpu_usage_nanocores"] == 0 and container.fields["cpu_usage_core_nanoseconds"] == 99
    assert container.fields["memory_working_set_bytes"] == 7 and container.fields["logsfs_used_bytes"] == 4
    assert "image" not in container.tags  # no spec image known: no tag (line protocol has no empty values)
    assert volume.tags["volume_name"] == "data" and volume.fields == {
        "available_bytes": 70, "capacity_bytes": 100, "used_bytes": 30}
    assert network.fields == {"rx_bytes": 11, "rx_errors": 1, "tx_bytes": 22, "tx_errors": 2}


@pytest.mark.parametrize(
    ("image", "tags"),
    [
        pytest.param("busybox:1.36", {"image": "busybox", "version": "1.36"}, id="name-and-tag"),
        pytest.param("busybox", {"image": "busybox"}, id="no-tag"),
        pytest.param("registry.example/app:1.2", {"image": "registry.example/app", "version": "1.2"}, id="path"),
        pytest.param("registry:5000/app:1.0", {"image": "registry"}, id="port-telegraf-quirk"),
        pytest.param("", {}, id="none"),
    ],
)
def test_image_tags_split_like_telegraf(image: str, tags: dict[str, str]) -> None:
    assert image_tags(image) == tags
