"""What the SPDY fuzz tests share: a fake transport, a driver that checks every answer, the client
frames as hypothesis strategies, and a model of what the server answers to well-formed frames.

The fake transport behaves as asyncio's does for what the connection can see: nothing is
delivered while reading is paused or after close(); a write after close() is recorded (it must
never happen); with `write_high_water`, pause_writing() is called once the written bytes pass it
and the peer never reads them (a client that floods without reading its answers).
"""

from __future__ import annotations

import itertools
import struct
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from kubeletapi.clock import FakeClock
from kubeletapi.spdy import frames as fr
from kubeletapi.spdy.connection import SpdyConnection
from kubeletapi.spdy.dictionary import HEADER_DICTIONARY

ANSWER_TYPES = (fr.RstStream, fr.GoAway, fr.SynReply, fr.Ping)
PARSER_BOUND = fr.HEAD + fr.MAX_LENGTH  # the largest legal frame: a data frame of 2^24 - 1 bytes
HEADER_FRAME_BOUND = fr.HEAD + 10 + fr.MAX_HEADER_BLOCK  # SYN_STREAM's 10 bytes before its block
T = TypeVar("T")


class FakeTransport:
    def __init__(self, write_high_water: int | None = None) -> None:
        self.writes: list[bytes] = []
        self.written = 0
        self.after_close: list[bytes] = []
        self.closing = False
        self.closes = 0
        self.aborts = 0
        self.paused = False
        self.pauses = 0
        self.resumes = 0
        self.write_high_water = write_high_water
        self.writing_paused = False
        self.conn: SpdyConnection | None = None

    def write(self, data: bytes) -> None:
        if self.closing:
            self.after_close.append(bytes(data))
            return
        self.writes.append(bytes(data))
        self.written += len(data)
        high = self.write_high_water
        if high is not None and self.written > high and not self.writing_paused and self.conn is not None:
            self.writing_paused = True
            self.conn.pause_writing()

    def close(self) -> None:
        self.closing = True
        self.closes += 1

    def abort(self) -> None:
        self.closing = True
        self.aborts += 1

    def is_closing(self) -> bool:
        return self.closing

    def pause_reading(self) -> None:
        self.paused = True
        self.pauses += 1

    def resume_reading(self) -> None:
        self.paused = False
        self.resumes += 1


def refuse_marked(headers: fr.Headers) -> str | None:
    """The accept callback of the tests: a stream with a `refuse` header is refused."""
    return "refused by the test" if "refuse" in headers else None


@dataclass
class Harness:
    """One server connection on a fake transport, fed as a transport would feed it."""

    transport: FakeTransport = field(default_factory=FakeTransport)
    conn: SpdyConnection = field(init=False)
    delivered: int = 0

    def __post_init__(self) -> None:
        self.conn = SpdyConnection(self.transport, refuse_marked, clock=FakeClock())
        self.transport.conn = self.conn

    def feed(self, chunks: Iterable[bytes]) -> None:
        """Deliver `chunks` until the transport closes or pauses; data_received must not raise and
        the parser must never hold more than one legal frame."""
        for chunk in chunks:
            if self.transport.closing or self.transport.paused:
                return
            self.conn.data_received(chunk)
            self.delivered += len(chunk)
            if not self.conn.ended.is_set():  # after its end the parser is left as it was
                check_parser_bound(self.conn._parser)

    def answers(self) -> list[fr.Frame]:
        return parse_answers(b"".join(self.transport.writes))


def check_parser_bound(parser: fr.FrameParser) -> None:
    """Between feeds the parser holds less than one frame, and what a frame may be: a header frame
    at most a 1 MiB block, SETTINGS MAX_SETTINGS entries, a fixed-size frame its size, a data
    frame at most 2^24 - 1 bytes."""
    buf = parser._buffer
    assert len(buf) <= PARSER_BOUND, len(buf)
    if len(buf) >= fr.HEAD and buf[0] & 0x80:
        kind = int.from_bytes(buf[2:4], "big")
        bound = HEADER_FRAME_BOUND if kind in (fr.SYN_STREAM, fr.SYN_REPLY, fr.HEADERS) else fr.HEAD + 8
        if kind == fr.SETTINGS:
            bound = fr.HEAD + 4 + 8 * fr.MAX_SETTINGS
        assert len(buf) <= bound, (kind, len(buf))


def parse_answers(data: bytes) -> list[fr.Frame]:
    """The server's answers as a client reads them: whole, valid frames of the answer types."""
    parser = fr.FrameParser()
    frames = list(parser.feed(data))
    assert not parser._buffer, "a partial frame written"
    for frame in frames:
        assert isinstance(frame, ANSWER_TYPES), frame
        if isinstance(frame, fr.RstStream):
            assert 1 <= frame.status <= fr.STREAM_ALREADY_CLOSED + 2, frame
        if isinstance(frame, fr.SynReply):
            assert frame.headers == {} and not frame.fin, frame
    return frames


def session_error_before_goaway(data: bytes) -> bool:
    """The oracle: whether a parser alone fails on `data` before any GOAWAY from the client (after
    which the server reads nothing more)."""
    parser = fr.FrameParser()
    try:
        for frame in parser.feed(data):
            if isinstance(frame, fr.GoAway):
                return False
    except fr.SessionError:
        return True
    return False


def check_session_end(h: Harness, data: bytes) -> None:
    """The answers are frames of the answer types; a connection-level error gives exactly one
    GOAWAY PROTOCOL_ERROR, as the last frame, and one close; nothing is written after it."""
    answers = h.answers()
    goaways = [f for f in answers if isinstance(f, fr.GoAway)]
    assert not h.transport.after_close, h.transport.after_close
    assert h.transport.aborts == 0
    if h.transport.paused:
        return  # not everything was delivered: the oracle does not apply
    if session_error_before_goaway(data):
        assert len(goaways) == 1 and goaways[0].status == fr.GOAWAY_PROTOCOL_ERROR, goaways
        assert answers[-1] == goaways[0]
        assert h.transport.closes == 1
        assert h.conn.ended.is_set()
    else:
        assert goaways == [] and h.transport.closes == 0, (goaways, h.transport.closes)


def splits(data: bytes, cuts: Sequence[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    edges = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges) if b > a]


# --- client frames --------------------------------------------------------------------------
_U32 = struct.Struct(">I")


class ClientCompressor(fr.HeaderCompressor):
    """The client's deflate context; `raw` compresses a block as given (upper-case names, pairs
    twice, lengths that do not add up)."""

    def __init__(self) -> None:
        super().__init__()
        self._raw = zlib.compressobj(zdict=HEADER_DICTIONARY)

    def compress(self, headers: fr.Headers) -> bytes:
        return self.raw(fr.pack_headers(headers))

    def raw(self, block: bytes) -> bytes:
        return self._raw.compress(block) + self._raw.flush(zlib.Z_SYNC_FLUSH)


def raw_block(pairs: Sequence[tuple[bytes, bytes]], count: int | None = None) -> bytes:
    out = [_U32.pack(len(pairs) if count is None else count)]
    for name, value in pairs:
        out += [_U32.pack(len(name)), name, _U32.pack(len(value)), value]
    return b"".join(out)


def control(kind: int, flags: int, payload: bytes, version: int = fr.VERSION, length: int | None = None) -> bytes:
    size = len(payload) if length is None else length
    return struct.pack(">II", 0x80000000 | version << 16 | kind, flags << 24 | size) + payload


def encode(ops: Sequence[tuple[object, ...]], comp: ClientCompressor | None = None) -> bytes:
    """The bytes of a client's ops (see `ops()`), with one deflate context for all of them."""
    comp = comp or ClientCompressor()
    return b"".join(_encode(op, comp) for op in ops)


def _encode(op: tuple[object, ...], comp: ClientCompressor) -> bytes:
    match op:
        case ("syn", int(sid), bool(fin), bool(uni), str(kind)):
            flags = (fr.FLAG_FIN if fin else 0) | (fr.FLAG_UNIDIRECTIONAL if uni else 0)
            return control(fr.SYN_STREAM, flags, struct.pack(">II", sid, 0) + b"\0\0" + _block(comp, kind))
        case ("data", int(sid), int(size), bool(fin)):
            return fr.data_frame(sid, b"x" * size, fin)
        case ("rst", int(sid), int(status)):
            return control(fr.RST_STREAM, 0, struct.pack(">II", sid, status))
        case ("ping", int(pid)):
            return fr.ping(pid)
        case ("settings", tuple(entries)):
            return fr.settings(entries)
        case ("window", int(sid), int(delta)):
            return fr.window_update(sid, delta)
        case ("headers" | "reply" as name, int(sid), str(kind)):
            kind_id = fr.HEADERS if name == "headers" else fr.SYN_REPLY
            return control(kind_id, 0, _U32.pack(sid) + _block(comp, kind))
        case ("goaway", int(last), int(status)):
            return fr.goaway(last, status)
        case ("raw", bytes(data)):
            return data
        case ("badzlib", int(kind), int(sid), bytes(junk)):
            offset = 10 if kind == fr.SYN_STREAM else 4
            return control(kind, 0, _U32.pack(sid) + b"\0" * (offset - 4) + junk)
    raise AssertionError(op)


def _block(comp: ClientCompressor, kind: str) -> bytes:
    if kind == "normal":
        return comp.compress({"streamtype": ["stdin"], "port": ["8080"], "requestid": ["0"]})
    if kind == "refuse":
        return comp.compress({"refuse": ["yes"]})
    if kind == "empty":
        return comp.compress({})
    if kind == "upper":
        return comp.raw(raw_block([(b"StreamType", b"stdin")]))
    if kind == "twice":
        return comp.raw(raw_block([(b"port", b"1"), (b"port", b"2")]))
    if kind == "short":
        return comp.raw(raw_block([(b"port", b"1")], count=3))
    return comp.raw(raw_block([(b"port", b"1")]) + b"extra")  # "long": bytes after the pairs


HEADER_KINDS = ("normal", "normal", "normal", "refuse", "empty", "upper", "twice", "short", "long")
SPECIAL_IDS = (0, 0x7FFFFFFD, 0x7FFFFFFF, 0xFFFFFFFF, 0x80000001)
VERSIONS = (fr.VERSION, fr.VERSION, 2, 1, 0, 4, 0x7FFF)


class Seed:
    """Reads choices from hypothesis's bytes, as a fuzzer's data provider does (hypothesis
    generates and mutates flat bytes several times faster than nested strategies); past its end
    every choice is 0."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def more(self) -> bool:
        return self.at < len(self.data)

    def byte(self) -> int:
        self.at += 1
        return self.data[self.at - 1] if self.at <= len(self.data) else 0

    def pick(self, choices: Sequence[T]) -> T:
        return choices[self.byte() % len(choices)]

    def number(self, size: int) -> int:
        return int.from_bytes(bytes(self.byte() for _ in range(size)), "big")

    def flag(self) -> bool:
        return bool(self.byte() & 1)

    def bytes(self, most: int) -> bytes:
        return bytes(self.byte() for _ in range(self.byte() % (most + 1)))

    def stream_id(self, bad: bool) -> int:
        value = self.byte()
        if bad and value >= 0xF0:
            return SPECIAL_IDS[value % len(SPECIAL_IDS)]
        return value % 17 if bad else value % 16 + 1


def good_op(seed: Seed) -> tuple[object, ...]:
    """A well-formed frame a client may send, right or wrong for the session (ids reused or even,
    DATA on unknown streams, after FIN or RST...): the parser accepts it."""
    kind = seed.byte() % 8
    sid = seed.stream_id(bad=False)
    if kind in (0, 1):
        return ("syn", sid, seed.flag(), seed.flag(), seed.pick(HEADER_KINDS[:5]))
    if kind == 2:
        return ("data", sid, seed.byte() % 41, seed.flag())
    if kind == 3:
        return ("rst", sid, seed.byte() % 11 + 1)
    if kind == 4:
        return ("ping", seed.number(4))
    if kind == 5:
        return ("settings", tuple((seed.byte(), seed.number(3), seed.number(4)) for _ in range(seed.byte() % 4)))
    if kind == 6:
        return ("window", sid - 1, seed.number(4) & 0x7FFFFFFF)
    return (seed.pick(["headers", "reply"]), sid, seed.pick(HEADER_KINDS[:5]))


def bad_op(seed: Seed) -> tuple[object, ...]:
    """A frame wrong in itself: any head (versions, unknown types, flags, lengths that do not fit
    the type) with any payload, bytes, a header block that is not zlib or not a block, RST with
    status 0, frames on stream 0 or with the high bit, a GOAWAY."""
    kind = seed.byte() % 9
    if kind == 0:
        length = seed.pick([None, None, seed.byte() % 41, fr.MAX_LENGTH, fr.MAX_HEADER_BLOCK + 11])
        head = control(seed.byte() % 21, seed.byte(), seed.bytes(24), seed.pick(VERSIONS), length)
        return ("raw", head)
    if kind == 1:
        return ("raw", seed.bytes(24) or b"\x80")
    if kind == 2:
        return ("badzlib", seed.pick([fr.SYN_STREAM, fr.SYN_REPLY, fr.HEADERS]), seed.stream_id(True), seed.bytes(24))
    if kind == 3:
        return ("syn", seed.stream_id(True), seed.flag(), seed.flag(), seed.pick(HEADER_KINDS))
    if kind == 4:
        return (seed.pick(["headers", "reply"]), seed.stream_id(True), seed.pick(HEADER_KINDS))
    if kind == 5:
        return ("data", seed.stream_id(True), seed.byte() % 9, seed.flag())
    if kind == 6:
        return ("rst", seed.stream_id(True), seed.pick([0, 0, 1, 5, 12, 0xFFFFFFFF]))
    if kind == 7:
        return ("window", seed.stream_id(True), seed.number(4))
    return ("goaway", seed.stream_id(True), seed.byte() % 4)


def decode_ops(data: bytes, bad: bool = True) -> list[tuple[object, ...]]:
    """A client's session from hypothesis's bytes: well-formed frames, and with `bad` one in
    four wrong in itself."""
    seed, out = Seed(data), []
    while seed.more():
        out.append(bad_op(seed) if bad and seed.byte() % 4 == 0 else good_op(seed))
    return out


# --- the model ------------------------------------------------------------------------------
def expected_answers(ops: Sequence[tuple[object, ...]]) -> list[fr.Frame]:
    """What the server answers to well-formed frames (good_ops), as its docstring says: a new odd
    increasing id gets SYN_REPLY (RST CANCEL when refused), any other SYN_STREAM RST
    PROTOCOL_ERROR; DATA for an id never opened RST INVALID_STREAM, for one closed or finished
    nothing; an odd PING is echoed; SETTINGS, WINDOW_UPDATE, HEADERS and SYN_REPLY get nothing."""
    out: list[fr.Frame] = []
    next_id = 1
    live: dict[int, list[bool]] = {}  # id -> [remote closed, local closed]
    for op in ops:
        match op:
            case ("syn", int(sid), bool(fin), bool(uni), str(kind)):
                if sid & 1 == 0 or sid < next_id:
                    out.append(fr.RstStream(sid, fr.PROTOCOL_ERROR))
                    live.pop(sid, None)  # an open stream of that id ends with it
                    continue
                next_id = sid + 2
                if kind == "refuse":
                    out.append(fr.RstStream(sid, fr.CANCEL))
                else:
                    out.append(fr.SynReply(sid, {}))
                    live[sid] = [fin, uni]
            case ("data", int(sid), _, bool(fin)):
                if sid in live:
                    live[sid][0] = live[sid][0] or fin
                    if all(live[sid]):
                        del live[sid]
                elif sid >= next_id or sid & 1 == 0:
                    out.append(fr.RstStream(sid, fr.INVALID_STREAM))
            case ("rst", int(sid), _):
                live.pop(sid, None)
            case ("ping", int(pid)) if pid & 1:
                out.append(fr.Ping(pid))
    return out
