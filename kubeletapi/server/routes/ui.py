"""/ui/: the node's web UI (pages, their built assets, the small JSON views they poll).

Authorized as nodes/ui (then nodes/proxy, the kubelet's catch-all) on the secure port; served
without authentication on the read-only port, where the pages hide container logs: the logs are
/containerLogs, a debugging handler, on the secure port only. An unknown pod or container is a
404 HTML page saying so (a 404 Status object for the JSON views). Each page carries its first
views inline (server/uipage.py), so it renders without a request of its own, then polls them.
The assets are built by the Makefile (ui/: npm ci, then ui/build.mjs) into
kubeletapi/server/ui/, which the package ships; without them the pages answer 503 saying how to
build them.
"""

from __future__ import annotations

import html
import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI, Request
from fastapi import Path as PathParam
from starlette.responses import HTMLResponse, JSONResponse, Response

from kubeletapi.errors import NotFound
from kubeletapi.server.apidoc import Doc, Namespace, PodName, documented, json, status, text
from kubeletapi.server.host import Host
from kubeletapi.server.uiassets import Assets
from kubeletapi.server.uipage import base_for, render
from kubeletapi.server.uiview import check_container, find_pod, node_overview, pod_detail, pods_table

ASSETS = Assets(Path(__file__).resolve().parents[1] / "ui")
HTML_TYPE = "text/html; charset=utf-8"
_ASSET_NAME = re.compile(r"^[A-Za-z0-9_-]+\.(js|css|html|svg)$")
_MEDIA = {"js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8", "html": HTML_TYPE,
          "svg": "image/svg+xml"}
CACHE = {"Cache-Control": "no-cache"}  # the views are live: never reused without asking
NOT_BUILT = ("The web UI's assets are not built: run `make venv` (or `make ui`) in the checkout, which installs "
             "them with npm ci and ui/build.mjs.\n")
Json = dict[str, Any]
Container = Annotated[str, PathParam(description="The container's name.", examples=["tick"])]
Asset = Annotated[str, PathParam(description="A built asset's file name.", examples=["ui.js"])]


def _host(request: Request) -> Host:
    host: Host = request.app.state.host
    return host


TTL_S = 0.25  # a pod's status shows on the pages at most this much later than on /pods
MAX_AGE_S = 10.0  # unchanged pods: the PodList is built again at least this often all the same


class SharedPodList:
    """The PodList the views read, built at most once per `ttl_s` (a page's views, fetched together,
    share one build), and again only when a pod or its status changed (`Host.pods_version`) or
    it is `max_age_s` old: 110 pods cost 12 ms (40 ms on a busy machine) to turn into their wire
    form, most of a page load's server time."""

    def __init__(self, monotonic: Callable[[], float] = time.monotonic, ttl_s: float = TTL_S,
                 max_age_s: float = MAX_AGE_S) -> None:
        self._monotonic = monotonic
        self._ttl_s = ttl_s
        self._max_age_s = max_age_s
        self._built: tuple[float, int, Mapping[str, Any]] | None = None

    def get(self, host: Host) -> Mapping[str, Any]:
        now = self._monotonic()
        if self._built is not None and now - self._built[0] < self._ttl_s:
            return self._built[2]
        version = host.pods_version()
        if self._built is None or version != self._built[1] or now - self._built[0] >= self._max_age_s:
            self._built = (now, version, host.pod_list())
        return self._built[2]


def _pod_list(request: Request) -> Mapping[str, Any]:
    shared: SharedPodList = request.app.state.ui_pod_list
    return shared.get(_host(request))


def _logs(request: Request) -> bool:
    """Container logs are served on this listener (the secure one, with debugging handlers)."""
    return any(getattr(r, "path", "") == "/containerLogs/{namespace}/{pod}/{container}" for r in request.app.routes)


def _page(request: Request, depth: int, data: Mapping[str, Any]) -> Response:
    """The page (`depth`: its path segments below /ui/) with its first views inlined."""
    template = ASSETS.body("index.html")
    if template is None:
        return Response(NOT_BUILT, 503, media_type="text/plain; charset=utf-8")
    return Response(render(ASSETS, template, depth, data), media_type=HTML_TYPE, headers=CACHE)


def not_found_page(message: str, depth: int) -> HTMLResponse:
    """The 404 page of an unknown pod or container: what was asked, and the way back (relative, as
    every address of the UI: it works under the API server's node proxy path too)."""
    base = base_for(depth)
    body = (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Not found</title>'
            f'<link rel="icon" href="data:,">'
            f'<link rel="stylesheet" href="{base}assets/ui.css?v={ASSETS.version("ui.css")}"></head>'
            f'<body><main class="notfound">'
            f'<h1>404: not found</h1><p role="alert">{html.escape(message)}</p>'
            f'<p><a href="{base}">Back to the node</a></p></main></body></html>\n')
    return HTMLResponse(body, 404)


def _node_data(request: Request) -> Json:
    host = _host(request)
    return node_overview(host.stats_history(), _pod_list(request), host.node_status_view(), host.node_name,
                         _logs(request))


def _pods_data(request: Request) -> Json:
    return pods_table(_host(request).stats_history(), _pod_list(request))


def _pod_data(request: Request, namespace: str, pod: str, container: str | None = None) -> Json:
    """The pod view, with its recent events and what its page shows of the node (its name, whether
    logs are served here); NotFound for an unknown pod, or a `container` the pod does not have."""
    host = _host(request)
    found = find_pod(_pod_list(request), namespace, pod)
    if container is not None:
        check_container(found, container)
    history = host.stats_history()
    view = pod_detail(history, found)
    return {**view, "events": list(host.pod_events(view["pod"]["uid"])), "node": host.node_name,
            "logs": _logs(request), "time": history.latest().time_s}


async def index(request: Request) -> Response:
    """The node overview and the pods table."""
    return _page(request, 0, {"node": _node_data(request), "pods": _pods_data(request)})


async def bare(request: Request) -> Response:
    """`/ui` is `/ui/`."""
    return Response(b"", 301, headers={"Location": "/ui/"}, media_type="text/plain; charset=utf-8")


async def pod_page(request: Request, namespace: Namespace, pod: PodName) -> Response:
    """One pod: its containers' status, probes, charts and logs; 404 page for an unknown pod."""
    try:
        data = _pod_data(request, namespace, pod)
    except NotFound as exc:
        return not_found_page(str(exc), 2)
    return _page(request, 2, {"pod": data})


async def container_page(request: Request, namespace: Namespace, pod: PodName, container: Container) -> Response:
    """One pod with the container's logs open; 404 page for an unknown pod or container."""
    try:
        data = _pod_data(request, namespace, pod, container)
    except NotFound as exc:
        return not_found_page(str(exc), 3)
    return _page(request, 3, {"pod": data})


async def asset(request: Request, name: Asset) -> Response:
    """A built asset (the bundled script with uPlot, the style sheet)."""
    found = ASSETS.respond(request, name, _MEDIA[name.rsplit(".", 1)[1]]) if _ASSET_NAME.match(name) else None
    return found if found is not None else Response("404 page not found\n", 404, media_type="text/plain; charset=utf-8")


async def node_view(request: Request) -> Response:
    """The node overview: usage, capacity, allocatable, conditions, counts and the node's series."""
    return JSONResponse(_node_data(request), headers=CACHE)


async def pods_view(request: Request) -> Response:
    """The pods table: one row per pod."""
    return JSONResponse(_pods_data(request), headers=CACHE)


async def pod_view(request: Request, namespace: Namespace, pod: PodName) -> Response:
    """One pod with its containers and their series (404 Status for an unknown pod)."""
    return JSONResponse(_pod_data(request, namespace, pod), headers=CACHE)


SERIES: Doc = {"type": ["object", "null"], "description": "Oldest first: `t` (Unix seconds) and one array per "
               "figure (null where a cycle had none).", "additionalProperties": {"type": "array"}}
VIEW: Doc = {"type": "object", "additionalProperties": True}
PAGE: dict[int | str, Doc] = {
    200: text("The page (one document for every page: its script reads the address).", None, HTML_TYPE),
        503: text("The assets are not built.", NOT_BUILT)}
PAGE_404: dict[int | str, Doc] = {**PAGE, 404: text("No such pod or container: a page saying so.", None, HTML_TYPE)}
JSON_VIEWS: tuple[tuple[str, object, str, Doc], ...] = (
    ("/ui/api/node", node_view, "ui_node", json("The node overview.", {**VIEW, "properties": {"series": SERIES}})),
    ("/ui/api/pods", pods_view, "ui_pods", json("The pods table.", VIEW)),
)


def install(app: FastAPI, pod_list: SharedPodList | None = None) -> None:
    """Both listeners: the pages, the assets, the JSON views."""
    app.state.ui_pod_list = pod_list or SharedPodList()
    doc = documented(("ui", "proxy"), {301: text("To `/ui/`.", "")})
    app.add_api_route("/ui", bare, methods=["GET"], tags=["ui"], status_code=301, **doc)
    app.add_api_route("/ui/", index, methods=["GET"], tags=["ui"], **documented(("ui", "proxy"), PAGE))
    app.add_api_route("/ui/pods/{namespace}/{pod}", pod_page, methods=["GET"], tags=["ui"],
                      **documented(("ui", "proxy"), PAGE_404))
    app.add_api_route("/ui/pods/{namespace}/{pod}/{container}", container_page, methods=["GET"], tags=["ui"],
                      **documented(("ui", "proxy"), PAGE_404))
    app.add_api_route("/ui/assets/{name}", asset, methods=["GET"], tags=["ui"], **documented(("ui", "proxy"), {
        200: text("The asset (JavaScript, CSS).", None, "text/javascript; charset=utf-8"),
        404: text("No such asset.", "404 page not found\n")}))
    for path, handler, name, answer in JSON_VIEWS:
        app.add_api_route(path, handler, methods=["GET"], tags=["ui"], name=name,  # type: ignore[arg-type]
                          **documented(("ui", "proxy"), {200: answer}))
    app.add_api_route("/ui/api/pods/{namespace}/{pod}", pod_view, methods=["GET"], tags=["ui"], name="ui_pod",
                      **documented(("ui", "proxy"), {
                          200: json("The pod, its containers and their series, its recent events.", VIEW),
                          404: status("No such pod.")}))
