"""The agent's side of /exec, /attach and /portForward (kubelet/streams.py): from the request's
names to a running container or a ready sandbox, and the kubelet's refusals when there is none.

The HTTP tests (tests/streaming/test_routes.py) serve a FakeHost answering as these do for a pod
the node does not have; this holds the agent's own answers to that."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import pytest

from kubeletapi.api.core_v1 import ObjectMeta, Pod
from kubeletapi.errors import KubeletError, NotFound, Unavailable
from kubeletapi.kubelet.streams import container_streams, pod_ports
from kubeletapi.pods.podcache import PodCache, PodRecord
from kubeletapi.pods.queries import PodQueries
from kubeletapi.runtime import types as rt
from kubeletapi.runtime.streaming import StreamOptions, StreamSession

UID = "uid-1"


class Pods:
    """The pod manager's lookup over a fixed set of pods."""

    def __init__(self, *pods: Pod) -> None:
        self._pods = {(p.metadata.namespace, p.metadata.name): p for p in pods}

    def find(self, namespace: str, name: str) -> Pod | None:
        return self._pods.get((namespace, name))


class RecordingStreamer:
    """A Streamer that records what it is asked and refuses to stream."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    async def exec_stream(self, container_id: str, cmd: Sequence[str], opts: StreamOptions) -> StreamSession:
        self.calls.append(("exec", container_id))
        raise Unavailable("no streams here")

    async def attach(self, container_id: str, opts: StreamOptions) -> StreamSession:
        self.calls.append(("attach", container_id))
        raise Unavailable("no streams here")

    async def port_forward(self, sandbox_id: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        self.calls.append(("port-forward", f"{sandbox_id}:{port}"))
        raise Unavailable("no streams here")


def container(name: str, cid: str, attempt: int, state: rt.ContainerState) -> rt.ContainerStatus:
    return rt.ContainerStatus(id=cid, sandbox_id="sb", name=name, attempt=attempt, state=state, image="i",
                              image_ref="i", created_at=attempt)


def sandbox(sid: str, created_at: int, state: rt.SandboxState) -> rt.Sandbox:
    return rt.Sandbox(id=sid, meta=rt.PodMeta("web", "default", UID), state=state, created_at=created_at)


def queries(record: PodRecord | None = None) -> PodQueries:
    cache = PodCache()
    if record is not None:
        cache.put(UID, record)
    return PodQueries(Pods(Pod(metadata=ObjectMeta(name="web", namespace="default", uid=UID))), cache)


def refusal(call: Callable[[], object]) -> tuple[type[KubeletError], str]:
    with pytest.raises(KubeletError) as caught:
        call()
    return type(caught.value), str(caught.value)


@pytest.mark.parametrize(
    ("namespace", "name", "uid"),
    [("default", "nopod", None), ("default", "nopod", "uid"), ("other", "web", None)],
)
def test_unknown_pod(namespace: str, name: str, uid: str | None) -> None:
    streamer = RecordingStreamer()
    assert refusal(lambda: container_streams(queries(), streamer, namespace, name, uid, "c")) == (
        NotFound, "pod does not exist")
    assert refusal(lambda: pod_ports(queries(), streamer, namespace, name, uid)) == (NotFound, "pod does not exist")


def test_another_uid() -> None:
    streamer = RecordingStreamer()
    assert refusal(lambda: container_streams(queries(), streamer, "default", "web", "uid-2", "c")) == (
        NotFound, "pod does not exist")
    assert refusal(lambda: pod_ports(queries(), streamer, "default", "web", "uid-2")) == (NotFound, "pod not found")


def test_no_running_container_or_ready_sandbox() -> None:
    record = PodRecord(
        sandboxes=(sandbox("sb-0", 1, rt.SandboxState.NOTREADY),),
        containers=(container("main", "c-0", 0, rt.ContainerState.EXITED),),
    )
    streamer = RecordingStreamer()
    assert refusal(lambda: container_streams(queries(record), streamer, "default", "web", UID, "main")) == (
        Unavailable, 'container not found ("main")')
    assert refusal(lambda: pod_ports(queries(record), streamer, "default", "web", None)) == (
        Unavailable, 'pod not found ("web_default")')


def test_the_newest_running_container_and_ready_sandbox() -> None:
    record = PodRecord(
        sandboxes=(sandbox("sb-1", 1, rt.SandboxState.READY), sandbox("sb-2", 2, rt.SandboxState.READY)),
        containers=(container("main", "c-1", 1, rt.ContainerState.RUNNING),
                    container("main", "c-2", 2, rt.ContainerState.RUNNING),
                    container("main", "c-3", 3, rt.ContainerState.EXITED)),
    )
    streamer = RecordingStreamer()
    streams = container_streams(queries(record), streamer, "default", "web", UID, "main")
    ports = pod_ports(queries(record), streamer, "default", "web", UID)
    assert ports.sandbox_id == "sb-2"

    async def use() -> None:
        for call in (streams.exec(["ls"], StreamOptions()), streams.attach(StreamOptions()), ports.connect(80)):
            with pytest.raises(Unavailable):
                await call

    asyncio.run(use())
    assert streamer.calls == [("exec", "c-2"), ("attach", "c-2"), ("port-forward", "sb-2:80")]
