"""What the node reports about itself: the facts behind its labels, addresses, capacity,
allocatable and nodeInfo, gathered once at start (they do not change while the agent runs).

Capacity as the kubelet computes it (cadvisor.CapacityFromMachineInfo plus the container manager's
ephemeral-storage): cpu = logical CPUs, memory = MemTotal, pods = maxPods, ephemeral-storage = the
capacity of the filesystem holding the root dir, hugepages-<size> = configured huge pages.
Allocatable = capacity minus kubeReserved, systemReserved and the hard eviction thresholds
(memory.available from memory, nodefs.available from ephemeral-storage; a percentage is of the
capacity), never below zero (GetNodeAllocatableReservation).
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from kubeletapi.api.quantity import BINARY_SI, DECIMAL_SI, Quantity
from kubeletapi.stats.machine import MachineInfo

_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "ppc64le": "ppc64le", "s390x": "s390x"}
GOARCH = _ARCH.get(platform.machine(), platform.machine())
GOOS = "linux"
_EVICTION_RESOURCE = {"memory.available": "memory", "nodefs.available": "ephemeral-storage"}


@dataclass(frozen=True)
class NodeFacts:
    name: str
    hostname: str
    addresses: Sequence[tuple[str, str]]  # (type, address): InternalIP..., Hostname
    kubelet_port: int
    machine: MachineInfo
    max_pods: int
    rootfs_bytes: int
    hugepages: Mapping[str, int] = field(default_factory=dict)  # "2Mi" -> bytes configured
    runtime_version: str = ""  # "containerd://1.6.20", "kubeletapi-process://0.1.0"
    kubelet_version: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)  # --node-labels
    taints: Sequence[Mapping[str, str]] = ()  # registerWithTaints
    kube_reserved: Mapping[str, str] = field(default_factory=dict)
    system_reserved: Mapping[str, str] = field(default_factory=dict)
    eviction_hard: Mapping[str, str] = field(default_factory=dict)

    def default_labels(self) -> dict[str, str]:
        """The labels the kubelet sets (hostname, os, arch, stable and beta), then --node-labels."""
        return {
            "kubernetes.io/hostname": self.hostname, "kubernetes.io/os": GOOS, "kubernetes.io/arch": GOARCH,
            "beta.kubernetes.io/os": GOOS, "beta.kubernetes.io/arch": GOARCH, **self.labels,
        }

    def capacity(self) -> dict[str, Quantity]:
        out = {
            "cpu": Quantity.from_int(self.machine.num_cores, DECIMAL_SI),
            "memory": Quantity.from_int(self.machine.memory_capacity, BINARY_SI),
            "pods": Quantity.from_int(self.max_pods, DECIMAL_SI),
            "ephemeral-storage": Quantity.from_int(self.rootfs_bytes, BINARY_SI),
        }
        for size, amount in sorted(self.hugepages.items()):
            out[f"hugepages-{size}"] = Quantity.from_int(amount, BINARY_SI)
        return out

    def allocatable(self) -> dict[str, Quantity]:
        capacity = self.capacity()
        reserved: dict[str, Decimal] = {}
        for source in (self.kube_reserved, self.system_reserved):
            for name, text in source.items():
                reserved[name] = reserved.get(name, Decimal(0)) + Quantity.parse(text).amount
        for signal, text in self.eviction_hard.items():
            resource = _EVICTION_RESOURCE.get(signal)
            if resource is None or resource not in capacity:
                continue
            if text.endswith("%"):
                amount = capacity[resource].amount * Decimal(text[:-1]) / 100
            else:
                amount = Quantity.parse(text).amount
            reserved[resource] = reserved.get(resource, Decimal(0)) + amount
        out = {}
        for name, quantity in capacity.items():
            left = max(quantity.amount - reserved.get(name, Decimal(0)), Decimal(0))
            out[name] = _like(quantity, left)
        hugepages = sum((q.amount for n, q in capacity.items() if n.startswith("hugepages-")), Decimal(0))
        if hugepages:
            out["memory"] = _like(capacity["memory"], max(out["memory"].amount - hugepages, Decimal(0)))
        return out

    def node_info(self, boot_id: str) -> dict[str, str]:
        m = self.machine
        return {
            "machineID": m.machine_id, "systemUUID": m.system_uuid, "bootID": boot_id,
            "kernelVersion": m.kernel_version, "osImage": m.os_version,
            "containerRuntimeVersion": self.runtime_version, "kubeletVersion": self.kubelet_version,
            "operatingSystem": GOOS, "architecture": GOARCH,
        }


def _like(template: Quantity, amount: Decimal) -> Quantity:
    """`amount` in the format of `template` (whole units; memory in binary suffixes)."""
    return Quantity.from_int(int(amount), template.format)


def rootfs_capacity(root_dir: Path) -> int:
    """Bytes of the filesystem holding `root_dir` (the kubelet's nodefs: ephemeral-storage)."""
    st = os.statvfs(root_dir)
    return st.f_blocks * st.f_frsize


def hugepages(sys_root: Path = Path("/sys")) -> dict[str, int]:
    """Configured huge pages by size ("2Mi" -> bytes), as cAdvisor reports them."""
    out: dict[str, int] = {}
    base = sys_root / "kernel" / "mm" / "hugepages"
    try:
        entries = sorted(base.iterdir())
    except OSError:
        return out
    for entry in entries:
        if not entry.name.startswith("hugepages-") or not entry.name.endswith("kB"):
            continue
        try:
            size_kb = int(entry.name[len("hugepages-"):-2])
            count = int((entry / "nr_hugepages").read_text().strip())
        except (OSError, ValueError):
            continue
        out[_size_name(size_kb * 1024)] = count * size_kb * 1024
    return out


def _size_name(size: int) -> str:
    for suffix, unit in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if size % unit == 0:
            return f"{size // unit}{suffix}"
    return str(size)
