"""Service-account tokens for projected volumes, as the kubelet's token manager keeps them
(pkg/kubelet/token/token_manager.go).

- A token is requested with TokenRequest (POST .../serviceaccounts/<sa>/token) bound to the pod
  (boundObjectRef v1 Pod name+uid), with the projection's audience and expirationSeconds, and
  cached by (service account, namespace, audiences, expiration, bound pod).
- A cached token is used until it needs a refresh: older than 80 % of its TTL or than 24 hours
  (minus a jitter of up to 10 s). A failed refresh keeps serving the old token while it has not
  expired; with no token, or an expired one, the failure is the volume's error.
- When a token will need its refresh, `on_due(pod uid)` is called, so the pod's volume is written
  again then (the kubelet finds out on its periodic remount); tokens of a removed pod and
  expired tokens are dropped.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kubeletapi.clock import Clock
from kubeletapi.errors import KubeletError, Unavailable

log = logging.getLogger(__name__)

MAX_TTL_S = 24 * 3600  # maxTTL
MAX_JITTER_S = 10  # maxJitter
DUE_MARGIN_S = 1.0  # on_due comes this long after the refresh point, so the refresh is sure

Json = dict[str, Any]


class TokenApi(Protocol):
    """POST (apiclient.ApiClient.create)."""

    async def create(self, path: str, body: Json) -> Json: ...


@dataclass(frozen=True)
class TokenSpec:
    """One projection's token request for one pod."""

    namespace: str
    service_account: str
    audiences: Sequence[str]
    expiration_seconds: int
    pod_name: str
    pod_uid: str

    def key(self) -> str:
        """The cache key (keyFunc): nothing secret, safe to log."""
        return (f'"{self.service_account}"/"{self.namespace}"/{list(self.audiences)}/{self.expiration_seconds}/'
                f'Pod/"{self.pod_name}"/"{self.pod_uid}"')

    def request(self) -> Json:
        return {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"audiences": list(self.audiences) or None, "expirationSeconds": self.expiration_seconds,
                     "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": self.pod_name,
                                        "uid": self.pod_uid}},
        }


@dataclass(frozen=True)
class Token:
    token: str
    expires: float  # wall-clock seconds
    ttl: int  # the answer's spec.expirationSeconds
    pod_uid: str

    def refresh_point(self) -> float:
        """When it needs a refresh, without jitter: 80 % of its TTL, or 24 hours, after issue."""
        issued = self.expires - self.ttl
        return min(issued + MAX_TTL_S, self.expires - (self.ttl * 20) // 100)


def requires_refresh(token: Token, now: float, jitter_s: int) -> bool:
    """requiresRefresh: older than 24 h, or within 20 % of its TTL of expiring (both less a jitter)."""
    issued = token.expires - token.ttl
    if now > issued + MAX_TTL_S - jitter_s:
        return True
    return now > token.expires - (token.ttl * 20) // 100 - jitter_s


class TokenManager:
    def __init__(self, api: TokenApi, clock: Clock, on_due: Callable[[str], None] | None = None,
                 rand: Callable[[], float] = random.random) -> None:
        self._api = api
        self._clock = clock
        self._on_due = on_due
        self._rand = rand
        self._cache: dict[str, Token] = {}
        self._timers: dict[str, asyncio.Task[None]] = {}  # cache key -> the pending on_due

    async def token(self, spec: TokenSpec) -> str:
        """GetServiceAccountToken: the cached token, or a fresh one."""
        key = spec.key()
        now = self._clock.now()
        self._drop_expired(now)
        cached = self._cache.get(key)
        if cached is not None and not requires_refresh(cached, now, int(self._rand() * MAX_JITTER_S)):
            return cached.token
        try:
            token = await self._request(spec)
        except KubeletError as exc:
            if cached is None:
                raise Unavailable(f"failed to fetch token: {exc}") from exc
            if now > cached.expires:
                raise Unavailable(f"token {key} expired and refresh failed: {exc}") from exc
            log.warning("Couldn't update token %s: %s", key, exc)
            return cached.token
        self._cache[key] = token
        self._schedule(key, token)
        return token.token

    async def _request(self, spec: TokenSpec) -> Token:
        path = f"/api/v1/namespaces/{spec.namespace}/serviceaccounts/{spec.service_account}/token"
        answer = await self._api.create(path, spec.request())
        status = answer.get("status") or {}
        ttl = (answer.get("spec") or {}).get("expirationSeconds") or spec.expiration_seconds
        try:
            expires = dt.datetime.fromisoformat(str(status["expirationTimestamp"]).replace("Z", "+00:00"))
            token = str(status["token"])
        except (KeyError, ValueError) as exc:
            raise Unavailable(f"POST {path}: the answer has no token and expiry") from exc
        return Token(token, expires.timestamp(), int(ttl), spec.pod_uid)

    def _schedule(self, key: str, token: Token) -> None:
        if self._on_due is None:
            return
        old = self._timers.pop(key, None)
        if old is not None:
            old.cancel()
        self._timers[key] = asyncio.create_task(self._due(key, token), name=f"token-refresh-{token.pod_uid}")

    async def _due(self, key: str, token: Token) -> None:
        await self._clock.sleep(max(token.refresh_point() - self._clock.now(), 0.0) + DUE_MARGIN_S)
        if self._timers.get(key) is asyncio.current_task():
            del self._timers[key]
        if self._on_due is not None:
            self._on_due(token.pod_uid)

    def forget(self, pod_uid: str) -> None:
        """DeleteServiceAccountToken: the pod is gone."""
        for key in [k for k, t in self._cache.items() if t.pod_uid == pod_uid]:
            del self._cache[key]
            timer = self._timers.pop(key, None)
            if timer is not None:
                timer.cancel()

    def _drop_expired(self, now: float) -> None:
        for key in [k for k, t in self._cache.items() if now > t.expires]:
            del self._cache[key]

    async def stop(self) -> None:
        timers = list(self._timers.values())
        self._timers.clear()
        for timer in timers:
            timer.cancel()
        await asyncio.gather(*timers, return_exceptions=True)
