"""Exec, attach and port-forward through the CRI runtime's own streaming server.

The Exec, Attach and PortForward calls answer with a single-use URL of the runtime's streaming
server (containerd: http://127.0.0.1:<port>/{exec,attach,portforward}/<token>).

Exec and attach join it over SPDY/3.1 (kubeletapi.spdy) with v4.channel.k8s.io, as the API
server's clients do: one stream per requested standard stream, named by `streamType` (error,
stdin, stdout, stderr, and resize with a tty: {"Width","Height"} JSON lines); the final metav1
Status arrives as JSON on the error stream, then the runtime resets the streams and sends GOAWAY.
SPDY can half-close a stream, so close_stdin() ends the command's input (FIN on the stdin stream,
after the terminal's end-of-input character EOT with a tty, which the runtime keeps open):
`kubectl exec -i`, `kubectl cp` into a container and a WebSocket client's v5 CLOSE reach the
command. (The runtime's WebSocket offers no such thing: containerd 1.6 refuses v5.channel.k8s.io.)

A command that cannot start is still a session (runtime.streaming.Streamer): the Status carries
the runtime's message, which becomes stderr, and the exit code is 127 (not found) or 126.

Port-forward: containerd dials localhost:<port> in the sandbox's network namespace ("host" for the
host-network sandboxes kubeletapi runs) and bridges it to the WebSocket: per port a data channel
and an error channel, each opened by the port as 2 bytes little-endian. The pair returned to the
caller is one end of a socketpair; a bridge task copies between the other end and the WebSocket.
Going through the runtime rather than dialing loopback ourselves keeps the dial in the runtime's
network namespace, which is right even when kubeletapi itself runs in another one. A failed dial
arrives on the error channel: the reader then raises ConnectionError with the runtime's reason.

Closing a session resets its streams and closes the connection. The runtime does not kill an
exec whose client left (the CRI has no call for it): the command runs on until it ends by itself,
as under the kubelet.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from urllib.parse import urlsplit

import websockets
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed, WebSocketException
from websockets.typing import Subprotocol

from kubeletapi.errors import NotSupported, Unavailable
from kubeletapi.runtime.streaming import STDERR, STDOUT, StreamOptions
from kubeletapi.spdy.connection import SpdyConnection, SpdyStream, StreamGone
from kubeletapi.spdy.dial import dial

log = logging.getLogger(__name__)

SUBPROTOCOL = Subprotocol("v4.channel.k8s.io")
OPEN_TIMEOUT_S = 10.0
CLOSE_TIMEOUT_S = 2.0
CHUNK = 32 * 1024
EOT = b"\x04"
QUEUE_CHUNKS = 16  # output chunks buffered ahead of the consumer: a slow client slows the stream
UNKNOWN_EXIT = -1  # closed before the end: the exit code was never reported
_PF_PREFIX = re.compile(r"^error forwarding port \d+ to pod \S+, uid : ")


def _plain_http(url: str) -> None:
    if url.startswith("https://"):
        raise NotSupported(f"the runtime's streaming server is TLS ({url}): kubeletapi joins plain-HTTP "
                           "streaming servers only (containerd: enable_tls_streaming = false)")
    if not url.startswith("http://"):
        raise Unavailable(f"the runtime answered an unusable streaming URL {url!r}")


def websocket_url(url: str) -> str:
    _plain_http(url)
    return "ws://" + url[len("http://"):]


async def open_session(url: str, opts: StreamOptions,
                       exit_code: Callable[[], Awaitable[int]] | None = None) -> CRIStreamSession:
    """An exec or attach session on a streaming URL: the SPDY connection and the streams the
    request asked for (the runtime starts the command once they are all there)."""
    _plain_http(url)
    parts = urlsplit(url)
    try:
        host, port = parts.hostname or "127.0.0.1", parts.port or 80
    except ValueError:
        raise Unavailable(f"the runtime answered an unusable streaming URL {url!r}") from None
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    conn = await dial(host, port, path, SUBPROTOCOL, OPEN_TIMEOUT_S)
    wanted = {"error": True, "stdin": opts.stdin, "stdout": opts.stdout, "stderr": opts.stderr and not opts.tty,
              "resize": opts.tty}
    try:
        streams = {name: conn.open_stream({"streamtype": [name]}) for name, on in wanted.items() if on}
    except StreamGone:
        await conn.close()
        raise Unavailable(f"the runtime's stream at {url} closed at once") from None
    return CRIStreamSession(conn, streams, opts, exit_code)


async def open_stream(url: str) -> ClientConnection:
    """The WebSocket to a streaming URL, with the v4 channel subprotocol negotiated."""
    try:
        ws = await websockets.connect(
            websocket_url(url), subprotocols=[SUBPROTOCOL], proxy=None, compression=None, max_size=None,
            ping_interval=None, open_timeout=OPEN_TIMEOUT_S, close_timeout=CLOSE_TIMEOUT_S,
        )
    except (OSError, TimeoutError, WebSocketException) as exc:
        raise Unavailable(f"cannot join the runtime's stream at {url}: {exc}") from None
    if ws.subprotocol != SUBPROTOCOL:
        await ws.close()
        raise Unavailable(f"the runtime's stream at {url} did not accept {SUBPROTOCOL} (got {ws.subprotocol!r})")
    return ws


def _as_bytes(message: str | bytes) -> bytes:
    return message.encode("utf-8") if isinstance(message, str) else message


def exit_status(raw: bytes | None) -> tuple[int, bytes]:
    """(exit code, text for stderr) from the final Status of a v4 stream (None: none arrived)."""
    if raw is None:
        return UNKNOWN_EXIT, b""
    try:
        status = json.loads(raw)
    except ValueError:
        return 1, raw
    if not isinstance(status, dict) or status.get("status") == "Success":
        return 0, b""
    causes = (status.get("details") or {}).get("causes") or []
    for cause in causes:
        if isinstance(cause, dict) and cause.get("reason") == "ExitCode":
            with contextlib.suppress(TypeError, ValueError):
                return int(cause.get("message", "")), b""
    message = str(status.get("message", "")) or "the runtime ended the stream with a failure"
    not_found = "executable file not found" in message or "no such file or directory" in message
    return (127 if not_found else 126), (message + "\n").encode()


class CRIStreamSession:
    """An exec or attach on the runtime's streaming server (runtime.streaming.StreamSession)."""

    def __init__(self, conn: SpdyConnection, streams: dict[str, SpdyStream], opts: StreamOptions,
                 exit_code: Callable[[], Awaitable[int]] | None = None) -> None:
        self._conn = conn
        self._streams = streams
        self._opts = opts
        self._exit_code = exit_code  # attach: the container's, asked once the stream ended
        self._queue: asyncio.Queue[tuple[int, bytes] | None] = asyncio.Queue(QUEUE_CHUNKS)
        self._exit: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._closed = False
        self._reader = asyncio.create_task(self._read(), name="cri-stream-reader")

    async def _read(self) -> None:
        outputs = [self._pump(self._streams[name], channel)
                   for name, channel in (("stdout", STDOUT), ("stderr", STDERR)) if name in self._streams]
        status, *_ = await asyncio.gather(self._status(), *outputs)
        code, text = exit_status(status)
        if text:
            await self._queue.put((STDERR, text))
        if self._exit_code is not None and code in (0, UNKNOWN_EXIT):
            code = await self._exit_code()
        await self._queue.put(None)
        if not self._exit.done():
            self._exit.set_result(code)

    async def _pump(self, stream: SpdyStream, channel: int) -> None:
        while (chunk := await stream.read()) is not None:
            await self._queue.put((channel, chunk))

    async def _status(self) -> bytes | None:
        raw = b""
        while (chunk := await self._streams["error"].read()) is not None:
            raw += chunk
        return raw or None

    async def _write(self, name: str, data: bytes) -> None:
        if self._closed or name not in self._streams:
            return
        with contextlib.suppress(StreamGone):  # the command ended: its input goes nowhere
            await self._streams[name].write(data)

    async def write_stdin(self, data: bytes) -> None:
        await self._write("stdin", data)

    async def close_stdin(self) -> None:
        stdin = self._streams.get("stdin")
        if stdin is not None and not self._closed:
            with contextlib.suppress(StreamGone):
                if self._opts.tty:
                    # the runtime keeps a terminal open when its input stream ends: the end of
                    # input of a terminal is its EOF character, as for a user at the keyboard
                    await stdin.write(EOT)
                await stdin.close()

    async def output(self) -> AsyncIterator[tuple[int, bytes]]:
        while (item := await self._queue.get()) is not None:
            yield item

    async def resize(self, width: int, height: int) -> None:
        await self._write("resize", json.dumps({"Width": width, "Height": height}).encode() + b"\n")

    async def wait(self) -> int:
        return await asyncio.shield(self._exit)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._reader.cancel()
        await asyncio.gather(self._reader, return_exceptions=True)
        await self._conn.close()
        while not self._queue.empty():  # nobody reads any more: make room for the end marker
            self._queue.get_nowait()
        self._queue.put_nowait(None)
        if not self._exit.done():
            self._exit.set_result(UNKNOWN_EXIT)


class PortForwardBridges:
    """Port-forward connections bridged to the runtime's WebSocket; close() ends every one."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    async def open(self, url: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        ws = await open_stream(url)
        ours, theirs = socket.socketpair()
        try:
            reader, writer = await asyncio.open_connection(sock=ours, limit=CHUNK * 4)
        except OSError:
            ours.close()
            theirs.close()
            await ws.close()
            raise
        theirs.setblocking(False)
        task = asyncio.create_task(_bridge(ws, theirs, reader, port), name=f"cri-portforward-{port}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return reader, writer

    async def close(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _bridge(ws: ClientConnection, sock: socket.socket, reader: asyncio.StreamReader, port: int) -> None:
    inbound = asyncio.create_task(_from_runtime(ws, sock, reader, port))
    outbound = asyncio.create_task(_to_runtime(ws, sock))
    try:
        await asyncio.wait({inbound, outbound}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (inbound, outbound):
            task.cancel()
        await asyncio.gather(inbound, outbound, return_exceptions=True)
        sock.close()  # what was already sent stays readable by the caller, then EOF
        with contextlib.suppress(OSError, WebSocketException):
            await ws.close()


async def _from_runtime(ws: ClientConnection, sock: socket.socket, reader: asyncio.StreamReader, port: int) -> None:
    loop = asyncio.get_running_loop()
    opened = {0: False, 1: False}  # each channel starts with the port number
    with contextlib.suppress(ConnectionClosed):
        async for message in ws:
            data = _as_bytes(message)
            if not data or data[0] not in opened:
                continue
            channel, payload = data[0], data[1:]
            if not opened[channel]:
                opened[channel] = True
                payload = payload[2:]
            if not payload:
                continue
            if channel == 0:
                try:
                    await loop.sock_sendall(sock, payload)
                except OSError:
                    return  # the caller closed its end
            else:
                reason = _PF_PREFIX.sub("", payload.decode("utf-8", errors="replace"))
                log.info("port-forward to port %d failed: %s", port, reason)
                reader.set_exception(ConnectionError(reason))
                return


async def _to_runtime(ws: ClientConnection, sock: socket.socket) -> None:
    loop = asyncio.get_running_loop()
    with contextlib.suppress(ConnectionClosed, OSError):
        while data := await loop.sock_recv(sock, CHUNK):
            await ws.send(b"\x00" + data)
