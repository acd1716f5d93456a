"""What a CRI runtime reports about its pods and images, in the stats provider's terms.

With a CRI runtime the summary (and /metrics/resource, built from it) takes pod and container CPU
and memory from the runtime (ListPodSandboxStats, ListContainerStats), as the kubelet's CRI stats
provider does, plus what only the runtime knows: each container's writable layer and the image
filesystem (ImageFsInfo). /metrics/cadvisor stays on the cgroup readers, which have every family.

Counters the runtime left unset are None. CPU rates: the runtime's usageNanoCores when it gave a
non-zero one, else computed by the collector from the cumulative counter of two cycles (containerd
leaves it empty on the first call and on list calls).

The composition root fetches a RuntimeStats on the event loop once per housekeeping cycle (before
the reads in the worker thread); the stats layer only declares the shape and the source protocol.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from kubeletapi.cgroups.stats import MemoryStats


@dataclass(frozen=True)
class RuntimeUsage:
    """One container's (or one pod's) usage as the runtime reported it, at timestamp_ns."""

    timestamp_ns: int
    cpu_usage_ns: int | None = None  # cumulative core-nanoseconds
    nano_cores: int | None = None  # the runtime's own rate (None or 0: not given)
    memory: MemoryStats | None = None
    rootfs_used: int | None = None  # the writable layer (containers)
    rootfs_inodes: int | None = None
    process_count: int | None = None  # pods


@dataclass(frozen=True)
class ImageFs:
    """The filesystem holding the runtime's images, and what the images take on it."""

    mountpoint: Path
    used_bytes: int | None
    inodes_used: int | None
    timestamp_ns: int


@dataclass(frozen=True)
class RuntimeStats:
    containers: Mapping[str, RuntimeUsage] = field(default_factory=dict)  # by container id
    pods: Mapping[str, RuntimeUsage] = field(default_factory=dict)  # by pod uid
    image_fs: ImageFs | None = None


class RuntimeStatsSource(Protocol):
    async def runtime_stats(self) -> RuntimeStats:
        """This cycle's runtime stats; KubeletError when the runtime cannot answer (the cycle then
        goes on with cgroups alone and the previous image filesystem figures)."""
        ...
