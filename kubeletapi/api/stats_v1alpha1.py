"""The stats/v1alpha1 Summary (k8s.io/kubelet/pkg/apis/stats/v1alpha1/types.go) and its encoding.

Plain dataclasses (a summary of 110 pods is built every housekeeping cycle; validation would only
cost time here). `to_wire()` encodes like Go's encoding/json with the struct tags of types.go:
fields in struct order, nil optionals omitted, times as RFC 3339 UTC with second precision and
the zero time as null, embedded structs flattened (the default interface into NetworkStats, FsStats
into VolumeStats), `pods` and `containers` always arrays. Times are Unix nanoseconds (0 = zero).
"""

from __future__ import annotations

import time as _time
from dataclasses import dataclass, field
from typing import Any

Wire = dict[str, Any]


def wire_time(ns: int) -> str | None:
    """metav1.Time: RFC 3339 UTC to the second; the zero time encodes as null."""
    if ns <= 0:
        return None
    return _time.strftime("%Y-%m-%dT%H:%M:%SZ", _time.gmtime(ns // 1_000_000_000))


def _put(out: Wire, key: str, value: Any) -> None:
    if value is not None:
        out[key] = value


def _go_float(value: float) -> float | int:
    """A float64 as encoding/json writes it: 0 not 0.0."""
    return int(value) if value == int(value) else value


@dataclass
class PSIData:
    total: int = 0  # microseconds
    avg10: float = 0.0
    avg60: float = 0.0
    avg300: float = 0.0

    def to_wire(self) -> Wire:
        return {"total": self.total, "avg10": _go_float(self.avg10), "avg60": _go_float(self.avg60),
                "avg300": _go_float(self.avg300)}


@dataclass
class PSIStats:
    full: PSIData = field(default_factory=PSIData)
    some: PSIData = field(default_factory=PSIData)

    def to_wire(self) -> Wire:
        return {"full": self.full.to_wire(), "some": self.some.to_wire()}


@dataclass
class IOStats:
    time: int
    psi: PSIStats | None = None

    def to_wire(self) -> Wire:
        out: Wire = {"time": wire_time(self.time)}
        if self.psi is not None:
            out["psi"] = self.psi.to_wire()
        return out


@dataclass
class CPUStats:
    time: int
    usage_nano_cores: int | None = None
    usage_core_nano_seconds: int | None = None
    psi: PSIStats | None = None

    def to_wire(self) -> Wire:
        out: Wire = {"time": wire_time(self.time)}
        _put(out, "usageNanoCores", self.usage_nano_cores)
        _put(out, "usageCoreNanoSeconds", self.usage_core_nano_seconds)
        if self.psi is not None:
            out["psi"] = self.psi.to_wire()
        return out


@dataclass
class MemoryStats:
    time: int
    available_bytes: int | None = None
    usage_bytes: int | None = None
    working_set_bytes: int | None = None
    rss_bytes: int | None = None
    page_faults: int | None = None
    major_page_faults: int | None = None
    psi: PSIStats | None = None

    def to_wire(self) -> Wire:
        out: Wire = {"time": wire_time(self.time)}
        _put(out, "availableBytes", self.available_bytes)
        _put(out, "usageBytes", self.usage_bytes)
        _put(out, "workingSetBytes", self.working_set_bytes)
        _put(out, "rssBytes", self.rss_bytes)
        _put(out, "pageFaults", self.page_faults)
        _put(out, "majorPageFaults", self.major_page_faults)
        if self.psi is not None:
            out["psi"] = self.psi.to_wire()
        return out


@dataclass
class SwapStats:
    time: int
    swap_available_bytes: int | None = None
    swap_usage_bytes: int | None = None

    def to_wire(self) -> Wire:
        out: Wire = {"time": wire_time(self.time)}
        _put(out, "swapAvailableBytes", self.swap_available_bytes)
        _put(out, "swapUsageBytes", self.swap_usage_bytes)
        return out


@dataclass
class InterfaceStats:
    name: str
    rx_bytes: int | None = None
    rx_errors: int | None = None
    tx_bytes: int | None = None
    tx_errors: int | None = None

    def to_wire(self) -> Wire:
        out: Wire = {"name": self.name}
        _put(out, "rxBytes", self.rx_bytes)
        _put(out, "rxErrors", self.rx_errors)
        _put(out, "txBytes", self.tx_bytes)
        _put(out, "txErrors", self.tx_errors)
        return out


@dataclass
class NetworkStats:
    time: int
    default: InterfaceStats  # flattened (json:",inline"): its name/rx/tx sit beside time
    interfaces: list[InterfaceStats] = field(default_factory=list)

    def to_wire(self) -> Wire:
        out: Wire = {"time": wire_time(self.time), **self.default.to_wire()}
        if self.interfaces:
            out["interfaces"] = [i.to_wire() for i in self.interfaces]
        return out


@dataclass
class FsStats:
    time: int
    available_bytes: int | None = None
    capacity_bytes: int | None = None
    used_bytes: int | None = None
    inodes_free: int | None = None
    inodes: int | None = None
    inodes_used: int | None = None

    def to_wire(self) -> Wire:
        out: Wire = {"time": wire_time(self.time)}
        _put(out, "availableBytes", self.available_bytes)
        _put(out, "capacityBytes", self.capacity_bytes)
        _put(out, "usedBytes", self.used_bytes)
        _put(out, "inodesFree", self.inodes_free)
        _put(out, "inodes", self.inodes)
        _put(out, "inodesUsed", self.inodes_used)
        return out


@dataclass
class VolumeStats:
    name: str
    fs: FsStats  # flattened: the FsStats keys come first, then name and pvcRef

    def to_wire(self) -> Wire:
        out = self.fs.to_wire()
        if self.name:
            out["name"] = self.name
        return out


@dataclass
class RlimitStats:
    time: int
    maxpid: int | None = None
    curproc: int | None = None

    def to_wire(self) -> Wire:
        out: Wire = {"time": wire_time(self.time)}
        _put(out, "maxpid", self.maxpid)
        _put(out, "curproc", self.curproc)
        return out


@dataclass
class ContainerStats:
    name: str
    start_time: int
    cpu: CPUStats | None = None
    memory: MemoryStats | None = None
    rootfs: FsStats | None = None
    logs: FsStats | None = None
    swap: SwapStats | None = None
    io: IOStats | None = None

    def to_wire(self) -> Wire:
        out: Wire = {"name": self.name, "startTime": wire_time(self.start_time)}
        for key, value in (("cpu", self.cpu), ("memory", self.memory), ("io", self.io), ("rootfs", self.rootfs),
                           ("logs", self.logs), ("swap", self.swap)):
            if value is not None:
                out[key] = value.to_wire()
        return out


@dataclass
class PodStats:
    name: str
    namespace: str
    uid: str
    start_time: int
    containers: list[ContainerStats] = field(default_factory=list)
    cpu: CPUStats | None = None
    memory: MemoryStats | None = None
    network: NetworkStats | None = None
    volume: list[VolumeStats] | None = None
    ephemeral_storage: FsStats | None = None
    process_count: int | None = None
    swap: SwapStats | None = None
    io: IOStats | None = None

    def to_wire(self) -> Wire:
        out: Wire = {
            "podRef": {"name": self.name, "namespace": self.namespace, "uid": self.uid},
            "startTime": wire_time(self.start_time),
            "containers": [c.to_wire() for c in self.containers],
        }
        for key, value in (("cpu", self.cpu), ("memory", self.memory), ("io", self.io), ("network", self.network)):
            if value is not None:
                out[key] = value.to_wire()
        if self.volume:
            out["volume"] = [v.to_wire() for v in self.volume]
        if self.ephemeral_storage is not None:
            out["ephemeral-storage"] = self.ephemeral_storage.to_wire()
        if self.process_count is not None:
            out["process_stats"] = {"process_count": self.process_count}
        if self.swap is not None:
            out["swap"] = self.swap.to_wire()
        return out


@dataclass
class NodeStats:
    node_name: str
    start_time: int
    system_containers: list[ContainerStats] = field(default_factory=list)
    cpu: CPUStats | None = None
    memory: MemoryStats | None = None
    network: NetworkStats | None = None
    fs: FsStats | None = None
    image_fs: FsStats | None = None
    container_fs: FsStats | None = None
    rlimit: RlimitStats | None = None
    swap: SwapStats | None = None
    io: IOStats | None = None

    def to_wire(self) -> Wire:
        out: Wire = {"nodeName": self.node_name}
        if self.system_containers:
            out["systemContainers"] = [c.to_wire() for c in self.system_containers]
        out["startTime"] = wire_time(self.start_time)
        for key, value in (("cpu", self.cpu), ("memory", self.memory), ("io", self.io), ("network", self.network),
                           ("fs", self.fs)):
            if value is not None:
                out[key] = value.to_wire()
        if self.image_fs is not None or self.container_fs is not None:
            runtime: Wire = {}
            if self.image_fs is not None:
                runtime["imageFs"] = self.image_fs.to_wire()
            if self.container_fs is not None:
                runtime["containerFs"] = self.container_fs.to_wire()
            out["runtime"] = runtime
        if self.rlimit is not None:
            out["rlimit"] = self.rlimit.to_wire()
        if self.swap is not None:
            out["swap"] = self.swap.to_wire()
        return out


@dataclass
class Summary:
    node: NodeStats
    pods: list[PodStats] = field(default_factory=list)

    def to_wire(self) -> Wire:
        return {"node": self.node.to_wire(), "pods": [p.to_wire() for p in self.pods]}
