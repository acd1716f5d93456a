"""A CRI runtime's stats in one place: the calls, their fallbacks, and the conversion of their
messages to the values the stats layer takes (runtime.stats), as CRIStatsSource, which
implements stats.runtimestats.RuntimeStatsSource.

One housekeeping cycle asks ListPodSandboxStats and ImageFsInfo, on the event loop.
- ListPodSandboxStats fails as a whole when one sandbox has no usable cgroup: then each ready
  sandbox is asked alone (PodSandboxStats), and one that still fails is reported with its
  containers' stats only (ListContainerStats of that sandbox).
- A runtime without pod stats (UNIMPLEMENTED) is asked ListContainerStats instead (containers
  that carry a pod uid label); one without ImageFsInfo reports no image filesystem. Each
  optional call that answers UNIMPLEMENTED once is not asked again.

Counters the runtime did not fill (a CRI UInt64Value that is unset) are None, never 0. Rates are
the consumer's business: containerd often leaves usage_nano_cores empty or 0 (the first call,
the list calls), so CPU rates come from usage_core_nano_seconds deltas. Times are Unix
nanoseconds; a usage the runtime gave no time is stamped with the cycle's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path

from kubeletapi.cgroups.stats import MemoryStats
from kubeletapi.errors import KubeletError, NotSupported
from kubeletapi.runtime.cri import client as rpc
from kubeletapi.runtime.cri.client import CRIClient
from kubeletapi.runtime.cri.gen import api_pb2 as pb
from kubeletapi.runtime.stats import ImageFs, RuntimeStats, RuntimeUsage
from kubeletapi.runtime.types import POD_UID, Sandbox, SandboxState

log = logging.getLogger(__name__)


class CRIStatsSource:
    """Build it with CRIRuntime.stats_source (it shares the runtime's channel); `sandboxes` lists
    the runtime's sandboxes, `now_ns` stamps figures the runtime left without a time."""

    def __init__(self, client: CRIClient, sandboxes: Callable[[], Awaitable[Sequence[Sandbox]]],
                 now_ns: Callable[[], int]) -> None:
        self._client = client
        self._sandboxes = sandboxes
        self._now_ns = now_ns
        self._pod_stats = True
        self._image_fs = True

    async def runtime_stats(self) -> RuntimeStats:
        now = self._now_ns()
        containers: dict[str, RuntimeUsage] = {}
        pods: dict[str, RuntimeUsage] = {}
        if self._pod_stats:
            try:
                for pod in await self._pod_sandbox_stats():
                    pods[pod.attributes.metadata.uid] = _pod(pod, now)
                    containers.update((c.attributes.id, _container(c, now)) for c in pod.linux.containers)
            except NotSupported as exc:
                log.info("stats: %s; pod figures come from cgroups", exc)
                self._pod_stats = False
        if not self._pod_stats:
            for c in await self._container_stats():
                if c.attributes.labels.get(POD_UID):
                    containers[c.attributes.id] = _container(c, now)
        return RuntimeStats(containers, pods, await self._image_filesystem())

    async def _pod_sandbox_stats(self) -> list[pb.PodSandboxStats]:
        """Every ready pod's stats. ListPodSandboxStats fails as a whole when one sandbox has no
        usable cgroup; then each ready sandbox is asked alone, and one that still fails is reported
        with its containers' stats only (NotSupported: the runtime has no pod stats at all)."""
        try:
            return list((await self._client.call(rpc.LIST_POD_SANDBOX_STATS, pb.ListPodSandboxStatsRequest())).stats)
        except NotSupported:
            raise
        except KubeletError as exc:
            log.warning("ListPodSandboxStats failed (%s): asking each sandbox", exc)
        ready = [s for s in await self._sandboxes() if s.state is SandboxState.READY]
        results = await asyncio.gather(
            *(self._client.call(rpc.POD_SANDBOX_STATS, pb.PodSandboxStatsRequest(pod_sandbox_id=s.id)) for s in ready),
            return_exceptions=True)
        out = []
        for sandbox, result in zip(ready, results, strict=True):
            if isinstance(result, pb.PodSandboxStatsResponse):
                out.append(result.stats)
                continue
            log.debug("PodSandboxStats of %s failed (%s): its containers only", sandbox.id, result)
            try:
                containers = await self._container_stats(sandbox.id)
            except KubeletError:
                containers = []
            meta = sandbox.meta
            out.append(pb.PodSandboxStats(
                attributes=pb.PodSandboxAttributes(id=sandbox.id, metadata=pb.PodSandboxMetadata(
                    name=meta.name, uid=meta.uid, namespace=meta.namespace, attempt=meta.attempt)),
                linux=pb.LinuxPodSandboxStats(containers=containers)))
        return out

    async def _container_stats(self, sandbox_id: str = "") -> list[pb.ContainerStats]:
        request = pb.ListContainerStatsRequest(filter=pb.ContainerStatsFilter(pod_sandbox_id=sandbox_id))
        return list((await self._client.call(rpc.LIST_CONTAINER_STATS, request)).stats)

    async def _image_filesystem(self) -> ImageFs | None:
        if not self._image_fs:
            return None
        try:
            info = await self._client.call(rpc.IMAGE_FS_INFO, pb.ImageFsInfoRequest())
        except NotSupported as exc:
            log.info("stats: %s; no image filesystem figures", exc)
            self._image_fs = False
            return None
        for fs in info.image_filesystems:
            if fs.fs_id.mountpoint:
                return ImageFs(Path(fs.fs_id.mountpoint), _u64(fs.used_bytes, fs.HasField("used_bytes")),
                               _u64(fs.inodes_used, fs.HasField("inodes_used")), fs.timestamp or self._now_ns())
        return None


# --- CRI messages -> runtime.stats values ---------------------------------------------------------


def _u64(message: pb.UInt64Value, present: bool) -> int | None:
    return message.value if present else None


def _memory(m: pb.MemoryUsage | None) -> MemoryStats | None:
    if m is None or not m.HasField("working_set_bytes"):
        return None
    working_set = m.working_set_bytes.value
    return MemoryStats(
        usage=m.usage_bytes.value if m.HasField("usage_bytes") else working_set, working_set=working_set,
        rss=_u64(m.rss_bytes, m.HasField("rss_bytes")), pgfault=_u64(m.page_faults, m.HasField("page_faults")),
        pgmajfault=_u64(m.major_page_faults, m.HasField("major_page_faults")),
    )


def _usage(cpu: pb.CpuUsage | None, memory: pb.MemoryUsage | None, now_ns: int) -> RuntimeUsage:
    stamps = [u.timestamp for u in (cpu, memory) if u is not None and u.timestamp]
    usage = RuntimeUsage(timestamp_ns=max(stamps) if stamps else now_ns, memory=_memory(memory))
    if cpu is None:
        return usage
    return replace(usage, cpu_usage_ns=_u64(cpu.usage_core_nano_seconds, cpu.HasField("usage_core_nano_seconds")),
                   nano_cores=_u64(cpu.usage_nano_cores, cpu.HasField("usage_nano_cores")))


def _container(m: pb.ContainerStats, now_ns: int) -> RuntimeUsage:
    usage = _usage(m.cpu if m.HasField("cpu") else None, m.memory if m.HasField("memory") else None, now_ns)
    if not m.HasField("writable_layer"):
        return usage
    layer = m.writable_layer
    return replace(usage, rootfs_used=_u64(layer.used_bytes, layer.HasField("used_bytes")),
                   rootfs_inodes=_u64(layer.inodes_used, layer.HasField("inodes_used")))


def _pod(m: pb.PodSandboxStats, now_ns: int) -> RuntimeUsage:
    linux = m.linux
    usage = _usage(linux.cpu if linux.HasField("cpu") else None,
                   linux.memory if linux.HasField("memory") else None, now_ns)
    process = linux.process
    return replace(usage, process_count=_u64(process.process_count, process.HasField("process_count")))
