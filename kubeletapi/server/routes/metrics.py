"""/metrics (and later /metrics/<collector>): Prometheus text format 0.0.4, gzip on request."""

from __future__ import annotations

import gzip

from fastapi import FastAPI, Request
from prometheus_client import generate_latest
from starlette.responses import Response

from kubeletapi.server.host import Host
from kubeletapi.server.routing import authz

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def exposition(request: Request, endpoint: str) -> Response:
    """Encode one registry; compress when the client accepts gzip (Prometheus does)."""
    host: Host = request.app.state.host
    body = generate_latest(host.metrics_registry(endpoint))
    if "gzip" in request.headers.get("accept-encoding", ""):
        return Response(gzip.compress(body, compresslevel=5), media_type=CONTENT_TYPE,
                        headers={"Content-Encoding": "gzip", "Vary": "Accept-Encoding"})
    return Response(body, media_type=CONTENT_TYPE)


async def metrics(request: Request) -> Response:
    """The kubelet's own metrics: process_*, kubelet_http_*, kubelet_node_name, build info."""
    return exposition(request, "metrics")


def install(app: FastAPI) -> None:
    app.add_api_route("/metrics", metrics, methods=["GET"], openapi_extra=authz("metrics"), tags=["metrics"])
