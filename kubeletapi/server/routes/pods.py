"""/pods, /runningpods/ and /manifests: what the node manages, what runs, what was rejected."""

from __future__ import annotations

from fastapi import FastAPI, Request
from starlette.responses import Response

from kubeletapi.api.gojson import JSON_TYPE, dumps
from kubeletapi.server.host import Host
from kubeletapi.server.routing import authz


async def pods(request: Request) -> Response:
    """v1 PodList of every pod this node manages, with status."""
    host: Host = request.app.state.host
    return Response(dumps(host.pod_list()), media_type=JSON_TYPE)


async def running_pods(request: Request) -> Response:
    """v1 PodList of the pods the runtime is running (metadata and running containers only)."""
    host: Host = request.app.state.host
    return Response(dumps(host.running_pods()), media_type=JSON_TYPE)


async def manifests(request: Request) -> Response:
    """kubeletapi extension: every static pod manifest, accepted or rejected, with the reason."""
    host: Host = request.app.state.host
    return Response(dumps(host.manifests()), media_type=JSON_TYPE)


def install_pods(app: FastAPI) -> None:
    """The auth-not-required /pods (both listeners)."""
    app.add_api_route("/pods", pods, methods=["GET"], openapi_extra=authz("pods", "proxy"), tags=["pods"])


def install_debugging(app: FastAPI) -> None:
    """Debugging handlers (secure listener only)."""
    app.add_api_route("/runningpods/", running_pods, methods=["GET"], openapi_extra=authz("pods", "proxy"),
                      tags=["pods"])
    app.add_api_route("/manifests", manifests, methods=["GET"], openapi_extra=authz("proxy"), tags=["pods"])
