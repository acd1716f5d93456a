"""Placeholders answering 405 `Debug endpoints are disabled.` (read-only port, or
enableDebuggingHandlers: false), as the kubelet's InstallDebuggingDisabledHandlers does."""

from __future__ import annotations

from fastapi import FastAPI
from starlette.responses import PlainTextResponse

from kubeletapi.server.routing import ALL_METHODS, authz

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
    return PlainTextResponse(
        "Debug endpoints are disabled.\n", 405, headers={"X-Content-Type-Options": "nosniff"}
    )


def install(app: FastAPI) -> None:
    for prefix, subresource in DISABLED:
        declared = (subresource, "proxy") if subresource == "pods" else (subresource,)
        app.add_api_route(
            prefix + "/{rest:path}",
            _disabled,
            methods=ALL_METHODS,
            openapi_extra=authz(*declared),
            name=f"disabled_{prefix.strip('/').replace('/', '_')}",
            include_in_schema=False,
        )
