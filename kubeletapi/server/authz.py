"""Authorization: request attributes as the kubelet builds them, and the authorizer modes.

Attributes follow pkg/kubelet/server/auth.go with fine-grained authorization on: resource
`nodes`, name = node name, verb from the HTTP method (HEAD and OPTIONS give ""), and a list of
subresources tried in order until one is allowed (`/pods` tries `pods` then `proxy`).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Sequence
from dataclasses import dataclass

from kubeletapi.clock import Clock
from kubeletapi.server.authn import UserInfo

VERBS = {"POST": "create", "GET": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}

# (path prefix, subresources tried in order), first match wins; everything else is `proxy`.
_SUBRESOURCES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("/stats", ("stats",)),
    ("/metrics", ("metrics",)),
    ("/logs", ("log",)),
    ("/checkpoint", ("checkpoint",)),
    ("/pods", ("pods", "proxy")),
    ("/submittedpods", ("submittedpods",)),  # kubeletapi's pod submission (--enable-pod-submission)
    ("/runningpods", ("pods", "proxy")),
    ("/healthz", ("healthz", "proxy")),
    ("/configz", ("configz", "proxy")),
    ("/statusz", ("statusz", "proxy")),
    ("/ui", ("ui", "proxy")),  # kubeletapi's web UI (its own subresource, then the catch-all)
)


def verb_for(method: str) -> str:
    """The authorization verb of an HTTP method (HEAD -> "", as in the kubelet's code)."""
    return VERBS.get(method, "")


def is_subpath(path: str, prefix: str) -> bool:
    return path.rstrip("/") == prefix or path.startswith(prefix + "/")


def subresources_for_path(path: str) -> tuple[str, ...]:
    """The kubelet's path -> nodes/<subresource> mapping (fine-grained order)."""
    for prefix, subresources in _SUBRESOURCES:
        if is_subpath(path, prefix):
            return subresources
    return ("proxy",)


@dataclass(frozen=True)
class Attributes:
    """One SubjectAccessReview's worth of attributes."""

    user: UserInfo
    verb: str
    subresource: str
    name: str
    resource: str = "nodes"
    api_version: str = "v1"

    def spec(self) -> dict[str, object]:
        """The SubjectAccessReview spec, with Go's omitempty (empty strings left out)."""
        resource = {
            "verb": self.verb,
            "version": self.api_version,
            "resource": self.resource,
            "subresource": self.subresource,
            "name": self.name,
        }
        spec: dict[str, object] = {"resourceAttributes": {k: v for k, v in resource.items() if v}}
        if self.user.name:
            spec["user"] = self.user.name
        if self.user.groups:
            spec["groups"] = list(self.user.groups)
        if self.user.extra:
            spec["extra"] = {k: list(v) for k, v in self.user.extra}
        if self.user.uid:
            spec["uid"] = self.user.uid
        return spec


class Decision(enum.Enum):
    ALLOW = "allow"
    DENY = "deny"
    NO_OPINION = "no-opinion"


class AuthorizationError(Exception):
    """The authorizer could not decide (webhook unreachable...): answered with 500."""

    attributes: Attributes | None = None


class Authorizer:
    """Base of the authorizer modes."""

    async def authorize(self, attrs: Attributes) -> Decision:
        raise NotImplementedError


class AlwaysAllow(Authorizer):
    async def authorize(self, attrs: Attributes) -> Decision:
        return Decision.ALLOW


class CachedAuthorizer(Authorizer):
    """Caches another authorizer: allow for `allow_ttl`, deny/no-opinion for `deny_ttl`.

    Errors are not cached; neither are attributes of 10,000 bytes or more (as upstream).
    """

    def __init__(
        self, inner: Authorizer, allow_ttl: float, deny_ttl: float, clock: Clock, size: int = 4096
    ) -> None:
        self._inner = inner
        self._allow_ttl = allow_ttl
        self._deny_ttl = deny_ttl
        self._clock = clock
        self._size = size
        self._cache: dict[str, tuple[float, Decision]] = {}

    async def authorize(self, attrs: Attributes) -> Decision:
        key = json.dumps(attrs.spec(), sort_keys=True)
        now = self._clock.monotonic()
        hit = self._cache.get(key)
        if hit is not None and hit[0] > now:
            return hit[1]
        decision = await self._inner.authorize(attrs)
        ttl = self._allow_ttl if decision is Decision.ALLOW else self._deny_ttl
        if len(key) < 10_000 and ttl > 0:
            if len(self._cache) >= self._size:
                self._evict(now)
            self._cache[key] = (now + ttl, decision)
        return decision

    def _evict(self, now: float) -> None:
        expired = [k for k, (deadline, _) in self._cache.items() if deadline <= now]
        for key in expired or list(self._cache)[: self._size // 4]:
            del self._cache[key]


@dataclass(frozen=True)
class AuthorizationOutcome:
    """The result of trying every subresource of a request."""

    allowed: bool
    attributes: Sequence[Attributes]


async def authorize_request(
    authorizer: Authorizer, user: UserInfo, method: str, subresources: Sequence[str], node_name: str
) -> AuthorizationOutcome:
    """Try each subresource in order; the first ALLOW wins. AuthorizationError propagates."""
    verb = verb_for(method)
    tried = [Attributes(user=user, verb=verb, subresource=s, name=node_name) for s in subresources]
    for attrs in tried:
        try:
            decision = await authorizer.authorize(attrs)
        except AuthorizationError as exc:
            exc.attributes = attrs
            raise
        if decision is Decision.ALLOW:
            return AuthorizationOutcome(True, tried)
    return AuthorizationOutcome(False, tried)
