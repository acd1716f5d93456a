"""SPDY/3 frames: their types, the encoders, and an incremental parser that never trusts its input.

A frame is an 8-byte head and a payload. Control frames: `1 | version (15) | type (16)`, then
`flags (8) | length (24)`. Data frames: `0 | stream id (31)`, then `flags (8) | length (24)`.
Header blocks (SYN_STREAM, SYN_REPLY, HEADERS) are a 32-bit count of name/value pairs, each a
32-bit length and bytes (values may hold several values separated by NUL), compressed with zlib
primed with the SPDY dictionary: one inflate context per direction for the whole connection,
each frame's block ending in a sync flush.

The parser is the only code that reads peer bytes. It checks every length against the frame's
type before buffering the payload, so a peer cannot make it hold more than one legal frame:
fixed-size frames must have their size, a header block may not exceed MAX_HEADER_BLOCK
compressed or inflated, SETTINGS may have MAX_SETTINGS entries, a data frame is at most 16 MiB
(its 24-bit length). What it cannot
accept raises SessionError (the connection ends with GOAWAY); a header frame that inflates but
is wrong for its stream (an upper-case or repeated name) comes out as Rejected (that stream is
reset, the connection goes on).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from kubeletapi.spdy.dictionary import HEADER_DICTIONARY

VERSION = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
FLAG_FIN = 0x01
FLAG_UNIDIRECTIONAL = 0x02

# RST_STREAM status codes.
PROTOCOL_ERROR, INVALID_STREAM, REFUSED_STREAM, UNSUPPORTED_VERSION, CANCEL = 1, 2, 3, 4, 5
INTERNAL_ERROR, FLOW_CONTROL_ERROR, STREAM_IN_USE, STREAM_ALREADY_CLOSED = 6, 7, 8, 9
# GOAWAY status codes.
GOAWAY_OK, GOAWAY_PROTOCOL_ERROR, GOAWAY_INTERNAL_ERROR = 0, 1, 2

MAX_STREAM_ID = 0x7FFFFFFF
MAX_LENGTH = 0xFFFFFF
MAX_HEADER_BLOCK = 1 << 20  # compressed and inflated
# SETTINGS entries: SPDY/3 defines 8 ids and spdystream sends none; the frame is ignored, yet a
# 16 MiB one would be two million entries (about 200 MB as Python objects).
MAX_SETTINGS = 1024
HEAD = 8
_FIXED_LENGTH = {RST_STREAM: 8, PING: 4, GOAWAY: 8, WINDOW_UPDATE: 8}
_BLOCK_OFFSET = {SYN_STREAM: 10, SYN_REPLY: 4, HEADERS: 4}
_U32 = struct.Struct(">I")
_TWO = struct.Struct(">II")

Headers = Mapping[str, Sequence[str]]


class SessionError(Exception):
    """The connection cannot go on: answer GOAWAY with `status` and close."""

    def __init__(self, message: str, status: int = GOAWAY_PROTOCOL_ERROR) -> None:
        super().__init__(message)
        self.status = status


class StreamError(Exception):
    """One stream is wrong: answer RST_STREAM with `status`; the connection goes on."""

    def __init__(self, stream_id: int, message: str, status: int = PROTOCOL_ERROR) -> None:
        super().__init__(message)
        self.stream_id = stream_id
        self.status = status


@dataclass(frozen=True, slots=True)
class Data:
    stream_id: int
    data: bytes
    fin: bool = False


@dataclass(frozen=True, slots=True)
class SynStream:
    stream_id: int
    headers: Headers
    associated_id: int = 0
    priority: int = 0
    fin: bool = False
    unidirectional: bool = False


@dataclass(frozen=True, slots=True)
class SynReply:
    stream_id: int
    headers: Headers
    fin: bool = False


@dataclass(frozen=True, slots=True)
class RstStream:
    stream_id: int
    status: int


@dataclass(frozen=True, slots=True)
class Settings:
    entries: tuple[tuple[int, int, int], ...] = ()  # (flags, id, value)


@dataclass(frozen=True, slots=True)
class Ping:
    ping_id: int


@dataclass(frozen=True, slots=True)
class GoAway:
    last_good_stream_id: int
    status: int = GOAWAY_OK


@dataclass(frozen=True, slots=True)
class HeadersFrame:
    stream_id: int
    headers: Headers
    fin: bool = False


@dataclass(frozen=True, slots=True)
class WindowUpdate:
    stream_id: int
    delta: int


@dataclass(frozen=True, slots=True)
class Rejected:
    """A header-bearing frame (`kind`) whose block inflated but is wrong for its stream."""

    kind: int
    stream_id: int
    status: int
    reason: str


Frame = Data | SynStream | SynReply | RstStream | Settings | Ping | GoAway | HeadersFrame | WindowUpdate | Rejected


# --- header blocks ----------------------------------------------------------------------------
def pack_headers(headers: Headers) -> bytes:
    """The uncompressed block: names lower-cased, several values joined by NUL."""
    out = [_U32.pack(len(headers))]
    for name, values in headers.items():
        raw_name = name.lower().encode("latin-1")
        raw_value = "\0".join(values).encode("latin-1")
        out += [_U32.pack(len(raw_name)), raw_name, _U32.pack(len(raw_value)), raw_value]
    return b"".join(out)


def unpack_headers(block: bytes, stream_id: int) -> dict[str, list[str]]:
    """The pairs of an inflated block. A block that does not add up is SessionError (the inflate
    context is already past it, nothing to resynchronise); a pair that is wrong (an empty or
    upper-case name, a name twice) is StreamError."""
    if len(block) < 4:
        raise SessionError("truncated header block")
    (count,) = _U32.unpack_from(block, 0)
    if count * 8 > len(block) - 4:
        raise SessionError(f"header block claims {count} pairs in {len(block)} bytes")
    headers: dict[str, list[str]] = {}
    problem = ""
    offset = 4
    for _ in range(count):
        name, offset = _field(block, offset)
        value, offset = _field(block, offset)
        text = name.decode("latin-1")
        if not text or text != text.lower():
            problem = problem or f"invalid header name {text!r}"
        elif text in headers:
            problem = problem or f"duplicate header {text!r}"
        headers.setdefault(text.lower(), []).extend(value.decode("latin-1").split("\0"))
    if offset != len(block):
        raise SessionError(f"{len(block) - offset} bytes after the header block's pairs")
    if problem:
        raise StreamError(stream_id, problem)
    return headers


def _field(block: bytes, offset: int) -> tuple[bytes, int]:
    if offset + 4 > len(block):
        raise SessionError("truncated header block")
    (length,) = _U32.unpack_from(block, offset)
    end = offset + 4 + length
    if end > len(block):
        raise SessionError("truncated header block")
    return block[offset + 4:end], end


class HeaderCompressor:
    """The sending side's deflate context (one per connection)."""

    def __init__(self) -> None:
        self._zlib = zlib.compressobj(zdict=HEADER_DICTIONARY)

    def compress(self, headers: Headers) -> bytes:
        return self._zlib.compress(pack_headers(headers)) + self._zlib.flush(zlib.Z_SYNC_FLUSH)


class HeaderDecompressor:
    """The receiving side's inflate context (one per connection), bounded to MAX_HEADER_BLOCK."""

    def __init__(self) -> None:
        self._zlib = zlib.decompressobj(zdict=HEADER_DICTIONARY)

    def decompress(self, data: bytes, stream_id: int) -> dict[str, list[str]]:
        try:
            block = self._zlib.decompress(data, MAX_HEADER_BLOCK + 1)
        except zlib.error as exc:
            raise SessionError(f"bad compressed header block: {exc}") from None
        if len(block) > MAX_HEADER_BLOCK or self._zlib.unconsumed_tail:
            raise SessionError(f"header block over {MAX_HEADER_BLOCK} bytes")
        if self._zlib.eof:
            raise SessionError("header compression stream ended")
        return unpack_headers(block, stream_id)


# --- encoding ---------------------------------------------------------------------------------
def _control(kind: int, flags: int, payload: bytes) -> bytes:
    return _TWO.pack(0x80000000 | VERSION << 16 | kind, flags << 24 | len(payload)) + payload


def data_frame(stream_id: int, data: bytes | memoryview, fin: bool = False) -> bytes:
    return b"".join((_TWO.pack(stream_id & MAX_STREAM_ID, (FLAG_FIN if fin else 0) << 24 | len(data)), data))


def syn_stream(compressor: HeaderCompressor, stream_id: int, headers: Headers, fin: bool = False) -> bytes:
    payload = _TWO.pack(stream_id, 0) + b"\0\0" + compressor.compress(headers)
    return _control(SYN_STREAM, FLAG_FIN if fin else 0, payload)


def syn_reply(compressor: HeaderCompressor, stream_id: int, headers: Headers, fin: bool = False) -> bytes:
    return _control(SYN_REPLY, FLAG_FIN if fin else 0, _U32.pack(stream_id) + compressor.compress(headers))


def headers_frame(compressor: HeaderCompressor, stream_id: int, headers: Headers, fin: bool = False) -> bytes:
    return _control(HEADERS, FLAG_FIN if fin else 0, _U32.pack(stream_id) + compressor.compress(headers))


def rst_stream(stream_id: int, status: int) -> bytes:
    return _control(RST_STREAM, 0, _TWO.pack(stream_id, status))


def ping(ping_id: int) -> bytes:
    return _control(PING, 0, _U32.pack(ping_id))


def goaway(last_good_stream_id: int, status: int = GOAWAY_OK) -> bytes:
    return _control(GOAWAY, 0, _TWO.pack(last_good_stream_id, status))


def settings(entries: Sequence[tuple[int, int, int]] = ()) -> bytes:
    body = b"".join(_TWO.pack(flags << 24 | ident, value) for flags, ident, value in entries)
    return _control(SETTINGS, 0, _U32.pack(len(entries)) + body)


def window_update(stream_id: int, delta: int) -> bytes:
    return _control(WINDOW_UPDATE, 0, _TWO.pack(stream_id, delta))


# --- parsing ----------------------------------------------------------------------------------
@dataclass
class FrameParser:
    """Bytes in, frames out. feed() yields the complete frames so far; SessionError ends the
    connection (nothing can be parsed after it)."""

    decompressor: HeaderDecompressor = field(default_factory=HeaderDecompressor)
    _buffer: bytearray = field(default_factory=bytearray)
    _failed: bool = False

    def feed(self, data: bytes) -> Iterator[Frame]:
        """Parse what `data` completes (a generator: frames are handled one at a time)."""
        if self._failed:
            raise SessionError("the connection already failed")
        self._buffer += data
        try:
            while (frame := self._next()) is not None:
                yield frame
        except SessionError:
            self._failed = True
            self._buffer.clear()
            raise

    def _next(self) -> Frame | None:
        buf = self._buffer
        if len(buf) < HEAD:
            return None
        first, second = _TWO.unpack_from(buf, 0)
        flags, length = second >> 24, second & MAX_LENGTH
        control = bool(first & 0x80000000)
        if control:
            _check_control_head(first, length)
        if len(buf) < HEAD + length:
            return None
        payload = bytes(buf[HEAD:HEAD + length])
        del buf[:HEAD + length]
        if not control:
            stream_id = first & MAX_STREAM_ID
            if stream_id == 0:
                raise SessionError("data frame on stream 0")
            return Data(stream_id, payload, bool(flags & FLAG_FIN))
        return self._control(first & 0xFFFF, flags, payload)

    def _control(self, kind: int, flags: int, payload: bytes) -> Frame:
        if kind in _BLOCK_OFFSET:
            return self._with_headers(kind, flags, payload)
        if kind == SETTINGS:
            return _settings(payload)
        a, b = _TWO.unpack_from(payload + b"\0\0\0\0", 0)
        if kind == PING:
            if flags:
                raise SessionError("PING with flags")
            return Ping(a)
        if kind == RST_STREAM:
            if a & MAX_STREAM_ID == 0 or b == 0:
                raise SessionError("RST_STREAM on stream 0 or with status 0")
            return RstStream(a & MAX_STREAM_ID, b)
        if flags:
            raise SessionError(f"control frame {kind} with flags {flags:#x}")
        if kind == GOAWAY:
            return GoAway(a & MAX_STREAM_ID, b)
        return WindowUpdate(a & MAX_STREAM_ID, b & MAX_STREAM_ID)

    def _with_headers(self, kind: int, flags: int, payload: bytes) -> Frame:
        offset = _BLOCK_OFFSET[kind]
        stream_id = _U32.unpack_from(payload, 0)[0] & MAX_STREAM_ID
        try:
            headers = self.decompressor.decompress(payload[offset:], stream_id)
        except StreamError as exc:
            if stream_id == 0:
                raise SessionError(f"control frame {kind} on stream 0") from None
            return Rejected(kind, stream_id, exc.status, str(exc))
        if stream_id == 0:
            raise SessionError(f"control frame {kind} on stream 0")
        fin = bool(flags & FLAG_FIN)
        if kind == SYN_STREAM:
            associated = _U32.unpack_from(payload, 4)[0] & MAX_STREAM_ID
            return SynStream(stream_id, headers, associated, payload[8] >> 5, fin, bool(flags & FLAG_UNIDIRECTIONAL))
        if kind == SYN_REPLY:
            return SynReply(stream_id, headers, fin)
        return HeadersFrame(stream_id, headers, fin)


def _check_control_head(first: int, length: int) -> None:
    """Reject a control frame from its head alone, before any of its payload is buffered."""
    version, kind = (first >> 16) & 0x7FFF, first & 0xFFFF
    if version != VERSION:
        raise SessionError(f"unsupported SPDY version {version}")
    if kind in _FIXED_LENGTH:
        if length != _FIXED_LENGTH[kind]:
            raise SessionError(f"control frame {kind} of length {length}, not {_FIXED_LENGTH[kind]}")
    elif kind in _BLOCK_OFFSET:
        if length < _BLOCK_OFFSET[kind] or length - _BLOCK_OFFSET[kind] > MAX_HEADER_BLOCK:
            raise SessionError(f"control frame {kind} of length {length}")
    elif kind == SETTINGS:
        if length < 4 or (length - 4) % 8 or length > 4 + 8 * MAX_SETTINGS:
            raise SessionError(f"SETTINGS of length {length}")
    else:
        raise SessionError(f"unknown control frame type {kind}")


def _settings(payload: bytes) -> Settings:
    (count,) = _U32.unpack_from(payload, 0)
    if count * 8 != len(payload) - 4:
        raise SessionError(f"SETTINGS with {count} entries in {len(payload) - 4} bytes")
    pairs = (_TWO.unpack_from(payload, 4 + 8 * i) for i in range(count))
    return Settings(tuple((head >> 24, head & 0xFFFFFF, value) for head, value in pairs))
