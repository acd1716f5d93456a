"""The CRI runtime's stats as the stats provider takes them (stats.runtimestats.RuntimeStatsSource).

One housekeeping cycle asks ListPodSandboxStats (which CRIRuntime backs with per-sandbox
PodSandboxStats and ListContainerStats when the list call fails as a whole) and ImageFsInfo, on
the event loop. A runtime without pod stats (UNIMPLEMENTED) is asked ListContainerStats instead;
one without ImageFsInfo reports no image filesystem. Each optional call that answers
UNIMPLEMENTED once is not asked again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from kubeletapi.cgroups.stats import MemoryStats
from kubeletapi.errors import NotSupported
from kubeletapi.runtime.cri import CRIRuntime
from kubeletapi.runtime.cri import stats as cri
from kubeletapi.runtime.types import POD_UID
from kubeletapi.stats.runtimestats import ImageFs, RuntimeStats, RuntimeUsage

log = logging.getLogger(__name__)


def _memory(m: cri.MemoryUsage | None) -> MemoryStats | None:
    if m is None or m.working_set_bytes is None:
        return None
    return MemoryStats(
        usage=m.usage_bytes if m.usage_bytes is not None else m.working_set_bytes, working_set=m.working_set_bytes,
        rss=m.rss_bytes, pgfault=m.page_faults, pgmajfault=m.major_page_faults,
    )


def _usage(cpu: cri.CpuUsage | None, memory: cri.MemoryUsage | None, fallback_ns: int) -> RuntimeUsage:
    stamps = [u.timestamp for u in (cpu, memory) if u is not None and u.timestamp]
    return RuntimeUsage(
        timestamp_ns=max(stamps) if stamps else fallback_ns,
        cpu_usage_ns=cpu.usage_core_nano_seconds if cpu is not None else None,
        nano_cores=cpu.usage_nano_cores if cpu is not None else None,
        memory=_memory(memory),
    )


def _container(c: cri.ContainerStats, now_ns: int) -> RuntimeUsage:
    usage = _usage(c.cpu, c.memory, now_ns)
    layer = c.writable_layer
    if layer is None:
        return usage
    return replace(usage, rootfs_used=layer.used_bytes, rootfs_inodes=layer.inodes_used)


class CRIStatsSource:
    def __init__(self, runtime: CRIRuntime, now_ns: Callable[[], int]) -> None:
        self._runtime = runtime
        self._now_ns = now_ns
        self._pod_stats = True
        self._image_fs = True

    async def runtime_stats(self) -> RuntimeStats:
        now = self._now_ns()
        containers: dict[str, RuntimeUsage] = {}
        pods: dict[str, RuntimeUsage] = {}
        if self._pod_stats:
            try:
                for pod in await self._runtime.list_pod_sandbox_stats():
                    pods[pod.meta.uid] = replace(_usage(pod.cpu, pod.memory, now), process_count=pod.process_count)
                    containers.update((c.id, _container(c, now)) for c in pod.containers)
            except NotSupported as exc:
                log.info("stats: %s; pod figures come from cgroups", exc)
                self._pod_stats = False
        if not self._pod_stats:
            for c in await self._runtime.list_container_stats():
                if c.labels.get(POD_UID):
                    containers[c.id] = _container(c, now)
        return RuntimeStats(containers, pods, await self._image_filesystem())

    async def _image_filesystem(self) -> ImageFs | None:
        if not self._image_fs:
            return None
        try:
            info = await self._runtime.image_fs_info()
        except NotSupported as exc:
            log.info("stats: %s; no image filesystem figures", exc)
            self._image_fs = False
            return None
        for fs in info.image_filesystems:
            if fs.mountpoint:
                return ImageFs(Path(fs.mountpoint), fs.used_bytes, fs.inodes_used, fs.timestamp or self._now_ns())
        return None
