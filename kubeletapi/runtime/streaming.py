"""Streams into containers: exec, attach and port-forward, as a runtime offers them.

The streaming protocols (kubeletapi.streaming: WebSocket channels, status frames) are written
against these protocols only, so any runtime plugs in: the process runtime runs the command
through its shim with pipes or a pseudo-terminal; the CRI runtime bridges to the runtime's own
streaming server. A session is used by one connection; `close()` must leave no process or thread behind.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Protocol

STDOUT = 1
STDERR = 2


@dataclass(frozen=True)
class StreamOptions:
    """Which standard streams the client wants, and whether it wants a terminal.

    With tty the process gets a pseudo-terminal: its stdout and stderr are one stream
    (delivered as STDOUT), and `resize` applies."""

    stdin: bool = False
    stdout: bool = True
    stderr: bool = True
    tty: bool = False


class StreamSession(Protocol):
    """A running exec or an attachment to a running container."""

    async def write_stdin(self, data: bytes) -> None:
        """Deliver bytes to the process's stdin (a no-op without stdin)."""
        ...

    async def close_stdin(self) -> None:
        """End of input: the process reads EOF (attach: detaches the client's stdin only)."""
        ...

    def output(self) -> AsyncIterator[tuple[int, bytes]]:
        """(STDOUT or STDERR, bytes) chunks as they come, in order per stream; ends when every
        requested output stream has ended (exec: the process exited and its output is drained;
        attach: the container exited)."""
        ...

    async def resize(self, width: int, height: int) -> None:
        """Set the terminal size (columns, rows); ignored without tty."""
        ...

    async def wait(self) -> int:
        """The exit code: the command's (exec) or the container's (attach), once it ended."""
        ...

    async def close(self) -> None:
        """The client is gone or the session ended: kill an exec that still runs, detach an
        attach, release every pipe, pty and task. Idempotent."""
        ...


class Streamer(Protocol):
    """What a runtime offers for /exec, /attach and /portForward."""

    async def exec_stream(self, container_id: str, cmd: Sequence[str], opts: StreamOptions) -> StreamSession:
        """Start `cmd` in the running container. NotFound for an unknown container,
        InvalidInput when it is not running; a command that cannot be started is still a
        session, ending with exit code 126 or 127 and the reason on stderr (as the kubelet's
        runtimes report it)."""
        ...

    async def attach(self, container_id: str, opts: StreamOptions) -> StreamSession:
        """Join the running container's streams: its output from now on, and its stdin when the
        container was created with stdin (else InvalidInput if opts.stdin)."""
        ...

    async def port_forward(self, sandbox_id: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A TCP connection to `port` in the pod's network namespace. Unavailable when it
        cannot connect (the message is what the client sees on the error channel)."""
        ...
