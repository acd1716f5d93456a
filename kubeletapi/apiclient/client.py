"""ApiClient: JSON requests to one API server as the node, rate-limited, errors mapped.

The client's credentials may change (a rotated client certificate, a bootstrap's first one): when
its Credentials' generation moves, new requests go through a new connection pool with the new
certificate; the old pool keeps serving the requests and watches already on it and is closed once
the longest of them must have ended.

Answers map onto kubeletapi.errors: 401 Unauthorized, 404 NotFound, 409 Conflict (AlreadyExists, a failed
precondition), 403 Forbidden, 410 Gone, 400/422 InvalidInput, anything else and every transport
failure Unavailable. Messages carry the API server's own Status message.
"""

from __future__ import annotations

import json
import platform
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from kubeletapi import __version__
from kubeletapi.apiclient.ratelimit import TokenBucket
from kubeletapi.clock import Clock
from kubeletapi.errors import (
    Conflict,
    Forbidden,
    Gone,
    InvalidInput,
    KubeletError,
    NotFound,
    Unauthorized,
    Unavailable,
)
from kubeletapi.kubeconfig import ClientConfig, Credentials

REQUEST_TIMEOUT_S = 30.0
JSON = "application/json"
STRATEGIC_MERGE = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}
_BY_STATUS: dict[int, type[KubeletError]] = {
    400: InvalidInput, 401: Unauthorized, 403: Forbidden, 404: NotFound, 409: Conflict, 410: Gone, 422: InvalidInput,
}

Json = dict[str, Any]


def user_agent() -> str:
    """Like the kubelet's `kubelet/v1.34.4 (linux/amd64) kubernetes/<commit>`."""
    arch = _ARCH.get(platform.machine(), platform.machine())
    return f"kubeletapi/v{__version__} (linux/{arch}) kubeletapi"


WATCH_TIMEOUT_S = 300
RETIRED_GRACE_S = WATCH_TIMEOUT_S + 2 * REQUEST_TIMEOUT_S  # a watch begun just before a rotation has ended


def _http_client(config: ClientConfig) -> httpx.AsyncClient:
    headers = {"User-Agent": user_agent(), "Accept": JSON}
    if config.token:
        headers["Authorization"] = f"Bearer {config.token}"
    return httpx.AsyncClient(base_url=config.server, headers=headers, verify=config.ssl_context(),
                             timeout=REQUEST_TIMEOUT_S, follow_redirects=False)


class ApiClient:
    def __init__(self, config: ClientConfig | Credentials, clock: Clock, *, qps: float = 50,
                 burst: int = 100) -> None:
        self._credentials = config if isinstance(config, Credentials) else Credentials(config)
        self.server = self._credentials.config.server
        self._generation = self._credentials.generation
        self._http_current = _http_client(self._credentials.config)
        self._retired: list[tuple[float, httpx.AsyncClient]] = []  # (when, pool) of older credentials
        self._clock = clock
        self._limit = TokenBucket(qps, burst, clock)

    async def close(self) -> None:
        for _, old in self._retired:
            await old.aclose()
        self._retired.clear()
        await self._http_current.aclose()

    @property
    def _http(self) -> httpx.AsyncClient:
        """The pool of the current credentials (a new one after they changed)."""
        if self._credentials.generation != self._generation:
            self._retired.append((self._clock.monotonic(), self._http_current))
            self._http_current = _http_client(self._credentials.config)
            self._generation = self._credentials.generation
        return self._http_current

    async def _close_retired(self) -> None:
        now = self._clock.monotonic()
        while self._retired and now - self._retired[0][0] >= RETIRED_GRACE_S:
            await self._retired.pop(0)[1].aclose()

    # --- requests ------------------------------------------------------------------------------
    async def request(self, method: str, path: str, *, params: Mapping[str, str] | None = None,
                      body: Any = None, content_type: str = JSON) -> Json:
        """One request; the decoded JSON answer."""
        await self._limit.wait()
        await self._close_retired()
        content = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": content_type} if content is not None else {}
        try:
            response = await self._http.request(method, path, params=params, content=content, headers=headers)
        except httpx.HTTPError as exc:
            raise Unavailable(f"{method} {self.server}{path}: {str(exc) or type(exc).__name__}") from exc
        if response.status_code >= 300:
            raise _error(method, path, response.status_code, response.content)
        try:
            decoded = response.json()
        except ValueError as exc:
            raise Unavailable(f"{method} {self.server}{path}: the answer is not JSON") from exc
        return decoded if isinstance(decoded, dict) else {}

    async def get(self, path: str, params: Mapping[str, str] | None = None) -> Json:
        return await self.request("GET", path, params=params)

    async def create(self, path: str, body: Json) -> Json:
        return await self.request("POST", path, body=body)

    async def patch(self, path: str, body: Json, content_type: str = STRATEGIC_MERGE) -> Json:
        return await self.request("PATCH", path, body=body, content_type=content_type)

    async def replace(self, path: str, body: Json) -> Json:
        return await self.request("PUT", path, body=body)

    async def delete(self, path: str, options: Json | None = None) -> Json:
        """DELETE with DeleteOptions (gracePeriodSeconds, preconditions...)."""
        return await self.request("DELETE", path, body=options)

    # --- list and watch ------------------------------------------------------------------------
    async def list(self, path: str, params: Mapping[str, str] | None = None) -> Json:
        """A whole list (pages joined); `metadata.resourceVersion` is the list's."""
        query = dict(params or {})
        first = await self.get(path, query)
        items = list(first.get("items") or [])
        while cont := (first.get("metadata") or {}).get("continue"):
            first = await self.get(path, {**query, "continue": cont})
            items += first.get("items") or []
        return {**first, "items": items}

    async def watch(self, path: str, resource_version: str, params: Mapping[str, str] | None = None,
                    timeout_s: int = WATCH_TIMEOUT_S) -> AsyncIterator[Json]:
        """The watch events ({"type", "object"}) after `resource_version` until the server ends
        the watch (after about `timeout_s`); Gone when that version is too old to watch from."""
        query = {**(params or {}), "watch": "true", "resourceVersion": resource_version,
                 "allowWatchBookmarks": "true", "timeoutSeconds": str(timeout_s)}
        await self._limit.wait()
        timeout = httpx.Timeout(REQUEST_TIMEOUT_S, read=timeout_s + REQUEST_TIMEOUT_S)
        try:
            async with self._http.stream("GET", path, params=query, timeout=timeout) as response:
                if response.status_code >= 300:
                    raise _error("WATCH", path, response.status_code, await response.aread())
                async for line in response.aiter_lines():
                    if not line.strip():
                        continue
                    event = _event(path, line)
                    if event.get("type") == "ERROR":
                        status = event.get("object") or {}
                        raise _error("WATCH", path, int(status.get("code") or 500), json.dumps(status).encode())
                    yield event
        except httpx.HTTPError as exc:
            raise Unavailable(f"WATCH {self.server}{path}: {str(exc) or type(exc).__name__}") from exc


def _event(path: str, line: str) -> Json:
    try:
        event = json.loads(line)
    except ValueError as exc:
        raise Unavailable(f"WATCH {path}: an event is not JSON") from exc
    if not isinstance(event, dict):
        raise Unavailable(f"WATCH {path}: an event is not an object")
    return event


def _error(method: str, path: str, code: int, content: bytes) -> KubeletError:
    """The API server's Status (message, reason) as one of kubeletapi's errors."""
    message = content.decode(errors="replace").strip()[:500]
    try:
        status = json.loads(content)
        if isinstance(status, dict) and status.get("message"):
            message = str(status["message"])
    except ValueError:
        pass
    kind = _BY_STATUS.get(code, Unavailable)
    return kind(f"{method} {path}: {code} {message}")
