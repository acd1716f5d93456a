"""Image GC's decisions (pods.imagegc), over a hand-written runtime: thresholds, ages, images in
use, least recently used first, the kubelet's messages and events, the reclaim."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from kubeletapi.clock import FakeClock
from kubeletapi.pods.imagegc import (
    FsUsage,
    ImageGC,
    ImageGCError,
    ImageGCPolicy,
    ImageRecord,
    bytes_to_free,
    eviction_order,
)
from kubeletapi.runtime import types as rt

MB = 1 << 20


def run(test: Callable[[], Coroutine[Any, Any, None]]) -> Callable[[], None]:
    @functools.wraps(test)
    def sync() -> None:
        asyncio.run(test())
    return sync


@pytest.mark.parametrize(("capacity", "available", "high", "low", "expected"), [
    (100 * MB, 50 * MB, 85, 80, 0),  # 50% used
    (100 * MB, 15 * MB, 85, 80, 5 * MB),  # 85% used: down to 80%
    (100 * MB, 10 * MB, 85, 80, 10 * MB),
    (100 * MB, 200 * MB, 85, 80, 0),  # available beyond capacity counts as capacity
    (100 * MB, 0, 100, 0, 100 * MB),
])
def test_bytes_to_free(capacity: int, available: int, high: int, low: int, expected: int) -> None:
    assert bytes_to_free(FsUsage(capacity, available), ImageGCPolicy(high, low)) == expected


@pytest.mark.parametrize(("records", "used", "expected"), [
    ({"a": ImageRecord(1, 5), "b": ImageRecord(2, 3), "c": ImageRecord(0)}, set(), ["c", "b", "a"]),
    ({"a": ImageRecord(2), "b": ImageRecord(1)}, set(), ["b", "a"]),  # never used: first detected first
    ({"a": ImageRecord(1), "b": ImageRecord(1)}, {"a"}, ["b"]),
    ({"a": ImageRecord(1, pinned=True), "b": ImageRecord(1)}, set(), ["b"]),
])
def test_eviction_order(records: dict[str, ImageRecord], used: set[str], expected: list[str]) -> None:
    assert eviction_order(records, used) == expected


class Runtime:
    def __init__(self, images: list[rt.Image], in_use: list[str]) -> None:
        self.images = images
        self.in_use = in_use
        self.removed: list[str] = []
        self.fail: set[str] = set()

    async def list_images(self) -> list[rt.Image]:
        return list(self.images)

    async def remove_image(self, image: str) -> None:
        from kubeletapi.errors import Unavailable

        if image in self.fail:
            raise Unavailable(f"rpc error: cannot remove {image}")
        self.removed.append(image)
        self.images = [i for i in self.images if i.id != image]

    async def list_containers(self, pod_uid: str | None = None) -> list[rt.ContainerStatus]:
        return [rt.ContainerStatus(f"c{i}", "s", "c", 0, rt.ContainerState.EXITED, image, "", 0)
                for i, image in enumerate(self.in_use)]

    async def list_pod_sandboxes(self, pod_uid: str | None = None) -> list[rt.Sandbox]:
        return []


class Events:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def node_event(self, event_type: str, reason: str, message: str) -> None:
        self.events.append((event_type, reason, message))


class Counts:
    def __init__(self) -> None:
        self.reasons: list[str] = []

    def image_collected(self, reason: str) -> None:
        self.reasons.append(reason)


def images() -> list[rt.Image]:
    return [rt.Image("sha256:a", "a", 10 * MB, tags=("busybox:a",)), rt.Image("sha256:b", "b", 20 * MB),
            rt.Image("sha256:c", "c", 30 * MB), rt.Image("sha256:pause", "p", 1 * MB, pinned=True)]


class Fs:
    def __init__(self, capacity: int, available: int) -> None:
        self.usage: FsUsage | None = FsUsage(capacity, available)

    def __call__(self) -> FsUsage | None:
        return self.usage


def gc(runtime: Runtime, fs: Fs, policy: ImageGCPolicy, clock: FakeClock, events: Events | None = None,
       counts: Counts | None = None) -> ImageGC:
    return ImageGC(runtime, policy, clock, fs, counts, events)


@run
async def test_least_recently_used_first_down_to_the_low_threshold() -> None:
    clock, counts = FakeClock(), Counts()
    runtime = Runtime(images(), in_use=["sha256:c"])
    fs = Fs(100 * MB, 50 * MB)
    image_gc = gc(runtime, fs, ImageGCPolicy(85, 80, min_age_s=0), clock, counts=counts)
    assert await image_gc.garbage_collect() == 0  # 50% used: nothing to do, c last used now
    clock.advance(10)
    runtime.in_use = ["busybox:a"]  # by tag
    assert await image_gc.garbage_collect() == 0
    clock.advance(10)
    runtime.in_use = []
    fs.usage = FsUsage(200 * MB, 5 * MB)  # 97% used: 35 MiB to free for 80%
    assert await image_gc.garbage_collect() == 50 * MB
    assert runtime.removed == ["sha256:b", "sha256:c"]  # never used, then used longest ago; a stays
    assert counts.reasons == ["space", "space"]


@run
async def test_images_in_use_and_pinned_stay_and_a_shortfall_fails() -> None:
    clock, events = FakeClock(), Events()
    runtime = Runtime(images(), in_use=["busybox:a", "sha256:c"])
    image_gc = gc(runtime, Fs(100 * MB, 0), ImageGCPolicy(85, 70, min_age_s=0), clock, events)
    assert not await image_gc.run_once()
    assert runtime.removed == ["sha256:b"]
    assert events.events == [("Warning", "FreeDiskSpaceFailed", "Failed to garbage collect required amount of "
                              "images. Attempted to free 31457280 bytes, but only found 20971520 bytes eligible "
                              "to free.")]
    assert not await image_gc.run_once()  # a second failure in a row: ImageGCFailed as well
    assert [e[1] for e in events.events] == ["FreeDiskSpaceFailed", "FreeDiskSpaceFailed", "ImageGCFailed"]


@run
async def test_minimum_age() -> None:
    clock = FakeClock()
    runtime = Runtime(images(), in_use=["busybox:a", "sha256:c"])
    image_gc = gc(runtime, Fs(100 * MB, 50 * MB), ImageGCPolicy(85, 80, min_age_s=120), clock)
    assert await image_gc.delete_unused_images() == 0  # just detected
    clock.advance(60)
    assert await image_gc.delete_unused_images() == 0
    clock.advance(61)
    assert await image_gc.delete_unused_images() == 20 * MB  # whatever the thresholds
    assert runtime.removed == ["sha256:b"]


@run
async def test_maximum_age() -> None:
    clock, counts = FakeClock(), Counts()
    runtime = Runtime(images(), in_use=["busybox:a", "sha256:c"])
    image_gc = gc(runtime, Fs(100 * MB, 50 * MB), ImageGCPolicy(100, 80, min_age_s=0, max_age_s=300), clock,
                  counts=counts)
    assert not image_gc.policy.disabled
    clock.advance(300)
    assert await image_gc.garbage_collect() == 0  # GC itself has not run that long yet
    runtime.in_use = ["busybox:a"]
    clock.advance(200)
    assert await image_gc.garbage_collect() == 20 * MB  # b, never used; c was used 200 s ago
    clock.advance(101)
    assert await image_gc.garbage_collect() == 30 * MB
    assert runtime.removed == ["sha256:b", "sha256:c"]
    assert counts.reasons == ["age", "age"]


@run
async def test_no_stats_and_zero_capacity() -> None:
    clock, events = FakeClock(), Events()
    fs = Fs(0, 0)
    image_gc = gc(Runtime(images(), []), fs, ImageGCPolicy(), clock, events)
    with pytest.raises(ImageGCError, match="invalid capacity 0 on image filesystem"):
        await image_gc.garbage_collect()
    assert events.events == [("Warning", "InvalidDiskCapacity", "invalid capacity 0 on image filesystem")]
    fs.usage = None
    with pytest.raises(ImageGCError, match="failed to get imageFs stats"):
        await image_gc.garbage_collect()


def test_disabled() -> None:
    assert ImageGCPolicy(100, 80, max_age_s=0).disabled
    assert not ImageGCPolicy(99, 80).disabled
