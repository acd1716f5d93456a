"""What the bridges need from the node, once the request's pod and container are resolved.

The composition root implements these over the runtime's Streamer (kubeletapi.runtime.streaming);
the HTTP layer gets them from Host before it accepts a WebSocket, so an unknown pod or container is
refused in the handshake, as the kubelet refuses it before it proxies to the runtime.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol

from kubeletapi.runtime.streaming import StreamOptions, StreamSession


class ContainerStreams(Protocol):
    """A running container, for /exec and /attach."""

    async def exec(self, cmd: Sequence[str], opts: StreamOptions) -> StreamSession:
        """Start `cmd` in the container (KubeletError when the runtime refuses)."""
        ...

    async def attach(self, opts: StreamOptions) -> StreamSession:
        """Join the container's streams (KubeletError when the runtime refuses)."""
        ...


class PodPorts(Protocol):
    """A pod's network, for /portForward."""

    @property
    def sandbox_id(self) -> str:
        """The pod sandbox (the kubelet's CRI streaming server names the pod by it in errors)."""
        ...

    async def connect(self, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A TCP connection to `port` in the pod; KubeletError (message for the client) if not."""
        ...
