"""The client's side of the upgrade: a new TCP connection, `POST <path>` asking for SPDY/3.1 and
a stream protocol version, the answer's head read (bounded), then the connection as a client
SpdyConnection. Anything but a 101 with the version asked is Unavailable, with the status and
the start of the body the server sent.
"""

from __future__ import annotations

import asyncio
import contextlib

from kubeletapi.errors import Unavailable
from kubeletapi.spdy.connection import SpdyConnection

MAX_HEAD = 64 * 1024


class _Answer(asyncio.Protocol):
    """Reads the answer's head; what follows it is handed to the SPDY connection."""

    def __init__(self) -> None:
        self.head: asyncio.Future[tuple[bytes, bytes]] = asyncio.get_running_loop().create_future()
        self.after = bytearray()  # what came once the head was complete, before the hand-over
        self.lost = False
        self._buffer = b""

    def data_received(self, data: bytes) -> None:
        if self.head.done():
            self.after += data
            return
        self._buffer += data
        head, sep, rest = self._buffer.partition(b"\r\n\r\n")
        if sep:
            self.head.set_result((head, rest))
        elif len(self._buffer) > MAX_HEAD:
            self.head.set_exception(Unavailable(f"an answer head over {MAX_HEAD} bytes"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if not self.head.done():
            self.head.set_exception(Unavailable(f"the connection closed before the answer ({exc or 'EOF'})"))


async def dial(host: str, port: int, path: str, version: str, timeout_s: float) -> SpdyConnection:
    """A client connection to http://host:port/path speaking `version` over SPDY/3.1."""
    loop = asyncio.get_running_loop()
    answer = _Answer()
    try:
        async with asyncio.timeout(timeout_s):
            transport, _ = await loop.create_connection(lambda: answer, host, port)
    except (OSError, TimeoutError) as exc:
        raise Unavailable(f"cannot connect to {host}:{port}: {exc}") from None
    request = (f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
               f"X-Stream-Protocol-Version: {version}\r\nContent-Length: 0\r\n\r\n")
    transport.write(request.encode("latin-1"))
    try:
        async with asyncio.timeout(timeout_s):
            head, rest = await answer.head
        _check(head, rest, version)
    except BaseException as exc:
        transport.abort()
        if isinstance(exc, TimeoutError):
            raise Unavailable(f"no answer to the upgrade from {host}:{port} in {timeout_s:g}s") from None
        raise
    conn = SpdyConnection(transport, None)
    transport.set_protocol(conn)
    early = rest + bytes(answer.after)
    if early:
        conn.data_received(early)
    if answer.lost:
        conn.connection_lost(None)
    return conn


def _check(head: bytes, rest: bytes, version: str) -> None:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    status = 0
    with contextlib.suppress(IndexError, ValueError):
        status = int(parts[1])
    if status != 101:
        body = rest[:512].decode("utf-8", errors="replace").strip()
        raise Unavailable(f"the upgrade was refused: {lines[0]!r}" + (f": {body}" if body else ""))
    fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    if fields.get("upgrade", "").lower() != "spdy/3.1" or fields.get("x-stream-protocol-version") != version:
        raise Unavailable(f"the upgrade answered {fields.get('upgrade')!r} with version "
                          f"{fields.get('x-stream-protocol-version')!r}, not SPDY/3.1 with {version}")
