"""The CRI client: endpoints, the gRPC status mapping, and the start-up Version check against real
gRPC servers on unix sockets (a fake runtime, a server that is not CRI, a non-gRPC socket, and the
session's private containerd), up to `python -m kubeletapi` refusing to start."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import grpc
import pytest

from kubeletapi.errors import (
    Conflict,
    InvalidInput,
    KubeletError,
    NotFound,
    NotSupported,
    StartupError,
    Unavailable,
)
from kubeletapi.node.images import status_images
from kubeletapi.runtime.cri.client import CRIClient, Timeout, runtime_error, socket_path
from kubeletapi.runtime.cri.gen import api_pb2 as pb
from kubeletapi.runtime.cri.runtime import CRIRuntime
from kubeletapi.runtime.types import Image
from tests.cri.fakeruntime import grpc_server, runtime_service, version_answer
from tests.cri.fixtures import CRIEnv
from tests.helpers import AgentProcess, agent_args, purge

T = TypeVar("T")
ENDPOINT = "unix:///run/example/cri.sock"


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


# --- endpoints --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("endpoint", "path"), [
    ("unix:///run/containerd/containerd.sock", "/run/containerd/containerd.sock"),
    ("/run/containerd/containerd.sock", "/run/containerd/containerd.sock"),
])
def test_socket_path_accepts_absolute_unix_endpoints(endpoint: str, path: str) -> None:
    assert socket_path(endpoint) == path


@pytest.mark.parametrize("endpoint", [
    "tcp://127.0.0.1:10010", "npipe:////./pipe/containerd", "unix://run/containerd.sock", "containerd.sock", "",
])
def test_socket_path_refuses_other_endpoints(endpoint: str) -> None:
    with pytest.raises(StartupError) as caught:
        socket_path(endpoint)
    assert repr(endpoint) in str(caught.value)


def test_client_refuses_a_tcp_endpoint_before_dialling() -> None:
    with pytest.raises(StartupError, match=re.escape("tcp://127.0.0.1:10010")):
        CRIClient("tcp://127.0.0.1:10010")


# --- gRPC statuses ----------------------------------------------------------------------------------


def rpc_error(code: grpc.StatusCode, details: str) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, initial_metadata=grpc.aio.Metadata(), trailing_metadata=grpc.aio.Metadata(),
                                details=details)


@pytest.mark.parametrize(("code", "details", "kind", "names_endpoint"), [
    (grpc.StatusCode.NOT_FOUND, 'container "abc" not found', NotFound, False),
    (grpc.StatusCode.INVALID_ARGUMENT, "tty and stderr cannot both be true", InvalidInput, False),
    (grpc.StatusCode.ALREADY_EXISTS, 'name "web_pod_ns_uid_0" is reserved', Conflict, False),
    (grpc.StatusCode.UNIMPLEMENTED, "unknown method ReopenContainerLog", NotSupported, True),
    (grpc.StatusCode.UNAVAILABLE, "connection refused", Unavailable, True),
    (grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded", Timeout, True),
    # containerd answers UNKNOWN for most refusals: the runtime's message, as Unavailable
    (grpc.StatusCode.UNKNOWN, "failed to create containerd task: oci runtime error", Unavailable, False),
    (grpc.StatusCode.INTERNAL, "stream terminated", Unavailable, False),
    (grpc.StatusCode.PERMISSION_DENIED, "denied", Unavailable, False),
    (grpc.StatusCode.FAILED_PRECONDITION, "precondition", Unavailable, False),
    (grpc.StatusCode.RESOURCE_EXHAUSTED, "message larger than max", Unavailable, False),
    # ... except a container that is not running, which the Runtime protocol reports as InvalidInput
    (grpc.StatusCode.UNKNOWN, "container is in CONTAINER_EXITED state", InvalidInput, False),
    (grpc.StatusCode.UNKNOWN, "container is in CONTAINER_CREATED state", InvalidInput, False),
    (grpc.StatusCode.UNKNOWN, "cannot exec in a stopped state: container is not running", InvalidInput, False),
])
def test_runtime_error_maps_each_status(code: grpc.StatusCode, details: str, kind: type[KubeletError],
                                        names_endpoint: bool) -> None:
    error = runtime_error(rpc_error(code, details), "ExecSync", ENDPOINT)
    assert type(error) is kind
    assert details in str(error)
    if names_endpoint:
        assert ENDPOINT in str(error)


def test_a_timeout_is_unavailable_too() -> None:
    error = runtime_error(rpc_error(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded"), "ExecSync", ENDPOINT)
    assert isinstance(error, Unavailable)
    assert "ExecSync" in str(error)


def test_unimplemented_names_the_call() -> None:
    error = runtime_error(rpc_error(grpc.StatusCode.UNIMPLEMENTED, ""), "ListPodSandboxStats", ENDPOINT)
    assert "ListPodSandboxStats" in str(error)


# --- fake runtimes on unix sockets ------------------------------------------------------------------


@contextlib.asynccontextmanager
async def plain_server(path: Path, payload: bytes) -> AsyncIterator[str]:
    """A unix socket that is no gRPC server: it writes `payload` (maybe nothing) and hangs up on
    every connection."""
    async def greet(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(payload)
        with contextlib.suppress(OSError):
            await writer.drain()
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()

    server = await asyncio.start_unix_server(greet, path=str(path))
    try:
        yield f"unix://{path}"
    finally:
        server.close()
        await server.wait_closed()


async def check_version(endpoint: str) -> pb.VersionResponse:
    client = CRIClient(endpoint)
    try:
        return await client.version()
    finally:
        await client.close()


def test_version_on_a_missing_socket(tmp_path: Path) -> None:
    endpoint = f"unix://{tmp_path}/nope.sock"
    with pytest.raises(StartupError) as caught:
        run(check_version(endpoint))
    message = str(caught.value)
    assert f"{tmp_path}/nope.sock" in message
    assert "is the runtime running?" in message


def test_version_on_a_grpc_server_without_cri(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with grpc_server(tmp_path / "h.sock", with_health=True) as endpoint:
            with pytest.raises(StartupError) as caught:
                await check_version(endpoint)
            message = str(caught.value)
            assert endpoint in message
            assert "does not serve CRI v1" in message

    run(scenario())


def test_version_on_a_runtime_speaking_another_api(tmp_path: Path) -> None:
    async def scenario() -> None:
        handler = runtime_service(Version=version_answer("v1alpha2", name="oldruntime", version="1.4.0"))
        async with grpc_server(tmp_path / "o.sock", handler) as endpoint:
            with pytest.raises(StartupError) as caught:
                await check_version(endpoint)
            message = str(caught.value)
            assert endpoint in message
            assert "oldruntime 1.4.0" in message
            assert "'v1alpha2'" in message

    run(scenario())


@pytest.mark.parametrize("payload", [b"", b"SSH-2.0-not-grpc\r\nHTTP/1.1 400 Bad Request\r\n\r\n"],
                         ids=["hangs-up", "garbage"])
def test_version_on_a_socket_that_is_not_grpc(tmp_path: Path, payload: bytes) -> None:
    """Fails (well within VERSION_TIMEOUT_S: gRPC gives up on the handshake) with a StartupError."""
    async def scenario() -> None:
        async with plain_server(tmp_path / "g.sock", payload) as endpoint:
            with pytest.raises(StartupError) as caught:
                await check_version(endpoint)
            assert endpoint in str(caught.value)

    run(scenario())


def test_version_on_a_fake_v1_runtime(tmp_path: Path) -> None:
    async def scenario() -> pb.VersionResponse:
        async with grpc_server(tmp_path / "f.sock", runtime_service(Version=version_answer())) as endpoint:
            return await check_version(endpoint)

    answer = run(scenario())
    assert (answer.version, answer.runtime_name, answer.runtime_api_version) == ("v1", "fakeruntime", "v1")


@pytest.mark.cri
def test_version_on_the_private_containerd(cri_env: CRIEnv) -> None:
    answer = run(check_version(cri_env.endpoint))
    assert answer.runtime_name == "containerd"
    assert answer.runtime_api_version == "v1"
    assert answer.runtime_version


@pytest.mark.cri
def test_connect_to_the_private_containerd(cri_env: CRIEnv) -> None:
    async def scenario() -> tuple[str, str]:
        runtime = await CRIRuntime.connect(cri_env.endpoint)
        try:
            version = await runtime.version()
            return version.runtime_name, version.runtime_api_version
        finally:
            await runtime.close()

    assert run(scenario()) == ("containerd", "v1")


@pytest.mark.cri
def test_list_images_and_the_node_status_list(cri_env: CRIEnv) -> None:
    async def scenario() -> list[Image]:
        runtime = await CRIRuntime.connect(cri_env.endpoint)
        try:
            return list(await runtime.list_images())
        finally:
            await runtime.close()

    images = run(scenario())
    tags = {t for i in images for t in i.tags}
    assert {"localhost/busybox:latest", "localhost/pause:3.9"} <= tags
    listed = status_images(images)
    assert [e["sizeBytes"] for e in listed] == sorted((i.size for i in images), reverse=True)
    assert all(e["sizeBytes"] > 0 and 0 < len(e["names"]) <= 5 for e in listed)
    assert any("localhost/busybox:latest" in e["names"] for e in listed)


# --- optional calls and connect() ---------------------------------------------------------------------


def test_a_call_the_runtime_lacks_is_not_supported(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with grpc_server(tmp_path / "v.sock", runtime_service(Version=version_answer())) as endpoint:
            runtime = await CRIRuntime.connect(endpoint)
            try:
                with pytest.raises(NotSupported, match="ReopenContainerLog"):
                    await runtime.reopen_container_log("0123abcd")
                with pytest.raises(NotSupported, match="Status"):
                    await runtime.status()
            finally:
                await runtime.close()

    run(scenario())


def test_connect_closes_its_channel_when_the_check_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    closed: list[str] = []
    close = CRIClient.close

    async def recording_close(self: CRIClient) -> None:
        closed.append(self.endpoint)
        await close(self)

    monkeypatch.setattr(CRIClient, "close", recording_close)

    async def scenario() -> None:
        old = runtime_service(Version=version_answer("v1alpha2"))
        async with grpc_server(tmp_path / "o.sock", old) as endpoint:
            with pytest.raises(StartupError, match="v1alpha2"):
                await CRIRuntime.connect(endpoint)
            assert closed == [endpoint]
        async with grpc_server(tmp_path / "n.sock", runtime_service(Version=version_answer())) as endpoint:
            runtime = await CRIRuntime.connect(endpoint)
            try:
                assert (await runtime.check()).runtime_api_version == "v1"
            finally:
                await runtime.close()

    run(scenario())


def test_connect_to_a_missing_socket_fails_and_a_second_connect_works(tmp_path: Path) -> None:
    async def scenario() -> None:
        endpoint = f"unix://{tmp_path}/later.sock"
        with pytest.raises(StartupError, match="is the runtime running"):
            await CRIRuntime.connect(endpoint)
        async with grpc_server(tmp_path / "later.sock", runtime_service(Version=version_answer())):
            runtime = await CRIRuntime.connect(endpoint)
            await runtime.close()

    run(scenario())


# --- the agent ----------------------------------------------------------------------------------------


@pytest.mark.e2e
def test_agent_refuses_to_start_without_its_runtime(tmp_path: Path) -> None:
    endpoint = f"unix://{tmp_path}/nope.sock"
    args = agent_args(tmp_path, "--container-runtime=remote", "--container-runtime-endpoint", endpoint)
    agent = AgentProcess(args)
    try:
        code, output = agent.wait_exit(60)
    finally:
        if agent.proc.poll() is None:
            agent.kill()
        purge(args)
    assert code == 1, output
    assert endpoint in output
    assert "is the runtime running?" in output
