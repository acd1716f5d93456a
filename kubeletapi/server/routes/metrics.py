"""/metrics, /metrics/cadvisor, /metrics/resource and /metrics/probes: Prometheus text format
0.0.4, gzip when the client accepts it (Prometheus always does).

/metrics and /metrics/probes are prometheus_client registries encoded per request (in
client_golang's form, metrics.exposition.render_registry); cadvisor and resource are rendered by
the stats provider once per housekeeping cycle and served from its cache. The headers are the
kubelet's: its client_golang's content type (`escaping=underscores`: names are written as they
are, UTF-8 names would have been escaped with underscores) and Process-Start-Time-Unix.
"""

from __future__ import annotations

import gzip

from fastapi import FastAPI, Request
from starlette.responses import Response

from kubeletapi.metrics.exposition import render_registry
from kubeletapi.server.apidoc import documented, header, text
from kubeletapi.server.host import Host
from kubeletapi.server.routing import add_any_method_route

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"


def _accepts_gzip(request: Request) -> bool:
    return "gzip" in request.headers.get("accept-encoding", "").lower()


def _respond(request: Request, body: bytes, gzipped: bool) -> Response:
    host: Host = request.app.state.host
    headers = {"Process-Start-Time-Unix": str(host.process_start_unix)}
    if gzipped:
        headers["Content-Encoding"] = "gzip"  # and no Vary: the kubelet's promhttp sends none
    return Response(body, media_type=CONTENT_TYPE, headers=headers)


def exposition(request: Request, endpoint: str) -> Response:
    """Encode one registry; compress when the client accepts gzip."""
    host: Host = request.app.state.host
    body = render_registry(host.metrics_registry(endpoint))
    gzipped = _accepts_gzip(request)
    return _respond(request, gzip.compress(body, compresslevel=5) if gzipped else body, gzipped)


async def cadvisor(request: Request) -> Response:
    """cAdvisor's container_* and machine_* families for the root, QoS, pod and container cgroups."""
    host: Host = request.app.state.host
    gzipped = _accepts_gzip(request)
    return _respond(request, host.stats_metrics("cadvisor", gzipped), gzipped)


async def resource(request: Request) -> Response:
    """Node, pod and container CPU and working set (what metrics-server reads)."""
    host: Host = request.app.state.host
    gzipped = _accepts_gzip(request)
    return _respond(request, host.stats_metrics("resource", gzipped), gzipped)


async def probes(request: Request) -> Response:
    """Prober metrics and process_start_time_seconds."""
    return exposition(request, "probes")


async def metrics(request: Request) -> Response:
    """The kubelet's own metrics: process_*, kubelet_http_*, kubelet_node_name, build info."""
    return exposition(request, "metrics")


GZIP_HEADERS = {
    "Content-Encoding": {"description": "`gzip` when the request accepts it.", "schema": {"type": "string",
                                                                                         "enum": ["gzip"]}},
    "Process-Start-Time-Unix": {"description": "When the node agent's process started (Unix seconds).",
                                "schema": {"type": "integer"}},
}
ACCEPT_ENCODING = header("Accept-Encoding", {"type": "string", "examples": ["gzip"]},
                         "The answer is gzip-compressed when this names `gzip` (Prometheus always sends it).")


def install(app: FastAPI) -> None:
    for path, handler in (("/metrics", metrics), ("/metrics/cadvisor", cadvisor), ("/metrics/resource", resource),
                          ("/metrics/probes", probes)):
        ok = text("Prometheus text exposition format 0.0.4.", "# HELP ...\n", CONTENT_TYPE, GZIP_HEADERS)
        doc = documented(("metrics",), {200: ok}, [ACCEPT_ENCODING])
        # Go mux handlers on the kubelet: any method is served alike.
        add_any_method_route(app, path, handler, handler.__name__, "metrics", description=handler.__doc__, **doc)
