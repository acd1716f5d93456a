"""Stats as a CRI runtime reports them: small frozen values that mirror the CRI v1 messages.

Counters the runtime did not fill are None (a CRI UInt64Value that is unset), never 0. Rates are
the consumer's business: containerd often leaves usage_nano_cores empty or 0 (the first call, the
list calls), so compute CPU rates from usage_core_nano_seconds deltas. Times are Unix nanoseconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kubeletapi.runtime.cri.gen import api_pb2 as pb
from kubeletapi.runtime.types import PodMeta


@dataclass(frozen=True)
class CpuUsage:
    timestamp: int
    usage_core_nano_seconds: int | None = None
    usage_nano_cores: int | None = None


@dataclass(frozen=True)
class MemoryUsage:
    timestamp: int
    working_set_bytes: int | None = None
    available_bytes: int | None = None
    usage_bytes: int | None = None
    rss_bytes: int | None = None
    page_faults: int | None = None
    major_page_faults: int | None = None


@dataclass(frozen=True)
class FilesystemUsage:
    timestamp: int
    mountpoint: str
    used_bytes: int | None = None
    inodes_used: int | None = None


@dataclass(frozen=True)
class ContainerStats:
    id: str
    name: str
    attempt: int
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    cpu: CpuUsage | None = None
    memory: MemoryUsage | None = None
    writable_layer: FilesystemUsage | None = None


@dataclass(frozen=True)
class NetworkInterfaceUsage:
    name: str
    rx_bytes: int | None = None
    rx_errors: int | None = None
    tx_bytes: int | None = None
    tx_errors: int | None = None


@dataclass(frozen=True)
class NetworkUsage:
    timestamp: int
    default_interface: NetworkInterfaceUsage | None = None
    interfaces: tuple[NetworkInterfaceUsage, ...] = ()


@dataclass(frozen=True)
class PodSandboxStats:
    """A pod's cgroup usage (Linux) and its containers'; network is None for host-network pods."""

    id: str
    meta: PodMeta
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    cpu: CpuUsage | None = None
    memory: MemoryUsage | None = None
    network: NetworkUsage | None = None
    process_count: int | None = None
    containers: tuple[ContainerStats, ...] = ()


def _u64(message: pb.UInt64Value, present: bool) -> int | None:
    return message.value if present else None


def cpu(m: pb.CpuUsage) -> CpuUsage:
    return CpuUsage(
        timestamp=m.timestamp,
        usage_core_nano_seconds=_u64(m.usage_core_nano_seconds, m.HasField("usage_core_nano_seconds")),
        usage_nano_cores=_u64(m.usage_nano_cores, m.HasField("usage_nano_cores")),
    )


def memory(m: pb.MemoryUsage) -> MemoryUsage:
    return MemoryUsage(
        timestamp=m.timestamp,
        working_set_bytes=_u64(m.working_set_bytes, m.HasField("working_set_bytes")),
        available_bytes=_u64(m.available_bytes, m.HasField("available_bytes")),
        usage_bytes=_u64(m.usage_bytes, m.HasField("usage_bytes")),
        rss_bytes=_u64(m.rss_bytes, m.HasField("rss_bytes")),
        page_faults=_u64(m.page_faults, m.HasField("page_faults")),
        major_page_faults=_u64(m.major_page_faults, m.HasField("major_page_faults")),
    )


def filesystem(m: pb.FilesystemUsage) -> FilesystemUsage:
    return FilesystemUsage(
        timestamp=m.timestamp, mountpoint=m.fs_id.mountpoint,
        used_bytes=_u64(m.used_bytes, m.HasField("used_bytes")),
        inodes_used=_u64(m.inodes_used, m.HasField("inodes_used")),
    )


def container(m: pb.ContainerStats) -> ContainerStats:
    attrs = m.attributes
    return ContainerStats(
        id=attrs.id, name=attrs.metadata.name, attempt=attrs.metadata.attempt,
        labels=dict(attrs.labels), annotations=dict(attrs.annotations),
        cpu=cpu(m.cpu) if m.HasField("cpu") else None,
        memory=memory(m.memory) if m.HasField("memory") else None,
        writable_layer=filesystem(m.writable_layer) if m.HasField("writable_layer") else None,
    )


def _interface(m: pb.NetworkInterfaceUsage) -> NetworkInterfaceUsage:
    return NetworkInterfaceUsage(
        name=m.name,
        rx_bytes=_u64(m.rx_bytes, m.HasField("rx_bytes")), rx_errors=_u64(m.rx_errors, m.HasField("rx_errors")),
        tx_bytes=_u64(m.tx_bytes, m.HasField("tx_bytes")), tx_errors=_u64(m.tx_errors, m.HasField("tx_errors")),
    )


def _network(m: pb.NetworkUsage) -> NetworkUsage:
    return NetworkUsage(
        timestamp=m.timestamp,
        default_interface=_interface(m.default_interface) if m.HasField("default_interface") else None,
        interfaces=tuple(_interface(i) for i in m.interfaces),
    )


def pod(m: pb.PodSandboxStats) -> PodSandboxStats:
    attrs, linux = m.attributes, m.linux
    meta = attrs.metadata
    process = linux.process
    return PodSandboxStats(
        id=attrs.id, meta=PodMeta(meta.name, meta.namespace, meta.uid, meta.attempt),
        labels=dict(attrs.labels), annotations=dict(attrs.annotations),
        cpu=cpu(linux.cpu) if linux.HasField("cpu") else None,
        memory=memory(linux.memory) if linux.HasField("memory") else None,
        network=_network(linux.network) if linux.HasField("network") else None,
        process_count=_u64(process.process_count, process.HasField("process_count")),
        containers=tuple(container(c) for c in linux.containers),
    )
