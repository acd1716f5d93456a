"""Reaching into a pod's containers by name, for /containerLogs and /run (the kubelet's
GetContainerLogs and RunInContainer): the lookups and refusals of the kubelet, then the runtime.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Protocol

from kubeletapi.api.core_v1 import Pod
from kubeletapi.clock import Clock
from kubeletapi.errors import InvalidInput, KubeletError, NotFound, Unavailable
from kubeletapi.pods.queries import PodQueries
from kubeletapi.runtime import types as rt
from kubeletapi.runtime.logoptions import PodLogOptions, require_stream_supported
from kubeletapi.runtime.logs import read_logs

RUN_TIMEOUT_S = 120.0


class ContainerRuntime(Protocol):
    """What reaching a container needs of the runtime (runtime.interface.Runtime has it)."""

    async def container_status(self, container_id: str) -> rt.ContainerStatus: ...

    async def exec_sync(
        self, container_id: str, cmd: Sequence[str], timeout_s: float, *, max_output: int | None = None
    ) -> rt.ExecResult: ...


class ContainerAccess:
    def __init__(self, queries: PodQueries, runtime: ContainerRuntime, clock: Clock) -> None:
        self._queries = queries
        self._runtime = runtime
        self._clock = clock

    def _pod(self, namespace: str, pod_name: str, container: str) -> Pod:
        pod = self._queries.find(namespace, pod_name)
        if pod is None:
            raise NotFound(f'pod "{pod_name}" does not exist')
        if container not in {c.name for c in pod.spec.all_containers()}:
            raise NotFound(f'container "{container}" not found in pod "{pod_name}"')
        return pod

    async def logs(self, namespace: str, pod_name: str, container: str, opts: PodLogOptions) -> AsyncIterator[bytes]:
        """The container's log (`previous`: the instance before the newest); follows while it runs."""
        pod = self._pod(namespace, pod_name, container)
        instances = self._queries.instances(pod.metadata.uid, container)
        require_stream_supported(opts)  # after the lookups, before a file is opened (as the kubelet)
        index = 1 if opts.previous else 0
        if len(instances) <= index:
            if opts.previous:
                raise InvalidInput(f'previous terminated container "{container}" in pod "{pod_name}" not found')
            raise InvalidInput(f'container "{container}" in pod "{pod_name}" is waiting to start')
        instance = instances[index]

        async def running() -> bool:
            with contextlib.suppress(KubeletError):
                status = await self._runtime.container_status(instance.id)
                return status.state is rt.ContainerState.RUNNING
            return False

        return read_logs(Path(instance.log_path), opts, clock=self._clock, container_running=running)

    async def run(self, namespace: str, pod_name: str, uid: str | None, container: str, cmd: Sequence[str]) -> bytes:
        """RunInContainer: the running container by name, its combined output; a non-zero exit is
        an error. (Unlike the kubelet, a UID that is not the pod's is refused.)"""
        pod = self._queries.find(namespace, pod_name)
        if pod is None or (uid and pod.metadata.uid != uid):
            raise NotFound("pod does not exist")
        live = self._queries.running_container(pod.metadata.uid, container)
        if live is None:
            raise Unavailable(f'container not found ("{container}")')
        result = await self._runtime.exec_sync(live.id, cmd, RUN_TIMEOUT_S)
        if result.exit_code != 0:
            stderr = result.stderr.decode(errors="replace")
            raise Unavailable(f"command '{' '.join(cmd)}' exited with {result.exit_code}: {stderr}")
        return result.stdout + result.stderr
