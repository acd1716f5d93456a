"""status.images (node/images.py): largest first, 50 at most, digests then tags (5 names at most),
refreshed every 30 s, the last list kept while the runtime cannot answer."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

import pytest

from kubeletapi.clock import FakeClock
from kubeletapi.errors import Unavailable
from kubeletapi.node.images import NodeImages, status_images
from kubeletapi.runtime.types import Image


def image(n: int, tags: int = 1, digests: int = 1) -> Image:
    return Image(id=f"sha256:{n}", ref="", size=n * 1000, tags=tuple(f"r/i{n}:t{k}" for k in range(tags)),
                 digests=tuple(f"r/i{n}@sha256:{k}" for k in range(digests)))


class Lister:
    def __init__(self, images: Sequence[Image]) -> None:
        self.images = list(images)
        self.calls = 0
        self.down = False

    async def list_images(self) -> Sequence[Image]:
        self.calls += 1
        if self.down:
            raise Unavailable("containerd is restarting")
        return self.images


def test_largest_first_fifty_at_most_digests_then_tags() -> None:
    listed = status_images([image(n, tags=4, digests=3) for n in range(1, 61)])
    assert len(listed) == 50 and listed[0]["sizeBytes"] == 60000 and listed[-1]["sizeBytes"] == 11000
    assert listed[0]["names"] == ["r/i60@sha256:0", "r/i60@sha256:1", "r/i60@sha256:2", "r/i60:t0", "r/i60:t1"]


def test_refreshed_every_30_s_and_kept_through_a_failure(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    lister = Lister([image(1)])
    images = NodeImages(lister, clock)
    assert asyncio.run(images())[0]["sizeBytes"] == 1000
    lister.images = [image(2)]
    assert asyncio.run(images())[0]["sizeBytes"] == 1000 and lister.calls == 1  # cached
    clock.advance(30)
    lister.down = True
    with caplog.at_level(logging.WARNING):
        assert asyncio.run(images())[0]["sizeBytes"] == 1000  # the last list
        clock.advance(30)
        asyncio.run(images())
    assert caplog.text.count("cannot list the runtime's images") == 1
    lister.down = False
    clock.advance(30)
    assert asyncio.run(images())[0]["sizeBytes"] == 2000


def test_the_process_runtime_has_none() -> None:
    assert asyncio.run(NodeImages(None, FakeClock())()) == []
