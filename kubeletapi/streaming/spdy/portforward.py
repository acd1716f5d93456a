"""/portForward over SPDY: pairs of data and error streams, each forwarded to a port of the pod.

The client opens two streams per forwarded connection, both with `port` and `streamType` (data
or error) headers and a shared `requestID` (without one the kubelet pairs an error stream with
the data stream two ids later). A stream whose headers are missing or wrong is refused (reset)
with the kubelet's reason in the log. Once both streams of a request arrived, a TCP connection to
the port is opened in the pod and bytes are copied both ways; when one direction ends the other
gets up to DRAIN_S to finish (as containerd's forwarder), then both streams are finished. A
connection that fails writes `error forwarding port <p> to pod <sandbox>, uid : <err>` on the
error stream and resets both. A pair not completed within STREAM_CREATION_TIMEOUT_S, or a
stream type sent twice, gets its message on the error stream. Many pairs run at once; all end
when the client closes the connection or it idles out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubeletapi.aio import cancel_and_wait
from kubeletapi.errors import KubeletError
from kubeletapi.gofmt import go_quote
from kubeletapi.spdy.connection import SpdyConnection, SpdyStream, StreamGone
from kubeletapi.streaming.portforward import forward_error, parse_uint16
from kubeletapi.streaming.targets import PodPorts

log = logging.getLogger(__name__)

STREAM_CREATION_TIMEOUT_S = 30.0
DRAIN_S = 1.0
CHUNK = 256 * 1024


def accept_port_stream(headers: Mapping[str, Sequence[str]]) -> str | None:
    """None for a stream with a valid port and type; else the kubelet's reason to refuse it."""
    port = (headers.get("port") or [""])[0]
    if not port:
        return '"port" header is required'
    try:
        number = parse_uint16(port)
    except ValueError as exc:
        return f"unable to parse {go_quote(port)} as a port: {exc}"
    if number < 1:
        return f"port {go_quote(port)} must be > 0"
    kind = (headers.get("streamtype") or [""])[0]
    if not kind:
        return '"streamType" header is required'
    if kind not in ("data", "error"):
        return f"invalid stream type {go_quote(kind)}"
    return None


@dataclass
class _Pair:
    request_id: str
    data: SpdyStream | None = None
    error: SpdyStream | None = None
    complete: asyncio.Event = field(default_factory=asyncio.Event)

    def add(self, stream: SpdyStream) -> str | None:
        """Take a stream; the problem when its type is already there."""
        kind = stream.header("streamType")
        if getattr(self, kind) is not None:
            return f"{kind} stream already assigned"
        setattr(self, kind, stream)
        if kind == "error":
            stream.discard()  # server -> client only
        if self.data is not None and self.error is not None:
            self.complete.set()
        return None

    async def print_error(self, message: str) -> None:
        if self.error is not None:
            with contextlib.suppress(StreamGone):
                await self.error.write(message.encode("utf-8"))


class _Forwarder:
    def __init__(self, conn: SpdyConnection, target: PodPorts) -> None:
        self.conn = conn
        self.target = target
        self.pairs: dict[str, _Pair] = {}
        self.tasks: set[asyncio.Task[None]] = set()  # forwards
        self.monitors: set[asyncio.Task[None]] = set()  # pairs waiting for their second stream

    @staticmethod
    def _spawn(into: set[asyncio.Task[None]], coro: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.create_task(coro, name=name)
        into.add(task)
        task.add_done_callback(into.discard)

    async def run(self) -> None:
        while (stream := await self.conn.next_stream()) is not None:
            request_id = _request_id(stream)
            pair = self.pairs.get(request_id)
            if pair is None:
                pair = self.pairs[request_id] = _Pair(request_id)
                self._spawn(self.monitors, self._monitor(pair), f"portforward-monitor-{request_id}")
            problem = pair.add(stream)
            if problem is not None:
                message = f"error processing stream for request {request_id}: {problem}"
                log.error("%s", message)
                stream.discard()
                await pair.print_error(message)
            elif pair.complete.is_set():
                self._spawn(self.tasks, self._forward(pair), f"portforward-{request_id}")

    async def _monitor(self, pair: _Pair) -> None:
        try:
            async with asyncio.timeout(STREAM_CREATION_TIMEOUT_S):
                await pair.complete.wait()
        except TimeoutError:
            message = f"(conn={id(self.conn):#x}, request={pair.request_id}) timed out waiting for streams"
            log.error("%s", message)
            await pair.print_error(message)
        finally:
            self.pairs.pop(pair.request_id, None)

    async def _forward(self, pair: _Pair) -> None:
        data, error = pair.data, pair.error
        assert data is not None and error is not None
        port = int(data.header("port"))
        try:
            reader, writer = await self.target.connect(port)
        except (KubeletError, OSError) as exc:
            await pair.print_error(forward_error(port, self.target, exc))
            data.reset()
            error.reset()
            return
        directions = [asyncio.create_task(_to_pod(data, writer), name="portforward-in"),
                      asyncio.create_task(_to_client(reader, data), name="portforward-out")]
        try:
            _, pending = await asyncio.wait(directions, return_when=asyncio.FIRST_COMPLETED)
            if pending:
                await asyncio.wait(pending, timeout=DRAIN_S)
        finally:
            await cancel_and_wait(directions)
            writer.close()
            with contextlib.suppress(StreamGone):
                await data.close()
                await error.close()


def _request_id(stream: SpdyStream) -> str:
    request_id = stream.header("requestID")
    if request_id:
        return request_id
    return str(stream.id if stream.header("streamType") == "error" else stream.id - 2)


async def _to_pod(stream: SpdyStream, writer: asyncio.StreamWriter) -> None:
    try:
        while (chunk := await stream.read()) is not None:
            writer.write(chunk)
            await writer.drain()
    except OSError as exc:
        log.debug("port-forward write to the pod failed: %s", exc)


async def _to_client(reader: asyncio.StreamReader, stream: SpdyStream) -> None:
    try:
        while chunk := await reader.read(CHUNK):
            await stream.write(chunk)
    except (OSError, StreamGone) as exc:
        log.debug("port-forward read from the pod ended: %s", exc)


async def serve_spdy_port_forward(conn: SpdyConnection, target: PodPorts) -> None:
    """Forward the client's stream pairs until it closes the connection or it idles out."""
    forwarder = _Forwarder(conn, target)
    run = asyncio.create_task(forwarder.run(), name="portforward-streams")
    idle = asyncio.create_task(conn.idle(), name="portforward-idle")
    try:
        await asyncio.wait([run, idle], return_when=asyncio.FIRST_COMPLETED)
        # No more streams (the client left or sent GOAWAY): the forwards under way see their
        # input end and finish within DRAIN_S; pairs still incomplete are dropped.
        await cancel_and_wait(list(forwarder.monitors))
        while forwarder.tasks and not idle.done():
            await asyncio.wait([*forwarder.tasks, idle], return_when=asyncio.FIRST_COMPLETED)
    finally:
        await cancel_and_wait([run, idle, *forwarder.monitors, *forwarder.tasks])
        await conn.close()
