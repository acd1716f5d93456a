"""create_app: the FastAPI app of each listener, with the kubelet's handler groups.

- "secure" (readwrite): the auth-not-required group plus, with enableDebuggingHandlers, the
  debugging group (/configz ...), else the 405 placeholders; every request is authenticated
  and authorized.
- "readonly": the auth-not-required group and the 405 placeholders; no auth; no /configz.
- "healthz": /healthz and /healthz/ping with the ping check only, uninstrumented.
Middleware order, outermost first: proxy alias, instrumentation, auth (secure only).
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from kubeletapi import __version__
from kubeletapi.health import PingCheck
from kubeletapi.metrics.kubelet import KubeletMetrics
from kubeletapi.server import errors
from kubeletapi.server.apidoc import documented, text
from kubeletapi.server.asgi import not_found
from kubeletapi.server.auth import AuthMiddleware, Resolved, RouteTable, Security, resolve
from kubeletapi.server.host import Host
from kubeletapi.server.instrumentation import (
    AUTH_NOT_REQUIRED_BUCKETS,
    DEBUGGING_BUCKETS,
    DEBUGGING_DISABLED_BUCKETS,
    InstrumentationMiddleware,
)
from kubeletapi.server.listenerdoc import Listener, listener_document
from kubeletapi.server.proxy_alias import ProxyAliasMiddleware
from kubeletapi.server.restful import page_not_found, redirect
from kubeletapi.server.routes import (
    configz,
    debug_disabled,
    exec,
    healthz,
    logs,
    metrics,
    nodelogs,
    openapi,
    pods,
    run,
    stats,
    submission,
    ui,
)

Role = Literal["secure", "readonly"]
TITLE = "kubeletapi"


class ListenerApp(FastAPI):
    """The routes of one listener; its OpenAPI document is that listener's (server/listenerdoc.py)."""

    def __init__(self, listener: Listener) -> None:
        super().__init__(title=TITLE, version=__version__, openapi_url=None, docs_url=None, redoc_url=None,
                         redirect_slashes=False, generate_unique_id_function=_operation_id)
        self.listener = listener

    def openapi(self) -> dict[str, Any]:
        if self.openapi_schema is None:
            self.openapi_schema = listener_document(self.routes, self.listener, self.title, self.version)
        return self.openapi_schema


def _operation_id(route: APIRoute) -> str:
    """`<handler>_<method>` (every route serves one method, or its operation id is explicit)."""
    return f"{route.name}_{min(route.methods or {'GET'}).lower()}"


def _base_app(host: Host, listener: Listener) -> ListenerApp:
    app = ListenerApp(listener)
    app.state.host = host
    errors.install(app)
    return app


def api(host: Host, role: Role, debugging_handlers: bool = True, pod_submission: bool = False,
        system_log_handler: bool = True) -> FastAPI:
    """The routes of a listener, without middleware (also the source of its OpenAPI document)."""
    app = _base_app(host, role)
    # Routes are added to the app itself (not through include_router) so app.routes is flat:
    # the auth middleware and the route-walking test read each route's declaration.
    healthz.install(app, host.health_checks())
    pods.install_pods(app)
    stats.install(app)
    metrics.install(app)
    ui.install(app)
    if role == "secure" and debugging_handlers:
        pods.install_debugging(app)
        nodelogs.install(app, system_log_handler)
        logs.install(app)
        run.install(app)
        exec.install(app)
        configz.install(app)
        openapi.install(app)
    else:
        debug_disabled.install(app)
    if role == "secure" and pod_submission:
        submission.install(app)
    return app


def create_app(
    host: Host,
    role: Role,
    metrics_: KubeletMetrics,
    security: Security | None = None,
    debugging_handlers: bool = True,
    pod_submission: bool = False,
    system_log_handler: bool = True,
) -> ASGIApp:
    """The ASGI app of the secure or read-only listener, middleware included."""
    app = api(host, role, debugging_handlers, pod_submission, system_log_handler)
    debugging = role == "secure" and debugging_handlers
    buckets = AUTH_NOT_REQUIRED_BUCKETS + (DEBUGGING_BUCKETS if debugging else DEBUGGING_DISABLED_BUCKETS)
    inner: ASGIApp
    if role == "secure":
        if security is None:
            raise ValueError("the secure listener needs authentication and authorization")
        inner = AuthMiddleware(app, security, app.routes, debugging)
    else:
        inner = _NotFoundFirst(app, debugging=False)
    server_type = "readwrite" if role == "secure" else "readonly"
    instrumented = InstrumentationMiddleware(inner, metrics_, server_type, buckets)
    return ProxyAliasMiddleware(instrumented, host.node_name)


def create_ui_app(host: Host) -> ASGIApp:
    """The --ui-port listener: the web UI alone (as on the read-only port: no logs, no
    authentication), `/` leading to it."""
    app = _base_app(host, "ui")
    ui.install(app)
    app.add_api_route("/", ui.bare, methods=["GET"], tags=["ui"], status_code=301,
                      **documented((), {301: text("To `/ui/`.", "")}))
    return _NotFoundFirst(app, debugging=False)


def create_healthz_app(host: Host) -> ASGIApp:
    """The healthz listener: only the ping check, as the kubelet's port 10248."""
    app = _base_app(host, "healthz")
    healthz.install(app, [PingCheck()])
    return _NotFoundFirst(app, healthz_only=True)


class _NotFoundFirst:
    """Unknown paths get Go's `404 page not found`, paths under a WebService go-restful's, bare
    paths the mux redirects a 307 (what the auth middleware does on 10250, without the auth). The
    healthz listener has no WebService: only Go's 404."""

    def __init__(self, app: FastAPI, debugging: bool = False, healthz_only: bool = False) -> None:
        self.app = app
        self._table = RouteTable(app.routes)
        self._debugging = debugging
        self._healthz_only = healthz_only

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if self._healthz_only:
            resolved = Resolved(subresources=self._table.lookup(scope))
        else:
            resolved = resolve(self._table, scope, self._debugging)
        if resolved.redirect is not None:
            await redirect(scope, receive, send, resolved.redirect)
        elif resolved.subresources is None:
            await not_found(scope, receive, send)
        elif resolved.restful_not_found:
            await page_not_found(scope, receive, send)
        else:
            await self.app(scope, receive, send)
