"""TokenReview and SubjectAccessReview webhooks against the API server of --kubeconfig.

Request and response shapes are those of authentication.k8s.io/v1 and authorization.k8s.io/v1
as the kubelet sends them (JSON form). Transient failures (connection errors, 429, 500, 504, or
any response with Retry-After) are retried with backoff 0.5 s x 1.5, at most 5 attempts, as
client-go's webhook helper does; everything else fails at once. When the node's Credentials
change (a rotated client certificate), the next review goes through a new connection pool.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import httpx

from kubeletapi.kubeconfig import ClientConfig, Credentials
from kubeletapi.server.authn import AuthenticationError, UserInfo
from kubeletapi.server.authz import Attributes, AuthorizationError, Authorizer, Decision

log = logging.getLogger(__name__)

TOKEN_REVIEW_PATH = "/apis/authentication.k8s.io/v1/tokenreviews"  # noqa: S105 - a URL path
SAR_PATH = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
_RETRY_STATUS = {429, 500, 504}


class APIClient:
    """A small JSON client for the API server named by a kubeconfig."""

    def __init__(self, config: ClientConfig | Credentials, timeout: float = 10.0, attempts: int = 5) -> None:
        self._credentials = config if isinstance(config, Credentials) else Credentials(config)
        self._timeout = timeout
        self._generation = self._credentials.generation
        self._pool = self._new_pool()
        self._retired: list[httpx.AsyncClient] = []
        self._attempts = attempts

    def _new_pool(self) -> httpx.AsyncClient:
        config = self._credentials.config
        headers = {"Accept": "application/json", "User-Agent": "kubeletapi"}
        if config.token:
            headers["Authorization"] = f"Bearer {config.token}"
        return httpx.AsyncClient(base_url=config.server, verify=config.ssl_context(), headers=headers,
                                 timeout=self._timeout)

    @property
    def _client(self) -> httpx.AsyncClient:
        if self._credentials.generation != self._generation:
            self._retired.append(self._pool)  # closed with this client (a rotation is months apart)
            self._pool = self._new_pool()
            self._generation = self._credentials.generation
        return self._pool

    async def aclose(self) -> None:
        for pool in (*self._retired, self._pool):
            await pool.aclose()

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST `body`, retrying transient failures; raise RuntimeError with the reason."""
        delay = 0.5
        for attempt in range(1, self._attempts + 1):
            try:
                response = await self._client.post(path, json=body)
            except httpx.TransportError as exc:
                reason = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code < 300:
                    return dict(response.json())
                reason = f"the server answered {response.status_code}: {response.text[:200]}"
                if response.status_code not in _RETRY_STATUS and "retry-after" not in response.headers:
                    raise RuntimeError(reason)
            if attempt == self._attempts:
                raise RuntimeError(reason)
            await asyncio.sleep(delay)
            delay *= 1.5
        raise AssertionError("unreachable")


class WebhookTokenAuthenticator:
    """Authenticates bearer tokens with a TokenReview (wrap in CachedTokenAuthenticator)."""

    def __init__(self, client: APIClient) -> None:
        self._client = client

    async def authenticate_token(self, token: str) -> UserInfo | None:
        review = {
            "kind": "TokenReview",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {},
            "spec": {"token": token},
            "status": {"user": {}},
        }
        try:
            answer = await self._client.create(TOKEN_REVIEW_PATH, review)
        except (RuntimeError, ValueError) as exc:
            log.warning("TokenReview failed: %s", exc)
            raise AuthenticationError(f"token review failed: {exc}") from exc
        status = answer.get("status") or {}
        if not status.get("authenticated"):
            if status.get("error"):
                raise AuthenticationError(str(status["error"]))
            return None
        user = status.get("user") or {}
        extra = tuple((str(k), tuple(str(x) for x in v)) for k, v in (user.get("extra") or {}).items())
        return UserInfo(
            name=str(user.get("username", "")),
            uid=str(user.get("uid", "")),
            groups=tuple(str(g) for g in user.get("groups") or ()),
            extra=extra,
        )


class WebhookAuthorizer(Authorizer):
    """Asks a SubjectAccessReview (wrap in CachedAuthorizer for the 5m/30s caches)."""

    def __init__(self, client: APIClient) -> None:
        self._client = client

    async def authorize(self, attrs: Attributes) -> Decision:
        review = {
            "kind": "SubjectAccessReview",
            "apiVersion": "authorization.k8s.io/v1",
            "metadata": {},
            "spec": attrs.spec(),
            "status": {"allowed": False},
        }
        try:
            answer = await self._client.create(SAR_PATH, review)
        except (RuntimeError, ValueError) as exc:
            log.warning("SubjectAccessReview failed: %s", exc)
            raise AuthorizationError(str(exc)) from exc
        status = answer.get("status") or {}
        allowed, denied = bool(status.get("allowed")), bool(status.get("denied"))
        if allowed and denied:
            raise AuthorizationError("webhook subject access review returned both allow and deny response")
        if denied:
            return Decision.DENY
        return Decision.ALLOW if allowed else Decision.NO_OPINION
