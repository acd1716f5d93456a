"""Exec sessions of the process runtime.

Exec runs `kubeletapi-shim exec` (the same namespaces, cgroups, workdir and environment as
exec_sync) in a session of its own. Its stdio are pipes, or with a tty a pseudo-terminal
allocated here whose slave is the shim's stdio; the shim runs in `--tty` mode and gives the
command a second pty as its controlling terminal, allocated inside the container after it
entered the container's namespaces. Two levels, because then the command is a session leader in
its own pid namespace with a terminal of its own (job control works as under runc or
`docker exec -t`), and a resize is: set the size on our master, send SIGWINCH to the shim, which
copies the size onto the command's pty; the kernel then signals the command's foreground process
group, exactly once. Our pty is raw (the shim sets it so too): the inner one does the echo,
line editing and \\n -> \\r\\n, in the sane mode a new terminal starts in.

Output is read straight from the fds through the event loop (64 KiB reads, no threads) and only
when the consumer asks for more, so a slow client slows the command down instead of buffering.
It ends at EOF on every stream (for a pty: EIO once the shim, the only holder of the slave, has
exited, which Linux reports only after the buffered output was read). A process the command left
behind holding the pipes cannot keep the stream open: after the shim exited, output ends once it
is idle for DRAIN_IDLE_S or DRAIN_MAX_BYTES more arrived.

close() of a session whose shim still runs kills the shim's whole session tree (killtree.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import logging
import os
import signal
import struct
import subprocess
import termios
import tty
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from kubeletapi.errors import Unavailable
from kubeletapi.runtime.process.streams.fdio import Fds, Output, Stdin
from kubeletapi.runtime.process.streams.killtree import kill_session_tree
from kubeletapi.runtime.streaming import STDERR, STDOUT, StreamOptions, StreamSession

log = logging.getLogger(__name__)

READ_CHUNK = 64 * 1024
DRAIN_IDLE_S = 0.1  # after the shim exited: a leftover holding the pipes quiet this long ends the output
DRAIN_MAX_BYTES = 4 * 1024 * 1024  # ...or writing this much: more than any pipe holds, so not the command's
EXIT_POLL_S = 0.05  # waiting for the shim's exit without pidfd (Linux < 5.3)
KILL_WAIT_S = 10.0
EOT = b"\x04"  # VEOF: the end of input a terminal understands


def _exit_code(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


@dataclass
class _Reader:
    fd: int
    kind: int  # STDOUT or STDERR
    deliver: bool  # False: read and drop (a tty's output nobody asked for still has to flow)


class ExecSession:
    """A command run by `kubeletapi-shim exec`: implements runtime.streaming.StreamSession."""

    def __init__(self, proc: subprocess.Popen[bytes], fds: Fds, readers: list[_Reader], stdin: int | None,
                 master: int | None) -> None:
        self.pid = proc.pid  # the shim's; also its session and process group id
        self._proc = proc
        self._loop = fds.loop
        self._fds = fds
        self._readers = readers
        self._turn = 0
        self._stdin = Stdin(fds, stdin)
        self._master = master
        self._stdin_closed = stdin is None
        self._exited: asyncio.Future[int] = self._loop.create_future()
        self._after_exit = 0  # bytes read since the shim exited
        self._closed = False
        self._close_done: asyncio.Future[None] | None = None
        self._pidfd: int | None = None
        self._poll_timer: asyncio.TimerHandle | None = None
        try:
            self._pidfd = fds.own(os.pidfd_open(proc.pid))
        except OSError:  # no pidfd (Linux < 5.3, or a seccomp filter): poll for the exit
            self._poll_timer = self._loop.call_later(EXIT_POLL_S, self._poll_exit)
        else:
            self._loop.add_reader(self._pidfd, self._reap)

    @classmethod
    def start(cls, argv: Sequence[str], env: dict[str, str], opts: StreamOptions) -> ExecSession:
        """Spawn the shim (argv: the shim, `exec`, its options, `--`, the command)."""
        loop = asyncio.get_running_loop()
        fds = Fds(loop)
        child: list[int] = []  # the ends the shim gets; closed here once it has them
        try:
            if opts.tty:
                master, slave = os.openpty()
                fds.own(master)
                child.append(slave)
                tty.setraw(slave)  # before the shim does it too: no echo of input sent early
                stdio: tuple[int, int, int] = (slave, slave, slave)
                readers = [_Reader(master, STDOUT, opts.stdout)]
                stdin_fd: int | None = master if opts.stdin else None
            else:
                master = None
                ends: list[int] = []
                stdin_fd = None
                if opts.stdin:
                    r, w = os.pipe()
                    child.append(r)
                    stdin_fd = fds.own(w)
                    ends.append(r)
                else:
                    ends.append(subprocess.DEVNULL)
                readers = []
                for kind, wanted in ((STDOUT, opts.stdout), (STDERR, opts.stderr)):
                    if not wanted:
                        ends.append(subprocess.DEVNULL)
                        continue
                    r, w = os.pipe()
                    child.append(w)
                    readers.append(_Reader(fds.own(r), kind, True))
                    ends.append(w)
                stdio = (ends[0], ends[1], ends[2])
            for fd in fds.open:
                os.set_blocking(fd, False)
            try:
                proc = subprocess.Popen(argv, stdin=stdio[0], stdout=stdio[1], stderr=stdio[2], env=env,
                                        start_new_session=True)
            except OSError as exc:
                raise Unavailable(f"cannot run the shim {argv[0]}: {exc}") from exc
        except BaseException:
            fds.close_all()
            raise
        finally:
            for fd in child:
                os.close(fd)
        return cls(proc, fds, readers, stdin_fd, master)

    # --- the shim's exit -------------------------------------------------------------------------
    def _reap(self) -> None:
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:  # reaped by someone else: the status is lost
            pid, status = self.pid, 255 << 8
        if pid == 0:
            return
        code = _exit_code(status)
        self._proc.returncode = code  # reaped here, so Popen must not wait for it
        self._fds.close(self._pidfd)
        self._pidfd = None
        if self._poll_timer is not None:
            self._poll_timer.cancel()
            self._poll_timer = None
        if not self._exited.done():
            self._exited.set_result(code)
        self._fds.wake_all()

    def _poll_exit(self) -> None:
        self._poll_timer = None
        self._reap()
        if not self._exited.done():
            self._poll_timer = self._loop.call_later(EXIT_POLL_S, self._poll_exit)

    # --- StreamSession ---------------------------------------------------------------------------
    def output(self) -> AsyncIterator[tuple[int, bytes]]:
        return Output(self._next)

    async def _next(self) -> tuple[int, bytes] | None:
        while not self._closed and self._readers:
            chunk = self._read_one()
            if chunk is not None:
                if self._after_exit > DRAIN_MAX_BYTES:  # a leftover writing on and on
                    self._end_output()
                if chunk[1]:
                    return chunk
                continue  # a stream ended or dropped output: look again
            # Nothing to read now.
            idle_s = DRAIN_IDLE_S if self._exited.done() else None
            ready = await self._fds.wait([r.fd for r in self._readers], limit_s=idle_s)
            if ready is False:  # idle after the exit: whoever still holds the pipe is a leftover
                self._end_output()
        return None

    def _read_one(self) -> tuple[int, bytes] | None:
        """A chunk from the next readable stream (round robin); (kind, b"") when a stream ended or
        its output was dropped; None when none is readable."""
        count = len(self._readers)
        for i in range(count):
            reader = self._readers[(self._turn + i) % count]
            try:
                data = os.read(reader.fd, READ_CHUNK)
            except BlockingIOError:
                continue
            except OSError as exc:
                if exc.errno != errno.EIO:  # EIO: a pty master once the slave is closed
                    raise
                data = b""
            self._turn = (self._turn + i + 1) % count
            if not data:
                self._readers.remove(reader)
                if reader.fd != self._master:
                    self._fds.close(reader.fd)
                return reader.kind, b""
            if self._exited.done():
                self._after_exit += len(data)
            return (reader.kind, data) if reader.deliver else (reader.kind, b"")
        return None

    def _end_output(self) -> None:
        for reader in self._readers:
            if reader.fd != self._master:
                self._fds.close(reader.fd)
        self._readers.clear()

    async def write_stdin(self, data: bytes) -> None:
        if not self._stdin_closed and not self._closed and not self._exited.done():
            await self._stdin.write(data)

    async def close_stdin(self) -> None:
        if self._stdin_closed or self._closed or self._exited.done():
            return
        if self._master is not None:
            # A terminal has no end of its own: VEOF at the start of a line is one (after an
            # unfinished line, the first only hands that line over).
            await self._stdin.write(EOT if self._stdin.last in (b"\n", b"\r") else EOT + EOT)
            self._stdin_closed = True
            return
        async with self._stdin.lock:
            self._stdin_closed = True
            self._fds.close(self._stdin.fd)
            self._stdin.fd = None

    async def resize(self, width: int, height: int) -> None:
        if self._master is None or self._closed or self._master not in self._fds.open:
            return
        size = struct.pack("HHHH", max(0, min(height, 0xFFFF)), max(0, min(width, 0xFFFF)), 0, 0)
        fcntl.ioctl(self._master, termios.TIOCSWINSZ, size)
        if not self._exited.done():  # not reaped yet, so the pid is still the shim's
            # The shim copies the size from its stdin (our pty) onto the command's terminal.
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGWINCH)

    async def wait(self) -> int:
        return await asyncio.shield(self._exited)

    async def close(self) -> None:
        if self._close_done is not None:
            await asyncio.shield(self._close_done)
            return
        self._close_done = self._loop.create_future()
        try:
            self._closed = True
            if not self._exited.done():
                killed = kill_session_tree(self.pid)
                log.debug("exec session of shim %d closed while running: killed %d processes", self.pid, killed)
            self._fds.wake_all()
            self._readers.clear()
            for fd in list(self._fds.open):
                if fd != self._pidfd:
                    self._fds.close(fd)
            if not self._exited.done():
                try:
                    async with asyncio.timeout(KILL_WAIT_S):
                        await asyncio.shield(self._exited)
                except TimeoutError:
                    log.error("the shim %d did not exit %gs after SIGKILL", self.pid, KILL_WAIT_S)
            self._fds.close_all()
            if self._poll_timer is not None:
                self._poll_timer.cancel()
                self._poll_timer = None
        finally:
            self._close_done.set_result(None)


async def collect(session: StreamSession, limit: int | None = None) -> tuple[bytes, bytes]:
    """stdout and stderr of a session to their end; with `limit`, the first `limit` bytes of each
    (the rest is read and dropped)."""
    kept = {STDOUT: bytearray(), STDERR: bytearray()}
    async for kind, data in session.output():
        buf = kept[kind]
        if limit is None:
            buf += data
        elif len(buf) < limit:
            buf += data[: limit - len(buf)]
    return bytes(kept[STDOUT]), bytes(kept[STDERR])
