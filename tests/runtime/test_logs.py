"""CRI log records and the kubelet-compatible reader (tail, since, limit, streams, follow, rotation)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from kubeletapi.clock import Clock, FakeClock, RealClock
from kubeletapi.errors import InvalidInput, NotFound
from kubeletapi.runtime.logoptions import ZERO_TIME_NS
from kubeletapi.runtime.logs import (
    STDERR,
    STDOUT,
    LogRecord,
    LogStream,
    RunningCheck,
    encode_record,
    find_tail_start,
    format_timestamp,
    parse_record,
    parse_timestamp,
    read_logs,
)
from kubeletapi.server.logquery import decode_pod_log_options
from tests.runtime.crilog import CRILog

S = 10**9
T0 = 1795251833 * S  # 2026-11-21T09:03:53Z


def fixed(ns: int) -> bytes:
    return format_timestamp(ns, fixed=True).encode()


# ---------------------------------------------------------------------------------------- formats


@pytest.mark.parametrize(
    ("ns", "kwargs", "text"),
    [
        pytest.param(0, {}, "1970-01-01T00:00:00Z", id="epoch"),
        pytest.param(T0 + 402_710_000, {}, "2026-11-21T09:03:53.40271Z", id="trimmed"),
        pytest.param(T0 + 1, {}, "2026-11-21T09:03:53.000000001Z", id="one-ns"),
        pytest.param(T0, {"fixed": True}, "2026-11-21T09:03:53.000000000Z", id="fixed-zero-fraction"),
        pytest.param(T0 + 402_710_000, {"fixed": True}, "2026-11-21T09:03:53.402710000Z", id="fixed"),
        pytest.param(T0 + 5 * S // 10, {"offset": 7200}, "2026-11-21T11:03:53.5+02:00", id="offset-east"),
        pytest.param(T0, {"offset": -19800}, "2026-11-21T03:33:53-05:30", id="offset-west"),
        pytest.param(-1, {}, "1969-12-31T23:59:59.999999999Z", id="before-epoch"),
        pytest.param(ZERO_TIME_NS, {}, "0001-01-01T00:00:00Z", id="go-zero-time"),
    ],
)
def test_format_timestamp(ns: int, kwargs: dict[str, int], text: str) -> None:
    assert format_timestamp(ns, **kwargs) == text  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        pytest.param("2026-11-21T09:03:53Z", T0, id="seconds"),
        pytest.param("2026-11-21T09:03:53.40271Z", T0 + 402_710_000, id="trimmed-fraction"),
        pytest.param("2026-11-21T09:03:53.000000001Z", T0 + 1, id="nanoseconds"),
        pytest.param("2026-11-21T09:03:53.1234567891Z", T0 + 123_456_789, id="tenth-digit-ignored"),
        pytest.param("2026-11-21T09:03:53,5Z", T0 + S // 2, id="comma-fraction"),
        pytest.param("2026-11-21T11:03:53+02:00", T0, id="offset-east"),
        pytest.param("2026-11-21T03:33:53.25-05:30", T0 + S // 4, id="offset-west"),
        pytest.param("2026-11-21T09:03:53+00:00", T0, id="offset-zero"),
        pytest.param("2024-02-29T00:00:00Z", 1709164800 * S, id="leap-day"),
    ],
)
def test_parse_timestamp(text: str, ns: int) -> None:
    assert parse_timestamp(text) == ns
    assert parse_timestamp(text.encode()) == ns


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("2026-11-21T09:03:53", id="no-zone"),
        pytest.param("2026-11-21T09:03:53z", id="lowercase-z"),
        pytest.param("2026-11-21 09:03:53Z", id="space"),
        pytest.param("2026-11-21T09:03:53.Z", id="dot-without-digits"),
        pytest.param("2026-13-01T00:00:00Z", id="month-13"),
        pytest.param("2025-02-29T00:00:00Z", id="not-a-leap-year"),
        pytest.param("2026-11-21T24:00:00Z", id="hour-24"),
        pytest.param("2026-11-21T09:03:60Z", id="second-60"),
        pytest.param("2026-11-21T09:03:53+0200", id="offset-without-colon"),
        pytest.param("2026-11-21T09:03:53+24:00", id="offset-hour-24"),
        pytest.param("26-11-21T09:03:53Z", id="short-year"),
    ],
)
def test_parse_timestamp_rejects(text: str) -> None:
    with pytest.raises(InvalidInput):
        parse_timestamp(text)


@pytest.mark.parametrize(
    "ns", [pytest.param(ns, id=str(ns)) for ns in (0, 1, T0, T0 + 402_710_000, T0 + 999_999_999, -5, ZERO_TIME_NS)]
)
def test_timestamp_round_trip(ns: int) -> None:
    assert parse_timestamp(format_timestamp(ns)) == ns
    assert parse_timestamp(format_timestamp(ns, fixed=True)) == ns
    assert parse_timestamp(format_timestamp(ns, offset=3600)) == ns


# ---------------------------------------------------------------------------------------- records


@pytest.mark.parametrize(
    "record",
    [
        pytest.param(LogRecord(T0, STDOUT, "F", b"hello world"), id="full"),
        pytest.param(LogRecord(T0 + 402_710_000, STDERR, "P", b"chunk "), id="partial"),
        pytest.param(LogRecord(T0, STDOUT, "F", b""), id="empty-content"),
        pytest.param(LogRecord(T0, STDOUT, "F", b"  spaced\tout \xff"), id="spaces-and-bytes"),
    ],
)
def test_record_round_trip(record: LogRecord) -> None:
    line = encode_record(record.timestamp, record.stream, record.tag, record.content)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert parse_record(line) == record
    assert parse_record(line[:-1]) == record  # the newline is optional


def test_encode_record_text() -> None:
    assert encode_record(T0 + 402_710_000, STDOUT, "F", b"hi") == b"2026-11-21T09:03:53.40271Z stdout F hi\n"


@pytest.mark.parametrize(
    ("line", "record"),
    [
        pytest.param(
            b"2026-11-21T11:03:53+02:00 stdout F x\n", LogRecord(T0, STDOUT, "F", b"x", 7200), id="offset-kept"
        ),
        pytest.param(b"2026-11-21T09:03:53Z stderr P:x y\n", LogRecord(T0, STDERR, "P:x", b"y"), id="tag-list"),
        pytest.param(b"2026-11-21T09:03:53Z stdout X y\n", LogRecord(T0, STDOUT, "X", b"y"), id="unknown-tag-full"),
        pytest.param(b"2026-11-21T09:03:53Z stdout  y\n", LogRecord(T0, STDOUT, "", b"y"), id="empty-tag"),
    ],
)
def test_parse_record_cases(line: bytes, record: LogRecord) -> None:
    assert parse_record(line) == record
    assert parse_record(line).partial is record.tag.startswith("P")


@pytest.mark.parametrize(
    "line",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"\n", id="blank"),
        pytest.param(b"garbage\n", id="no-delimiter"),
        pytest.param(b"yesterday stdout F x\n", id="bad-timestamp"),
        pytest.param(b"2026-11-21T09:03:53Z\n", id="no-stream"),
        pytest.param(b"2026-11-21T09:03:53Z stdin F x\n", id="bad-stream"),
        pytest.param(b"2026-11-21T09:03:53Z stdout F\n", id="no-tag-delimiter"),
        pytest.param(b'{"log":"x","stream":"stdout","time":"2026-11-21T09:03:53Z"}\n', id="docker-json"),
    ],
)
def test_parse_record_rejects(line: bytes) -> None:
    with pytest.raises(InvalidInput):
        parse_record(line)


@pytest.mark.parametrize(
    ("stream", "tag", "content"),
    [
        pytest.param("stdin", "F", b"x", id="bad-stream"),
        pytest.param(STDOUT, "", b"x", id="empty-tag"),
        pytest.param(STDOUT, "F F", b"x", id="tag-with-space"),
        pytest.param(STDOUT, "F", b"a\nb", id="newline-in-content"),
    ],
)
def test_encode_record_rejects(stream: str, tag: str, content: bytes) -> None:
    with pytest.raises(InvalidInput):
        encode_record(T0, stream, tag, content)


# ---------------------------------------------------------------------------------------- tail


class CountingFile:
    """A hand-written wrapper that counts the bytes read through it."""

    def __init__(self, path: Path) -> None:
        self.f = path.open("rb")
        self.bytes_read = 0

    def seek(self, offset: int, whence: int = 0, /) -> int:
        return self.f.seek(offset, whence)

    def read(self, size: int = -1, /) -> bytes:
        data = self.f.read(size)
        self.bytes_read += len(data)
        return data


def naive_tail_start(data: bytes, n: int) -> int:
    ends = [i + 1 for i, byte in enumerate(data) if byte == ord("\n")]
    return 0 if n < 0 or len(ends) <= n else ends[-(n + 1)]


LONG = b"".join(b"%05d %s\n" % (i, b"x" * (i % 97)) for i in range(400))  # ~20 KiB: crosses blocks


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"a\nb\nc\n", id="terminated"),
        pytest.param(b"a\nb\nc", id="unterminated-last"),
        pytest.param(b"\n\n\n", id="blank-lines"),
        pytest.param(LONG, id="several-blocks"),
        pytest.param(LONG + b"tail without newline", id="several-blocks-unterminated"),
    ],
)
def test_find_tail_start_matches_naive(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "0.log"
    path.write_bytes(data)
    for n in [-1, 0, 1, 2, 3, 4, 50, 170, 399, 400, 401]:
        f = CountingFile(path)
        assert find_tail_start(f, n) == naive_tail_start(data, n), n
        f.f.close()


def write_big_log(path: Path, lines: int) -> list[bytes]:
    contents = [b"line %07d %s" % (i, b"." * 80) for i in range(lines)]
    path.write_bytes(b"".join(encode_record(T0 + i, STDOUT, "F", c) for i, c in enumerate(contents)))
    return contents


def test_find_tail_start_reads_only_the_end(tmp_path: Path) -> None:
    path = tmp_path / "0.log"
    contents = write_big_log(path, 100_000)
    assert path.stat().st_size > 10 * 1024 * 1024
    f = CountingFile(path)
    start = find_tail_start(f, 10)
    f.f.close()
    assert f.bytes_read <= 16 * 1024
    assert path.read_bytes()[start:].count(b"\n") == 10
    assert parse_record(path.read_bytes()[start:].split(b"\n")[0]).content == contents[-10]


# ---------------------------------------------------------------------------------------- reading


async def drain(stream: LogStream) -> bytes:
    out = b""
    try:
        async for chunk in stream:
            out += chunk
    finally:
        await stream.aclose()
    return out


def read(path: Path, query: dict[str, str], *, clock: Clock | None = None, split: bool = False) -> bytes:
    opts = decode_pod_log_options(query, split_streams=split)
    return asyncio.run(drain(read_logs(path, opts, clock=clock)))


RECORDS = [
    (T0, STDOUT, "F", b"one"),
    (T0 + 1 * S, STDERR, "F", b"two"),
    (T0 + 2 * S, STDOUT, "P", b"thr"),
    (T0 + 3 * S, STDOUT, "P", b"ee-"),
    (T0 + 4 * S, STDOUT, "F", b"end"),
    (T0 + 5 * S, STDERR, "F", b"five"),
]


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "0.log"
    path.write_bytes(b"".join(encode_record(*r) for r in RECORDS))
    return path


def ts(i: int) -> bytes:
    return fixed(T0 + i * S) + b" "


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param({}, b"one\ntwo\nthree-end\nfive\n", id="all"),
        pytest.param({"tailLines": "2"}, b"end\nfive\n", id="tail-2"),
        pytest.param({"tailLines": "3"}, b"ee-end\nfive\n", id="tail-counts-partial-records"),
        pytest.param({"tailLines": "0"}, b"", id="tail-0"),
        pytest.param({"tail": "100"}, b"one\ntwo\nthree-end\nfive\n", id="tail-more-than-lines"),
        pytest.param({"tail": "all"}, b"one\ntwo\nthree-end\nfive\n", id="tail-all"),
        pytest.param(
            {"timestamps": "true"},
            ts(0) + b"one\n" + ts(1) + b"two\n" + ts(2) + b"three-end\n" + ts(5) + b"five\n",
            id="timestamps-once-per-line",
        ),
        pytest.param(
            {"timestamps": "true", "tailLines": "3"}, ts(3) + b"ee-end\n" + ts(5) + b"five\n", id="timestamps-tail"
        ),
        pytest.param({"limitBytes": "6"}, b"one\ntw", id="limit-cuts-a-line"),
        pytest.param({"limitBytes": "4"}, b"one\n", id="limit-on-a-line-end"),
        pytest.param({"limitBytes": "11"}, b"one\ntwo\nthr", id="limit-in-a-partial"),
        pytest.param({"limitBytes": "1000"}, b"one\ntwo\nthree-end\nfive\n", id="limit-beyond"),
        pytest.param({"limitBytes": "10", "timestamps": "1"}, ts(0)[:10], id="limit-inside-the-prefix"),
        pytest.param({"sinceTime": "2026-11-21T09:03:55Z"}, b"three-end\nfive\n", id="since-time"),
        pytest.param({"sinceTime": "2026-11-21T09:03:56Z"}, b"ee-end\nfive\n", id="since-time-inclusive"),
        pytest.param({"sinceTime": "2026-11-21T09:03:53.5Z"}, b"two\nthree-end\nfive\n", id="since-time-fraction"),
        pytest.param({"sinceTime": "2026-11-21T09:04:00Z"}, b"", id="since-time-future"),
        pytest.param({"sinceTime": ""}, b"one\ntwo\nthree-end\nfive\n", id="since-time-zero"),
    ],
)
def test_read(log: Path, query: dict[str, str], expected: bytes) -> None:
    assert read(log, query) == expected


@pytest.mark.parametrize(
    ("since_seconds", "expected"),
    [
        pytest.param("1", b"end\nfive\n", id="1s"),
        pytest.param("2", b"ee-end\nfive\n", id="2s"),
        pytest.param("3600", b"one\ntwo\nthree-end\nfive\n", id="1h"),
    ],
)
def test_since_seconds_uses_the_clock(log: Path, since_seconds: str, expected: bytes) -> None:
    clock = FakeClock(start=T0 / S + 4.5)
    assert read(log, {"sinceSeconds": since_seconds}, clock=clock) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param({"stream": "Stdout"}, b"one\nthree-end\n", id="stdout"),
        pytest.param({"stream": "Stderr"}, b"two\nfive\n", id="stderr"),
        pytest.param({"stream": "All"}, b"one\ntwo\nthree-end\nfive\n", id="all"),
        pytest.param({"stream": "Stdout", "limitBytes": "5"}, b"one\nt", id="other-stream-not-counted"),
        pytest.param({"stream": "Stderr", "timestamps": "1"}, ts(1) + b"two\n" + ts(5) + b"five\n", id="timestamps"),
    ],
)
def test_stream_filter(log: Path, query: dict[str, str], expected: bytes) -> None:
    assert read(log, query, split=True) == expected


def test_timestamp_prefix_keeps_the_records_zone(tmp_path: Path) -> None:
    path = tmp_path / "0.log"
    path.write_bytes(b"2026-11-21T11:03:53.5+02:00 stdout F x\n")
    assert read(path, {"timestamps": "1"}) == b"2026-11-21T11:03:53.500000000+02:00 x\n"


def test_malformed_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "0.log"
    good = [encode_record(T0 + i * S, STDOUT, "F", b"ok%d" % i) for i in range(3)]
    path.write_bytes(good[0] + b"garbage\n" + b"\n" + good[1] + b"2026-11-21T09:03:53Z stdin F x\n" + good[2])
    stream = read_logs(path, decode_pod_log_options({}))
    assert asyncio.run(drain(stream)) == b"ok0\nok1\nok2\n"
    assert (stream.stats.malformed, stream.stats.records) == (3, 3)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param({}, b"a\nb\nc", id="emitted-without-newline"),
        pytest.param({"tailLines": "1"}, b"b\n", id="not-counted-by-tail"),
    ],
)
def test_unterminated_last_line(tmp_path: Path, query: dict[str, str], expected: bytes) -> None:
    path = tmp_path / "0.log"
    unterminated = b"2026-11-21T09:03:53Z stdout F c"
    path.write_bytes(encode_record(T0, STDOUT, "F", b"a") + encode_record(T0, STDOUT, "F", b"b") + unterminated)
    assert read(path, query) == expected


def test_tail_of_a_big_file_reads_only_its_end(tmp_path: Path) -> None:
    path = tmp_path / "0.log"
    contents = write_big_log(path, 100_000)
    stream = read_logs(path, decode_pod_log_options({"tailLines": "10"}))
    assert asyncio.run(drain(stream)) == b"".join(c + b"\n" for c in contents[-10:])
    assert stream.stats.bytes_read < 128 * 1024  # of more than 10 MiB


def test_missing_file_is_not_found_before_any_output(tmp_path: Path) -> None:
    with pytest.raises(NotFound, match="failed to open log file"):
        read_logs(tmp_path / "nope.log", decode_pod_log_options({}))


def test_symlinked_path_is_followed(log: Path, tmp_path: Path) -> None:
    link = tmp_path / "link.log"
    link.symlink_to(log)
    assert read(link, {"tailLines": "1"}) == b"five\n"


# ---------------------------------------------------------------------------------------- follow


class Container:
    """A fake container: running until stop(); counts how often it was asked."""

    def __init__(self) -> None:
        self.running = True
        self.asked = 0

    def __call__(self) -> bool:
        self.asked += 1
        return self.running


async def follow(
    path: Path, query: dict[str, str], container: RunningCheck, producer: Callable[[], Coroutine[Any, Any, None]]
) -> bytes:
    opts = decode_pod_log_options({"follow": "true", **query})
    stream = read_logs(path, opts, clock=RealClock(), container_running=container, poll_interval=0.005)
    task = asyncio.create_task(producer())
    out = await asyncio.wait_for(drain(stream), timeout=20)
    await task
    return out


def test_follow_yields_appended_records_until_the_container_exits(log: Path) -> None:
    container = Container()

    async def produce() -> None:
        writer = CRILog(log)
        for i in range(5):
            await asyncio.sleep(0.01)
            writer.write(STDOUT, b"more %d\n" % i)
        writer.write(STDERR, b"last words\n")  # written just before the exit: must not be lost
        writer.close()
        container.running = False

    out = asyncio.run(follow(log, {"tailLines": "1"}, container, produce))
    assert out == b"five\n" + b"".join(b"more %d\n" % i for i in range(5)) + b"last words\n"
    assert container.asked >= 2


def test_follow_with_an_async_running_check_and_limit(log: Path) -> None:
    async def running() -> bool:
        return True

    async def produce() -> None:
        await asyncio.sleep(0.02)
        with contextlib.closing(CRILog(log)) as writer:
            writer.write(STDOUT, b"0123456789\n")

    # limitBytes ends a follow even though the container keeps running
    assert asyncio.run(follow(log, {"tailLines": "0", "limitBytes": "5"}, running, produce)) == b"01234"


def write_rotating(writer: CRILog, expected: list[bytes], i: int) -> None:
    if i % 7 == 0:  # a partial record, often the last one of a file before its rotation
        writer.write(STDOUT, b"p%d-" % i)
        expected.append(b"p%d-" % i)
    writer.write(STDERR if i % 5 == 0 else STDOUT, b"line %d\n" % i)
    expected.append(b"line %d\n" % i)


@pytest.mark.parametrize("in_thread", [pytest.param(False, id="writer-task"), pytest.param(True, id="writer-thread")])
def test_follow_across_rotations_loses_and_duplicates_nothing(tmp_path: Path, in_thread: bool) -> None:
    path = tmp_path / "0.log"
    container = Container()
    expected: list[bytes] = []
    writer = CRILog(path, max_size=400)  # about eight records a file, several rotations a second

    def produce_blocking() -> None:  # like a shim: another thread of control
        for i in range(300):
            write_rotating(writer, expected, i)
            if i % 3 == 0:
                time.sleep(0.01)

    async def produce() -> None:
        if in_thread:
            await asyncio.to_thread(produce_blocking)
        else:
            for i in range(300):
                write_rotating(writer, expected, i)
                if i % 3 == 0:
                    await asyncio.sleep(0.01)
        writer.close()
        container.running = False

    async def run() -> tuple[bytes, LogStream]:
        opts = decode_pod_log_options({"follow": "1"})
        stream = read_logs(path, opts, container_running=container, poll_interval=0.002)
        task = asyncio.create_task(produce())
        out = await asyncio.wait_for(drain(stream), timeout=30)
        await task
        return out, stream

    out, stream = asyncio.run(run())
    assert out == b"".join(expected)
    rotated = [p for p in os.listdir(tmp_path) if p.startswith("0.log.")]
    assert len(rotated) >= 10
    assert stream.stats.rotations == len(rotated)


def test_follow_stopped_by_the_consumer_leaves_nothing_running(log: Path) -> None:
    async def run() -> None:
        stream = read_logs(log, decode_pod_log_options({"follow": "true"}), poll_interval=0.005)
        assert await stream.__anext__() == b"one\ntwo\nthree-end\nfive\n"
        await stream.aclose()  # suspended after a chunk: the consumer stops iterating
        assert stream.closed
        assert asyncio.all_tasks() == {asyncio.current_task()}

    asyncio.run(run())


def test_follow_cancelled_while_waiting_closes_the_file(log: Path) -> None:
    async def run() -> None:
        stream = read_logs(log, decode_pod_log_options({"follow": "true", "tailLines": "0"}), poll_interval=0.005)
        pending = asyncio.create_task(stream.__anext__())  # waits for data that never comes
        await asyncio.sleep(0.05)
        pending.cancel()  # what a disconnecting HTTP client does to the handler
        with pytest.raises(asyncio.CancelledError):
            await pending
        await stream.aclose()
        assert stream.closed
        assert asyncio.all_tasks() == {asyncio.current_task()}

    asyncio.run(run())


def test_aclose_before_iterating_closes_the_file(log: Path) -> None:
    async def run() -> None:
        stream = read_logs(log, decode_pod_log_options({"follow": "true"}))
        await stream.aclose()
        assert stream.closed

    asyncio.run(run())
