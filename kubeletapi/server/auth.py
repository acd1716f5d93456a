"""The secure listener's filter: route lookup, authentication, authorization (kubelet order).

1. A path that matches no route gets Go's ServeMux answer, `404 page not found`, before any
   authentication (as on the real kubelet, whose mux answers unknown paths first), unless it is
   under one of the kubelet's go-restful WebServices (server/restful.py): then go-restful's 404
   after authentication and authorization; a bare path the mux redirects is redirected first.
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
from kubeletapi.server.restful import page_not_found, redirect, redirected, web_service_root
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


@dataclass(frozen=True)
class Resolved:
    """Where the kubelet's mux sends a request: a redirect, a route (its subresources), go-restful's
    404 after the filters (subresources of the path), or Go's 404 before them (nothing set)."""

    redirect: str | None = None
    subresources: tuple[str, ...] | None = None
    restful_not_found: bool = False


def resolve(table: RouteTable, scope: Scope, debugging: bool) -> Resolved:
    """Resolve a request as the kubelet's mux and go-restful would (server/restful.py); a trailing
    slash go-restful ignores is taken off scope["path"] when that finds the route."""
    path = scope["path"]
    if (target := redirected(path, debugging)) is not None:
        return Resolved(redirect=target)
    if (found := table.lookup(scope)) is not None:
        return Resolved(subresources=found)
    if web_service_root(path, debugging) is None:
        return Resolved()
    bare = path.rstrip("/")
    if bare != path and (found := table.lookup({**scope, "path": bare})) is not None:
        scope["path"] = bare
        scope["raw_path"] = bare.encode()
        return Resolved(subresources=found)
    return Resolved(subresources=subresources_for_path(path), restful_not_found=True)


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

    def __init__(self, app: ASGIApp, security: Security, routes: Sequence[BaseRoute], debugging: bool = True) -> None:
        self.app = app
        self._security = security
        self._table = RouteTable(routes)
        self._debugging = debugging

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        resolved = resolve(self._table, scope, self._debugging)
        if resolved.redirect is not None:
            await redirect(scope, receive, send, resolved.redirect)
            return
        subresources = resolved.subresources
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
        if resolved.restful_not_found:
            await page_not_found(scope, receive, send)
            return
        scope["user"] = user
        # Handlers never see the bearer token (k8s deletes the header after authenticating).
        scope["headers"] = [(k, v) for k, v in scope["headers"] if k != b"authorization"]
        await self.app(scope, receive, send)
