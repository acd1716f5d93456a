"""The GC loops on a fake clock: a container GC pass every minute, a failed one recorded as
ContainerGCFailed; image GC every five minutes, ImageGCFailed only for a second failure in a row,
no loop at all when the policy disables it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from kubeletapi.clock import FakeClock
from kubeletapi.errors import Unavailable
from kubeletapi.pods.containergc import ContainerGC, GCPolicy
from kubeletapi.pods.imagegc import FsUsage, ImageGC, ImageGCPolicy
from kubeletapi.runtime import types as rt


class Runtime:
    """Lists nothing; fails while `down`."""

    def __init__(self) -> None:
        self.down = True
        self.lists = 0
        self.image_lists = 0

    async def list_containers(self, pod_uid: str | None = None) -> list[rt.ContainerStatus]:
        self.lists += 1
        if self.down:
            raise Unavailable("rpc error: code = Unavailable desc = connection refused")
        return []

    async def list_pod_sandboxes(self, pod_uid: str | None = None) -> list[rt.Sandbox]:
        return []

    async def list_images(self) -> list[rt.Image]:
        self.image_lists += 1
        if self.down:
            raise Unavailable("rpc error: code = Unavailable desc = connection refused")
        return []

    async def remove_container(self, container_id: str) -> None: ...

    async def stop_container(self, container_id: str, timeout_s: float) -> None: ...

    async def stop_pod_sandbox(self, sandbox_id: str) -> None: ...

    async def remove_pod_sandbox(self, sandbox_id: str) -> None: ...

    async def remove_image(self, image: str) -> None: ...


class Pods:
    def known(self, uid: str) -> bool:
        return True

    def sources_not_ready(self) -> str | None:
        return None


class Events:
    def __init__(self) -> None:
        self.reasons: list[str] = []

    def node_event(self, event_type: str, reason: str, message: str) -> None:
        self.reasons.append(reason)


async def _until(check: Callable[[], bool]) -> None:
    for _ in range(2000):
        if check():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("never happened")


async def _period(clock: FakeClock, seconds: float) -> None:
    """Move the clock once the loop sleeps."""
    await _until(lambda: clock.sleepers == 1)
    clock.advance(seconds)


def test_container_gc_every_minute() -> None:
    async def scenario() -> None:
        clock, runtime, events = FakeClock(), Runtime(), Events()
        task = asyncio.create_task(ContainerGC(runtime, Pods(), GCPolicy(), clock, events=events).run())
        try:
            await _period(clock, 59)
            await _period(clock, 0)  # still asleep: nothing ran before the minute
            assert runtime.lists == 0
            clock.advance(1)
            await _until(lambda: events.reasons == ["ContainerGCFailed"])
            runtime.down = False
            await _period(clock, 60)
            await _until(lambda: runtime.lists >= 3)  # the pass lists the containers again
            assert events.reasons == ["ContainerGCFailed"]
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    asyncio.run(scenario())


def test_image_gc_failed_twice() -> None:
    async def scenario() -> None:
        clock, runtime, events = FakeClock(), Runtime(), Events()
        image_gc = ImageGC(runtime, ImageGCPolicy(), clock, lambda: FsUsage(100, 50), events=events)
        task = asyncio.create_task(image_gc.run())
        try:
            await _period(clock, 300)
            await _until(lambda: runtime.image_lists == 1)
            await _period(clock, 300)
            assert events.reasons == []  # the first failure records nothing
            await _until(lambda: events.reasons == ["ImageGCFailed"])
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    asyncio.run(scenario())


def test_image_gc_disabled_runs_no_loop() -> None:
    image_gc = ImageGC(Runtime(), ImageGCPolicy(100, 80, max_age_s=0), FakeClock(), lambda: None)
    asyncio.run(asyncio.wait_for(image_gc.run(), 5))  # returns at once
