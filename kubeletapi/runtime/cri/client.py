"""The gRPC side of the CRI client: endpoint, typed calls, deadlines, and the error mapping.

Calls go through a table of typed methods (path, response type, deadline) rather than the
generated service stubs, so mypy checks every request and response. Deadlines follow the kubelet:
2 minutes for ordinary calls (its --runtime-request-timeout default), the grace period on top for
StopContainer, the command's timeout on top for ExecSync, and a long one for image pulls.

gRPC statuses become kubeletapi.errors in one place (`runtime_error`):
NOT_FOUND -> NotFound, INVALID_ARGUMENT -> InvalidInput, ALREADY_EXISTS -> Conflict,
UNIMPLEMENTED -> NotSupported (callers treat optional calls as absent), UNAVAILABLE and
DEADLINE_EXCEEDED -> Unavailable naming the endpoint (Timeout, a subclass, for the latter);
anything else (containerd answers UNKNOWN for most refusals) -> Unavailable with the runtime's
message, except a container that is not running, which is InvalidInput as the Runtime protocol
promises.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import grpc
from google.protobuf.message import Message

from kubeletapi.errors import (
    Conflict,
    InvalidInput,
    KubeletError,
    NotFound,
    NotSupported,
    StartupError,
    Unavailable,
)
from kubeletapi.runtime.cri.gen import api_pb2 as pb

DEFAULT_TIMEOUT_S = 120.0  # the kubelet's runtimeRequestTimeout default
PULL_TIMEOUT_S = 3600.0  # the kubelet sets no deadline on pulls; one hour bounds a stuck one
VERSION_TIMEOUT_S = 10.0
MAX_MESSAGE_BYTES = 16 * 1024 * 1024  # the kubelet's maxMsgSize: big lists and ExecSync output
API_VERSION = "v1"
RECONNECT_MIN_MS = 100
RECONNECT_MAX_MS = 2000

Req = TypeVar("Req", bound=Message)
Resp = TypeVar("Resp", bound=Message)

# containerd reports a call on a container in the wrong state as UNKNOWN with this text.
_NOT_RUNNING = re.compile(r"container is (?:in CONTAINER_(?:EXITED|CREATED|UNKNOWN) state|not running)")


class Timeout(Unavailable):
    """The call's deadline passed (DEADLINE_EXCEEDED, from either side): callers that set a
    deadline of their own (ExecSync) tell it from other unavailability."""


@dataclass(frozen=True)
class Method(Generic[Req, Resp]):
    """One unary CRI call: `service`/`name`, what it answers, its default deadline."""

    service: str
    name: str
    request: type[Req]
    response: type[Resp]
    timeout_s: float = DEFAULT_TIMEOUT_S

    @property
    def path(self) -> str:
        return f"/runtime.v1.{self.service}/{self.name}"


def _rt(name: str, request: type[Req], response: type[Resp],
        timeout_s: float = DEFAULT_TIMEOUT_S) -> Method[Req, Resp]:
    return Method("RuntimeService", name, request, response, timeout_s)


def _img(name: str, request: type[Req], response: type[Resp],
         timeout_s: float = DEFAULT_TIMEOUT_S) -> Method[Req, Resp]:
    return Method("ImageService", name, request, response, timeout_s)


VERSION = _rt("Version", pb.VersionRequest, pb.VersionResponse, VERSION_TIMEOUT_S)
STATUS = _rt("Status", pb.StatusRequest, pb.StatusResponse)
UPDATE_RUNTIME_CONFIG = _rt("UpdateRuntimeConfig", pb.UpdateRuntimeConfigRequest, pb.UpdateRuntimeConfigResponse)
RUN_POD_SANDBOX = _rt("RunPodSandbox", pb.RunPodSandboxRequest, pb.RunPodSandboxResponse)
STOP_POD_SANDBOX = _rt("StopPodSandbox", pb.StopPodSandboxRequest, pb.StopPodSandboxResponse)
REMOVE_POD_SANDBOX = _rt("RemovePodSandbox", pb.RemovePodSandboxRequest, pb.RemovePodSandboxResponse)
POD_SANDBOX_STATUS = _rt("PodSandboxStatus", pb.PodSandboxStatusRequest, pb.PodSandboxStatusResponse)
LIST_POD_SANDBOX = _rt("ListPodSandbox", pb.ListPodSandboxRequest, pb.ListPodSandboxResponse)
CREATE_CONTAINER = _rt("CreateContainer", pb.CreateContainerRequest, pb.CreateContainerResponse)
START_CONTAINER = _rt("StartContainer", pb.StartContainerRequest, pb.StartContainerResponse)
STOP_CONTAINER = _rt("StopContainer", pb.StopContainerRequest, pb.StopContainerResponse)
REMOVE_CONTAINER = _rt("RemoveContainer", pb.RemoveContainerRequest, pb.RemoveContainerResponse)
LIST_CONTAINERS = _rt("ListContainers", pb.ListContainersRequest, pb.ListContainersResponse)
CONTAINER_STATUS = _rt("ContainerStatus", pb.ContainerStatusRequest, pb.ContainerStatusResponse)
REOPEN_CONTAINER_LOG = _rt("ReopenContainerLog", pb.ReopenContainerLogRequest, pb.ReopenContainerLogResponse)
EXEC_SYNC = _rt("ExecSync", pb.ExecSyncRequest, pb.ExecSyncResponse)
EXEC = _rt("Exec", pb.ExecRequest, pb.ExecResponse)
ATTACH = _rt("Attach", pb.AttachRequest, pb.AttachResponse)
PORT_FORWARD = _rt("PortForward", pb.PortForwardRequest, pb.PortForwardResponse)
LIST_CONTAINER_STATS = _rt("ListContainerStats", pb.ListContainerStatsRequest, pb.ListContainerStatsResponse)
POD_SANDBOX_STATS = _rt("PodSandboxStats", pb.PodSandboxStatsRequest, pb.PodSandboxStatsResponse)
LIST_POD_SANDBOX_STATS = _rt("ListPodSandboxStats", pb.ListPodSandboxStatsRequest, pb.ListPodSandboxStatsResponse)
IMAGE_STATUS = _img("ImageStatus", pb.ImageStatusRequest, pb.ImageStatusResponse)
LIST_IMAGES = _img("ListImages", pb.ListImagesRequest, pb.ListImagesResponse)
REMOVE_IMAGE = _img("RemoveImage", pb.RemoveImageRequest, pb.RemoveImageResponse)
PULL_IMAGE = _img("PullImage", pb.PullImageRequest, pb.PullImageResponse, PULL_TIMEOUT_S)
IMAGE_FS_INFO = _img("ImageFsInfo", pb.ImageFsInfoRequest, pb.ImageFsInfoResponse)


def socket_path(endpoint: str) -> str:
    """The socket of a `unix://` endpoint (a bare absolute path is accepted too, as crictl does)."""
    if endpoint.startswith("unix://"):
        path = endpoint[len("unix://"):]
    elif endpoint.startswith("/"):
        path = endpoint
    else:
        raise StartupError(f"container runtime endpoint {endpoint!r}: only unix:// endpoints are supported")
    if not path.startswith("/"):
        raise StartupError(f"container runtime endpoint {endpoint!r}: the socket path must be absolute")
    return path


def runtime_error(exc: grpc.aio.AioRpcError, method: str, endpoint: str) -> KubeletError:
    """The kubeletapi error for a failed call (see the module docstring)."""
    code, details = exc.code(), exc.details() or ""
    if code is grpc.StatusCode.NOT_FOUND:
        return NotFound(details)
    if code is grpc.StatusCode.INVALID_ARGUMENT:
        return InvalidInput(details)
    if code is grpc.StatusCode.ALREADY_EXISTS:
        return Conflict(details)
    if code is grpc.StatusCode.UNIMPLEMENTED:
        return NotSupported(f"the container runtime at {endpoint} does not implement {method}: {details}")
    if code is grpc.StatusCode.UNAVAILABLE:
        return Unavailable(f"the container runtime at {endpoint} is unavailable ({method}): {details}")
    if code is grpc.StatusCode.DEADLINE_EXCEEDED:
        return Timeout(f"{method} on the container runtime at {endpoint} timed out: {details}")
    if _NOT_RUNNING.search(details):
        return InvalidInput(f"the container is not running: {details}")
    return Unavailable(f"{method}: {details}")


class CRIClient:
    """One gRPC channel to a CRI endpoint; `call` runs one unary method with its deadline."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.socket = socket_path(endpoint)
        self._channel: grpc.aio.Channel | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._callables: dict[str, Callable[..., object]] = {}

    def _channel_here(self) -> grpc.aio.Channel:
        """The channel of the running event loop. A grpc.aio channel belongs to the loop it was made
        in, and the client may be built before any loop runs (the agent's wiring is synchronous):
        the channel is made on first use, and again if a new loop uses the client."""
        loop = asyncio.get_running_loop()
        if self._channel is None or self._loop is not loop:
            self._channel = grpc.aio.insecure_channel(
                f"unix://{self.socket}",
                options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                         ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                         # A local socket: reconnect within a second or two of the runtime's return
                         # (gRPC's default backoff grows to 120 s), on a subchannel of this channel's own.
                         ("grpc.initial_reconnect_backoff_ms", RECONNECT_MIN_MS),
                         ("grpc.min_reconnect_backoff_ms", RECONNECT_MIN_MS),
                         ("grpc.max_reconnect_backoff_ms", RECONNECT_MAX_MS),
                         ("grpc.use_local_subchannel_pool", 1)],
            )
            self._loop = loop
            self._callables.clear()
        return self._channel

    async def call(self, method: Method[Req, Resp], request: Req, timeout_s: float | None = None) -> Resp:
        channel = self._channel_here()
        stub = self._callables.get(method.path)
        if stub is None:
            stub = channel.unary_unary(
                method.path, request_serializer=_serialize, response_deserializer=method.response.FromString,
            )
            self._callables[method.path] = stub
        multicallable: grpc.aio.UnaryUnaryMultiCallable[Req, Resp] = stub  # type: ignore[assignment]
        try:
            return await multicallable(request, timeout=method.timeout_s if timeout_s is None else timeout_s)
        except grpc.aio.AioRpcError as exc:
            raise runtime_error(exc, method.name, self.endpoint) from None

    async def version(self) -> pb.VersionResponse:
        """Version, checked as the kubelet checks it at start-up: a missing socket, a runtime that
        does not answer or one that speaks another API is a StartupError naming the endpoint."""
        if not os.path.exists(self.socket):  # noqa: ASYNC240 - one stat at start-up
            raise StartupError(f"container runtime endpoint {self.endpoint}: no such socket {self.socket} "
                               "(is the runtime running?)")
        try:
            answer = await self.call(VERSION, pb.VersionRequest(version=API_VERSION))
        except NotSupported as exc:
            raise StartupError(f"container runtime endpoint {self.endpoint} does not serve CRI {API_VERSION} "
                               f"(runtime.v1.RuntimeService): {exc}") from None
        except KubeletError as exc:
            raise StartupError(f"container runtime endpoint {self.endpoint}: {exc}") from None
        if answer.runtime_api_version != API_VERSION:
            raise StartupError(
                f"container runtime endpoint {self.endpoint} ({answer.runtime_name} {answer.runtime_version}) "
                f"speaks CRI API {answer.runtime_api_version!r}; kubeletapi needs {API_VERSION!r}"
            )
        return answer

    async def close(self) -> None:
        """Close the channel (of the running loop; one left by an ended loop is dropped)."""
        channel, loop = self._channel, self._loop
        self._channel, self._loop = None, None
        self._callables.clear()
        if channel is not None and loop is asyncio.get_running_loop():
            await channel.close()


def _serialize(message: Message) -> bytes:
    return message.SerializeToString()
