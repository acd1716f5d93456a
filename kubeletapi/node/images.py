"""status.images: the runtime's images as the kubelet's Images setter reports them: largest first,
at most nodeStatusMaxImages (50), each with its repo digests then tags, at most 5 names. The list
is the image manager's cache, refreshed every 30 s; a runtime that cannot answer keeps the last
list (said once in the log)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Protocol

from kubeletapi.clock import Clock
from kubeletapi.errors import KubeletError
from kubeletapi.runtime.types import Image

log = logging.getLogger(__name__)
MAX_IMAGES = 50  # nodeStatusMaxImages
MAX_NAMES = 5  # MaxNamesPerImageInNodeStatus
REFRESH_S = 30.0


class ImageLister(Protocol):
    async def list_images(self) -> Sequence[Image]: ...


def status_images(images: Sequence[Image], limit: int = MAX_IMAGES) -> list[dict[str, Any]]:
    largest = sorted(images, key=lambda i: i.size, reverse=True)[:limit]
    return [{"names": [*i.digests, *i.tags][:MAX_NAMES], "sizeBytes": i.size} for i in largest]


class NodeImages:
    def __init__(self, runtime: ImageLister | None, clock: Clock, refresh_s: float = REFRESH_S) -> None:
        self._runtime = runtime
        self._clock = clock
        self._refresh_s = refresh_s
        self._images: list[dict[str, Any]] = []
        self._at = float("-inf")
        self._failing = False

    async def __call__(self) -> list[dict[str, Any]]:
        """The list for the next status (the process runtime has no images: empty)."""
        if self._runtime is None or self._clock.monotonic() - self._at < self._refresh_s:
            return self._images
        self._at = self._clock.monotonic()
        try:
            self._images = status_images(await self._runtime.list_images())
        except KubeletError as exc:
            if not self._failing:
                log.warning("cannot list the runtime's images for the node status: %s; keeping the last list", exc)
            self._failing = True
            return self._images
        self._failing = False
        return self._images
