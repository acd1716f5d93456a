"""Placeholders answering 405 `Debug endpoints are disabled.` (read-only port, or
enableDebuggingHandlers: false), as the kubelet's InstallDebuggingDisabledHandlers does; WebSocket
handshakes on these paths (an exec client) get the same HTTP answer. They are left out of the
listener's OpenAPI document, which lists what a client can use and names these in its description
(server/listenerdoc.py)."""

from __future__ import annotations

from fastapi import FastAPI
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from kubeletapi.server.routing import ALL_METHODS, authz, upgradable
from kubeletapi.streaming.asgi import AsgiWebSocket

BODY = "Debug endpoints are disabled.\n"

# (prefix, subresource the secure port would authorize it as)
DISABLED = (
    ("/run", "proxy"),
    ("/exec", "proxy"),
    ("/attach", "proxy"),
    ("/portForward", "proxy"),
    ("/containerLogs", "proxy"),
    ("/runningpods", "pods"),
    ("/debug/pprof", "proxy"),
    ("/logs", "log"),
)


async def _disabled() -> PlainTextResponse:
    return PlainTextResponse(BODY, 405, headers={"X-Content-Type-Options": "nosniff"})


async def _disabled_handshake(scope: Scope, receive: Receive, send: Send) -> None:
    await AsgiWebSocket(scope, receive, send).deny(405, BODY.encode(), [(b"x-content-type-options", b"nosniff")])


def install(app: FastAPI) -> None:
    for prefix, subresource in DISABLED:
        declared = (subresource, "proxy") if subresource == "pods" else (subresource,)
        app.router.add_api_route(
            prefix + "/{rest:path}",
            _disabled,
            methods=ALL_METHODS,
            openapi_extra=authz(*declared),
            name=f"disabled_{prefix.strip('/').replace('/', '_')}",
            include_in_schema=False,
            route_class_override=upgradable(_disabled_handshake),
        )
