"""Streams of the process runtime: exec sessions, attachments and port-forward connections.

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

close() of a session whose shim still runs SIGKILLs everything in the shim's session and in the
sessions its descendants lead (the tty command's), found by a scan of /proc that repeats until a
scan finds nothing new: a process cannot fork once SIGKILL is pending, so the second scan sees
whatever was forked before the first kill. Sessions are followed rather than process groups
because both the shim's group and the tty command's session cross into the container's pid
namespace; the pids seen in /proc are the host's. After a normal exit nothing is killed: a
daemon the command started stays, as with containerd.

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
import contextlib
import errno
import fcntl
import logging
import os
import re
import signal
import struct
import subprocess
import termios
import time
import tty
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kubeletapi.errors import InvalidInput, Unavailable
from kubeletapi.runtime.logs import parse_record
from kubeletapi.runtime.process import procfs
from kubeletapi.runtime.streaming import STDERR, STDOUT, StreamOptions, StreamSession

log = logging.getLogger(__name__)

READ_CHUNK = 64 * 1024
DRAIN_IDLE_S = 0.1  # after the shim exited: a leftover holding the pipes quiet this long ends the output
DRAIN_MAX_BYTES = 4 * 1024 * 1024  # ...or writing this much: more than any pipe holds, so not the command's
EXIT_POLL_S = 0.05  # waiting for the shim's exit without pidfd (Linux < 5.3)
KILL_WAIT_S = 10.0
KILL_ROUNDS = 10
ATTACH_POLL_S = 0.025  # attach: how often to look for new log records
ATTACH_STATUS_S = 0.2  # attach: how often to ask whether the container still runs
ATTACH_READ_MAX = 1024 * 1024  # attach: log bytes read per step before yielding
CONNECT_TIMEOUT_S = 10.0
EOT = b"\x04"  # VEOF: the end of input a terminal understands


def _resolve(fut: asyncio.Future[bool | None], value: bool | None) -> None:
    if not fut.done():
        fut.set_result(value)


def _exit_code(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


class _Fds:
    """The fds a session owns and the event loop callbacks on them; the only place that closes
    them, after removing their callbacks (a closed number may be reused at once)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.open: set[int] = set()
        self.waiters: set[asyncio.Future[bool | None]] = set()

    def own(self, fd: int) -> int:
        self.open.add(fd)
        return fd

    def close(self, fd: int | None) -> None:
        if fd is None or fd not in self.open:
            return
        self.loop.remove_reader(fd)
        self.loop.remove_writer(fd)
        self.open.discard(fd)
        os.close(fd)

    def close_all(self) -> None:
        for fd in list(self.open):
            self.close(fd)

    def wake_all(self) -> None:
        """Every pending wait returns None: the session's state changed, look again."""
        for fut in list(self.waiters):
            _resolve(fut, None)

    async def wait(self, read: Sequence[int], write: Sequence[int] = (), limit_s: float | None = None) -> bool | None:
        """True when one of the fds is ready, False after `limit_s`, None when woken."""
        fut: asyncio.Future[bool | None] = self.loop.create_future()
        for fd in read:
            self.loop.add_reader(fd, _resolve, fut, True)
        for fd in write:
            self.loop.add_writer(fd, _resolve, fut, True)
        timer = self.loop.call_later(limit_s, _resolve, fut, False) if limit_s is not None else None
        self.waiters.add(fut)
        try:
            return await fut
        finally:
            self.waiters.discard(fut)
            if timer is not None:
                timer.cancel()
            for fd in read:
                if fd in self.open:
                    self.loop.remove_reader(fd)
            for fd in write:
                if fd in self.open:
                    self.loop.remove_writer(fd)


class _Output:
    """The async iterator output() returns: one consumer per session."""

    def __init__(self, step: Callable[[], Awaitable[tuple[int, bytes] | None]]) -> None:
        self._step = step

    def __aiter__(self) -> _Output:
        return self

    async def __anext__(self) -> tuple[int, bytes]:
        chunk = await self._step()
        if chunk is None:
            raise StopAsyncIteration
        return chunk


class _Stdin:
    """Writing to a non-blocking fd with backpressure; a reader that went away ends it quietly."""

    def __init__(self, fds: _Fds, fd: int | None) -> None:
        self.fds = fds
        self.fd = fd
        self.lock = asyncio.Lock()
        self.last = b"\n"  # the last byte written (a tty's close_stdin needs to know)

    async def write(self, data: bytes) -> None:
        if self.fd is None or not data:
            return
        async with self.lock:
            view = memoryview(data)
            while view and self.fd is not None and self.fd in self.fds.open:
                try:
                    n = os.write(self.fd, view)
                except BlockingIOError:
                    if await self.fds.wait((), (self.fd,)) is None:
                        return  # the session is closing
                    continue
                except OSError as exc:  # EPIPE: the reader exited; EIO: a pty whose slave is gone
                    if exc.errno not in (errno.EPIPE, errno.EIO, errno.ENXIO):
                        raise
                    n = 0
                if n == 0:  # a pty master says so once its slave side is closed
                    self.fd = None
                    return
                self.last = bytes(view[n - 1 : n])
                view = view[n:]


# --- exec ------------------------------------------------------------------------------------------
@dataclass
class _Reader:
    fd: int
    kind: int  # STDOUT or STDERR
    deliver: bool  # False: read and drop (a tty's output nobody asked for still has to flow)


class ExecSession:
    """A command run by `kubeletapi-shim exec`: implements runtime.streaming.StreamSession."""

    def __init__(self, proc: subprocess.Popen[bytes], fds: _Fds, readers: list[_Reader], stdin: int | None,
                 master: int | None) -> None:
        self.pid = proc.pid  # the shim's; also its session and process group id
        self._proc = proc
        self._loop = fds.loop
        self._fds = fds
        self._readers = readers
        self._turn = 0
        self._stdin = _Stdin(fds, stdin)
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
        fds = _Fds(loop)
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
        return _Output(self._next)

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
                    await asyncio.wait_for(asyncio.shield(self._exited), KILL_WAIT_S)
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


# --- killing what an exec left running ----------------------------------------------------------------
@dataclass(frozen=True)
class _Proc:
    ppid: int
    sid: int
    ticks: int


def _processes(proc: Path = procfs.PROC) -> dict[int, _Proc]:
    """Every live (not zombie) process: parent, session, start time."""
    table: dict[int, _Proc] = {}
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            with open(os.path.join(entry.path, "stat"), "rb") as f:
                text = f.read()
        except OSError:
            continue
        fields = text[text.rfind(b")") + 2 :].split()
        if len(fields) < 20 or fields[0] == b"Z":
            continue
        table[int(entry.name)] = _Proc(int(fields[1]), int(fields[3]), int(fields[19]))
    return table


def _session_tree(table: dict[int, _Proc], root: int) -> set[int]:
    """`root`, its descendants, and every member of its session or of one a descendant leads."""
    children: dict[int, list[int]] = {}
    for pid, p in table.items():
        children.setdefault(p.ppid, []).append(pid)
    found = {root} if root in table else set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    sessions = {root} | {pid for pid in found if table[pid].sid == pid}
    return found | {pid for pid, p in table.items() if p.sid in sessions}


def _kill(pid: int, ticks: int) -> None:
    """SIGKILL `pid` if it is still the process seen (same start time): pid reuse is no risk."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except OSError:
        if procfs.start_ticks(pid) == ticks:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return
    try:
        if procfs.start_ticks(pid) == ticks:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except ProcessLookupError:
        pass
    finally:
        os.close(pidfd)


def kill_session_tree(root: int) -> int:
    """SIGKILL what _session_tree finds, scanning again until a scan finds nothing new (a process
    with SIGKILL pending cannot fork, so what escaped one scan shows in the next). The number of
    processes killed."""
    killed: set[int] = set()
    for _ in range(KILL_ROUNDS):
        table = _processes()
        new = _session_tree(table, root) - killed
        if not new:
            break
        for pid in new:
            _kill(pid, table[pid].ticks)
        killed |= new
    return len(killed)


# --- attach --------------------------------------------------------------------------------------------
_ROTATED = r"\.(\d{8}-\d{6})(?:\.(\d+))?"


class LogFollower:
    """Reads CRI records appended to a container's log from now on, across the shim's rotations
    (`<path>.<YYYYMMDD-HHMMSS>[.N]`, N counting rotations within one second)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._rotated = re.compile(re.escape(os.path.basename(path)) + _ROTATED)
        try:
            self.fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise Unavailable(f'cannot open the log of the container "{path}": {exc.strerror}') from exc
        end = os.lseek(self.fd, 0, os.SEEK_END)
        # Starting inside a record (being written now): skip to the next whole one.
        self._skip = end > 0 and os.pread(self.fd, 1, end - 1) != b"\n"
        self._rest = b""

    def read(self, opts: StreamOptions) -> tuple[list[tuple[int, bytes]], int]:
        """The output of the records appended since the last call (consecutive ones of a stream
        joined), and the number of bytes read."""
        parts, size = [], 0
        while size < ATTACH_READ_MAX:
            got = os.read(self.fd, READ_CHUNK)
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

    def replaced(self) -> bool:
        """True once the path names another file: ours was rotated away."""
        try:
            now = os.stat(self.path)
        except FileNotFoundError:
            return False  # renamed, the new one not created yet
        mine = os.fstat(self.fd)
        return (now.st_dev, now.st_ino) != (mine.st_dev, mine.st_ino)

    def switch(self) -> None:
        """Go on with the file written after ours: a rotated one if several rotations happened
        since, else the current log."""
        nxt = self._next_file()
        try:
            fd = os.open(nxt, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return  # pruned or renamed meanwhile: look again next time
        os.close(self.fd)
        self.fd = fd
        self._rest = b""
        self._skip = False

    def _next_file(self) -> str:
        directory = os.path.dirname(self.path) or "."
        rotated = []
        for name in os.listdir(directory):
            m = self._rotated.fullmatch(name)
            if m:
                rotated.append(((m.group(1), int(m.group(2) or -1)), os.path.join(directory, name)))
        rotated.sort()
        mine = os.fstat(self.fd)
        stats = []
        for _, path in rotated:
            with contextlib.suppress(FileNotFoundError):
                stats.append((path, os.stat(path)))
        for i, (_, st) in enumerate(stats):
            if (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino):
                return stats[i + 1][0] if i + 1 < len(stats) else self.path
        # Ours was pruned already: what was rotated after it was last written.
        later = [path for path, st in stats if st.st_mtime_ns >= mine.st_mtime_ns]
        return later[0] if later else self.path

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class AttachSession:
    """Joined to a running container: implements runtime.streaming.StreamSession.

    `exit_code` answers None while the container runs, else its exit code."""

    def __init__(self, follower: LogFollower, opts: StreamOptions, state_dir: Path, tty_container: bool,
                 stdin_fd: int | None, exit_code: Callable[[], int | None]) -> None:
        self._loop = asyncio.get_running_loop()
        self._fds = _Fds(self._loop)
        self._follower = follower
        self._opts = opts
        self._state_dir = state_dir
        self._tty = tty_container
        self._stdin = _Stdin(self._fds, None if stdin_fd is None else self._fds.own(stdin_fd))
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
        return _Output(self._next)

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
            if self._follower.replaced():  # nothing is appended to ours any more: read it to its end
                while True:
                    chunks, got = self._follower.read(self._opts)
                    self._pending.extend(chunks)
                    if not got:
                        break
                self._follower.switch()
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


# --- port-forward ---------------------------------------------------------------------------------------
async def connect(host: str, port: int, sandbox_id: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A TCP connection to the pod's port. As containerd dials localhost in the pod's network
    namespace over IPv4 then IPv6, loopback is tried as 127.0.0.1 then ::1."""
    if not 0 < port < 65536:
        raise InvalidInput(f"invalid port {port}: must be in 1-65535")
    hosts = [host, "::1"] if host == "127.0.0.1" else [host]
    problems = []
    for h in hosts:
        try:
            return await asyncio.wait_for(asyncio.open_connection(h, port), CONNECT_TIMEOUT_S)
        except TimeoutError:
            problems.append(f"{h}: timed out after {CONNECT_TIMEOUT_S:g}s")
        except OSError as exc:  # asyncio's own text names the call, not the error: use the OS's
            problems.append(f"{h}: {os.strerror(exc.errno) if exc.errno else exc}")
    raise Unavailable(f"failed to connect to port {port} of pod sandbox {sandbox_id}: {'; '.join(problems)}")
