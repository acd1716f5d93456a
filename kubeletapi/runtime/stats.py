"""What a runtime reports about its pods, containers and images, in the stats layer's terms.

A CRI runtime fills these from ListPodSandboxStats, ListContainerStats and ImageFsInfo
(runtime.cri.stats); the stats layer takes them through its RuntimeStatsSource protocol
(stats.runtimestats). They live here, below both, because the stats layer may not import a
runtime and a runtime may not import the stats layer.

Counters the runtime left unset are None, never 0. Times are Unix nanoseconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

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
    """One housekeeping cycle's report."""

    containers: Mapping[str, RuntimeUsage] = field(default_factory=dict)  # by container id
    pods: Mapping[str, RuntimeUsage] = field(default_factory=dict)  # by pod uid
    image_fs: ImageFs | None = None
