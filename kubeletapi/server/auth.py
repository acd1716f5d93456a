"""The secure listener's filter: route lookup, authentication, authorization (kubelet order).

1. A path that matches no route gets Go's ServeMux answer, `404 page not found`, before any
   authentication (as on the real kubelet, whose mux answers unknown paths first).
2. Authentication failure: 401 `Unauthorized`.
3. Authorization tries the route's declared subresources in order; an authorizer error gives
   500 `Authorization error (...)`, a refusal 403 `Forbidden (user=..., subresource(s)=[...])`.
The authenticated user is left in scope["user"] for the handlers.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Receive, Scope, Send

from kubeletapi.server.asgi import header, not_found, send_plain
from kubeletapi.server.authn import AuthenticationError, Credentials, RequestAuthenticator
from kubeletapi.server.authz import AuthorizationError, Authorizer, authorize_request, subresources_for_path
from kubeletapi.server.routing import route_subresources

log = logging.getLogger(__name__)

WS_TOKEN_PREFIX = "base64url.bearer.authorization.k8s.io."  # noqa: S105 - a protocol name
_RAW_URL_B64 = re.compile(r"^[A-Za-z0-9_-]*$")


@dataclass(frozen=True)
class Security:
    """What the secure listener checks every request with."""

    authenticator: RequestAuthenticator
    authorizer: Authorizer
    node_name: str


class RouteTable:
    """Maps a request to the subresources its route declared; None when no route matches."""

    def __init__(self, routes: Sequence[BaseRoute]) -> None:
        self._routes = [(r, route_subresources(r)) for r in routes]

    def lookup(self, scope: Scope) -> tuple[str, ...] | None:
        if scope["type"] == "websocket":
            # A WebSocket handshake is a GET: like Go's mux, match it against every route, so it is
            # authenticated and authorized even where no WebSocket handler is registered.
            scope = {"type": "http", "path": scope["path"], "method": "GET", "root_path": scope.get("root_path", "")}
        for route, subresources in self._routes:
            match, _ = route.matches(scope)
            if match is not Match.NONE:
                # An undeclared route still gets the kubelet's path mapping (never less strict).
                return subresources or subresources_for_path(scope["path"])
        return None


def bearer_token(scope: Scope) -> str | None:
    """The token of `Authorization: Bearer <token>`, parsed like k8s.io/apiserver's bearertoken."""
    raw = header(scope, b"authorization")
    if raw is None:
        return None
    parts = raw.decode("latin-1").strip().split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
        return None
    return parts[1]


def websocket_token(scope: Scope) -> tuple[str | None, str | None]:
    """(token, error) from the `base64url.bearer.authorization.k8s.io.<token>` subprotocol.

    On success the token is removed from the offered subprotocols, so it is never echoed back.
    """
    if scope["type"] != "websocket":
        return None, None
    offered = [p.strip() for v in _header_values(scope, b"sec-websocket-protocol") for p in v.split(",")]
    tokens = [p[len(WS_TOKEN_PREFIX):] for p in offered if p.startswith(WS_TOKEN_PREFIX)]
    others = [p for p in offered if p and not p.startswith(WS_TOKEN_PREFIX)]
    if not tokens:
        return None, None
    if len(tokens) > 1:
        return None, "multiple base64.bearer.authorization tokens specified"
    encoded = tokens[0]
    if not _RAW_URL_B64.match(encoded) or len(encoded) % 4 == 1:
        return None, "invalid base64.bearer.authorization token encoding"
    try:
        token = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None, "invalid base64.bearer.authorization token"
    if not token:
        return None, None
    if not others:
        return None, "missing additional subprotocol"
    scope["subprotocols"] = others
    scope["headers"] = [
        (k, v) for k, v in scope["headers"] if k != b"sec-websocket-protocol"
    ] + [(b"sec-websocket-protocol", ",".join(others).encode())]
    return token, None


def _header_values(scope: Scope, name: bytes) -> list[str]:
    return [v.decode("latin-1") for k, v in scope.get("headers", ()) if k == name]


def credentials(scope: Scope) -> Credentials:
    tls = scope.get("extensions", {}).get("tls") or {}
    chain = tls.get("client_cert_chain") or []
    ws_token, ws_error = websocket_token(scope)
    return Credentials(
        client_cert_pem=chain[0] if chain else None,
        header_token=bearer_token(scope),
        websocket_token=ws_token,
        websocket_error=ws_error,
    )


class AuthMiddleware:
    """ASGI middleware enforcing authentication and authorization on every request."""

    def __init__(self, app: ASGIApp, security: Security, routes: Sequence[BaseRoute]) -> None:
        self.app = app
        self._security = security
        self._table = RouteTable(routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        subresources = self._table.lookup(scope)
        if subresources is None:
            await not_found(scope, receive, send)
            return
        try:
            user = await self._security.authenticator.authenticate(credentials(scope))
        except AuthenticationError as exc:
            log.debug("Unable to authenticate the request %s: %s", scope["path"], exc)
            await send_plain(scope, receive, send, 401, b"Unauthorized")
            return
        method = scope.get("method", "GET")
        try:
            outcome = await authorize_request(
                self._security.authorizer, user, method, subresources, self._security.node_name
            )
        except AuthorizationError as exc:
            attrs = exc.attributes
            log.warning("Authorization error for %s %s: %s", user.name, scope["path"], exc)
            msg = (
                f"Authorization error (user={user.name}, verb={attrs.verb if attrs else ''}, "
                f"resource=nodes, subresource={attrs.subresource if attrs else ''})"
            )
            await send_plain(scope, receive, send, 500, msg.encode())
            return
        if not outcome.allowed:
            verb = outcome.attributes[0].verb
            listed = " ".join(a.subresource for a in outcome.attributes)
            msg = f"Forbidden (user={user.name}, verb={verb}, resource=nodes, subresource(s)=[{listed}])\n"
            log.debug("%s", msg.strip())
            await send_plain(scope, receive, send, 403, msg.encode())
            return
        scope["user"] = user
        # Handlers never see the bearer token (k8s deletes the header after authenticating).
        scope["headers"] = [(k, v) for k, v in scope["headers"] if k != b"authorization"]
        await self.app(scope, receive, send)
