"""Hostile input for the SPDY/3.1 server connection: hypothesis drives SpdyConnection.data_received
on a fake transport inside a running event loop, with whole sessions of right and wrong frames,
random bytes, mutations of valid sessions, every way of splitting them, oversized heads and
header blocks, and clients that send without reading.

Properties (spdyfuzz.py checks most of them on every example): data_received never raises; what
the server writes parses as whole frames of the answer types (RST_STREAM, GOAWAY, SYN_REPLY,
PING); a connection-level error (the bytes a parser alone refuses) gives exactly one GOAWAY
PROTOCOL_ERROR, last, and one close, and nothing is written after it; without one there is no
GOAWAY and no close; the parser never holds more than one legal frame; well-formed frames get
the answers the connection's docstring promises (the model in spdyfuzz.py); how the bytes are
split changes nothing; buffered input stays bounded (reading pauses above the high water mark).

How the 100,000 cases are counted: one case is one hypothesis example, i.e. one fresh connection
fed one generated input. The max_examples of the @given tests below add up to CASES (asserted by
test_case_budget); the deterministic tests (every byte boundary of a fixed corpus, the zlib bomb)
come on top. Runs are reproducible: derandomize=True and no example database, so every run tries
the same examples. Measured on this 2-core machine: about 70 s for the module under `make test`'s
coverage, about 40 s without.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeletapi.streaming.spdy import frames as fr
from kubeletapi.streaming.spdy.connection import HIGH_WATER, LOW_WATER
from kubeletapi.streaming.spdy.dictionary import HEADER_DICTIONARY
from tests.streaming.spdyfuzz import (
    ClientCompressor,
    Harness,
    check_session_end,
    control,
    decode_ops,
    encode,
    expected_answers,
    raw_block,
    splits,
)

BUDGET: dict[str, int] = {}


def fuzz(examples: int, feeds: int = 1) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """settings for a reproducible fuzz test of `examples` examples, each fed to `feeds` fresh
    connections: examples * feeds cases counted into BUDGET."""
    def decorate(test: Callable[..., None]) -> Callable[..., None]:
        BUDGET[test.__name__] = examples * feeds
        return settings(max_examples=examples, deadline=None, derandomize=True, database=None,
                        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])(test)
    return decorate


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    event_loop = asyncio.new_event_loop()
    yield event_loop
    event_loop.close()


def run(loop: asyncio.AbstractEventLoop, body: Callable[[], Coroutine[Any, Any, None]]) -> None:
    loop.run_until_complete(body())


def fed(loop: asyncio.AbstractEventLoop, chunks: list[bytes]) -> Harness:
    h = Harness()

    async def body() -> None:
        h.feed(chunks)

    run(loop, body)
    return h


cuts = st.integers(0, 1 << 32).map(lambda n: [n >> 8 * i & 0xFFF for i in range(n & 3)])  # up to 3 cuts
OPENING = encode([("syn", 1, False, False, "normal")])
sessions = st.binary(max_size=80).map(decode_ops)
good_sessions = st.binary(max_size=100).map(lambda data: decode_ops(data, bad=False))


FEEDS = 4  # the connections each example of the session tests is fed to


def fed_each_way(loop: asyncio.AbstractEventLoop, data: bytes, where: list[int]) -> Harness:
    """`data` fed to FEEDS fresh connections: whole, cut at `where`, one byte at a time and two
    bytes at a time (their first 64 bytes, then the rest): the checks hold for each, and all
    write the same bytes and close alike."""
    whole = fed(loop, [data])
    check_session_end(whole, data)
    for step in (0, 1, 2):
        chunks = splits(data, where) if step == 0 else [data[i:i + step] for i in range(0, min(len(data), 64), step)]
        if step:
            chunks = [c for c in [*chunks, data[len(b"".join(chunks)):]] if c]
        other = fed(loop, chunks)
        check_session_end(other, data)
        assert b"".join(other.transport.writes) == b"".join(whole.transport.writes)
        assert other.transport.closes == whole.transport.closes
    return whole


# --- whole sessions -------------------------------------------------------------------------
@fuzz(6_000, FEEDS)
@given(data=st.binary(max_size=200), opened=st.booleans(), where=cuts)
def test_random_bytes(loop: asyncio.AbstractEventLoop, data: bytes, opened: bool, where: list[int]) -> None:
    fed_each_way(loop, (OPENING if opened else b"") + data, where)


@fuzz(7_000, FEEDS)
@given(session=sessions, where=cuts)
def test_sessions_of_right_and_wrong_frames(loop: asyncio.AbstractEventLoop, session: list[tuple[object, ...]],
                                            where: list[int]) -> None:
    fed_each_way(loop, encode(session), where)


@fuzz(6_000, FEEDS)
@given(session=good_sessions, where=cuts)
def test_well_formed_frames_get_the_documented_answers(loop: asyncio.AbstractEventLoop,
                                                       session: list[tuple[object, ...]], where: list[int]) -> None:
    h = fed_each_way(loop, encode(session), where)
    assert h.answers() == expected_answers(session)


def mutate(data: bytes, mutations: bytes) -> bytes:
    """`data` changed by each 4 bytes of `mutations`: a bit flipped, a byte set, inserted or
    deleted, or the end cut off, at a position."""
    buf = bytearray(data)
    for i in range(0, len(mutations) - 3, 4):
        kind, where, value = mutations[i] % 5, int.from_bytes(mutations[i + 1:i + 3], "big"), mutations[i + 3]
        at = where % (len(buf) + 1)
        if kind == 0:
            buf[at:at] = bytes([value])
        elif kind == 1:
            del buf[at:]
        elif at < len(buf):
            if kind == 2:
                del buf[at]
            else:
                buf[at] = buf[at] ^ (1 << value % 8) if kind == 3 else value
    return bytes(buf)


@fuzz(6_000, FEEDS)
@given(session=good_sessions, mutations=st.binary(min_size=4, max_size=12), where=cuts)
def test_mutated_and_truncated_sessions(loop: asyncio.AbstractEventLoop, session: list[tuple[object, ...]],
                                        mutations: bytes, where: list[int]) -> None:
    fed_each_way(loop, mutate(encode(session), mutations), where)


@fuzz(500)
@given(session=st.binary(max_size=24).map(decode_ops))
def test_every_byte_boundary_of_short_sessions(loop: asyncio.AbstractEventLoop,
                                               session: list[tuple[object, ...]]) -> None:
    data = encode(session)
    whole = fed(loop, [data])
    for at in range(1, len(data)):
        h = fed(loop, [data[:at], data[at:]])
        assert b"".join(h.transport.writes) == b"".join(whole.transport.writes), at
        assert h.transport.closes == whole.transport.closes, at


CORPUS = [
    [("syn", 1, False, False, "normal"), ("data", 1, 5, False), ("ping", 1), ("settings", ((0, 4, 100),)),
     ("window", 1, 5), ("syn", 3, True, False, "refuse"), ("data", 7, 1, False), ("rst", 1, 5), ("data", 1, 1, True),
     ("syn", 3, False, False, "normal"), ("headers", 1, "normal"), ("reply", 5, "empty"),
     ("syn", 6, False, False, "normal")],
    [("syn", 1, False, False, "upper"), ("syn", 3, False, False, "twice"), ("syn", 5, False, False, "normal"),
     ("rst", 5, 0)],
    [("syn", 1, True, True, "normal"), ("data", 1, 3, True), ("data", 1, 3, False), ("goaway", 1, 0), ("ping", 3)],
    [("syn", 1, False, False, "normal"), ("raw", control(fr.SYN_STREAM, 0, b"", version=2)), ("ping", 5)],
    [("syn", 1, False, False, "normal"), ("badzlib", fr.HEADERS, 1, b"\xff" * 12)],
    [("syn", 1, False, False, "normal"), ("raw", control(77, 0, b"????"))],
]


@pytest.mark.parametrize("session", CORPUS, ids=range(len(CORPUS)))
def test_every_byte_boundary(loop: asyncio.AbstractEventLoop, session: list[tuple[object, ...]]) -> None:
    data = encode(session)
    whole = fed(loop, [data])
    check_session_end(whole, data)
    for at in range(len(data) + 1):
        for chunks in ([data[:at], data[at:]], [data[:at], *(bytes([b]) for b in data[at:at + 24]), data[at + 24:]]):
            h = fed(loop, [c for c in chunks if c])
            assert b"".join(h.transport.writes) == b"".join(whole.transport.writes), at
            assert h.transport.closes == whole.transport.closes, at


# --- heads and header blocks ----------------------------------------------------------------
@fuzz(3_000)
@given(kind=st.integers(0, 0xFFFF) | st.integers(1, 10), version=st.sampled_from([3, 3, 2, 0, 0x7FFF]),
       flags=st.integers(0, 255), length=st.integers(0, fr.MAX_LENGTH) | st.integers(0, 40),
       payload=st.integers(0, 4096))
def test_a_control_head_is_refused_before_its_payload(loop: asyncio.AbstractEventLoop, kind: int, version: int,
                                                      flags: int, length: int, payload: int) -> None:
    data = OPENING + control(kind, flags, b"\0" * min(payload, length), version=version, length=length)
    h = fed(loop, [data])  # the parser bound is checked after the feed
    check_session_end(h, data)


def compressed_block(size: int, comp: ClientCompressor) -> bytes:
    """A header block of exactly `size` bytes inflated (one pair, a long value)."""
    value = b"a" * (size - 4 - 4 - 3 - 4)  # the count, the name's length, "big", the value's length
    return comp.raw(raw_block([(b"big", value)]))


@pytest.mark.parametrize("size", [fr.MAX_HEADER_BLOCK - 1, fr.MAX_HEADER_BLOCK, fr.MAX_HEADER_BLOCK + 1, 64 << 20])
def test_a_header_block_inflating_over_1_mib_ends_the_session(loop: asyncio.AbstractEventLoop, size: int) -> None:
    comp = ClientCompressor()
    opening = encode([("syn", 1, False, False, "normal")], comp)
    block = compressed_block(size, comp)
    data = opening + control(fr.SYN_STREAM, 0, b"\0\0\0\x03\0\0\0\0\0\0" + block)
    h = fed(loop, [data])
    answers = h.answers()
    if size <= fr.MAX_HEADER_BLOCK:
        assert answers == [fr.SynReply(1, {}), fr.SynReply(3, {})]
        assert h.transport.closes == 0
    else:
        assert answers == [fr.SynReply(1, {}), fr.GoAway(1, fr.GOAWAY_PROTOCOL_ERROR)]
        assert h.transport.closes == 1
    check_session_end(h, data)


@fuzz(300)
@given(extra=st.integers(-64, 64), junk=st.binary(max_size=64))
def test_header_blocks_about_1_mib(loop: asyncio.AbstractEventLoop, extra: int, junk: bytes) -> None:
    comp = ClientCompressor()
    opening = encode([("syn", 1, False, False, "normal")], comp)
    data = opening + control(fr.HEADERS, 0, b"\0\0\0\x01" + compressed_block(fr.MAX_HEADER_BLOCK + extra, comp)
                             + junk)
    h = fed(loop, splits(data, [len(data) // 2]))
    check_session_end(h, data)
    if extra > 0:
        assert h.transport.closes == 1
    elif not junk:
        assert h.answers() == [fr.SynReply(1, {})] and h.transport.closes == 0


def test_a_compressed_stream_that_ends_is_a_session_error(loop: asyncio.AbstractEventLoop) -> None:
    finished = zlib.compressobj(zdict=HEADER_DICTIONARY)
    block = finished.compress(raw_block([(b"a", b"b")])) + finished.flush()
    data = control(fr.SYN_STREAM, 0, b"\0\0\0\x01\0\0\0\0\0\0" + block)
    h = fed(loop, [data])
    assert h.answers() == [fr.GoAway(0, fr.GOAWAY_PROTOCOL_ERROR)]


# --- bounded input --------------------------------------------------------------------------
@fuzz(150)
@given(frame=st.integers(1024, 70_000), chunk=st.integers(4096, 300_000),
       total=st.integers(HIGH_WATER // 2, 3 * HIGH_WATER))
def test_unread_input_pauses_reading_and_reading_resumes_it(loop: asyncio.AbstractEventLoop, frame: int, chunk: int,
                                                            total: int) -> None:
    frames = [fr.data_frame(1, b"i" * frame) for _ in range(total // frame + 1)]
    data = OPENING + b"".join(frames)
    h = Harness()

    async def body() -> None:
        chunks = [data[i:i + chunk] for i in range(0, len(data), chunk)]
        h.feed(chunks)
        pending = h.conn._pending
        assert pending <= HIGH_WATER + chunk + frame, pending
        assert h.transport.paused == (pending > HIGH_WATER), pending
        if h.delivered < len(data):
            assert h.transport.paused
        stream = await h.conn.next_stream()
        assert stream is not None
        while h.conn._pending >= LOW_WATER:
            assert h.transport.paused == (h.transport.pauses > h.transport.resumes)
            await stream.read()
        assert not h.transport.paused

    run(loop, body)
    check_session_end(h, data)


def test_case_budget() -> None:
    assert sum(BUDGET.values()) >= 100_000, BUDGET
