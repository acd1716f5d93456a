"""Wiring of garbage collection: the container GC (every minute, pods.containergc), the image GC
on a runtime with images (every five minutes, pods.imagegc: the image filesystem's figures from
the housekeeping snapshot), and the node-level reclaim the eviction manager calls."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from prometheus_client import CollectorRegistry

from kubeletapi.aio import cancel_and_wait
from kubeletapi.clock import Clock
from kubeletapi.config import KubeletConfiguration, NodeOptions
from kubeletapi.kubelet.pods import PodWiring
from kubeletapi.kubelet.stats import StatsProvider
from kubeletapi.metrics.gc import GCMetrics
from kubeletapi.pods.containergc import ContainerGC, GCPolicy
from kubeletapi.pods.imagegc import FsUsage, ImageGC, ImageGCPolicy, NodeEventSink
from kubeletapi.pods.loggc import LogGC

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class NodeReclaim:
    """What the eviction manager reclaims before it evicts a pod (its node-level reclaim)."""

    containers: ContainerGC
    images: ImageGC | None

    async def delete_unused_images(self) -> int:
        """Every image no container uses (the kubelet's DeleteUnusedImages); the bytes freed
        (0 on a runtime without images)."""
        return 0 if self.images is None else await self.images.delete_unused_images()

    async def delete_all_unused_containers(self) -> None:
        """Every dead container beyond what a live pod's status needs (DeleteAllUnusedContainers)."""
        await self.containers.delete_all_unused_containers()


def container_policy(opts: NodeOptions) -> GCPolicy:
    return GCPolicy(opts.minimum_container_ttl.seconds, opts.max_dead_per_container, opts.max_dead_containers)


def image_policy(cfg: KubeletConfiguration) -> ImageGCPolicy:
    return ImageGCPolicy(cfg.image_gc_high_threshold_percent, cfg.image_gc_low_threshold_percent,
                         cfg.image_minimum_gc_age.seconds, cfg.image_maximum_gc_age.seconds)


class GCWiring:
    def __init__(self, cfg: KubeletConfiguration, opts: NodeOptions, clock: Clock, pods: PodWiring,
                 stats: StatsProvider, registry: CollectorRegistry, events: NodeEventSink | None = None) -> None:
        self.containers = ContainerGC(pods.runtime, pods.manager, container_policy(opts), clock,
                                      LogGC(pods.node.pod_logs_dir, clock), events)
        self.images: ImageGC | None = None
        if pods.cri is not None:  # the process runtime has no images
            def imagefs() -> FsUsage | None:
                snap = stats.housekeeper.latest()
                if snap is None or snap.node.imagefs is None:
                    return None
                return FsUsage(snap.node.imagefs.stats.capacity, snap.node.imagefs.stats.available)

            self.images = ImageGC(pods.runtime, image_policy(cfg), clock, imagefs, GCMetrics(registry), events)
        self.reclaim = NodeReclaim(self.containers, self.images)
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._tasks.append(asyncio.create_task(self.containers.run(), name="container-gc"))
        if self.images is not None:
            self._tasks.append(asyncio.create_task(self.images.run(), name="image-gc"))

    async def stop(self) -> None:
        await cancel_and_wait(self._tasks)
        self._tasks.clear()
