"""/exec, /attach and /portForward (GET and POST; WebSocket or SPDY upgrade), authorized as nodes/proxy.

Checks run in the kubelet's order, on plain requests and handshakes alike: stream options (400
`you must specify at least 1 of stdin, stdout, stderr`; port-forward handshakes: the `port` query,
400), the pod (404 `pod does not exist`), the running container or sandbox (500, the kubelet's
error text). A plain request that passes them gets the kubelet proxy's 500 `Upgrade request
required`, unless it asks for SPDY/3.1 (server/spdyupgrade.py: negotiation, then the connection is
taken over); a WebSocket handshake then negotiates the subprotocol (none in common: 403) and is served by
kubeletapi.streaming. Refused handshakes get these statuses and bodies as HTTP responses.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from starlette.datastructures import QueryParams
from starlette.responses import PlainTextResponse, Response
from starlette.types import Receive, Scope, Send

from kubeletapi.errors import InvalidInput, KubeletError, NotFound
from kubeletapi.runtime.streaming import StreamOptions
from kubeletapi.server import spdyupgrade
from kubeletapi.server.apidoc import ContainerName, Doc, Namespace, PodName, PodUID, documented, options, query, text
from kubeletapi.server.hijack import hijack_of
from kubeletapi.server.host import Host
from kubeletapi.server.routing import WebSocketApp, upgradable
from kubeletapi.streaming.asgi import AsgiWebSocket
from kubeletapi.streaming.conn import ChannelConn
from kubeletapi.streaming.portforward import parse_ports, serve_port_forward
from kubeletapi.streaming.protocol import PORT_FORWARD, REMOTE_COMMAND, Subprotocol, negotiate
from kubeletapi.streaming.remotecommand import RemoteCommand, parse_command, parse_stream_options, serve_remote_command
from kubeletapi.streaming.targets import ContainerStreams, PodPorts

Query = Sequence[tuple[str, str]]
UPGRADE = ("A WebSocket handshake (GET, `Upgrade: websocket`) offering a channel.k8s.io subprotocol "
           "(v5, v4, base64, v1; port-forward: v4.channel.k8s.io) is upgraded and the session served. A "
           "SPDY upgrade (`Connection: Upgrade`, `Upgrade: SPDY/3.1`, any method, usually POST) negotiates "
           "`X-Stream-Protocol-Version` (v4.channel.k8s.io, v3, v2, channel.k8s.io; port-forward: "
           "portforward.k8s.io) and answers 101 (no version: 400, or 200 for port-forward; none in common: "
           "403). Any other request gets the same checks, then 500 `Upgrade request required`.")
SWITCHED: Doc = {"description": "Switching Protocols: the WebSocket session.", "headers": {
    "Sec-WebSocket-Protocol": {"description": "The subprotocol chosen.", "schema": {"type": "string"}}}}
REFUSALS: dict[int | str, Doc] = {
    404: text("No such pod (or another UID).", "pod does not exist"),
    500: text("No running container (or sandbox), or not an upgrade request.", "Upgrade request required\n"),
}
_ON = {"const": "1"}
STREAM_OPTIONS = options(
    "StreamOptions",
    {"input": {"type": "string", "description": "`1`: attach stdin."},
     "output": {"type": "string", "description": "`1`: attach stdout."},
     "error": {"type": "string", "description": "`1`: attach stderr (dropped under a tty)."},
     "tty": {"type": "string", "description": "`1`: allocate a terminal."}},
    "The streams, each on only when exactly `1`: at least one of stdin, stdout and stderr (else 400).",
    required=True,
    anyOf=[{"required": ["input"], "properties": {"input": _ON}},
           {"required": ["output"], "properties": {"output": _ON}},
           {"required": ["error"], "properties": {"error": _ON},
            "not": {"required": ["tty"], "properties": {"tty": _ON}}}],
)
COMMAND = query("command", {"type": "array", "items": {"type": "string"}, "examples": [["sh", "-c", "date"]]},
                "The argv, one value per argument (repeatable).")
PORTS = query("port", {"type": "array", "items": {"type": "string", "pattern": "^[0-9]+(,[0-9]+)*$"},
                       "examples": [["8080"]]},
              "WebSocket handshakes only (required there): the pod's ports, repeatable and comma-separated "
              "(1-65535); a bad one is refused with 400.")
STREAM_400 = text("None of stdin, stdout, stderr.", "you must specify at least 1 of stdin, stdout, stderr")
PORTS_400 = text("A handshake's `port` missing or invalid.", 'query parameter "port" is required')


def _doc(method: str, parameters: Sequence[Doc], refused: Doc) -> dict[str, Any]:
    answers: dict[int | str, Doc] = {400: refused, **REFUSALS}
    if method == "GET":
        answers |= {101: SWITCHED, 403: text("A handshake offered no subprotocol this node speaks.", "")}
    return documented(("proxy",), dict(sorted(answers.items())), parameters, description=UPGRADE)


class _Refused(Exception):
    def __init__(self, status: int, body: str) -> None:
        super().__init__(body)
        self.status = status
        self.body = body


def _refusal(exc: KubeletError) -> _Refused:
    if isinstance(exc, InvalidInput):
        return _Refused(400, str(exc))
    return _Refused(404 if isinstance(exc, NotFound) else 500, str(exc))


async def _container(host: Host, query: Query, path: dict[str, str]) -> tuple[StreamOptions, ContainerStreams]:
    try:
        opts = parse_stream_options(query)
        return opts, await host.container_streams(path["namespace"], path["pod"], path.get("uid"), path["container"])
    except KubeletError as exc:
        raise _refusal(exc) from None


async def _pod(host: Host, path: dict[str, str]) -> PodPorts:
    try:
        return await host.pod_ports(path["namespace"], path["pod"], path.get("uid"))
    except KubeletError as exc:
        raise _refusal(exc) from None


def _subprotocol(ws: AsgiWebSocket, supported: Mapping[str, Subprotocol]) -> Subprotocol:
    proto = negotiate(ws.offered, supported)
    if proto is None:
        raise _Refused(403, "")
    return proto


def _upgrade_required() -> Response:
    # The kubelet's upgrade-aware proxy answers through http.Error.
    return PlainTextResponse("Upgrade request required\n", 500, headers={"X-Content-Type-Options": "nosniff"})


async def _plain(request: Request, port_forward: bool, attach: bool = False) -> Response:
    """A request that is not a WebSocket handshake: the checks, then the SPDY upgrade when it asks
    for one, else the proxy's 500."""
    host: Host = request.app.state.host
    path = {k: str(v) for k, v in request.path_params.items()}
    query = request.query_params.multi_items()
    try:
        if port_forward:
            pod = await _pod(host, path)  # ports come from the query on WebSocket requests only
        else:
            opts, container = await _container(host, query, path)
    except _Refused as exc:
        return PlainTextResponse(exc.body, exc.status)
    if hijack_of(request.scope) is None:
        return _upgrade_required()
    offered = request.headers.getlist("x-stream-protocol-version")
    idle = host.streaming_idle_timeout()
    if port_forward:
        return spdyupgrade.port_forward(offered, idle, pod)
    return spdyupgrade.remote_command(offered, idle, RemoteCommand(opts, parse_command(query), attach), container)


@dataclass(frozen=True)
class _Handshake:
    ws: AsgiWebSocket
    host: Host
    path: dict[str, str]
    query: Query


def _handshake(scope: Scope, receive: Receive, send: Send) -> _Handshake:
    query = QueryParams(scope["query_string"]).multi_items()
    return _Handshake(AsgiWebSocket(scope, receive, send), scope["app"].state.host, scope["path_params"], query)


def _remote_command_app(attach: bool) -> WebSocketApp:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        hs = _handshake(scope, receive, send)
        try:
            opts, container = await _container(hs.host, hs.query, hs.path)
            proto = _subprotocol(hs.ws, REMOTE_COMMAND)
        except _Refused as exc:
            await hs.ws.deny(exc.status, exc.body.encode())
            return
        if await hs.ws.accept(proto.name):
            conn = ChannelConn(hs.ws, proto, hs.host.streaming_idle_timeout())
            await serve_remote_command(conn, RemoteCommand(opts, parse_command(hs.query), attach), container)

    return app


async def _port_forward_app(scope: Scope, receive: Receive, send: Send) -> None:
    hs = _handshake(scope, receive, send)
    try:
        ports = _ports(hs.query)
        pod = await _pod(hs.host, hs.path)
        proto = _subprotocol(hs.ws, PORT_FORWARD)
    except _Refused as exc:
        await hs.ws.deny(exc.status, exc.body.encode())
        return
    if await hs.ws.accept(proto.name):
        await serve_port_forward(ChannelConn(hs.ws, proto, hs.host.streaming_idle_timeout()), ports, pod)


def _ports(query: Query) -> list[int]:
    try:
        return parse_ports([value for key, value in query if key == "port"])
    except InvalidInput as exc:
        raise _Refused(400, str(exc)) from None


async def exec_(request: Request, namespace: Namespace, pod: PodName, container: ContainerName) -> Response:
    """Run `command` (repeated: argv) in the container; needs a WebSocket upgrade."""
    return await _plain(request, port_forward=False)


async def exec_uid(
    request: Request, namespace: Namespace, pod: PodName, uid: PodUID, container: ContainerName
) -> Response:
    """Same, checking the pod's UID."""
    return await _plain(request, port_forward=False)


async def attach(request: Request, namespace: Namespace, pod: PodName, container: ContainerName) -> Response:
    """Attach to the container's streams; needs a WebSocket upgrade."""
    return await _plain(request, port_forward=False, attach=True)


async def attach_uid(
    request: Request, namespace: Namespace, pod: PodName, uid: PodUID, container: ContainerName
) -> Response:
    """Same, checking the pod's UID."""
    return await _plain(request, port_forward=False, attach=True)


async def port_forward(request: Request, namespace: Namespace, pod: PodName) -> Response:
    """Forward the `port` ports (repeatable, comma lists) of the pod; needs a WebSocket upgrade."""
    return await _plain(request, port_forward=True)


async def port_forward_uid(request: Request, namespace: Namespace, pod: PodName, uid: PodUID) -> Response:
    """Same, checking the pod's UID."""
    return await _plain(request, port_forward=True)


def install(app: FastAPI) -> None:
    remote, attached = ([STREAM_OPTIONS, COMMAND], STREAM_400), ([STREAM_OPTIONS], STREAM_400)
    routes: list[tuple[str, Callable[..., Awaitable[Response]], WebSocketApp, tuple[list[Doc], Doc]]] = [
        ("/exec/{namespace}/{pod}/{container}", exec_, _remote_command_app(attach=False), remote),
        ("/exec/{namespace}/{pod}/{uid}/{container}", exec_uid, _remote_command_app(attach=False), remote),
        ("/attach/{namespace}/{pod}/{container}", attach, _remote_command_app(attach=True), attached),
        ("/attach/{namespace}/{pod}/{uid}/{container}", attach_uid, _remote_command_app(attach=True), attached),
        ("/portForward/{namespace}/{pod}", port_forward, _port_forward_app, ([PORTS], PORTS_400)),
        ("/portForward/{namespace}/{pod}/{uid}", port_forward_uid, _port_forward_app, ([PORTS], PORTS_400)),
    ]
    for path, endpoint, websocket_app, (parameters, refused) in routes:
        # One route per method (distinct operation ids); the GET one also takes the handshakes.
        for method in ("GET", "POST"):
            app.router.add_api_route(
                path, endpoint, methods=[method], tags=[path.split("/")[1]],
                operation_id=f"{endpoint.__name__.rstrip('_')}_{method.lower()}",
                status_code=101 if method == "GET" else 500,  # the first response documented (FastAPI adds it)
                route_class_override=upgradable(websocket_app) if method == "GET" else None,
                **_doc(method, parameters, refused),
            )
