"""Lifecycle hooks: postStart and preStop with exec, httpGet and sleep actions.

exec runs in the container (runtime exec_sync); httpGet calls the pod's IP (host network: the
node IP) on a numbered or named container port and succeeds on 200-399; sleep waits. A hook
returns None on success or the kubelet-style failure message.

An https httpGet hook whose server answers in plain HTTP is retried over http without its
Authorization header, as the kubelet's runHTTPHandler does; a retry that got an answer is reported
to `on_fallback` with the host:port (the kubelet's LifecycleHTTPFallback event and
kubelet_lifecycle_handler_http_fallbacks_total), and a failed one leaves the https error.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable, Sequence
from typing import Protocol

from kubeletapi.api.core_v1 import Container, HTTPGetAction, LifecycleHandler
from kubeletapi.errors import KubeletError
from kubeletapi.runtime.types import ExecResult

# OpenSSL's reasons for a server that answered a ClientHello with something not TLS (a plain HTTP
# response): 3.0's, and the one 3.2 and later give.
_NOT_TLS = frozenset({"WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE"})
HttpFallback = Callable[[str], None]  # host:port of an https hook answered over http


class Executor(Protocol):
    async def exec_sync(self, container_id: str, cmd: Sequence[str], timeout_s: float) -> ExecResult: ...


async def _http_get(action: HTTPGetAction, container: Container, pod_ip: str, timeout_s: float,
                    on_fallback: HttpFallback | None = None) -> str | None:
    try:
        url = action.url(container, pod_ip)  # the same resolution as httpGet probes
    except ValueError as exc:
        return str(exc)
    headers = [(h.name, h.value) for h in action.http_headers]
    import httpx  # noqa: PLC0415 - only httpGet hooks need an HTTP client: most nodes never load it

    async with httpx.AsyncClient(timeout=timeout_s, verify=False) as client:  # noqa: S501 - as the kubelet
        try:
            response = await client.get(url, headers=headers)
        except httpx.HTTPError as exc:
            if not (url.startswith("https://") and _answered_in_http(exc)):
                return f"Get {url!r}: {exc}"
            try:
                response = await client.get("http://" + url.removeprefix("https://"),
                                            headers=[h for h in headers if h[0].lower() != "authorization"])
            except httpx.HTTPError:
                return f"Get {url!r}: {exc}"
            if on_fallback is not None:
                on_fallback(response.url.netloc.decode())
    if not 200 <= response.status_code < 400:
        return f"HTTP lifecycle hook ({action.path}) for Container {container.name!r} failed - error: " \
               f"{response.status_code} {response.reason_phrase}"
    return None


def _answered_in_http(exc: BaseException) -> bool:
    """The TLS handshake failed because the server's answer was not TLS."""
    cause: BaseException | None = exc
    seen: set[int] = set()
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, ssl.SSLError) and cause.reason in _NOT_TLS:
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


async def run_hook(
    handler: LifecycleHandler,
    executor: Executor,
    container_id: str,
    container: Container,
    pod_ip: str,
    timeout_s: float,
    on_fallback: HttpFallback | None = None,
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
        return await _http_get(handler.http_get, container, pod_ip, timeout_s, on_fallback)
    if handler.sleep is not None:
        await asyncio.sleep(min(handler.sleep.seconds, timeout_s))
        return None
    return None  # tcpSocket hooks are accepted and do nothing, as in the kubelet
