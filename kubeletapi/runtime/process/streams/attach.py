"""Attach sessions of the process runtime.

Attach follows the container's CRI log file from its end (the shim writes every byte of output
there), polling every ATTACH_POLL_S: no thread or inotify watch per attacher, and rotation is
noticed by name. A line is written to the log only when it is complete (or 16 KiB long), so an
unterminated prompt reaches an attacher with the newline that ends it. Stdin goes into the
container's stdin FIFO, resize requests into its `resize` FIFO (tty containers). The FIFO cannot
carry an end of file: the shim and the container itself hold it open read-write, so a
stdin_once container's stdin is not closed when the first attacher detaches (containerd closes
it): close_stdin stops writing, nothing more.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from kubeletapi.errors import InvalidInput, Unavailable
from kubeletapi.runtime.logfiles import AtEnd, FollowedFile
from kubeletapi.runtime.logs import parse_record
from kubeletapi.runtime.process.streams.fdio import Fds, Output, Stdin
from kubeletapi.runtime.streaming import STDERR, STDOUT, StreamOptions

log = logging.getLogger(__name__)

ATTACH_POLL_S = 0.025  # attach: how often to look for new log records
ATTACH_STATUS_S = 0.2  # attach: how often to ask whether the container still runs
ATTACH_READ_MAX = 1024 * 1024  # attach: log bytes read per step before yielding
READ_CHUNK = 64 * 1024


class LogFollower:
    """Reads CRI records appended to a container's log from now on, across the shim's rotations
    (runtime.logfiles.FollowedFile)."""

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise Unavailable(f'cannot open the log of the container "{path}": {exc.strerror}') from exc
        self._file = FollowedFile(path, fd)
        end = os.lseek(fd, 0, os.SEEK_END)
        # Starting inside a record (being written now): skip to the next whole one.
        self._skip = end > 0 and os.pread(fd, 1, end - 1) != b"\n"
        self._rest = b""

    def read(self, opts: StreamOptions) -> tuple[list[tuple[int, bytes]], int]:
        """The output of the records appended since the last call (consecutive ones of a stream
        joined), and the number of bytes read."""
        parts, size = [], 0
        while size < ATTACH_READ_MAX:
            got = os.read(self._file.fd, READ_CHUNK)
            parts.append(got)
            size += len(got)
            if len(got) < READ_CHUNK:
                break
        if not size:
            return [], 0
        data = b"".join(parts)
        lines = (self._rest + data).split(b"\n")
        self._rest = lines.pop()
        if self._skip and lines:
            self._skip = False
            lines.pop(0)
        chunks: list[tuple[int, bytes]] = []
        kind, run = STDOUT, list[bytes]()  # the records of one stream in a row
        for line in lines:
            try:
                record = parse_record(line)
            except InvalidInput as exc:
                log.debug("attach: skipping a malformed line of %s: %s", self.path, exc)
                continue
            stream = STDOUT if record.stream == "stdout" else STDERR
            if not (opts.stdout if stream == STDOUT else opts.stderr):
                continue
            if stream != kind:
                if run:
                    chunks.append((kind, b"".join(run)))
                kind, run = stream, list[bytes]()
            run.append(record.content if record.partial else record.content + b"\n")
        if run and (joined := b"".join(run)):
            chunks.append((kind, joined))
        return chunks, len(data)

    def at_end(self) -> AtEnd:
        """FollowedFile.at_end; the unterminated rest of a file left behind is dropped (the shim
        ends every record with a newline)."""
        step = self._file.at_end()
        if step is AtEnd.MOVED:
            self._rest = b""
            self._skip = False
        return step

    def close(self) -> None:
        self._file.close()


class AttachSession:
    """Joined to a running container: implements runtime.streaming.StreamSession.

    `exit_code` answers None while the container runs, else its exit code."""

    def __init__(self, follower: LogFollower, opts: StreamOptions, state_dir: Path, tty_container: bool,
                 stdin_fd: int | None, exit_code: Callable[[], int | None]) -> None:
        self._loop = asyncio.get_running_loop()
        self._fds = Fds(self._loop)
        self._follower = follower
        self._opts = opts
        self._state_dir = state_dir
        self._tty = tty_container
        self._stdin = Stdin(self._fds, None if stdin_fd is None else self._fds.own(stdin_fd))
        self._exit_code = exit_code
        self._code: int | None = None
        self._exiting = False  # the container exited: read to the end once more, then stop
        self._next_status = 0.0
        self._pending: deque[tuple[int, bytes]] = deque()
        self._ended = False
        self._closed = False

    @classmethod
    def open(cls, log_path: str, state_dir: Path, tty_container: bool, opts: StreamOptions,
             exit_code: Callable[[], int | None]) -> AttachSession:
        follower = LogFollower(log_path)
        stdin_fd = None
        if opts.stdin:
            try:
                # The shim holds the FIFO open for reading while the container runs.
                stdin_fd = os.open(state_dir / "stdin", os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError as exc:
                follower.close()
                raise Unavailable(f"cannot open the stdin of the container: {exc.strerror}") from exc
        return cls(follower, opts, state_dir, tty_container, stdin_fd, exit_code)

    def output(self) -> AsyncIterator[tuple[int, bytes]]:
        return Output(self._next)

    async def _next(self) -> tuple[int, bytes] | None:
        while not self._closed and not self._ended:
            if self._pending:
                return self._pending.popleft()
            chunks, got = self._follower.read(self._opts)
            if got:
                self._pending.extend(chunks)
                if not chunks:
                    await asyncio.sleep(0)  # a long stretch of records filtered out: let others run
                continue
            if self._follower.at_end() is not AtEnd.WAIT:  # rotated: read ours to its end, then the next
                continue
            if self._exiting:
                self._ended = True
                break
            if time.monotonic() >= self._next_status:
                self._next_status = time.monotonic() + ATTACH_STATUS_S
                code = self._exit_code()
                if code is not None:  # its output is all logged: read to the end, then stop
                    self._code, self._exiting = code, True
                    continue
            await self._fds.wait((), limit_s=ATTACH_POLL_S)
        self._follower.close()
        return None

    async def write_stdin(self, data: bytes) -> None:
        if not self._closed:
            await self._stdin.write(data)

    async def close_stdin(self) -> None:
        """Stop writing (the container's stdin stays open: see the module's docstring)."""
        async with self._stdin.lock:
            self._fds.close(self._stdin.fd)
            self._stdin.fd = None

    async def resize(self, width: int, height: int) -> None:
        if not self._tty or self._closed:
            return
        line = b"%d %d\n" % (max(0, min(width, 0xFFFF)), max(0, min(height, 0xFFFF)))
        try:
            fd = os.open(self._state_dir / "resize", os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:  # ENOENT: a shim from before resizing; ENXIO: it exited
            log.debug("cannot resize the terminal of %s: %s", self._state_dir.name, exc)
            return
        try:
            os.write(fd, line)  # shorter than PIPE_BUF: written whole or not at all
        except OSError as exc:
            log.debug("cannot resize the terminal of %s: %s", self._state_dir.name, exc)
        finally:
            os.close(fd)

    async def wait(self) -> int:
        while self._code is None:
            self._code = self._exit_code()
            if self._code is None:
                await asyncio.sleep(ATTACH_STATUS_S)
        return self._code

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._fds.wake_all()
        self._fds.close_all()
        self._follower.close()
