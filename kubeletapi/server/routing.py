"""Every route declares the nodes/<subresource> list it is authorized against.

The declaration lives in the route's OpenAPI extension `x-kubelet-authz`, so it is visible in
openapi/kubeletapi.json, and the auth middleware reads it from the matched route.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar

from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute, Match
from starlette.types import Receive, Scope, Send

AUTHZ_KEY = "x-kubelet-authz"
# Go's ServeMux and go-restful handlers that do not check the method accept any method: these are
# the ones an OpenAPI document can name (an extension method such as QUERY gets a 405).
ALL_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"]


def add_any_method_route(app: FastAPI, path: str, handler: Callable[..., Any], name: str, tag: str,
                         **doc: Any) -> None:
    """A path a Go mux handler serves (healthz, metrics, configz): it takes any method alike, so one
    route per method, each its own operation; GET's is the one described."""
    for method in ALL_METHODS:
        suffix = "" if method == "GET" else f"_{method.lower()}"
        summary = None if method == "GET" else f"Same as GET {path} (any method is served alike)"
        app.add_api_route(path, handler, methods=[method], name=name + suffix, operation_id=f"{name}_{method.lower()}",
                          summary=summary, tags=[tag], **doc)


def authz(*subresources: str) -> dict[str, Any]:
    """openapi_extra for a route authorized as nodes/<subresources[0]>, then the others."""
    return {AUTHZ_KEY: {"resource": "nodes", "subresources": list(subresources)}}


def allowed_methods(routes: Sequence[BaseRoute], scope: Scope) -> list[str]:
    """Every method some route serves at the request's path: a 405's `Allow` (Starlette's names only
    the methods of the first route on the path, and paths here have one route per method)."""
    methods: set[str] = set()
    probe = {**scope, "type": "http"}
    for route in routes:
        if route.matches(probe)[0] is not Match.NONE:
            methods |= getattr(route, "methods", None) or set()
    return [m for m in ALL_METHODS if m in methods] + sorted(methods - set(ALL_METHODS))


def route_subresources(route: BaseRoute) -> tuple[str, ...] | None:
    """The subresources a route declared, or None when it declared nothing."""
    extra = getattr(route, "openapi_extra", None) or {}
    decl = extra.get(AUTHZ_KEY)
    if not decl or not decl.get("subresources"):
        return None
    return tuple(decl["subresources"])


WebSocketApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class UpgradableRoute(APIRoute):
    """An HTTP route that also takes the WebSocket handshakes on its path (Go's mux serves both
    with one handler), so app.routes stays flat and the route keeps one declaration. A handshake
    matches as a GET and goes to `websocket_app` (an ASGI app; path parameters in
    scope["path_params"])."""

    websocket_app: ClassVar[WebSocketApp]

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "websocket":
            return super().matches(scope)
        match, child = super().matches({**scope, "type": "http", "method": "GET"})
        return (Match.NONE, {}) if match is not Match.FULL else (match, child)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await type(self).websocket_app(scope, receive, send)
        else:
            await super().handle(scope, receive, send)


def upgradable(websocket_app: WebSocketApp) -> type[APIRoute]:
    """The route class (for route_class_override) whose handshakes go to `websocket_app`."""
    return type("UpgradableRoute", (UpgradableRoute,), {"websocket_app": staticmethod(websocket_app)})
