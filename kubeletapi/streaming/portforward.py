"""/portForward over WebSocket: ports from the query, and the bridge.

For the i-th requested port, channel 2i carries data both ways and channel 2i+1 errors (server
to client); the first message on each is the port as 2 bytes little-endian. Each port gets one TCP
connection in the pod when the stream opens; a connection that fails (or breaks) writes
`error forwarding port <p> to pod <sandbox id>, uid : <err>` on its error channel (the kubelet's
CRI streaming server names the pod by its sandbox and has no UID). The WebSocket closes normally
once every port's connection has ended; when the client goes away or the stream idles out, every
TCP connection is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from kubeletapi.aio import cancel_and_wait
from kubeletapi.errors import InvalidInput, KubeletError
from kubeletapi.gofmt import go_quote
from kubeletapi.streaming.conn import ChannelConn, Disconnected
from kubeletapi.streaming.targets import PodPorts

log = logging.getLogger(__name__)

CHUNK = 32 * 1024
_DIGITS = re.compile(r"[0-9]+")


def parse_uint16(text: str) -> int:
    """strconv.ParseUint(text, 10, 16); ValueError carries strconv's error text."""
    if not _DIGITS.fullmatch(text):
        raise ValueError(f"strconv.ParseUint: parsing {go_quote(text)}: invalid syntax")
    value = int(text)
    if value > 0xFFFF:
        raise ValueError(f"strconv.ParseUint: parsing {go_quote(text)}: value out of range")
    return value


def parse_ports(values: Sequence[str]) -> list[int]:
    """The `port` query values (repeatable, comma lists), with the kubelet's 400 messages."""
    if not values:
        raise InvalidInput('query parameter "port" is required')
    ports: list[int] = []
    for value in values:
        if not value:
            raise InvalidInput('query parameter "port" cannot be empty')
        for item in value.split(","):
            try:
                port = parse_uint16(item)
            except ValueError as exc:
                raise InvalidInput(f"unable to parse {go_quote(value)} as a port: {exc}") from None
            if not port:
                raise InvalidInput(f"port {go_quote(value)} must be > 0")
            ports.append(port)
    return ports


@dataclass
class _Port:
    port: int
    data_channel: int
    writer: asyncio.Future[asyncio.StreamWriter | None] = field(default_factory=asyncio.Future)

    @property
    def error_channel(self) -> int:
        return self.data_channel + 1


async def serve_port_forward(conn: ChannelConn, ports: Sequence[int], target: PodPorts) -> None:
    """Forward `ports` of the pod over an accepted connection until they end or the client leaves."""
    pairs = [_Port(port, 2 * i) for i, port in enumerate(ports)]
    try:
        for pair in pairs:
            prefix = pair.port.to_bytes(2, "little")
            await conn.send(pair.data_channel, prefix)
            await conn.send(pair.error_channel, prefix)
    except Disconnected:
        return
    forwards = [asyncio.create_task(_forward(conn, target, p), name=f"portforward-{p.port}") for p in pairs]
    everything = asyncio.create_task(_all(forwards), name="portforward-all")
    others = [
        asyncio.create_task(_inbound(conn, pairs), name="portforward-inbound"),
        asyncio.create_task(conn.idle(), name="portforward-idle"),
    ]
    try:
        await asyncio.wait([everything, *others], return_when=asyncio.FIRST_COMPLETED)
    finally:
        await cancel_and_wait([*others, *forwards, everything])
        for pair in pairs:
            _close_writer(pair)
    await conn.close()


async def _all(tasks: Sequence[asyncio.Task[None]]) -> None:
    """Wait for every port; a port that failed unexpectedly is logged, the others go on."""
    for result in await asyncio.gather(*tasks, return_exceptions=True):
        if isinstance(result, Exception):
            log.error("port-forward failed", exc_info=result)


async def _forward(conn: ChannelConn, target: PodPorts, pair: _Port) -> None:
    """Connect, then copy the pod's side to the client until it ends."""
    try:
        reader, writer = await target.connect(pair.port)
    except (KubeletError, OSError) as exc:
        pair.writer.set_result(None)
        await _report(conn, target, pair, exc)
        return
    pair.writer.set_result(writer)
    try:
        while chunk := await reader.read(CHUNK):
            await conn.send(pair.data_channel, chunk)
    except OSError as exc:
        await _report(conn, target, pair, exc)
    except Disconnected:
        pass
    finally:
        _close_writer(pair)


def forward_error(port: int, target: PodPorts, exc: BaseException) -> str:
    """The message a failed port's error channel or stream carries."""
    message = f"error forwarding port {port} to pod {target.sandbox_id}, uid : {exc}"
    log.info("%s", message)
    return message


async def _report(conn: ChannelConn, target: PodPorts, pair: _Port, exc: BaseException) -> None:
    message = forward_error(pair.port, target, exc)
    with contextlib.suppress(Disconnected):
        await conn.send(pair.error_channel, message.encode("utf-8"))


async def _inbound(conn: ChannelConn, pairs: Sequence[_Port]) -> None:
    """Client data to each port's connection, in order, waiting while the pod side is slow."""
    while (frame := await conn.receive()) is not None:
        if frame.close or frame.channel % 2 or frame.channel // 2 >= len(pairs) or not frame.data:
            continue  # error channels are write-only; unknown channels are ignored
        writer = await pairs[frame.channel // 2].writer
        if writer is None or writer.is_closing():
            continue
        try:
            writer.write(frame.data)
            await writer.drain()
        except OSError as exc:
            log.debug("port-forward write failed: %s", exc)


def _close_writer(pair: _Port) -> None:
    if pair.writer.done() and not pair.writer.cancelled():
        writer = pair.writer.result()
        if writer is not None and not writer.is_closing():
            writer.close()
