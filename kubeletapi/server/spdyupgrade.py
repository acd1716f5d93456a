"""The SPDY/3.1 answer of /exec, /attach and /portForward, once the request passed their checks.

X-Stream-Protocol-Version is negotiated (streaming.spdy.handshake: its refusals become HTTP
answers); then the connection is taken over (server/hijack.py) with the kubelet's 101
(`Connection: Upgrade`, `Upgrade: SPDY/3.1`, the version) and served by streaming.spdy until the
session ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from starlette.responses import PlainTextResponse, Response

from kubeletapi.server.hijack import UpgradeResponse, switching_protocols
from kubeletapi.spdy.connection import Accept, SpdyConnection
from kubeletapi.streaming.remotecommand import RemoteCommand
from kubeletapi.streaming.spdy import handshake
from kubeletapi.streaming.spdy.portforward import accept_port_stream, serve_spdy_port_forward
from kubeletapi.streaming.spdy.remotecommand import accept_any, serve_spdy_remote_command
from kubeletapi.streaming.targets import ContainerStreams, PodPorts

Serve = Callable[[SpdyConnection, str], Awaitable[None]]


def _refusal(refusal: handshake.Refusal) -> Response:
    if not refusal.body:
        return Response(status_code=refusal.status)
    response = PlainTextResponse(refusal.body, refusal.status, headers={"X-Content-Type-Options": "nosniff"})
    for name, value in refusal.headers:
        response.headers.append(name, value)
    return response


def _answer(offered: list[str], port_forward: bool, idle_timeout_s: float, accept: Accept, serve: Serve) -> Response:
    server = handshake.PORT_FORWARD if port_forward else handshake.REMOTE_COMMAND
    version = handshake.negotiate(offered, server, port_forward)
    if isinstance(version, handshake.Refusal):
        return _refusal(version)
    head = switching_protocols([("Connection", "Upgrade"), ("Upgrade", "SPDY/3.1"),
                                ("X-Stream-Protocol-Version", version)])

    def factory(transport: asyncio.Transport) -> SpdyConnection:
        return SpdyConnection(transport, accept, idle_timeout_s)

    async def run(conn: SpdyConnection) -> None:
        await serve(conn, version)

    return UpgradeResponse(head, factory, run)


def remote_command(offered: list[str], idle_timeout_s: float, request: RemoteCommand,
                   target: ContainerStreams) -> Response:
    """The answer to an exec or attach upgrade."""
    async def serve(conn: SpdyConnection, version: str) -> None:
        await serve_spdy_remote_command(conn, version, request, target)

    return _answer(offered, False, idle_timeout_s, accept_any, serve)


def port_forward(offered: list[str], idle_timeout_s: float, target: PodPorts) -> Response:
    """The answer to a port-forward upgrade."""
    async def serve(conn: SpdyConnection, version: str) -> None:
        await serve_spdy_port_forward(conn, target)

    return _answer(offered, True, idle_timeout_s, accept_port_stream, serve)
