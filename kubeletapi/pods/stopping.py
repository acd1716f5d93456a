"""Stopping a container as the kubelet's killContainer does: its preStop hook within the grace
period, then the runtime's stop (SIGTERM, SIGKILL when what is left of the grace period ends).

The grace period is the deleted pod's deletionGracePeriodSeconds, else its
terminationGracePeriodSeconds (30 s when unset), or a probe's own when a failed liveness or
startup probe stops the container; never under 2 s (the kubelet's
minimumGracePeriodInSeconds).

Events (killContainer): Killing first, with why the kubelet stops it (`kill_message`; `Stopping
container <name>` by default), then FailedPreStopHook if the hook fails.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Protocol

from kubeletapi.api.core_v1 import Container, Pod
from kubeletapi.clock import Clock
from kubeletapi.pods.lifecycle import run_hook
from kubeletapi.pods.podevents import PodEvents
from kubeletapi.runtime import types as rt

log = logging.getLogger(__name__)

MIN_GRACE_S = 2.0  # the kubelet's minimumGracePeriodInSeconds
DEFAULT_GRACE_S = 30


class StopRuntime(Protocol):
    """The runtime calls stopping needs (runtime.interface.Runtime has them)."""

    async def exec_sync(self, container_id: str, cmd: Sequence[str], timeout_s: float) -> rt.ExecResult: ...

    async def stop_container(self, container_id: str, timeout_s: float) -> None: ...


def grace_period(pod: Pod, override: int | None = None) -> float:
    """Seconds a container of `pod` is given to stop (`override`: a probe's own period)."""
    if override is not None:
        return max(float(override), MIN_GRACE_S)
    grace = pod.metadata.deletion_grace_period_seconds  # the API server's, once the pod is deleted
    if grace is None:
        grace = pod.spec.termination_grace_period_seconds
    return max(float(DEFAULT_GRACE_S if grace is None else grace), MIN_GRACE_S)


class ContainerStopper:
    def __init__(self, runtime: StopRuntime, clock: Clock, node_ip: str, events: PodEvents | None = None,
                 pod_ip: Callable[[Pod], str] | None = None,
                 on_http_fallback: Callable[[Pod, str], None] | None = None) -> None:
        """`pod_ip`: the address a preStop httpGet calls (the pod's own); the node's without it.
        `on_http_fallback`: an https preStop hook was answered over http (lifecycle.run_hook)."""
        self._runtime = runtime
        self._on_http_fallback = on_http_fallback
        self._clock = clock
        self._pod_ip = pod_ip or (lambda _pod: node_ip)
        self._events = events or PodEvents()

    async def stop(self, pod: Pod, container: Container | None, status: rt.ContainerStatus, why: str,
                   grace_override: int | None = None, kill_message: str = "") -> None:
        """preStop (with the grace period), then SIGTERM and SIGKILL at the deadline."""
        grace = grace_period(pod, grace_override)
        deadline = self._clock.monotonic() + grace
        self._events.killing(pod, container or Container(name=status.name), kill_message, status.id)
        hook = container.lifecycle.pre_stop if container is not None and container.lifecycle else None
        if hook is not None and container is not None:
            fell_back = self._on_http_fallback
            error = await run_hook(hook, self._runtime, status.id, container, self._pod_ip(pod), grace,
                                   None if fell_back is None else lambda hostport: fell_back(pod, hostport))
            if error is not None:
                log.warning("preStop hook of %s/%s failed: %s", pod.metadata.name, container.name, error)
                self._events.pre_stop_failed(pod, container)
        log.info("stopping container %s of pod %s (%s)", status.name, pod.metadata.name, why)
        await self._runtime.stop_container(status.id, max(deadline - self._clock.monotonic(), 0.0))
