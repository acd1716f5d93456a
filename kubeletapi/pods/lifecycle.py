"""Lifecycle hooks: postStart and preStop with exec, httpGet and sleep actions.

exec runs in the container (runtime exec_sync); httpGet calls the pod's IP (host network: the
node IP) on a numbered or named container port and succeeds on 200-399; sleep waits. A hook
returns None on success or the kubelet-style failure message.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol

from kubeletapi.api.core_v1 import Container, HTTPGetAction, LifecycleHandler
from kubeletapi.errors import KubeletError
from kubeletapi.runtime.types import ExecResult


class Executor(Protocol):
    async def exec_sync(self, container_id: str, cmd: Sequence[str], timeout_s: float) -> ExecResult: ...


async def _http_get(action: HTTPGetAction, container: Container, pod_ip: str, timeout_s: float) -> str | None:
    try:
        url = action.url(container, pod_ip)  # the same resolution as httpGet probes
    except ValueError as exc:
        return str(exc)
    headers = [(h.name, h.value) for h in action.http_headers]
    import httpx  # noqa: PLC0415 - only httpGet hooks need an HTTP client: most nodes never load it

    try:
        async with httpx.AsyncClient(timeout=timeout_s, verify=False) as client:  # noqa: S501 - as the kubelet
            response = await client.get(url, headers=headers)
    except httpx.HTTPError as exc:
        return f"Get {url!r}: {exc}"
    if not 200 <= response.status_code < 400:
        return f"HTTP lifecycle hook ({action.path}) for Container {container.name!r} failed - error: " \
               f"{response.status_code} {response.reason_phrase}"
    return None


async def run_hook(
    handler: LifecycleHandler,
    executor: Executor,
    container_id: str,
    container: Container,
    pod_ip: str,
    timeout_s: float,
) -> str | None:
    """Run one hook; None when it succeeded, else why it failed."""
    if handler.exec is not None:
        command = handler.exec.command
        try:
            result = await executor.exec_sync(container_id, command, timeout_s)
        except KubeletError as exc:
            return f"Exec lifecycle hook ({command}) for Container {container.name!r} failed - error: {exc}"
        if result.exit_code != 0:
            output = (result.stdout + result.stderr).decode(errors="replace").strip()
            return (f"Exec lifecycle hook ({command}) for Container {container.name!r} failed - error: "
                    f"command '{' '.join(command)}' exited with {result.exit_code}: {output}")
        return None
    if handler.http_get is not None:
        return await _http_get(handler.http_get, container, pod_ip, timeout_s)
    if handler.sleep is not None:
        await asyncio.sleep(min(handler.sleep.seconds, timeout_s))
        return None
    return None  # tcpSocket hooks are accepted and do nothing, as in the kubelet
