"""Bad input the SPDY fuzz tests found wanting, one test each: a client that floods without reading
its answers, an RST_STREAM the server sends on a stream it keeps open, an oversized SETTINGS."""

from __future__ import annotations

import asyncio
import struct

from kubeletapi.spdy import frames as fr
from kubeletapi.spdy.connection import MAX_UNSENT_ANSWERS
from tests.streaming.spdyfuzz import FakeTransport, Harness, control, encode

WRITE_HIGH_WATER = 64 * 1024  # asyncio's default


def test_a_client_that_floods_without_reading_its_answers_is_dropped() -> None:
    """PINGs (answered 1:1) and DATA on unknown streams (answered 2:1 with RST_STREAM) from a
    client that never reads: once MAX_UNSENT_ANSWERS answers were written while the transport's
    buffer was full, the connection is dropped (aborted: a close would wait for the buffer to be
    read), so the agent holds at most that many answers beyond the high water mark."""
    async def body() -> None:
        for flood in (fr.ping(1) * 30_000, fr.data_frame(2, b"") * 30_000):
            h = Harness(FakeTransport(write_high_water=WRITE_HIGH_WATER))
            h.feed([flood[i:i + 65536] for i in range(0, len(flood), 65536)])
            assert h.transport.aborts == 1 and h.transport.closes == 0
            assert h.conn.ended.is_set() and not h.transport.paused
            assert h.transport.written <= WRITE_HIGH_WATER + 16 * (MAX_UNSENT_ANSWERS + 2)  # and the GOAWAY

    asyncio.run(body())


def test_a_client_that_reads_its_answers_late_is_not_dropped() -> None:
    """The count starts again whenever the transport's buffer drained (resume_writing): a slow
    reader may get any number of answers, MAX_UNSENT_ANSWERS at a time."""
    async def body() -> None:
        h = Harness(FakeTransport(write_high_water=WRITE_HIGH_WATER))
        burst = fr.ping(1) * (WRITE_HIGH_WATER // 12 + MAX_UNSENT_ANSWERS)
        for _ in range(5):
            h.feed([burst])
            assert h.transport.writing_paused and h.transport.aborts == 0, h.transport.written
            h.transport.written = 0  # the peer read it all
            h.transport.writing_paused = False
            h.conn.resume_writing()
        assert not h.conn.ended.is_set() and h.transport.closes == 0

    asyncio.run(body())


def test_a_stream_the_server_resets_is_closed_on_its_side() -> None:
    """A SYN_STREAM reusing the id of an open stream, or a HEADERS frame on it that is wrong, is
    answered RST_STREAM on that id: the stream ends here too (SPDY/3 §2.4.2, after sending
    RST_STREAM the stream is closed), its reader sees the end and nothing more is sent on it."""
    async def body() -> None:
        for wrong in (("syn", 1, False, False, "normal"), ("headers", 1, "upper")):
            h = Harness()
            h.feed([encode([("syn", 1, False, False, "normal"), ("data", 1, 3, False), wrong,
                            ("data", 1, 4, False)])])
            stream = await h.conn.next_stream()
            assert stream is not None
            assert h.answers() == [fr.SynReply(1, {}), fr.RstStream(1, fr.PROTOCOL_ERROR)]
            assert await stream.read() == b"xxx"
            assert await stream.read() is None
            await stream.write(b"output")
            await stream.close()
            assert h.answers() == [fr.SynReply(1, {}), fr.RstStream(1, fr.PROTOCOL_ERROR)]
            assert 1 not in h.conn._streams

    asyncio.run(body())


def test_a_settings_frame_of_more_than_max_settings_entries_ends_the_session() -> None:
    """SETTINGS are ignored, yet every entry became three Python ints: a 16 MiB SETTINGS frame
    (2 million entries) took about 200 MB and 4 s of the event loop. No client sends more than a
    few (SPDY/3 defines 8 ids; spdystream sends none): more than MAX_SETTINGS is refused from
    the head, before its payload is buffered."""
    async def body() -> None:
        for count, refused in ((fr.MAX_SETTINGS, False), (fr.MAX_SETTINGS + 1, True), ((fr.MAX_LENGTH - 4) // 8, True)):
            h = Harness()
            head = control(fr.SETTINGS, 0, struct.pack(">I", count), length=4 + 8 * count)
            h.feed([head])
            assert h.conn.ended.is_set() == refused, count
            if refused:
                assert h.answers() == [fr.GoAway(0, fr.GOAWAY_PROTOCOL_ERROR)]
            else:
                h.feed([b"\0\0\0\1\0\0\0\2" * count])
                assert h.answers() == [] and not h.conn._parser._buffer

    asyncio.run(body())
