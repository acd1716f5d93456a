"""A program on a pseudo-terminal of its own, as a user's terminal emulator runs it: the test types
into the master side, reads what the program writes there, and resizes the terminal the way a
window resize does (the new size on the pty, then SIGWINCH to the program)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Sequence


class Terminal:
    def __init__(self, argv: Sequence[str], rows: int = 24, cols: int = 80) -> None:
        self.master, slave = os.openpty()
        self._set_size(rows, cols)
        try:
            self.proc = subprocess.Popen(list(argv), stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
        finally:
            os.close(slave)
        self.seen = b""  # everything the program wrote
        self._pos = 0  # where the next expect() starts looking

    def _set_size(self, rows: int, cols: int) -> None:
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def resize(self, rows: int, cols: int) -> None:
        self._set_size(rows, cols)
        self.proc.send_signal(signal.SIGWINCH)

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def expect(self, pattern: str | bytes, timeout: float = 20) -> re.Match[bytes]:
        """Wait until the output after the last match matches `pattern` (a regex); the next
        expect starts after this match."""
        regex = re.compile(pattern.encode() if isinstance(pattern, str) else pattern)
        deadline = time.monotonic() + timeout
        while True:
            found = regex.search(self.seen, self._pos)
            if found is not None:
                self._pos = found.end()
                return found
            left = deadline - time.monotonic()
            if left <= 0 or not self._read(left):
                raise AssertionError(f"no {regex.pattern!r} after {timeout}s in the terminal; it shows:\n"
                                     f"{self.seen[self._pos:].decode(errors='replace')!r}")

    def _read(self, timeout: float) -> bool:
        """Read what is there within `timeout`; False when the program's side has closed."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: every slave descriptor closed (the program exited)
            return False
        self.seen += chunk
        return bool(chunk)

    def wait(self, timeout: float = 20) -> int:
        """The program's exit code, reading its last output meanwhile (a full pty would block it)."""
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            if not self._read(0.1):
                time.sleep(0.05)
        return self.proc.wait(max(0.0, deadline - time.monotonic()))

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        with contextlib.suppress(OSError):
            os.close(self.master)
