"""What kubeletapi-shim leaves in a container's state directory (shim/shim.c), read back, and its lock.

The shim writes `shim.pid` as soon as its daemon runs (before it forks the container), `started`
once the program exec'd, `exit` when it ended (each atomically: absent or complete), and holds an
exclusive flock on `shim.lock` for as long as it runs: the invoker, then the daemon, never the
container's processes. The runtime takes that lock before it launches a shim and hands it over
(`--lock-fd`), so somebody holds it without a gap from before the launch until the daemon exits.

Why a lock rather than the daemon's pid: the pid is known only once `shim.pid` is written, and a
shim launched but not yet that far (or a launcher forked and not yet exec'd) has none to check;
the lock is held from before the launch, and the kernel drops it when its last holder dies, so
it can neither be stale nor be mistaken for a recycled pid. A free lock therefore means that no
shim of this container runs, and none will unless the caller launches one itself.
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass
from pathlib import Path

from kubeletapi.errors import Conflict

LOCK = "shim.lock"
PID = "shim.pid"
STARTED = "started"
EXIT = "exit"
WARNINGS = "warnings"


@dataclass(frozen=True)
class Started:
    app_pid: int
    init_pid: int  # the in-namespace init, 0 without namespaces
    at: int  # unix ns


@dataclass(frozen=True)
class Exit:
    code: int
    signal: int
    finished_at: int  # unix ns
    reason: str  # Completed | Error | StartError
    message: str


class ShimFiles:
    """One container's state directory, as the shim writes it."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory

    def shim_pid(self) -> int:
        text = _read_text(self.dir / PID).strip()
        return int(text) if text else 0

    def recorded(self) -> bool:
        """Whether the shim recorded a start or an exit (each file appears complete, by rename)."""
        return (self.dir / STARTED).exists() or (self.dir / EXIT).exists()

    def ran(self) -> bool:
        """Whether a shim daemon ever ran here (it writes its pid before it forks the container)."""
        return (self.dir / PID).exists()

    def started(self) -> Started | None:
        fields = _read_text(self.dir / STARTED).split()
        if not fields:
            return None
        app, init, at = (int(x) for x in fields[:3])
        return Started(app, init, at)

    def exit(self) -> Exit | None:
        text = _read_text(self.dir / EXIT)
        if not text:
            return None
        head, _, message = text.partition("\n")
        code, sig, finished, reason = head.split(" ", 3)
        return Exit(int(code), int(sig), int(finished), reason, message)

    def warnings(self) -> str:
        return _read_text(self.dir / WARNINGS).strip()

    def shim_running(self) -> bool:
        """Whether a shim of this container runs (or its launch is under way): the lock is held."""
        try:
            fd = os.open(self.dir / LOCK, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return False  # no launch ever took it
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # also drops the lock if this probe took it
        return False

    def lock(self) -> int:
        """Take the lock for a launch: an fd to hand to the shim (--lock-fd) and to close once
        the shim process exists. Conflict if a shim already holds it."""
        fd = os.open(self.dir / LOCK, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o640)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise Conflict(f"a shim already runs the container of {self.dir}") from None
        return fd


def _read_text(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""
