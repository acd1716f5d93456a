"""One SPDY/3.1 connection: the asyncio protocol of an upgraded transport, and its streams.

As a server (with `accept`), it does what the kubelet's streaming server (moby/spdystream under
apimachinery's httpstream) does, with every peer error answered instead of ignored:
- a SYN_STREAM with a new, odd, increasing id is offered to `accept` (its headers); a refusal
  resets it (RST_STREAM CANCEL, as spdystream's Reset), else it gets an empty SYN_REPLY and waits
  in next_stream(). An id that does not increase or is even: RST_STREAM PROTOCOL_ERROR; more than
  MAX_STREAMS open: REFUSED_STREAM. Whenever this side resets an id, a stream of that id still
  open ends with it (a SYN_STREAM reusing it, a wrong header block on it);
- DATA goes to its stream (FIN ends the stream's input); DATA for an id never opened: RST_STREAM
  INVALID_STREAM; for a stream already closed or reset: dropped, as spdystream drops it;
- PING with an odd id (the client's) is echoed; SETTINGS and WINDOW_UPDATE are ignored (no flow
  control, as spdystream); HEADERS and SYN_REPLY are inflated (the zlib context must follow) and
  ignored; RST_STREAM ends that stream; GOAWAY ends the input: no new streams, every stream's
  input ends;
- a frame the parser refuses: GOAWAY PROTOCOL_ERROR and the transport closed.
As a client (no `accept`), it opens the streams (open_stream: odd ids from 1), takes SYN_REPLY
(a FIN there ends the stream's input), refuses the server's streams (RST_STREAM REFUSED_STREAM),
echoes the server's (even) PINGs and ignores DATA for streams it no longer has.
close() ends it as the kubelet's server does: RST_STREAM CANCEL on each stream this side has not
finished, GOAWAY OK naming the last stream received, then the transport is closed once the peer
closed its side or LINGER_S passed (so the peer reads everything before a reset can drop it).

Input is buffered per stream; past HIGH_WATER bytes in all streams together, reading pauses
until the readers took it below LOW_WATER, so a process that does not read its stdin slows the
client down instead of filling memory. Writes wait while the transport's buffer is full. The
frames that answer the peer's (PING echoes, RST_STREAMs, SYN_REPLYs) are written as the peer's
are read: a peer that sends without reading the answers (a PING or RST flood) has its
connection dropped once MAX_UNSENT_ANSWERS of them were written while the transport's buffer
was full, as Go's HTTP/2 server does (maxQueuedControlFrames); reading is not paused for it, so
a peer whose reading waits on its writing cannot deadlock. The idle timeout
(streamingConnectionIdleTimeout) counts from the last frame read or written.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Callable
from typing import Protocol

from kubeletapi.clock import Clock, RealClock
from kubeletapi.idle import IdleTimer
from kubeletapi.spdy import frames as fr

log = logging.getLogger(__name__)

MAX_STREAMS = 1000
MAX_DATA_FRAME = 256 * 1024
HIGH_WATER = 1 << 20
LOW_WATER = 256 * 1024
LINGER_S = 2.0
MAX_UNSENT_ANSWERS = 10_000  # Go's HTTP/2 server: maxQueuedControlFrames

# accept(headers) -> None to take the stream, or the reason it is refused (the stream is reset).
Accept = Callable[[fr.Headers], str | None]
SERVER_PING, CLIENT_PING = 0, 1  # ping id parity of each side's own pings


class Transport(Protocol):
    """What the connection needs from an upgraded asyncio transport."""

    def write(self, data: bytes) -> None: ...

    def close(self) -> None: ...

    def abort(self) -> None: ...

    def is_closing(self) -> bool: ...

    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...


class StreamGone(Exception):
    """The connection is gone: nothing more can be written."""


class _Flooded(fr.SessionError):
    """The peer sends frames that need answers without reading the answers."""


class SpdyStream:
    """One stream the client opened: its headers, its input (until FIN or reset), its output."""

    def __init__(self, conn: SpdyConnection, stream_id: int, headers: fr.Headers, remote_fin: bool,
                 local_fin: bool) -> None:
        self.conn = conn
        self.id = stream_id
        self.headers = headers
        self.remote_closed = remote_fin
        self.local_closed = local_fin
        self.discarding = False
        self._chunks: collections.deque[bytes] = collections.deque()
        self._readable = asyncio.Event()
        if remote_fin:
            self._readable.set()

    def header(self, name: str) -> str:
        """The first value of header `name` ("" when absent)."""
        values = self.headers.get(name.lower())
        return values[0] if values else ""

    async def read(self) -> bytes | None:
        """The next chunk of input; None once the client finished or reset the stream, or left."""
        while not self._chunks:
            if self.remote_closed:
                return None
            self._readable.clear()
            await self._readable.wait()
        chunk = self._chunks.popleft()
        self.conn._consumed(len(chunk))
        return chunk

    def discard(self) -> None:
        """Nobody reads this stream: drop what is buffered and what comes."""
        self.discarding = True
        self.conn._consumed(sum(len(c) for c in self._chunks))
        self._chunks.clear()

    async def write(self, data: bytes) -> None:
        """Send `data` (split into frames of at most MAX_DATA_FRAME); StreamGone when the
        connection is gone; dropped when this stream was reset or already finished."""
        if len(data) <= MAX_DATA_FRAME:  # the usual case: no slice, no copy but the frame's
            if not self.local_closed:
                await self.conn._send(fr.data_frame(self.id, data))
            return
        view = memoryview(data)
        for start in range(0, len(data), MAX_DATA_FRAME):
            if self.local_closed:
                return
            await self.conn._send(fr.data_frame(self.id, view[start:start + MAX_DATA_FRAME]))

    async def close(self) -> None:
        """Finish this side (an empty DATA frame with FIN)."""
        if not self.local_closed:
            self.local_closed = True
            if self.remote_closed:
                self.conn._forget(self)
            await self.conn._send(fr.data_frame(self.id, b"", fin=True))

    def reset(self, status: int = fr.CANCEL) -> None:
        """RST_STREAM: both sides end now."""
        if not self.local_closed:
            self.conn._write(fr.rst_stream(self.id, status))
        self.local_closed = True
        self._end_input()
        self.conn._forget(self)

    # --- from the connection ---
    def _feed(self, data: bytes, fin: bool) -> None:
        if data and not self.remote_closed and not self.discarding:
            self._chunks.append(data)
            self.conn._buffered(len(data))
        if fin:
            self.remote_closed = True
        self._readable.set()

    def _end_input(self) -> None:
        self.remote_closed = True
        self._readable.set()


class SpdyConnection(asyncio.Protocol):
    """One upgraded connection, the server's (with `accept`) or the client's (see the docstring)."""

    def __init__(self, transport: Transport, accept: Accept | None, idle_timeout_s: float | None = None,
                 clock: Clock | None = None) -> None:
        self.transport = transport
        self._accept = accept
        self._peer_pings = CLIENT_PING if accept is not None else SERVER_PING
        self._own_next = 1  # the client's next stream id
        self._idle = IdleTimer(idle_timeout_s, clock or RealClock())
        self._parser = fr.FrameParser()
        self._compressor = fr.HeaderCompressor()
        self._streams: dict[int, SpdyStream] = {}
        self._incoming: collections.deque[SpdyStream] = collections.deque()
        self._arrived = asyncio.Event()
        self._next_id = 1  # the lowest id a new client stream may have
        self._last_received = 0
        self._pending = 0
        self._read_paused = False
        self._answering = False  # inside data_received: what is written answers the peer
        self._unsent_answers = 0  # answers written since the transport's buffer filled
        self._writable = asyncio.Event()
        self._writable.set()
        self._gone = False  # the transport is lost
        self._goaway_sent = False
        self._peer_done = asyncio.Event()  # the peer closed its side or the transport is gone
        self.ended = asyncio.Event()  # no more input will come (lost, GOAWAY, a protocol error)

    # --- asyncio.Protocol ---
    def data_received(self, data: bytes) -> None:
        if self.ended.is_set():
            return
        self._idle.touch()
        self._answering = True
        try:
            for frame in self._parser.feed(data):
                self._handle(frame)
                if self.ended.is_set():
                    return
        except fr.SessionError as exc:
            log.info("closing a SPDY connection from a client that sent a bad frame: %s", exc)
            self._fail(exc.status, drop=isinstance(exc, _Flooded))
        finally:
            self._answering = False

    def eof_received(self) -> bool | None:
        self._peer_done.set()
        self._end_input()
        return True  # keep our side open: the answer may still be on its way

    def connection_lost(self, exc: Exception | None) -> None:
        self._gone = True
        self._writable.set()
        self._end_input()
        self._peer_done.set()

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()
        self._unsent_answers = 0

    # --- what the client does with it ---
    def open_stream(self, headers: fr.Headers, fin: bool = False) -> SpdyStream:
        """A new stream (SYN_STREAM with `headers`); StreamGone when the connection is gone."""
        if self._accept is not None:
            raise RuntimeError("a server does not open streams")
        if self._gone or self.transport.is_closing() or self._own_next > fr.MAX_STREAM_ID:
            raise StreamGone
        stream = SpdyStream(self, self._own_next, headers, remote_fin=False, local_fin=fin)
        self._own_next += 2
        self._streams[stream.id] = stream
        self._write(fr.syn_stream(self._compressor, stream.id, headers, fin))
        if self.ended.is_set():
            stream._end_input()
        return stream

    # --- what the server does with it ---
    async def next_stream(self) -> SpdyStream | None:
        """The next stream the client opened and this side accepted; None once no more can come."""
        while not self._incoming:
            if self.ended.is_set():
                return None
            self._arrived.clear()
            await self._arrived.wait()
        return self._incoming.popleft()

    async def idle(self) -> None:
        """Return once no frame moved for the idle timeout (never without one)."""
        await self._idle.expired()

    async def close(self) -> None:
        """Reset the streams this side has not finished, GOAWAY, and close (see the docstring)."""
        if not self._gone and not self._goaway_sent:
            for stream in list(self._streams.values()):
                stream.reset(fr.CANCEL)
            self._goaway(fr.GOAWAY_OK)
        self._end_input()
        if self._gone:
            return
        try:
            async with asyncio.timeout(LINGER_S):
                await self._peer_done.wait()
        except TimeoutError:
            pass
        finally:
            self.transport.close()

    # --- frames ---
    def _handle(self, frame: fr.Frame) -> None:
        match frame:
            case fr.Data():
                self._on_data(frame)
            case fr.SynStream():
                self._on_syn_stream(frame)
            case fr.RstStream():
                self._close_stream(frame.stream_id)
            case fr.Ping() if (frame.ping_id & 1) == self._peer_pings:
                self._write(fr.ping(frame.ping_id))
            case fr.SynReply() if frame.fin and frame.stream_id in self._streams:
                self._streams[frame.stream_id]._end_input()
            case fr.GoAway():
                self._end_input()
            case fr.Rejected():
                if frame.kind == fr.SYN_STREAM:
                    self._claim_id(frame.stream_id)
                log.info("resetting SPDY stream %d: %s", frame.stream_id, frame.reason)
                self._reset_id(frame.stream_id, frame.status)
            case _:
                pass  # SYN_REPLY, HEADERS, SETTINGS, WINDOW_UPDATE, the answer to a PING of ours

    def _on_data(self, frame: fr.Data) -> None:
        stream = self._streams.get(frame.stream_id)
        if stream is not None:
            stream._feed(frame.data, frame.fin)
            if stream.remote_closed and stream.local_closed:
                self._streams.pop(frame.stream_id, None)
        elif self._accept is not None and (frame.stream_id >= self._next_id or not frame.stream_id & 1):
            self._write(fr.rst_stream(frame.stream_id, fr.INVALID_STREAM))

    def _claim_id(self, stream_id: int) -> bool:
        """Whether `stream_id` is a valid new client id (odd, increasing); records it if so."""
        if not stream_id & 1 or stream_id < self._next_id:
            return False
        self._next_id = stream_id + 2
        self._last_received = stream_id
        return True

    def _on_syn_stream(self, frame: fr.SynStream) -> None:
        if self._goaway_sent:
            return
        if self._accept is None:
            self._write(fr.rst_stream(frame.stream_id, fr.REFUSED_STREAM))  # no server push here
            return
        if not self._claim_id(frame.stream_id):
            self._reset_id(frame.stream_id, fr.PROTOCOL_ERROR)
            return
        if len(self._streams) >= MAX_STREAMS:
            self._write(fr.rst_stream(frame.stream_id, fr.REFUSED_STREAM))
            return
        refusal = self._accept(frame.headers)
        if refusal is not None:
            log.warning("Stream rejected: %s", refusal)
            self._write(fr.rst_stream(frame.stream_id, fr.CANCEL))
            return
        stream = SpdyStream(self, frame.stream_id, frame.headers, frame.fin, frame.unidirectional)
        self._streams[frame.stream_id] = stream
        self._write(fr.syn_reply(self._compressor, frame.stream_id, {}))
        self._incoming.append(stream)
        self._arrived.set()

    def _reset_id(self, stream_id: int, status: int) -> None:
        """RST_STREAM on `stream_id`; a stream of that id still open ends here too (after sending
        RST_STREAM a stream is closed: SPDY/3 §2.4.2), so its reader sees the end and nothing
        more is sent on it."""
        self._write(fr.rst_stream(stream_id, status))
        self._close_stream(stream_id)

    def _close_stream(self, stream_id: int) -> None:
        """A reset stream (either side's RST_STREAM): both of its sides end here."""
        stream = self._streams.pop(stream_id, None)
        if stream is not None:
            stream.local_closed = True
            stream._end_input()

    def _forget(self, stream: SpdyStream) -> None:
        self._streams.pop(stream.id, None)

    def _goaway(self, status: int) -> None:
        if not self._goaway_sent:
            self._goaway_sent = True
            self._write(fr.goaway(self._last_received, status))

    def _fail(self, status: int, drop: bool = False) -> None:
        """GOAWAY and close; `drop`: abort instead, for a peer that does not read (a close would
        keep the connection until the buffer it never reads was written)."""
        self._answering = False  # the GOAWAY is no answer to count
        self._goaway(status)
        self._end_input()
        if not self._gone:
            if drop:
                self.transport.abort()
            else:
                self.transport.close()

    def _end_input(self) -> None:
        if self.ended.is_set():
            return
        self.ended.set()
        self._arrived.set()
        for stream in self._streams.values():
            stream._end_input()
        if self._read_paused and not self._gone:
            self._read_paused = False
            self.transport.resume_reading()

    # --- writing and flow ---
    def _write(self, data: bytes) -> None:
        if self._gone or self.transport.is_closing():
            return
        if self._answering and not self._writable.is_set():
            self._unsent_answers += 1
            if self._unsent_answers > MAX_UNSENT_ANSWERS:
                raise _Flooded(f"{MAX_UNSENT_ANSWERS} answers written to a peer that does not read them")
        self._idle.touch()
        self.transport.write(data)

    async def _send(self, data: bytes) -> None:
        if self._gone or self.transport.is_closing():
            raise StreamGone
        self._write(data)
        if not self._writable.is_set():
            await self._writable.wait()
            if self._gone:
                raise StreamGone

    def _buffered(self, size: int) -> None:
        self._pending += size
        if self._pending > HIGH_WATER and not self._read_paused and not self.ended.is_set():
            self._read_paused = True
            self.transport.pause_reading()

    def _consumed(self, size: int) -> None:
        self._pending -= size
        if self._read_paused and self._pending < LOW_WATER and not self._gone:
            self._read_paused = False
            self.transport.resume_reading()
