"""CRIStatsSource (runtime/cri/stats.py) against fake CRI runtimes on unix sockets: the CRI stats
messages as runtime.stats values (unset counters None, times from the runtime or the cycle), the
per-sandbox fallback when ListPodSandboxStats fails as a whole, and the optional calls a runtime
lacks (asked once, then never again)."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from kubeletapi.cgroups.stats import MemoryStats
from kubeletapi.errors import NotSupported
from kubeletapi.runtime.cri.gen import api_pb2 as pb
from kubeletapi.runtime.cri.runtime import CRIRuntime
from kubeletapi.runtime.stats import ImageFs, RuntimeStats, RuntimeUsage
from kubeletapi.runtime.types import POD_UID
from tests.cri.fakeruntime import Handler, grpc_server, image_service, runtime_service, version_answer

NOW = 1_700_000_000_000_000_000
T = NOW - 5_000_000_000  # what the runtime stamps its figures with
Context = grpc.aio.ServicerContext[Any, Any]


def u64(value: int) -> pb.UInt64Value:
    return pb.UInt64Value(value=value)


def container(cid: str, uid: str = "", cpu_s: int = 2) -> pb.ContainerStats:
    return pb.ContainerStats(
        attributes=pb.ContainerAttributes(id=cid, metadata=pb.ContainerMetadata(name="app"),
                                          labels={POD_UID: uid} if uid else {}),
        cpu=pb.CpuUsage(timestamp=T, usage_core_nano_seconds=u64(cpu_s * 10**9)),  # no usage_nano_cores
        memory=pb.MemoryUsage(timestamp=T - 1, working_set_bytes=u64(300), rss_bytes=u64(200)),  # no usage_bytes
        writable_layer=pb.FilesystemUsage(timestamp=T, used_bytes=u64(4096)),  # no inodes_used
    )


CONTAINER = RuntimeUsage(T, cpu_usage_ns=2 * 10**9, memory=MemoryStats(usage=300, working_set=300, rss=200),
                         rootfs_used=4096)


def pod(uid: str, sandbox_id: str, *containers: pb.ContainerStats) -> pb.PodSandboxStats:
    return pb.PodSandboxStats(
        attributes=pb.PodSandboxAttributes(id=sandbox_id, metadata=pb.PodSandboxMetadata(name="web", uid=uid)),
        linux=pb.LinuxPodSandboxStats(
            cpu=pb.CpuUsage(usage_core_nano_seconds=u64(3 * 10**9), usage_nano_cores=u64(123)),  # no timestamp
            memory=pb.MemoryUsage(working_set_bytes=u64(500), usage_bytes=u64(700), page_faults=u64(9),
                                  major_page_faults=u64(1)),
            process=pb.ProcessUsage(process_count=u64(3)),
            containers=list(containers),
        ),
    )


class Calls:
    """Counts the calls the fake runtime answered (or refused)."""

    def __init__(self) -> None:
        self.count: Counter[str] = Counter()

    def answer(self, name: str, reply: Callable[[Any], Any]) -> Handler:
        async def handler(request: Any, context: Context) -> Any:
            self.count[name] += 1
            return reply(request)
        return handler

    def fail(self, name: str, code: grpc.StatusCode, details: str) -> Handler:
        async def handler(request: Any, context: Context) -> Any:
            self.count[name] += 1
            await context.abort(code, details)
        return handler


def stats_of(tmp_path: Path, services: list[grpc.GenericRpcHandler], cycles: int = 1) -> list[RuntimeStats]:
    async def scenario() -> list[RuntimeStats]:
        async with grpc_server(tmp_path / "cri.sock", *services) as endpoint:
            runtime = CRIRuntime(endpoint)
            try:
                source = runtime.stats_source(lambda: NOW)
                return [await source.runtime_stats() for _ in range(cycles)]
            finally:
                await runtime.close()
    return asyncio.run(scenario())


def test_pod_and_container_stats_and_the_image_filesystem(tmp_path: Path) -> None:
    calls = Calls()
    listed = pb.ListPodSandboxStatsResponse(stats=[pod("uid-1", "sb-1", container("c1", "uid-1"))])
    services = [
        runtime_service(ListPodSandboxStats=calls.answer("ListPodSandboxStats", lambda _: listed)),
        image_service(ImageFsInfo=calls.answer("ImageFsInfo", lambda _: pb.ImageFsInfoResponse(image_filesystems=[
            pb.FilesystemUsage(timestamp=T, used_bytes=u64(1)),  # no mountpoint: skipped
            pb.FilesystemUsage(fs_id=pb.FilesystemIdentifier(mountpoint="/var/lib/containerd"),
                               used_bytes=u64(7 << 20), inodes_used=u64(50)),  # no timestamp
        ]))),
    ]
    (stats,) = stats_of(tmp_path, services)
    assert stats == RuntimeStats(
        containers={"c1": CONTAINER},
        pods={"uid-1": RuntimeUsage(NOW, cpu_usage_ns=3 * 10**9, nano_cores=123, process_count=3, memory=MemoryStats(
            usage=700, working_set=500, pgfault=9, pgmajfault=1))},
        image_fs=ImageFs(Path("/var/lib/containerd"), 7 << 20, 50, NOW),
    )


def test_without_pod_stats_or_image_fs_each_is_asked_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    calls = Calls()
    listed = pb.ListContainerStatsResponse(stats=[container("c1", "uid-1"), container("not-a-pod")])
    services = [runtime_service(ListContainerStats=calls.answer("ListContainerStats", lambda _: listed)),
                image_service(ImageFsInfo=calls.fail("ImageFsInfo", grpc.StatusCode.UNIMPLEMENTED, "no"))]
    caplog.set_level(logging.INFO, logger="kubeletapi.runtime.cri.stats")
    first, second = stats_of(tmp_path, services, cycles=2)
    assert first == second == RuntimeStats(containers={"c1": CONTAINER}, pods={}, image_fs=None)
    assert calls.count == {"ListContainerStats": 2, "ImageFsInfo": 1}
    assert "ListPodSandboxStats" in caplog.text and "pod figures come from cgroups" in caplog.text
    assert "no image filesystem figures" in caplog.text


def test_when_the_list_fails_each_ready_sandbox_is_asked_alone(tmp_path: Path) -> None:
    calls = Calls()
    sandboxes = pb.ListPodSandboxResponse(items=[
        pb.PodSandbox(id=f"sb-{n}", metadata=pb.PodSandboxMetadata(name=f"p{n}", uid=f"uid-{n}", namespace="ns"),
                      state=state)
        for n, state in ((1, pb.SANDBOX_READY), (2, pb.SANDBOX_READY), (3, pb.SANDBOX_NOTREADY))
    ])

    def sandbox_status(request: pb.PodSandboxStatusRequest) -> pb.PodSandboxStatusResponse:
        (item,) = [i for i in sandboxes.items if i.id == request.pod_sandbox_id]
        return pb.PodSandboxStatusResponse(status=pb.PodSandboxStatus(id=item.id, metadata=item.metadata))

    async def one_sandbox(request: pb.PodSandboxStatsRequest, context: Context) -> pb.PodSandboxStatsResponse:
        calls.count["PodSandboxStats"] += 1
        if request.pod_sandbox_id != "sb-1":
            await context.abort(grpc.StatusCode.UNKNOWN, "no cgroup")
        return pb.PodSandboxStatsResponse(stats=pod("uid-1", "sb-1", container("c1", "uid-1")))

    def containers_of(request: pb.ListContainerStatsRequest) -> pb.ListContainerStatsResponse:
        assert request.filter.pod_sandbox_id == "sb-2"
        return pb.ListContainerStatsResponse(stats=[container("c2", "uid-2", cpu_s=4)])

    services = [runtime_service(
        ListPodSandboxStats=calls.fail("ListPodSandboxStats", grpc.StatusCode.UNKNOWN, "sandbox sb-2: no cgroup"),
        ListPodSandbox=calls.answer("ListPodSandbox", lambda _: sandboxes),
        PodSandboxStatus=calls.answer("PodSandboxStatus", sandbox_status),
        PodSandboxStats=one_sandbox,
        ListContainerStats=calls.answer("ListContainerStats", containers_of),
    )]
    (stats,) = stats_of(tmp_path, services)
    assert stats.containers == {"c1": CONTAINER, "c2": RuntimeUsage(
        T, cpu_usage_ns=4 * 10**9, memory=MemoryStats(usage=300, working_set=300, rss=200), rootfs_used=4096)}
    assert set(stats.pods) == {"uid-1", "uid-2"}
    assert stats.pods["uid-2"] == RuntimeUsage(NOW)  # its containers only
    assert stats.image_fs is None  # the runtime has no ImageService
    assert calls.count["PodSandboxStats"] == 2 and calls.count["ListContainerStats"] == 1


def test_a_runtime_without_stats_fails_the_cycle(tmp_path: Path) -> None:
    with pytest.raises(NotSupported, match="ListContainerStats"):
        stats_of(tmp_path, [runtime_service(Version=version_answer())])
