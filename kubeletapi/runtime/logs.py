"""CRI container log files: the record format and the kubelet's log reader.

A line is `<RFC3339Nano time> <stdout|stderr> <tag> <content>\\n`; tag `P` is a partial chunk that
the next record continues, anything else (`F`) ends a line. The reader reproduces
pkg/kubelet/kuberuntime/logs/logs.go (ReadLogs, logWriter, tail.FindTailLineStartIndex):
- output is each record's content in file order, `F` records with their newline, `P` without;
  stdout and stderr are not re-joined or re-ordered;
- `timestamps` prefixes the RFC3339NanoFixed time and a space only to a record that starts an
  output line, not to the continuation of a `P` record (kubernetes PR 113481);
- `tailLines` counts file lines (a `P` chunk is one), found by scanning back from the end of the
  file; when not following, reading stops after that many records;
- records stamped before since(Time|Seconds) are skipped; `limitBytes` cuts the output at exactly
  that many bytes; a stream not asked for is neither written nor counted;
- a malformed line is skipped and counted (ReadStats.malformed), as the kubelet logs and goes on;
- `follow`: at end of file, ask whether the container still runs; if not, read to the next end of
  file and stop, else wait and read again.
Deliberate differences: on rotation while following, the old file is read to its end before the new
one is opened, going through the files rotated in between (runtime.logfiles.FollowedFile; the
kubelet drops what it had not read yet and reopens the live file); an unterminated last record is
emitted when following ends; only the CRI format is read (not Docker JSON).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from kubeletapi.clock import Clock, RealClock
from kubeletapi.errors import InvalidInput, NotFound, Unavailable
from kubeletapi.runtime.logfiles import AtEnd, FollowedFile
from kubeletapi.runtime.logoptions import (
    STDERR,
    STDOUT,
    PodLogOptions,
    ReadOptions,
    format_timestamp,
    now_ns,
    parse_timestamp,
    parse_timestamp_offset,
)

__all__ = [
    "STDERR", "STDOUT", "TAG_FULL", "TAG_PARTIAL", "LogRecord", "LogStream", "ReadOptions",
    "ReadStats", "RunningCheck", "encode_record", "find_tail_start", "format_timestamp", "parse_record",
    "parse_timestamp", "read_logs",
]

TAG_FULL, TAG_PARTIAL = "F", "P"
_READ_CHUNK = 64 * 1024
_TAIL_BLOCK = 8 * 1024
_log = logging.getLogger(__name__)

RunningCheck = Callable[[], bool | Awaitable[bool]]


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One parsed line; `content` excludes the line's newline, `utc_offset` is the stamp's zone."""

    timestamp: int
    stream: str
    tag: str
    content: bytes
    utc_offset: int = 0

    @property
    def partial(self) -> bool:
        # Tags are ':'-separated for forward compatibility; only the first one matters.
        return self.tag.split(":", 1)[0] == TAG_PARTIAL


def encode_record(ts: int, stream: str, tag: str, content: bytes) -> bytes:
    """One CRI log line, timestamp in RFC3339Nano as containerd writes it."""
    if stream not in (STDOUT, STDERR):
        raise InvalidInput(f"unexpected stream type {stream!r}")
    if not tag or " " in tag or "\n" in tag:
        raise InvalidInput(f"invalid log tag {tag!r}")
    if b"\n" in content:
        raise InvalidInput("the content of one log record cannot contain a newline")
    return b"%s %s %s %s\n" % (format_timestamp(ts).encode(), stream.encode(), tag.encode(), content)


def parse_record(line: bytes) -> LogRecord:
    """Parse one CRI log line (its trailing newline optional); InvalidInput says what is wrong."""
    body = line[:-1] if line.endswith(b"\n") else line
    ts_end = body.find(b" ")
    if ts_end < 0:
        raise InvalidInput("timestamp is not found")
    try:
        ts, offset = parse_timestamp_offset(body[:ts_end])
    except InvalidInput as exc:
        raise InvalidInput(f"unexpected timestamp format: {exc}") from exc
    stream_end = body.find(b" ", ts_end + 1)
    if stream_end < 0:
        raise InvalidInput("stream type is not found")
    stream = body[ts_end + 1 : stream_end]
    if stream not in (b"stdout", b"stderr"):
        raise InvalidInput(f"unexpected stream type {stream.decode('latin-1')!r}")
    tag_end = body.find(b" ", stream_end + 1)
    if tag_end < 0:
        raise InvalidInput("log tag is not found")
    tag = body[stream_end + 1 : tag_end].decode("latin-1")
    return LogRecord(ts, stream.decode(), tag, body[tag_end + 1 :], offset)


class ReadSeeker(Protocol):
    """What find_tail_start needs of a file."""

    def seek(self, offset: int, whence: int = 0, /) -> int: ...

    def read(self, size: int = -1, /) -> bytes | None: ...


def find_tail_start(f: ReadSeeker, n: int | None) -> int:
    """Offset of the start of the last n lines (0 for None or n < 0), reading backwards by blocks.

    An unterminated last line is not counted as a line (it then follows the n lines).
    """
    if n is None or n < 0:
        return 0
    right = left = f.seek(0, os.SEEK_END)
    count, block = 0, b""
    while right > 0 and count <= n:
        left = max(0, right - _TAIL_BLOCK)
        f.seek(left)
        block = f.read(right - left) or b""
        count += block.count(b"\n")
        right = left
    skip = 0
    for _ in range(count - n):
        skip = block.index(b"\n", skip) + 1
    return left + skip


@dataclass(slots=True)
class ReadStats:
    """What one read did: file bytes read, records written, malformed lines skipped, rotations."""

    bytes_read: int = 0
    records: int = 0
    malformed: int = 0
    rotations: int = 0


@dataclass(slots=True)
class _Renderer:
    """ReadLogs' loop state and logWriter: turns log lines into output bytes."""

    opts: ReadOptions
    stats: ReadStats
    path: str
    remain: int | None = None
    lines_left: int | None = None
    new_line: bool = True
    done: bool = False
    out: list[bytes] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.remain = self.opts.limit_bytes
        if self.opts.tail is not None and self.opts.tail >= 0 and not self.opts.follow:
            self.lines_left = self.opts.tail  # "limited mode": stop after tail records
            self.done = self.lines_left == 0

    def feed_lines(self, data: bytes) -> bytes:
        """Render every complete line of data; return the unterminated rest."""
        start = 0
        while not self.done:
            end = data.find(b"\n", start)
            if end < 0:
                break
            self.feed(data[start : end + 1], terminated=True)
            start = end + 1
        return data[start:]

    def feed(self, line: bytes, *, terminated: bool) -> None:
        if self.done:
            return
        try:
            record = parse_record(line)
        except InvalidInput as exc:
            self.stats.malformed += 1
            _log.warning("Failed when parsing line in log file %s: %s: %r", self.path, exc, line[:200])
            return
        message = record.content if record.partial or not terminated else record.content + b"\n"
        self._write(record, message)
        if self.lines_left is not None:
            self.lines_left -= 1
            self.done = self.done or self.lines_left == 0
        self.new_line = not message or message.endswith(b"\n")

    def _write(self, record: LogRecord, message: bytes) -> None:
        if self.opts.since is not None and record.timestamp < self.opts.since:
            return
        if record.stream not in self.opts.streams:
            return
        if self.opts.timestamps and self.new_line:
            stamp = format_timestamp(record.timestamp, fixed=True, offset=record.utc_offset)
            message = stamp.encode() + b" " + message
        if self.remain is not None:
            if len(message) >= self.remain:
                message, self.done = message[: self.remain], True
            self.remain -= len(message)
        self.out.append(message)
        self.stats.records += 1

    def take(self) -> bytes:
        chunk, self.out = b"".join(self.out), []
        return chunk


def _open(path: str) -> FollowedFile:
    try:
        resolved = os.path.realpath(path, strict=True)  # the kubelet resolves symlinks first
        return FollowedFile(resolved, os.open(resolved, os.O_RDONLY | os.O_CLOEXEC))
    except FileNotFoundError as exc:
        raise NotFound(f'failed to open log file "{path}": {exc.strerror}') from exc
    except OSError as exc:
        raise Unavailable(f'failed to open log file "{path}": {exc}') from exc


class _Source:
    """The log file being read: reads, tail seek, truncation, and rotations (runtime.logfiles)."""

    def __init__(self, path: str, stats: ReadStats) -> None:
        self.file = _open(path)
        self.path = self.file.path
        self.stats = stats
        self.pending = b""

    def seek(self, offset: int, whence: int = 0, /) -> int:
        return os.lseek(self.file.fd, offset, whence)

    def read(self, size: int = _READ_CHUNK, /) -> bytes:
        data = os.read(self.file.fd, size)
        self.stats.bytes_read += len(data)
        return data

    def pump(self, renderer: _Renderer) -> bool:
        """Read one chunk into the renderer; False at end of file."""
        data = self.read()
        if data:
            self.pending = renderer.feed_lines(self.pending + data)
        return bool(data)

    def rewound(self) -> bool:
        """A file truncated under us (copytruncate rotation) is read again from its start."""
        if os.fstat(self.file.fd).st_size >= self.seek(0, os.SEEK_CUR):
            return False
        self.seek(0)
        self.pending = b""
        return True

    def at_end(self, renderer: _Renderer) -> AtEnd:
        """FollowedFile.at_end; an unterminated last record of a file left behind is emitted."""
        step = self.file.at_end()
        if step is AtEnd.MOVED:
            self.flush(renderer)
            self.stats.rotations += 1
        return step

    def flush(self, renderer: _Renderer) -> None:
        if self.pending:
            _log.info("Incomplete line in log file %s: %r", self.path, self.pending[:200])
            renderer.feed(self.pending, terminated=False)
            self.pending = b""

    def close(self) -> None:
        self.file.close()


async def _running(check: RunningCheck | None) -> bool:
    if check is None:
        return True
    answer = check()
    if inspect.isawaitable(answer):
        return bool(await answer)
    return bool(answer)


async def _follow_step(src: _Source, renderer: _Renderer, state: dict[str, bool], check: RunningCheck | None) -> str:
    """At end of file while following: "read" again, "stop" or "wait"."""
    if src.rewound() or src.at_end(renderer) is not AtEnd.WAIT:
        return "read"
    if state["exiting"]:
        return "stop"
    if not await _running(check):
        state["exiting"] = True  # consume what is left up to the next end of file
        return "read"
    return "wait"


async def _generate(
    src: _Source, renderer: _Renderer, clock: Clock, check: RunningCheck | None, poll_interval: float
) -> AsyncGenerator[bytes, None]:
    state = {"exiting": False}
    try:
        while not renderer.done:
            got = src.pump(renderer)
            if chunk := renderer.take():
                yield chunk
            elif got:
                await asyncio.sleep(0)  # a long filtered stretch must not hog the loop
            if got or renderer.done:
                continue
            step = await _follow_step(src, renderer, state, check) if renderer.opts.follow else "stop"
            if step == "wait":
                await clock.sleep(poll_interval)
            elif step == "stop":
                src.flush(renderer)
                if chunk := renderer.take():
                    yield chunk
                return
    finally:
        src.close()


class LogStream:
    """An open container log being read: iterate for output chunks; always aclose() it."""

    def __init__(
        self, path: str, opts: ReadOptions, *, clock: Clock, container_running: RunningCheck | None,
        poll_interval: float,
    ) -> None:
        self.stats = ReadStats()
        self._src = _Source(path, self.stats)
        try:
            self._src.seek(find_tail_start(self._src, opts.tail))
        except OSError as exc:
            self._src.close()
            raise Unavailable(f'failed to tail {opts.tail} lines of log file "{path}": {exc}') from exc
        renderer = _Renderer(opts, self.stats, self._src.path)
        self._gen = _generate(self._src, renderer, clock, container_running, poll_interval)

    @property
    def closed(self) -> bool:
        return self._src.file.closed

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self

    async def __anext__(self) -> bytes:
        return await self._gen.__anext__()

    async def aclose(self) -> None:
        await self._gen.aclose()
        self._src.close()  # also when iteration never started


def read_logs(
    path: str | os.PathLike[str],
    opts: PodLogOptions,
    *,
    clock: Clock | None = None,
    container_running: RunningCheck | None = None,
    poll_interval: float = 0.2,
) -> LogStream:
    """Open `path` (the caller picks the current or, for previous=true, the previous instance's file).

    Opening errors are raised here, before any output: NotFound for a missing file, Unavailable
    otherwise (the kubelet answers both with a 400 carrying the message). `container_running`
    (plain or async) is asked at end of file when following; None means "still running", so the
    stream then ends only when the consumer stops. `clock` gives sinceSeconds' "now" and the polling.
    """
    clock = clock or RealClock()
    read_opts = ReadOptions.from_pod_log_options(opts, now_ns(clock))
    return LogStream(
        os.fspath(path), read_opts, clock=clock, container_running=container_running, poll_interval=poll_interval
    )

