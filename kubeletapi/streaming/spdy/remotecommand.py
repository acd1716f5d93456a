"""/exec and /attach over SPDY: the client's streams onto the bridge the WebSocket layer uses.

The client opens one stream per standard stream, each named by its `streamType` header: error,
stdin, stdout, stderr, and (v3 and v4, with a tty) resize. As the kubelet's streaming server,
the command starts once the expected number of known streams arrived (1 + one per requested
stream + resize), within STREAM_CREATION_TIMEOUT_S; a stream of another type is logged and left
alone. v4 writes the JSON status on the error stream; v1 to v3 write the message of a failure
only; v1 also finishes its side of stdin at once (as the kubelet's v1 handler closes it).

SpdyChannels maps the streams onto streaming.remotecommand's channels: stdout 1, stderr 2,
error 3 out; stdin data in as channel 0, its FIN as a stdin CLOSE, resize JSON as channel 4
(buffered to whole lines: the client's encoder ends each size with a newline).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, fields

from kubeletapi.aio import cancel_and_wait
from kubeletapi.spdy.connection import SpdyConnection, SpdyStream, StreamGone
from kubeletapi.streaming.conn import Disconnected
from kubeletapi.streaming.protocol import Frame, Subprotocol
from kubeletapi.streaming.remotecommand import ERROR, RESIZE, STDIN, RemoteCommand, serve_remote_command
from kubeletapi.streaming.targets import ContainerStreams

log = logging.getLogger(__name__)

VERSIONS = {"v4.channel.k8s.io": 4, "v3.channel.k8s.io": 3, "v2.channel.k8s.io": 2, "channel.k8s.io": 1}
STREAM_CREATION_TIMEOUT_S = 30.0
MAX_RESIZE_LINE = 4096
STDOUT, STDERR = 1, 2


@dataclass
class Streams:
    """The streams of one exec or attach, by type."""

    error: SpdyStream | None = None
    stdin: SpdyStream | None = None
    stdout: SpdyStream | None = None
    stderr: SpdyStream | None = None
    resize: SpdyStream | None = None


def accept_any(headers: object) -> None:
    """Every stream is replied to; its type is looked at once it is taken (as the kubelet does)."""


async def wait_for_streams(conn: SpdyConnection, version: int, request: RemoteCommand,
                           timeout_s: float | None = None) -> Streams | None:
    """The streams, once the expected number arrived; None when the client left or took too long
    (`timeout_s`, default STREAM_CREATION_TIMEOUT_S)."""
    opts = request.opts
    resizing = version >= 3
    expected = 1 + opts.stdin + opts.stdout + opts.stderr + (opts.tty and resizing)
    known = {f.name for f in fields(Streams)} - (set() if resizing else {"resize"})
    streams, received = Streams(), 0
    try:
        async with asyncio.timeout(timeout_s or STREAM_CREATION_TIMEOUT_S):
            while received < expected:
                stream = await conn.next_stream()
                if stream is None:
                    return None
                kind = stream.header("streamType")
                if kind not in known:
                    log.error("unexpected stream type: %r", kind)
                    stream.discard()
                    continue
                if kind not in ("stdin", "resize"):
                    stream.discard()  # output only: whatever the client sends there is dropped
                setattr(streams, kind, stream)
                received += 1
    except TimeoutError:
        log.error("timed out waiting for client to create streams")
        return None
    return streams


class SpdyChannels:
    """streaming.remotecommand.Channels over the SPDY streams of one exec or attach."""

    def __init__(self, conn: SpdyConnection, streams: Streams, proto: Subprotocol) -> None:
        self.proto = proto
        self._conn = conn
        self._outputs = {STDOUT: streams.stdout, STDERR: streams.stderr, ERROR: streams.error}
        self._inbox: asyncio.Queue[Frame | None] = asyncio.Queue(maxsize=1)
        self._pumps = [asyncio.create_task(self._ended(), name="spdy-ended")]
        if streams.stdin is not None:
            self._pumps.append(asyncio.create_task(self._stdin(streams.stdin), name="spdy-stdin"))
        if streams.resize is not None:
            self._pumps.append(asyncio.create_task(self._resize(streams.resize), name="spdy-resize"))

    async def send(self, channel: int, data: bytes) -> None:
        stream = self._outputs.get(channel)
        if stream is None or not data:
            return  # the ready message: SPDY streams are ready once replied to
        try:
            await stream.write(data)
        except StreamGone:
            raise Disconnected from None

    async def receive(self) -> Frame | None:
        return await self._inbox.get()

    async def idle(self) -> None:
        await self._conn.idle()

    async def close(self) -> None:
        await cancel_and_wait(self._pumps)
        await self._conn.close()

    async def _stdin(self, stream: SpdyStream) -> None:
        while (data := await stream.read()) is not None:
            await self._inbox.put(Frame(STDIN, data))
        if not self._conn.ended.is_set():
            await self._inbox.put(Frame(STDIN, close=True))

    async def _resize(self, stream: SpdyStream) -> None:
        pending = b""
        while (data := await stream.read()) is not None:
            complete, newline, pending = (pending + data).rpartition(b"\n")
            if newline:
                await self._inbox.put(Frame(RESIZE, complete + newline))
            if len(pending) > MAX_RESIZE_LINE:
                log.warning("ignoring the resize stream: a line over %d bytes", MAX_RESIZE_LINE)
                stream.discard()
                return

    async def _ended(self) -> None:
        await self._conn.ended.wait()
        await self._inbox.put(None)


async def serve_spdy_remote_command(conn: SpdyConnection, protocol: str, request: RemoteCommand,
                                    target: ContainerStreams) -> None:
    """Run one exec or attach on an upgraded connection, until it ends or the client leaves."""
    version = VERSIONS[protocol]
    streams = await wait_for_streams(conn, version, request)
    if streams is None:
        await conn.close()
        return
    if version == 1 and streams.stdin is not None:
        with contextlib.suppress(StreamGone):
            await streams.stdin.close()
    channels = SpdyChannels(conn, streams, Subprotocol(protocol, version, base64=False))
    try:
        await serve_remote_command(channels, request, target)
    finally:
        await channels.close()
