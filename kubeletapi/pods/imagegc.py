"""Image garbage collection, as the kubelet's image GC manager (pkg/kubelet/images/image_gc_manager.go).

Every five minutes (ImageGCPeriod) on a runtime that has images (CRI; the process runtime lists
none):

- Each pass lists the images and the containers; an image is first detected when a pass first
  sees it, and last used at every pass that finds a container (running or not) or a sandbox on
  it. Images in use and images the runtime pins (the pause image) are never removed.
- imageMaximumGCAge (when not 0, once that long has passed since GC began): unused images not
  used for longer are removed (reason "age").
- Then, when the image filesystem is at least imageGCHighThresholdPercent used, the least
  recently used images (then the first detected) that are at least imageMinimumGCAge old are
  removed until it would be at imageGCLowThresholdPercent (reason "space"); when not enough can
  be freed the pass fails with the kubelet's message and a FreeDiskSpaceFailed event.
- A failed pass is logged; a second one in a row also records ImageGCFailed on the Node.

delete_unused_images() is the eviction manager's node-level reclaim: every unused image, whatever
the thresholds (the kubelet's DeleteUnusedImages), returning the bytes freed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from kubeletapi.clock import Clock
from kubeletapi.errors import KubeletError
from kubeletapi.events import reasons
from kubeletapi.runtime import types as rt

log = logging.getLogger(__name__)
GC_PERIOD_S = 300.0  # the kubelet's ImageGCPeriod


@dataclass(frozen=True)
class ImageGCPolicy:
    high_threshold_percent: int = 85
    low_threshold_percent: int = 80
    min_age_s: float = 120.0
    max_age_s: float = 0.0  # 0: no maximum age

    @property
    def disabled(self) -> bool:
        """high 100 and no maximum age: the kubelet stubs image GC out."""
        return self.high_threshold_percent == 100 and self.max_age_s == 0


@dataclass(frozen=True)
class FsUsage:
    """The image filesystem's capacity and what is available on it (bytes)."""

    capacity: int
    available: int


@dataclass
class ImageRecord:
    first_detected: float
    last_used: float = float("-inf")
    size: int = 0
    pinned: bool = False


class ImageRuntime(Protocol):
    """What image GC needs of a runtime (runtime.interface.Runtime has it)."""

    async def list_images(self) -> Sequence[rt.Image]: ...

    async def remove_image(self, image: str) -> None: ...

    async def list_containers(self, pod_uid: str | None = None) -> Sequence[rt.ContainerStatus]: ...

    async def list_pod_sandboxes(self, pod_uid: str | None = None) -> Sequence[rt.Sandbox]: ...


class ImageGCObserver(Protocol):
    def image_collected(self, reason: str) -> None: ...


class NodeEventSink(Protocol):
    def node_event(self, event_type: str, reason: str, message: str) -> None: ...


class ImageGCError(KubeletError):
    """A pass that could not do what the policy asks."""


def in_use(image: rt.Image, used: set[str]) -> bool:
    """A container or sandbox names the image by its id, a tag or a digest."""
    return image.id in used or any(t in used for t in image.tags) or any(d in used for d in image.digests)


def eviction_order(records: dict[str, ImageRecord], used_ids: set[str]) -> list[str]:
    """The unused, unpinned images, least recently used first (then first detected first)."""
    ids = [i for i, r in records.items() if i not in used_ids and not r.pinned]
    return sorted(ids, key=lambda i: (records[i].last_used, records[i].first_detected))


def bytes_to_free(fs: FsUsage, policy: ImageGCPolicy) -> int:
    """0 below the high threshold, else what brings usage down to the low threshold."""
    available = min(fs.available, fs.capacity)
    usage_percent = 100 - available * 100 // fs.capacity
    if usage_percent < policy.high_threshold_percent:
        return 0
    return fs.capacity * (100 - policy.low_threshold_percent) // 100 - available


class ImageGC:
    def __init__(self, runtime: ImageRuntime, policy: ImageGCPolicy, clock: Clock,
                 imagefs: Callable[[], FsUsage | None], observer: ImageGCObserver | None = None,
                 events: NodeEventSink | None = None) -> None:
        self._runtime = runtime
        self.policy = policy
        self._clock = clock
        self._imagefs = imagefs
        self._observer = observer
        self._events = events
        self.records: dict[str, ImageRecord] = {}
        self._began = clock.monotonic()
        self._failed_before = False
        self._lock = asyncio.Lock()

    async def run(self, period_s: float = GC_PERIOD_S) -> None:
        """A pass every period until cancelled (none when the policy disables image GC)."""
        if self.policy.disabled:
            log.info("ImageGCHighThresholdPercent is set 100 and ImageMaximumGCAge is 0, Disable image GC")
            return
        while True:
            await self._clock.sleep(period_s)
            await self.run_once()

    async def run_once(self) -> bool:
        """One pass with the kubelet's logging and events; True when it succeeded."""
        try:
            await self.garbage_collect()
        except KubeletError as exc:
            if self._failed_before:
                log.error("Image garbage collection failed multiple times in a row: %s", exc)
                self._event(reasons.IMAGE_GC_FAILED, str(exc))
            else:
                log.error("Image garbage collection failed once. Stats initialization may not have completed "
                          "yet: %s", exc)
            self._failed_before = True
            return False
        level = logging.INFO if self._failed_before else logging.DEBUG
        self._failed_before = False
        log.log(level, "Image garbage collection succeeded")
        return True

    async def garbage_collect(self) -> int:
        """One pass (ImageGCError, or the runtime's error, when it fails); the bytes freed."""
        async with self._lock:
            now = self._clock.monotonic()
            order = await self._eviction_order(now)
            freed, order = await self._free_old(order, now)
            fs = self._imagefs()
            if fs is None:
                raise ImageGCError("failed to get imageFs stats: no stats collected yet")
            if fs.available > fs.capacity:
                log.info("Availability is larger than capacity: available %d, capacity %d", fs.available, fs.capacity)
            if fs.capacity == 0:
                message = "invalid capacity 0 on image filesystem"
                self._event(reasons.INVALID_DISK_CAPACITY, message)
                raise ImageGCError(message)
            wanted = bytes_to_free(fs, self.policy)
            if wanted <= 0:
                return freed
            log.info("Disk usage on image filesystem is over the high threshold, trying to free bytes down to the "
                     "low threshold: usage %d%%, highThreshold %d, amountToFree %d, lowThreshold %d",
                     100 - min(fs.available, fs.capacity) * 100 // fs.capacity, self.policy.high_threshold_percent,
                     wanted, self.policy.low_threshold_percent)
            space = await self._free_space(order, wanted, now, self.policy.min_age_s)
            if space < wanted:
                message = (f"Failed to garbage collect required amount of images. Attempted to free {wanted} bytes, "
                           f"but only found {space} bytes eligible to free.")
                self._event(reasons.FREE_DISK_SPACE_FAILED, message)
                raise ImageGCError(message)
            return freed + space

    async def delete_unused_images(self) -> int:
        """Every image no container uses, whatever the thresholds; the bytes freed."""
        log.info("Attempting to delete unused images")
        async with self._lock:
            now = self._clock.monotonic()
            order = await self._eviction_order(now)
            return await self._free_space(order, 2**63 - 1, now, self.policy.min_age_s)

    def _event(self, reason: str, message: str) -> None:
        if self._events is not None:
            self._events.node_event(reasons.WARNING, reason, message)

    async def _eviction_order(self, now: float) -> list[str]:
        """Detect the images (the kubelet's detectImages), then order the unused ones."""
        images = await self._runtime.list_images()
        containers = await self._runtime.list_containers()
        used = {c.image for c in containers} | {c.image_ref for c in containers}
        used |= {s.image for s in await self._runtime.list_pod_sandboxes() if s.image}
        used.discard("")
        used_ids = set()
        for image in images:
            record = self.records.setdefault(image.id, ImageRecord(first_detected=now))
            if in_use(image, used):
                record.last_used = now
                used_ids.add(image.id)
            record.size, record.pinned = image.size, image.pinned
        current = {i.id for i in images}
        self.records = {k: v for k, v in self.records.items() if k in current}
        return eviction_order(self.records, used_ids)

    async def _free_old(self, order: list[str], now: float) -> tuple[int, list[str]]:
        """imageMaximumGCAge: remove the images unused for longer (once GC has run that long)."""
        max_age = self.policy.max_age_s
        if max_age == 0 or now - self._began <= max_age:
            return 0, order
        freed, left, errors = 0, [], []
        for image_id in order:
            record = self.records[image_id]
            if now - record.last_used > max_age:
                try:
                    freed += await self._free(image_id, "age")
                    continue
                except KubeletError as exc:
                    errors.append(str(exc))
            left.append(image_id)
        if errors:
            raise ImageGCError(f"wanted to free images older than {max_age}s, encountered errors in image deletion: "
                               f"[{', '.join(errors)}]")
        return freed, left

    async def _free_space(self, order: list[str], wanted: int, now: float, min_age_s: float) -> int:
        freed, errors = 0, []
        for image_id in order:
            record = self.records.get(image_id)
            if record is None or record.last_used >= now:
                continue
            if now - record.first_detected < min_age_s:
                log.debug("Image ID's age is less than the policy's minAge, not eligible for garbage collection: %s",
                          image_id)
                continue
            try:
                freed += await self._free(image_id, "space")
            except KubeletError as exc:
                errors.append(str(exc))
                continue
            if freed >= wanted:
                break
        if errors:
            raise ImageGCError(f"wanted to free {wanted} bytes, but freed {freed} bytes space with errors in image "
                               f"deletion: [{', '.join(errors)}]")
        return freed

    async def _free(self, image_id: str, reason: str) -> int:
        record = self.records[image_id]
        log.info("Removing image to free bytes: imageID %s, size %d", image_id, record.size)
        await self._runtime.remove_image(image_id)
        del self.records[image_id]
        if self._observer is not None:
            self._observer.image_collected(reason)
        return record.size
