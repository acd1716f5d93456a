"""CRIRuntime: runtime.interface.Runtime, runtime.streaming.Streamer and the image calls, over a
CRI v1 endpoint (containerd) with grpc.aio.

What kubeletapi keeps about the runtime's objects is a cache, never state: everything is listed
from the runtime, so a restarted agent re-adopts every sandbox and container (by their
io.kubernetes.* labels) without files of its own.
- Each sandbox's PodSandboxConfig, pause image and addresses (sandboxes.SandboxCache).
- Container statuses by id: a CRI ContainerStatus changes only with the container's state, so a
  listing fetches the status of a container only when its listed state differs from the cached
  one; a relist of an unchanged node is one ListContainers call.

Pod cgroups: like the kubelet's pod container manager, kubeletapi creates each pod's
cgroup_parent with the pod-level limits (`cgroups`, the same writer the process runtime uses)
before RunPodSandbox; runc puts the pause container and every container in a child named by its
id. runc never removes cgroup_parent (nor the directories it made for controllers kubeletapi does
not write): once the sandbox is removed the writer deletes it in every hierarchy.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from kubeletapi.cgroups.writers import ResourceConfig
from kubeletapi.errors import InvalidInput, KubeletError, NotFound, Unavailable
from kubeletapi.runtime.cri import client as rpc
from kubeletapi.runtime.cri import convert
from kubeletapi.runtime.cri.client import CRIClient, Timeout
from kubeletapi.runtime.cri.gen import api_pb2 as pb
from kubeletapi.runtime.cri.sandboxes import SandboxCache
from kubeletapi.runtime.cri.stats import CRIStatsSource
from kubeletapi.runtime.cri.streams import PortForwardBridges, open_session
from kubeletapi.runtime.streaming import StreamOptions, StreamSession
from kubeletapi.runtime.types import (
    POD_UID,
    AuthConfig,
    ContainerConfig,
    ContainerState,
    ContainerStatus,
    ExecResult,
    Image,
    RuntimeVersion,
    Sandbox,
    SandboxConfig,
)

log = logging.getLogger(__name__)

EXEC_GRACE_S = 5.0  # ExecSync deadline beyond the command's own timeout
ATTACH_EXIT_WAIT_S = 2.0  # an attach ended: how long the container's exit may lag behind
CGROUP_RMDIR_TRIES = 10


class PodCgroups(Protocol):
    """What the runtime asks of a cgroup writer (kubeletapi.cgroups): a pod's cgroup and its limits."""

    def create(self, path: str) -> None: ...

    def set_resources(self, path: str, config: ResourceConfig) -> None: ...

    def delete(self, path: str) -> None: ...


@dataclass(frozen=True)
class RuntimeCondition:
    type: str  # RuntimeReady, NetworkReady, ...
    status: bool
    reason: str = ""
    message: str = ""


class CRIRuntime:
    """A CRI v1 runtime; build it with `await CRIRuntime.connect(endpoint)`, end with close()."""

    def __init__(self, endpoint: str, *, resolv_conf: Path = convert.RESOLV_CONF, cgroups: PodCgroups | None = None,
                 runtime_handler: str = "") -> None:
        self._client = CRIClient(endpoint)
        self._resolv_conf = resolv_conf
        self._cgroups = cgroups
        self._handler = runtime_handler
        self._sandboxes = SandboxCache(self._client)
        self.pod_network = False  # a pod CIDR was given to the runtime (update_pod_cidr)
        self._statuses: dict[str, ContainerStatus] = {}
        self._bridges = PortForwardBridges()

    @classmethod
    async def connect(cls, endpoint: str, *, resolv_conf: Path = convert.RESOLV_CONF, cgroups: PodCgroups | None = None,
                      runtime_handler: str = "") -> CRIRuntime:
        """A runtime whose endpoint answered Version with CRI v1 (else StartupError)."""
        runtime = cls(endpoint, resolv_conf=resolv_conf, cgroups=cgroups, runtime_handler=runtime_handler)
        try:
            await runtime.check()
        except BaseException:
            await runtime.close()
            raise
        return runtime

    async def check(self) -> RuntimeVersion:
        """The start-up check: the endpoint answers Version with CRI v1, else StartupError naming it."""
        answer = await self._client.version()
        return RuntimeVersion(answer.runtime_name, answer.runtime_version, answer.runtime_api_version)

    @property
    def endpoint(self) -> str:
        return self._client.endpoint

    async def close(self) -> None:
        await self._bridges.close()
        await self._client.close()

    async def version(self) -> RuntimeVersion:
        answer = await self._client.call(rpc.VERSION, pb.VersionRequest(version=rpc.API_VERSION))
        return RuntimeVersion(answer.runtime_name, answer.runtime_version, answer.runtime_api_version)

    async def status(self) -> tuple[RuntimeCondition, ...]:
        answer = await self._client.call(rpc.STATUS, pb.StatusRequest())
        return tuple(RuntimeCondition(c.type, c.status, c.reason, c.message) for c in answer.status.conditions)

    async def update_pod_cidr(self, pod_cidr: str) -> None:
        """UpdateRuntimeConfig with the node's pod CIDR: the runtime's CNI (its conf dir holds
        kubeletapi's conflist) gives pods that are not hostNetwork their own network from now on."""
        config = pb.RuntimeConfig(network_config=pb.NetworkConfig(pod_cidr=pod_cidr))
        await self._client.call(rpc.UPDATE_RUNTIME_CONFIG, pb.UpdateRuntimeConfigRequest(runtime_config=config))
        self.pod_network = True

    # --- sandboxes -----------------------------------------------------------------------------
    async def run_pod_sandbox(self, config: SandboxConfig) -> str:
        # The kubelet creates the log directory, not the runtime (one mkdir: cheap enough on the loop).
        Path(config.log_directory).mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240
        if self._cgroups is not None and config.cgroup_parent:
            self._cgroups.create(config.cgroup_parent)
            res = config.resources
            self._cgroups.set_resources(config.cgroup_parent, ResourceConfig(
                cpu_shares=res.cpu_shares, cpu_quota=res.cpu_quota, cpu_period=res.cpu_period,
                memory_limit=res.memory_limit, pids_limit=res.pids_limit))
        request = convert.sandbox_config(config, convert.dns_config(self._resolv_conf), self.pod_network)
        answer = await self._client.call(
            rpc.RUN_POD_SANDBOX, pb.RunPodSandboxRequest(config=request, runtime_handler=self._handler))
        await self._sandboxes.created(answer.pod_sandbox_id, request)
        return answer.pod_sandbox_id

    async def stop_pod_sandbox(self, sandbox_id: str) -> None:
        await self._client.call(rpc.STOP_POD_SANDBOX, pb.StopPodSandboxRequest(pod_sandbox_id=sandbox_id))

    async def remove_pod_sandbox(self, sandbox_id: str) -> None:
        config = await self._sandboxes.config(sandbox_id, missing_ok=True)
        await self._client.call(rpc.REMOVE_POD_SANDBOX, pb.RemovePodSandboxRequest(pod_sandbox_id=sandbox_id))
        self._sandboxes.forget(sandbox_id)
        for cid in [cid for cid, s in self._statuses.items() if s.sandbox_id == sandbox_id]:
            del self._statuses[cid]
        parent = config.linux.cgroup_parent if config is not None else ""
        if parent and not self._sandboxes.cgroup_in_use(parent):
            self._delete_cgroup(parent)  # unless another attempt of the pod uses it

    def _delete_cgroup(self, path: str) -> None:
        if self._cgroups is None:
            return
        try:
            self._cgroups.delete(path)
        except KubeletError as exc:
            log.warning("cannot remove pod cgroup %s: %s", path, exc)

    async def list_pod_sandboxes(self, pod_uid: str | None = None) -> Sequence[Sandbox]:
        request = pb.ListPodSandboxRequest()
        if pod_uid is not None:
            request.filter.label_selector[POD_UID] = pod_uid
        answer = await self._client.call(rpc.LIST_POD_SANDBOX, request)
        return await self._sandboxes.sandboxes(answer.items, pod_uid)

    # --- containers ----------------------------------------------------------------------------
    async def create_container(self, sandbox_id: str, config: ContainerConfig) -> str:
        sandbox = await self._sandboxes.config(sandbox_id)
        request = pb.CreateContainerRequest(
            pod_sandbox_id=sandbox_id, config=convert.container_config(config, _network_mode(sandbox)),
            sandbox_config=sandbox)
        return (await self._client.call(rpc.CREATE_CONTAINER, request)).container_id

    async def start_container(self, container_id: str) -> None:
        """A command that cannot start fails here with the runtime's reason (the container is then
        EXITED with reason StartError and exit code 128, as containerd reports it)."""
        await self._client.call(rpc.START_CONTAINER, pb.StartContainerRequest(container_id=container_id))

    async def stop_container(self, container_id: str, timeout_s: float) -> None:
        grace = max(math.ceil(timeout_s), 0)  # CRI counts whole seconds: never kill before the grace ends
        await self._client.call(rpc.STOP_CONTAINER, pb.StopContainerRequest(container_id=container_id, timeout=grace),
                                timeout_s=rpc.DEFAULT_TIMEOUT_S + grace)

    async def remove_container(self, container_id: str) -> None:
        await self._client.call(rpc.REMOVE_CONTAINER, pb.RemoveContainerRequest(container_id=container_id))
        self._statuses.pop(container_id, None)

    async def list_containers(self, pod_uid: str | None = None) -> Sequence[ContainerStatus]:
        request = pb.ListContainersRequest()
        if pod_uid is not None:
            request.filter.label_selector[POD_UID] = pod_uid
        answer = await self._client.call(rpc.LIST_CONTAINERS, request)
        listed = {c.id: c for c in answer.containers}
        known = {cid for cid, s in self._statuses.items() if pod_uid is None or s.labels.get(POD_UID) == pod_uid}
        for gone in known - set(listed):
            del self._statuses[gone]
        stale = [c for c in answer.containers if (cached := self._statuses.get(c.id)) is None
                 or cached.state is not convert.container_state(c.state)]
        results = await asyncio.gather(*(self._fetch_status(c.id, c.pod_sandbox_id) for c in stale),
                                       return_exceptions=True)
        for item, result in zip(stale, results, strict=True):
            if isinstance(result, NotFound):
                listed.pop(item.id, None)  # removed meanwhile
            elif isinstance(result, BaseException):
                raise result
        return [self._statuses[cid] for cid in listed if cid in self._statuses]

    async def container_status(self, container_id: str) -> ContainerStatus:
        return await self._fetch_status(container_id, "")

    async def _fetch_status(self, container_id: str, sandbox_id: str) -> ContainerStatus:
        answer = await self._client.call(
            rpc.CONTAINER_STATUS, pb.ContainerStatusRequest(container_id=container_id, verbose=True))
        info = convert.verbose_info(answer.info)
        if not sandbox_id:
            cached = self._statuses.get(container_id)
            sandbox_id = str(info.get("sandboxID", "")) or (cached.sandbox_id if cached is not None else "")
        pid = info.get("pid", 0)
        status = convert.container_status(answer.status, sandbox_id, pid if isinstance(pid, int) else 0)
        self._statuses[container_id] = status
        return status

    async def reopen_container_log(self, container_id: str) -> None:
        """Ask the runtime to reopen the container's log file (after a rotation)."""
        await self._client.call(rpc.REOPEN_CONTAINER_LOG, pb.ReopenContainerLogRequest(container_id=container_id))

    async def exec_sync(
        self, container_id: str, cmd: Sequence[str], timeout_s: float, *, max_output: int | None = None,
    ) -> ExecResult:
        """ExecSync. The CRI timeout is whole seconds (rounded up; 0 = none). A command that cannot
        start is exit code 127 (not found) or 126 with the runtime's reason on stderr, as an
        exec stream reports it. With max_output each stream is cut to that many bytes (the
        runtime itself caps them at 16 MiB)."""
        seconds = math.ceil(timeout_s) if timeout_s > 0 else 0
        request = pb.ExecSyncRequest(container_id=container_id, cmd=list(cmd), timeout=seconds)
        deadline = seconds + EXEC_GRACE_S if seconds else rpc.DEFAULT_TIMEOUT_S
        try:
            answer = await self._client.call(rpc.EXEC_SYNC, request, timeout_s=deadline)
        except Timeout:
            raise Unavailable(f"command {list(cmd)} timed out after {timeout_s:g}s") from None
        except Unavailable as exc:
            code = _start_failure(str(exc))
            if code is None:
                raise
            return ExecResult(code, b"", f"{exc}\n".encode())
        out, err = answer.stdout, answer.stderr
        if max_output is not None:
            out, err = out[:max_output], err[:max_output]
        return ExecResult(answer.exit_code, out, err)

    # --- streams (runtime.streaming.Streamer) ------------------------------------------------------
    async def exec_stream(self, container_id: str, cmd: Sequence[str], opts: StreamOptions) -> StreamSession:
        request = pb.ExecRequest(container_id=container_id, cmd=list(cmd), tty=opts.tty, stdin=opts.stdin,
                                 stdout=opts.stdout, stderr=opts.stderr and not opts.tty)
        url = (await self._client.call(rpc.EXEC, request)).url
        return await open_session(url, opts)

    async def attach(self, container_id: str, opts: StreamOptions) -> StreamSession:
        answer = await self._client.call(
            rpc.CONTAINER_STATUS, pb.ContainerStatusRequest(container_id=container_id, verbose=True))
        if answer.status.state != pb.CONTAINER_RUNNING:
            raise InvalidInput(f"container {answer.status.metadata.name!r} is not running")
        config = convert.verbose_info(answer.info).get("config")
        created = config if isinstance(config, dict) else {}
        if opts.stdin and not created.get("stdin", False):
            raise InvalidInput(f"container {answer.status.metadata.name!r} has no stdin to attach to (it was not "
                               "created with stdin: true)")
        # Must match the container's terminal, whatever was asked. containerd's info omits false
        # fields (omitempty): with a config, no "tty" means none; without one, trust the caller.
        tty = bool(created.get("tty", False)) if created else opts.tty
        request = pb.AttachRequest(container_id=container_id, stdin=opts.stdin, tty=tty, stdout=opts.stdout,
                                   stderr=opts.stderr and not tty)
        url = (await self._client.call(rpc.ATTACH, request)).url

        async def exit_code() -> int:
            deadline = time.monotonic() + ATTACH_EXIT_WAIT_S
            while True:
                with contextlib.suppress(KubeletError):
                    status = await self.container_status(container_id)
                    if status.state is ContainerState.EXITED:
                        return status.exit_code
                if time.monotonic() > deadline:
                    return 0  # detached from a container that still runs
                await asyncio.sleep(0.05)

        return await open_session(url, StreamOptions(opts.stdin, opts.stdout, opts.stderr, tty), exit_code)

    async def port_forward(self, sandbox_id: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if not 0 < port < 65536:
            raise InvalidInput(f"invalid port {port}: must be in 1-65535")
        url = (await self._client.call(rpc.PORT_FORWARD, pb.PortForwardRequest(pod_sandbox_id=sandbox_id,
                                                                               port=[port]))).url
        return await self._bridges.open(url, port)

    # --- images (CRI ImageService) -----------------------------------------------------------------
    async def image_status(self, image: str) -> Image | None:
        answer = await self._client.call(rpc.IMAGE_STATUS, pb.ImageStatusRequest(image=pb.ImageSpec(image=image)))
        return convert.image(answer.image) if answer.HasField("image") else None

    async def list_images(self) -> list[Image]:
        """Every image the runtime has (for the node's status.images)."""
        answer = await self._client.call(rpc.LIST_IMAGES, pb.ListImagesRequest())
        return [convert.image(item) for item in answer.images]

    async def remove_image(self, image: str) -> None:
        """Remove the image (by id, tag or digest); an image already gone is no error (CRI)."""
        await self._client.call(rpc.REMOVE_IMAGE, pb.RemoveImageRequest(image=pb.ImageSpec(image=image)))

    async def pull_image(self, image: str, sandbox: SandboxConfig | None = None, auth: AuthConfig | None = None) -> str:
        request = pb.PullImageRequest(image=pb.ImageSpec(image=image))
        if auth is not None:
            request.auth.CopyFrom(pb.AuthConfig(
                username=auth.username, password=auth.password, auth=auth.auth, server_address=auth.server_address,
                identity_token=auth.identity_token, registry_token=auth.registry_token))
        if sandbox is not None:
            request.sandbox_config.CopyFrom(convert.sandbox_config(sandbox, convert.dns_config(self._resolv_conf)))
        return (await self._client.call(rpc.PULL_IMAGE, request)).image_ref

    # --- stats ---------------------------------------------------------------------------------
    def stats_source(self, now_ns: Callable[[], int]) -> CRIStatsSource:
        """The pods', containers' and image filesystem's stats as the stats provider asks them
        (stats.runtimestats.RuntimeStatsSource), over this runtime's channel; `now_ns` stamps the
        figures the runtime gives no time."""
        return CRIStatsSource(self._client, self.list_pod_sandboxes, now_ns)


def _network_mode(sandbox: pb.PodSandboxConfig | None) -> pb.NamespaceMode:
    """The sandbox's network namespace mode, which its containers share (NODE when unknown)."""
    if sandbox is None or not sandbox.HasField("linux"):
        return pb.NODE
    return sandbox.linux.security_context.namespace_options.network


def _start_failure(message: str) -> int | None:
    """127 or 126 when an exec failed because its command could not start, else None."""
    if "exec failed" not in message and "failed to start exec" not in message:
        return None
    if "executable file not found" in message or "no such file or directory" in message:
        return 127
    return 126
