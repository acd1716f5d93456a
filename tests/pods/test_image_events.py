"""The image manager's events (logIt in pkg/kubelet/images/image_manager.go), to the container
the caller names: present, pulled (durations and size), failed, backing off, not inspectable,
absent under Never. Without a way to report, nothing changes (no size is asked for)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from kubeletapi.clock import FakeClock
from kubeletapi.errors import NotFound, Unavailable
from kubeletapi.pods.images import ImageEvents, ImageManager, ImageResult
from kubeletapi.runtime.types import Image, SandboxConfig
from tests.pods.test_images import IMAGE, UID, FakeImages

Seen = tuple[str, str, str]


class Report:
    def __init__(self) -> None:
        self.seen: list[Seen] = []

    def __call__(self, event_type: str, reason: str, message: str) -> None:
        self.seen.append((event_type, reason, message))


_: type[ImageEvents] = Report


@dataclass
class SizedImages(FakeImages):
    """Images with a size; a pull takes `pull_s` of the fake clock."""

    clock: FakeClock | None = None
    pull_s: float = 0.0

    async def image_status(self, image: str) -> Image | None:
        found = await super().image_status(image)
        return Image(id=found.id, ref=found.ref, size=4_194_304) if found is not None else None

    async def pull_image(self, image: str, sandbox: SandboxConfig | None = None) -> str:
        if self.clock is not None:
            self.clock.advance(self.pull_s)
        return await super().pull_image(image, sandbox)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=1_700_000_000.0)


def ensure(manager: ImageManager, policy: str, report: Report, image: str = IMAGE) -> ImageResult:
    return asyncio.run(manager.ensure(UID, image, policy, events=report))


def test_a_present_image(clock: FakeClock) -> None:
    report = Report()
    assert ensure(ImageManager(FakeImages(present={IMAGE}), clock), "IfNotPresent", report).ok
    assert report.seen == [("Normal", "Pulled", f'Container image "{IMAGE}" already present on machine')]


def test_a_pull_with_its_durations_and_size(clock: FakeClock) -> None:
    images = SizedImages(clock=clock, pull_s=1.23456)
    report = Report()
    assert ensure(ImageManager(images, clock), "Always", report).ok
    assert report.seen == [
        ("Normal", "Pulling", f'Pulling image "{IMAGE}"'),
        ("Normal", "Pulled", f'Successfully pulled image "{IMAGE}" in 1.234s (1.234s including waiting). '
                             "Image size: 4194304 bytes."),
    ]
    assert images.calls == [("pull", IMAGE), ("status", IMAGE)]  # the size, asked after the pull


def test_the_wait_for_a_pull_slot_counts_in_the_total(clock: FakeClock) -> None:
    async def go() -> list[Seen]:
        images = SizedImages(gate=asyncio.Event())
        manager = ImageManager(images, clock)  # serialized
        first, second = Report(), Report()
        one = asyncio.create_task(manager.ensure("uid-1", "a:1", "Always", events=first))
        two = asyncio.create_task(manager.ensure("uid-2", "b:1", "Always", events=second))
        await asyncio.sleep(0.01)
        clock.advance(2)  # the first pull takes 2 s; the second waits for it
        assert images.gate is not None
        images.gate.set()
        await asyncio.gather(one, two)
        return second.seen

    seen = asyncio.run(go())
    assert seen[-1] == ("Normal", "Pulled", 'Successfully pulled image "b:1" in 0s (2s including waiting). '
                                            "Image size: 4194304 bytes.")


def test_a_failed_pull_then_its_back_off(clock: FakeClock) -> None:
    images = FakeImages(pull_errors=[NotFound("not found")])
    manager = ImageManager(images, clock)
    report = Report()
    assert ensure(manager, "Always", report).reason == "ErrImagePull"
    assert ensure(manager, "Always", report).reason == "ImagePullBackOff"
    assert report.seen == [
        ("Normal", "Pulling", f'Pulling image "{IMAGE}"'),
        ("Warning", "Failed", f'Failed to pull image "{IMAGE}": not found'),
        ("Normal", "BackOff", f'Back-off pulling image "{IMAGE}"'),
    ]


def test_an_image_that_cannot_be_inspected_or_is_never_pulled(clock: FakeClock) -> None:
    report = Report()
    broken = FakeImages(status_error=Unavailable("runtime is down"))
    assert not ensure(ImageManager(broken, clock), "IfNotPresent", report).ok
    assert not ensure(ImageManager(FakeImages(), clock), "Never", report, "busybox").ok
    assert report.seen == [
        ("Warning", "InspectFailed", f'Failed to inspect image "{IMAGE}": runtime is down'),
        ("Warning", "ErrImageNeverPull", 'Container image "busybox" is not present with pull policy of Never'),
    ]
