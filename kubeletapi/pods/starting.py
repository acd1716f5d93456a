"""Starting one container of a pod, as kuberuntime's startContainer: the image ensured by its
pull policy (images.ImageManager: ErrImagePull, ImagePullBackOff...), the container created from
its config (environment, NUMA nodes of the memory manager), started, then its postStart hook run
(a failed hook kills it: FailedPostStartHook). A restart waits out the container's
CrashLoopBackOff first. Each step that fails leaves the container Waiting with the kubelet's
reason (CreateContainerConfigError, CreateContainerError, RunContainerError) and returns when to
try again; the events are the kubelet's (podevents.py). The counterpart of stopping.py.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from kubeletapi.api.core_v1 import Container, Pod
from kubeletapi.config.durations import Duration
from kubeletapi.errors import InvalidInput, KubeletError
from kubeletapi.pods.backoff import Backoff
from kubeletapi.pods.containers import container_config
from kubeletapi.pods.images import ImageManager
from kubeletapi.pods.lifecycle import run_hook
from kubeletapi.pods.node import NodeEnv
from kubeletapi.pods.podevents import PodEvents
from kubeletapi.pods.podrefs import pull_secret_names
from kubeletapi.pods.stopping import grace_period
from kubeletapi.pods.syncstate import CONFIG_RETRY_S, SyncContext
from kubeletapi.runtime import types as rt
from kubeletapi.runtime.interface import Runtime

log = logging.getLogger(__name__)

HOOK_TIMEOUT_S = 120.0


class StartObserver(Protocol):
    """Where starts are counted (kubelet_started_containers_total)."""

    def container_started(self, kind: str) -> None: ...


class EnvSource(Protocol):
    """A container's environment (pods.env.EnvResolver: it may read the API server)."""

    async def environment(self, pod: Pod, container: Container) -> list[tuple[str, str]]: ...


class MemoryAffinity(Protocol):
    """The memory manager as container creation consults it (cm.memorymanager.MemoryManager)."""

    def cpuset_mems(self, uid: str, container: str) -> str:
        """The NUMA nodes of the container's memory ("0,1"), "" when it has none."""
        ...

    def container_started(self, pod: Pod, container: Container) -> None:
        """The container was created (the kubelet's PreStartContainer)."""


def backoff_key(uid: str, name: str) -> str:
    return f"{uid}/{name}"


class ContainerStarter:
    def __init__(
        self,
        runtime: Runtime,
        node: NodeEnv,
        backoff: Backoff,
        images: ImageManager,
        env: EnvSource,
        events: PodEvents,
        observer: StartObserver | None = None,
        memory: MemoryAffinity | None = None,
        on_http_fallback: Callable[[Pod, str], None] | None = None,
    ) -> None:
        """`on_http_fallback`: an https postStart hook was answered over http (lifecycle.run_hook)."""
        self._on_http_fallback = on_http_fallback
        self._runtime = runtime
        self._node = node
        self._backoff = backoff
        self._images = images
        self._env = env
        self._events = events
        self._observer = observer
        self._memory = memory

    async def restart(
        self, ctx: SyncContext, container: Container, latest: rt.ContainerStatus, kind: str
    ) -> float | None:
        """A new instance after `latest` exited, once its back-off allows (else CrashLoopBackOff)."""
        key = backoff_key(ctx.pod.metadata.uid, container.name)
        remaining = self._backoff.remaining(key, latest.finished_at / 1e9)
        if remaining > 0:
            meta = ctx.pod.metadata
            current = Duration.of_seconds(self._backoff.current(key))
            ctx.state.waiting[container.name] = (
                "CrashLoopBackOff",
                f"back-off {current} restarting failed container={container.name} "
                f"pod={meta.name}_{meta.namespace}({meta.uid})",
            )
            self._events.back_off(ctx.pod, container)
            return remaining
        self._backoff.next(key)
        return await self.start(ctx, container, latest.attempt + 1, kind)

    async def start(self, ctx: SyncContext, container: Container, attempt: int, kind: str) -> float | None:
        """Ensure the image, create the container and start it."""
        image = await self._images.ensure(ctx.pod.metadata.uid, container.image, container.image_pull_policy,
                                          ctx.sandbox, pull_secret_names(ctx.pod),
                                          events=self._events.image(ctx.pod, container))
        if not image.ok:  # ErrImagePull, ImagePullBackOff...: retry when the back-off ends
            self._events.failed(ctx.pod, container, image.reason)
            ctx.state.waiting[container.name] = (image.reason, image.message)
            return image.retry_s if image.retry_s is not None else CONFIG_RETRY_S
        try:
            env = await self._env.environment(ctx.pod, container)
            mems = self._memory.cpuset_mems(ctx.pod.metadata.uid, container.name) if self._memory else ""
            config = container_config(ctx.pod, container, attempt, kind, self._node, ctx.volumes, ctx.resources,
                                      env, cpuset_mems=mems)
            ctx.state.changing = True
            container_id = await self._runtime.create_container(ctx.sandbox_id, config)
            if self._memory is not None:
                self._memory.container_started(ctx.pod, container)
        except InvalidInput as exc:
            self._events.failed(ctx.pod, container, str(exc))
            ctx.state.waiting[container.name] = ("CreateContainerConfigError", str(exc))
            return CONFIG_RETRY_S
        except KubeletError as exc:
            self._events.failed(ctx.pod, container, str(exc))
            ctx.state.waiting[container.name] = ("CreateContainerError", str(exc))
            return CONFIG_RETRY_S
        self._events.created(ctx.pod, container)
        return await self.start_created(ctx, container, container_id, kind)

    async def start_created(
        self, ctx: SyncContext, container: Container, container_id: str, kind: str
    ) -> float | None:
        """Start a created container, then run its postStart hook."""
        ctx.state.changing = True
        try:
            await self._runtime.start_container(container_id)
        except KubeletError as exc:
            self._events.failed(ctx.pod, container, str(exc), container_id)
            ctx.state.waiting[container.name] = ("RunContainerError", str(exc))
            return CONFIG_RETRY_S
        self._events.started(ctx.pod, container)
        if self._observer is not None:
            self._observer.container_started("init_container" if kind == "init" else "container")
        hook = container.lifecycle.post_start if container.lifecycle else None
        if hook is not None:
            pod_ip = await self._sandbox_ip(ctx) if hook.http_get is not None else self._node.node_ip
            fell_back = self._on_http_fallback
            error = await run_hook(hook, self._runtime, container_id, container, pod_ip, HOOK_TIMEOUT_S,
                                   None if fell_back is None else lambda hostport: fell_back(ctx.pod, hostport))
            if error is not None:
                log.warning("postStart hook of %s/%s failed: %s", ctx.pod.metadata.name, container.name, error)
                self._events.post_start_failed(ctx.pod, container)
                self._events.killing(ctx.pod, container, "FailedPostStartHook")
                await self._runtime.stop_container(container_id, grace_period(ctx.pod))
        return None

    def forget(self, uid: str) -> None:
        """The pod is gone: drop its containers' back-offs and its image pull back-offs."""
        self._backoff.forget(f"{uid}/")
        self._images.forget(uid)

    async def _sandbox_ip(self, ctx: SyncContext) -> str:
        """The address an httpGet hook calls: the pod's own (its sandbox's), else the node's."""
        sandboxes = await self._runtime.list_pod_sandboxes(ctx.pod.metadata.uid)
        ips = next((s.ips for s in sandboxes if s.id == ctx.sandbox_id), ())
        return ips[0] if ips else self._node.node_ip
