"""One instrumented decorator around any runtime: kubelet_runtime_operations_* per CRI method.

operation_type values are the kubelet's snake_case CRI names (list_containers, run_podsandbox,
exec_sync...), so the kubernetes-mixin dashboards see the values they expect.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Sequence
from typing import TypeVar, cast

from kubeletapi.errors import NotSupported
from kubeletapi.metrics.pods import PodMetrics
from kubeletapi.runtime.interface import Runtime
from kubeletapi.runtime.streaming import Streamer, StreamOptions, StreamSession
from kubeletapi.runtime.types import (
    AuthConfig,
    ContainerConfig,
    ContainerStatus,
    ExecResult,
    Image,
    RuntimeVersion,
    Sandbox,
    SandboxConfig,
)

T = TypeVar("T")


class InstrumentedRuntime:
    """Wraps a runtime; every CRI call is counted and timed, and its errors counted."""

    def __init__(self, inner: Runtime, metrics: PodMetrics) -> None:
        self.inner = inner
        self._metrics = metrics

    async def _call(self, operation: str, call: Awaitable[T]) -> T:
        m = self._metrics
        m.runtime_ops.labels(operation_type=operation).inc()
        start = time.perf_counter()
        try:
            return await call
        except Exception:
            m.runtime_errors.labels(operation_type=operation).inc()
            raise
        finally:
            m.runtime_duration.labels(operation_type=operation).observe(time.perf_counter() - start)

    async def version(self) -> RuntimeVersion:
        return await self._call("version", self.inner.version())

    async def run_pod_sandbox(self, config: SandboxConfig) -> str:
        # kubelet_run_podsandbox_*{runtime_handler}: kubeletapi has no RuntimeClass, so every
        # sandbox runs on the runtime's default handler, "" (the kubelet's label for such a pod).
        start = time.perf_counter()
        try:
            return await self._call("run_podsandbox", self.inner.run_pod_sandbox(config))
        except Exception:
            self._metrics.run_sandbox_errors.labels(runtime_handler="").inc()
            raise
        finally:
            self._metrics.run_sandbox_duration.labels(runtime_handler="").observe(time.perf_counter() - start)

    async def stop_pod_sandbox(self, sandbox_id: str) -> None:
        await self._call("stop_podsandbox", self.inner.stop_pod_sandbox(sandbox_id))

    async def remove_pod_sandbox(self, sandbox_id: str) -> None:
        await self._call("remove_podsandbox", self.inner.remove_pod_sandbox(sandbox_id))

    async def list_pod_sandboxes(self, pod_uid: str | None = None) -> Sequence[Sandbox]:
        return await self._call("list_podsandbox", self.inner.list_pod_sandboxes(pod_uid))

    async def create_container(self, sandbox_id: str, config: ContainerConfig) -> str:
        return await self._call("create_container", self.inner.create_container(sandbox_id, config))

    async def start_container(self, container_id: str) -> None:
        await self._call("start_container", self.inner.start_container(container_id))

    async def stop_container(self, container_id: str, timeout_s: float) -> None:
        await self._call("stop_container", self.inner.stop_container(container_id, timeout_s))

    async def remove_container(self, container_id: str) -> None:
        await self._call("remove_container", self.inner.remove_container(container_id))

    async def list_containers(self, pod_uid: str | None = None) -> Sequence[ContainerStatus]:
        return await self._call("list_containers", self.inner.list_containers(pod_uid))

    async def container_status(self, container_id: str) -> ContainerStatus:
        return await self._call("container_status", self.inner.container_status(container_id))

    async def exec_sync(
        self, container_id: str, cmd: Sequence[str], timeout_s: float, *, max_output: int | None = None
    ) -> ExecResult:
        return await self._call("exec_sync", self.inner.exec_sync(container_id, cmd, timeout_s, max_output=max_output))

    async def image_status(self, image: str) -> Image | None:
        return await self._call("image_status", self.inner.image_status(image))

    async def list_images(self) -> Sequence[Image]:
        return await self._call("list_images", self.inner.list_images())

    async def remove_image(self, image: str) -> None:
        await self._call("remove_image", self.inner.remove_image(image))

    async def pull_image(self, image: str, sandbox: SandboxConfig | None = None, auth: AuthConfig | None = None) -> str:
        return await self._call("pull_image", self.inner.pull_image(image, sandbox, auth))

    # Streams (runtime.streaming.Streamer): what is timed is opening the session, as the kubelet
    # times its Exec/Attach/PortForward CRI calls, not the session itself.
    def _streamer(self) -> Streamer:
        if not hasattr(self.inner, "exec_stream"):
            raise NotSupported(f"the runtime {type(self.inner).__name__} offers no exec, attach or port-forward")
        return cast(Streamer, self.inner)

    async def exec_stream(self, container_id: str, cmd: Sequence[str], opts: StreamOptions) -> StreamSession:
        return await self._call("exec", self._streamer().exec_stream(container_id, cmd, opts))

    async def attach(self, container_id: str, opts: StreamOptions) -> StreamSession:
        return await self._call("attach", self._streamer().attach(container_id, opts))

    async def port_forward(self, sandbox_id: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await self._call("port_forward", self._streamer().port_forward(sandbox_id, port))
