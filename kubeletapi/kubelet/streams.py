"""The Host side of /exec, /attach and /portForward: from names to the runtime's Streamer.

As the kubelet resolves them before it hands the stream to its runtime (so these refusals are HTTP
answers, in the WebSocket handshake too):
- an unknown pod: NotFound `pod does not exist` (404). A UID that is not the pod's is refused the
  same way, as /run does here (the kubelet's FindPod falls back to the pod's name);
- exec/attach: no running container of that name in the pod (unknown, exited, not started yet):
  `container not found ("<name>")` (the kubelet's 500, from its list of running containers);
- port-forward: a UID that is not the pod's is NotFound `pod not found` (404, the kubelet's check);
  no ready sandbox: `pod not found ("<name>_<namespace>")` (500).
A runtime that then refuses the stream (the container exited meanwhile) fails inside the stream.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from kubeletapi.api.core_v1 import Pod
from kubeletapi.errors import NotFound, Unavailable
from kubeletapi.gofmt import go_quote
from kubeletapi.pods.queries import PodQueries
from kubeletapi.runtime.streaming import Streamer, StreamOptions, StreamSession
from kubeletapi.streaming.targets import ContainerStreams, PodPorts


@dataclass(frozen=True)
class _Container:
    streamer: Streamer
    container_id: str

    async def exec(self, cmd: Sequence[str], opts: StreamOptions) -> StreamSession:
        return await self.streamer.exec_stream(self.container_id, cmd, opts)

    async def attach(self, opts: StreamOptions) -> StreamSession:
        return await self.streamer.attach(self.container_id, opts)


@dataclass(frozen=True)
class _Sandbox:
    streamer: Streamer
    sandbox_id: str

    async def connect(self, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await self.streamer.port_forward(self.sandbox_id, port)


def _pod(queries: PodQueries, namespace: str, name: str, uid: str | None, mismatch: str) -> Pod:
    pod = queries.find(namespace, name)
    if pod is None:
        raise NotFound("pod does not exist")
    if uid and pod.metadata.uid != uid:
        raise NotFound(mismatch)
    return pod


def container_streams(queries: PodQueries, streamer: Streamer, namespace: str, pod_name: str,
                      uid: str | None, container: str) -> ContainerStreams:
    """The pod's running container named `container` (its newest instance)."""
    pod = _pod(queries, namespace, pod_name, uid, "pod does not exist")
    running = queries.running_container(pod.metadata.uid, container)
    if running is None:
        raise Unavailable(f"container not found ({go_quote(container)})")
    return _Container(streamer, running.id)


def pod_ports(queries: PodQueries, streamer: Streamer, namespace: str, pod_name: str, uid: str | None) -> PodPorts:
    """The pod's ready sandbox (the newest)."""
    pod = _pod(queries, namespace, pod_name, uid, "pod not found")
    sandbox = queries.ready_sandbox(pod.metadata.uid)
    if sandbox is None:
        raise Unavailable(f"pod not found ({go_quote(f'{pod_name}_{namespace}')})")
    return _Sandbox(streamer, sandbox.id)
