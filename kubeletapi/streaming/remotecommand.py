"""/exec and /attach over WebSocket: stream options from the query, and the bridge.

Channels: 0 stdin (client -> process), 1 stdout, 2 stderr, 3 error/status (server -> client),
4 resize (client -> server, JSON `{"Width": W, "Height": H}`). Like the kubelet's streaming
server, the bridge first writes an empty message on the lowest open output channel (stdout, else
stderr, else error) to say the stream is ready, then starts the command, then copies until the
command ends, writes the status on channel 3 and closes the WebSocket normally.

Stdin frames are written to the session one at a time, in order, and while a write is pending
only one more message is read (to notice a client that leaves): a process that does not read its
stdin slows the client down instead of filling memory. When the client goes away (close frame,
reset) or the stream is idle for the idle timeout, the session is closed (an exec that still
runs is killed) and every task ends.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Protocol

from kubeletapi.aio import cancel_and_wait
from kubeletapi.errors import InvalidInput, KubeletError
from kubeletapi.runtime.streaming import STDERR, STDOUT, StreamOptions, StreamSession
from kubeletapi.streaming import status as st
from kubeletapi.streaming.conn import Disconnected
from kubeletapi.streaming.protocol import Frame, Subprotocol
from kubeletapi.streaming.targets import ContainerStreams

log = logging.getLogger(__name__)

STDIN, ERROR, RESIZE = 0, 3, 4
MISSING_STREAMS = "you must specify at least 1 of stdin, stdout, stderr"


class Channels(Protocol):
    """Numbered channels of one stream connection: a WebSocket's (streaming.conn.ChannelConn) or
    a SPDY connection's streams (streaming.spdy.remotecommand)."""

    proto: Subprotocol

    async def send(self, channel: int, data: bytes) -> None:
        """Write `data` on `channel` (an empty message only says the stream is ready);
        Disconnected when the peer is gone."""
        ...

    async def receive(self) -> Frame | None:
        """The next frame from the client (stdin, resize, a stdin CLOSE); None once it is gone."""
        ...

    async def idle(self) -> None:
        """Return once the connection has been idle for the idle timeout."""
        ...

    async def close(self) -> None:
        """End the connection."""
        ...


def first_values(query: Sequence[tuple[str, str]]) -> dict[str, str]:
    """Each key's first value (Go's Request.FormValue)."""
    out: dict[str, str] = {}
    for key, value in query:
        out.setdefault(key, value)
    return out


def parse_stream_options(query: Sequence[tuple[str, str]]) -> StreamOptions:
    """`input`, `output`, `error`, `tty`: on only when exactly "1"; tty drops stderr (the kubelet
    bypasses it); none of the three streams is InvalidInput with the kubelet's message."""
    values = first_values(query)
    tty, stdin, stdout, stderr = (values.get(k) == "1" for k in ("tty", "input", "output", "error"))
    if tty and stderr:
        stderr = False
    if not (stdin or stdout or stderr):
        raise InvalidInput(MISSING_STREAMS)
    return StreamOptions(stdin=stdin, stdout=stdout, stderr=stderr, tty=tty)


def parse_command(query: Sequence[tuple[str, str]]) -> tuple[str, ...]:
    """Every `command` value, in order: the argv."""
    return tuple(value for key, value in query if key == "command")


def parse_resize(data: bytes) -> list[tuple[int, int]]:
    """(width, height) of each JSON TerminalSize in a resize message. Keys match case-insensitively
    and each value must be a uint16, as Go's decoder wants; anything else is logged and skipped."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        log.warning("ignoring a resize message that is not UTF-8")
        return []
    decoder = json.JSONDecoder()
    sizes: list[tuple[int, int]] = []
    index = 0
    while True:
        while index < len(text) and text[index] in " \t\r\n":
            index += 1
        if index >= len(text):
            return sizes
        try:
            value, index = decoder.raw_decode(text, index)
        except json.JSONDecodeError as exc:
            log.warning("ignoring a malformed resize message: %s", exc)
            return sizes
        size = _terminal_size(value)
        if size is None:
            log.warning("ignoring a resize message that is not a terminal size: %r", value)
        else:
            sizes.append(size)


def _terminal_size(value: object) -> tuple[int, int] | None:
    if not isinstance(value, dict):
        return None
    width = height = 0
    for key, item in value.items():
        if key.lower() not in ("width", "height"):
            continue
        if isinstance(item, bool) or not isinstance(item, int) or not 0 <= item <= 0xFFFF:
            return None
        if key.lower() == "width":
            width = item
        else:
            height = item
    return width, height


@dataclass(frozen=True)
class RemoteCommand:
    """What the client asked for: an exec of `cmd`, or an attach."""

    opts: StreamOptions
    cmd: tuple[str, ...] = ()
    attach: bool = False

    def failed(self, err: str) -> st.Status:
        return st.attach_failed(err) if self.attach else st.exec_failed(err)

    def ended(self, exit_code: int) -> st.Status:
        # The runtime's attach returns nothing when the container exits: always a success.
        if self.attach or exit_code == 0:
            return st.success()
        return st.non_zero_exit(self.cmd, exit_code)


def ready_channel(opts: StreamOptions) -> int:
    return STDOUT if opts.stdout else STDERR if opts.stderr else ERROR


async def serve_remote_command(conn: Channels, request: RemoteCommand, target: ContainerStreams) -> None:
    """Run one exec or attach over an accepted connection, until it ends or the client leaves."""
    try:
        await conn.send(ready_channel(request.opts), b"")
    except Disconnected:
        return
    try:
        session = await _open(request, target)
    except KubeletError as exc:
        await finish(conn, request.failed(str(exc)))
        return
    try:
        outcome = await _Bridge(conn, session, request).run()
        if outcome is None:
            await conn.close()
        else:
            await finish(conn, outcome)
    finally:
        await session.close()


async def _open(request: RemoteCommand, target: ContainerStreams) -> StreamSession:
    if request.attach:
        return await target.attach(request.opts)
    if not request.cmd:
        # The kubelet passes an empty argv on to the runtime, which fails to start it.
        raise InvalidInput("command must not be empty")
    return await target.exec(request.cmd, request.opts)


async def finish(conn: Channels, status: st.Status) -> None:
    """Write the status on the error channel (if the subprotocol writes one), then close."""
    message = st.render(status, conn.proto.json_status)
    if message is not None:
        try:
            await conn.send(ERROR, message)
        except Disconnected:
            return
    await conn.close()


class _Bridge:
    """Copies between one connection and one session; run() returns the status to write, or None
    when the client went away or the stream idled out."""

    def __init__(self, conn: Channels, session: StreamSession, request: RemoteCommand) -> None:
        self.conn = conn
        self.session = session
        self.request = request
        opts = request.opts
        self.outputs = {ch for ch, on in ((STDOUT, opts.stdout), (STDERR, opts.stderr)) if on}

    async def run(self) -> st.Status | None:
        outcome = asyncio.create_task(self._outcome(), name="stream-outcome")
        others = [
            asyncio.create_task(self._inbound(), name="stream-inbound"),
            asyncio.create_task(self.conn.idle(), name="stream-idle"),
        ]
        try:
            await asyncio.wait([outcome, *others], return_when=asyncio.FIRST_COMPLETED)
        finally:
            await cancel_and_wait([*others, outcome] if not outcome.done() else others)
        for task in others:
            if not task.cancelled() and task.exception() is not None:
                log.error("stream task %s failed", task.get_name(), exc_info=task.exception())
        if outcome.cancelled():
            return None
        return outcome.result()

    async def _outcome(self) -> st.Status | None:
        output = self.session.output()
        try:
            async for channel, data in output:
                if channel in self.outputs and data:
                    await self.conn.send(channel, data)
            exit_code = await self.session.wait()
        except Disconnected:
            return None
        except (KubeletError, OSError) as exc:
            log.warning("stream failed: %s", exc)
            return self.request.failed(str(exc))
        finally:
            # Finalize the output generator now, not whenever it is collected.
            aclose = getattr(output, "aclose", None)
            if aclose is not None:
                await aclose()
        return self.request.ended(exit_code)

    async def _inbound(self) -> None:
        stdin_open = self.request.opts.stdin
        frame = await self.conn.receive()
        while frame is not None:
            read_ahead = False
            if frame.close:
                if frame.channel == STDIN and stdin_open:
                    stdin_open = False
                    await _guarded(self.session.close_stdin())
            elif frame.channel == STDIN:
                if stdin_open and frame.data:
                    stdin_open, following = await self._write_stdin(frame.data)
                    read_ahead = True
            elif frame.channel == RESIZE:
                for width, height in parse_resize(frame.data):
                    await _guarded(self.session.resize(width, height))
            # frames on other channels are ignored, as wsstream ignores them
            frame = following if read_ahead else await self.conn.receive()

    async def _write_stdin(self, data: bytes) -> tuple[bool, Frame | None]:
        """Write to stdin while reading one message ahead, so that a client that leaves while the
        process is not reading its stdin is noticed; (stdin still open, the message read ahead)."""
        write = asyncio.create_task(_guarded(self.session.write_stdin(data)), name="stream-stdin")
        peek = asyncio.create_task(self.conn.receive(), name="stream-peek")
        try:
            await asyncio.wait([write, peek], return_when=asyncio.FIRST_COMPLETED)
            if peek.done() and peek.result() is None:
                return False, None
            return await write, await peek
        finally:
            await cancel_and_wait([t for t in (write, peek) if not t.done()])


async def _guarded(call: Awaitable[None]) -> bool:
    """Await a session call; a failure (the process closed its stdin, exited) is logged, not fatal."""
    try:
        await call
    except (KubeletError, OSError) as exc:
        log.debug("stream session call failed: %s", exc)
        return False
    return True
