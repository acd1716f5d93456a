"""The names of a container's CRI log files, and reading a log on into the file written after it.

One grammar for every writer and reader here: pods/containers.py names the live file, the process
runtime's shim (shim.c, rotated_seq and rotated_name) and pods/logrotation.py (containerd's logs)
rotate it, runtime/logs.py and the process runtime's attach follow it across rotations.

- The live file: `<container>/<restartCount>.log` below the sandbox's log directory, as the kubelet
  names it (`<podLogsDir>/<namespace>_<pod>_<uid>/<container>/<N>.log`).
- A rotated file: `<live>.<YYYYMMDD-HHMMSS>`, the second of the rotation in UTC (the kubelet's
  container log manager writes the same form, in its local time), plus `.<N>` (ASCII digits) when
  that name is taken: N is above every file of that second, so names never repeat and always sort
  in rotation order. The kubelet rotates at most once a monitor period and never needs the suffix;
  the shim can rotate several times a second.
- Rotation order (oldest first): by stamp, then by N as a number (no suffix counts as 0), so `.9`
  comes before `.10`; the name breaks what ties are left (`.1` and `.01`).

Deliberately not part of the grammar: the kubelet's compressed `<rotated>.gz` (it gzips every
rotated file but the newest, through `<rotated>.tmp`). Nothing here compresses, nothing here reads
gzip, and the shim's parser (rotated_seq) rejects those names too: a `.gz` or `.tmp` file beside a
log (left by a kubelet that ran before) is never followed into, counted among the rotated files nor
pruned; it goes with the pod's log directory (pods/loggc.py). Neither is anything else that merely
starts with the live file's name.
"""

from __future__ import annotations

import enum
import os
import re
import time
from collections.abc import Sequence
from typing import NamedTuple

__all__ = [
    "AtEnd", "FollowedFile", "Rotation", "live_log_path", "parse_rotation", "rotated_files", "rotated_name",
]

STAMP_FORMAT = "%Y%m%d-%H%M%S"
_SUFFIX = re.compile(r"\.([0-9]{8}-[0-9]{6})(?:\.([0-9]+))?")


def live_log_path(container: str, attempt: int) -> str:
    """The live log of a container's `attempt`, relative to its sandbox's log directory."""
    return f"{container}/{attempt}.log"


class Rotation(NamedTuple):
    """Where a rotated file stands; tuples compare in rotation order."""

    stamp: str  # YYYYMMDD-HHMMSS
    seq: int  # N, 0 without a suffix
    suffixed: bool  # `<stamp>` before `<stamp>.0`


def parse_rotation(live: str, name: str) -> Rotation | None:
    """`name` as a rotated file of the log `live` (both paths, or both base names), None when it is
    not one: another file, the live file itself, a compressed or temporary file."""
    if not name.startswith(live):
        return None
    m = _SUFFIX.fullmatch(name, len(live))
    if m is None:
        return None
    return Rotation(m.group(1), int(m.group(2) or 0), m.group(2) is not None)


def rotated_files(path: str) -> list[str]:
    """The rotated files of the log at `path`, oldest first (OSError when its directory cannot be
    listed)."""
    directory, base = os.path.split(path)
    found = []
    for name in os.listdir(directory or "."):
        rotation = parse_rotation(base, name)
        if rotation is not None:
            found.append((rotation, name, os.path.join(directory, name)))
    return [full for *_, full in sorted(found)]


def rotated_name(path: str, now: float, existing: Sequence[str]) -> str:
    """The name for `path` rotated at wall time `now`, given the rotated files that exist (paths):
    `<path>.<stamp>`, or `<path>.<stamp>.<N>` with N above every existing file of that second."""
    stamp = time.strftime(STAMP_FORMAT, time.gmtime(int(now)))
    taken = [r.seq for name in existing if (r := parse_rotation(path, name)) is not None and r.stamp == stamp]
    return f"{path}.{stamp}" if not taken else f"{path}.{stamp}.{max(taken) + 1}"


class AtEnd(enum.Enum):
    """What a follower does at the end of its file (FollowedFile.at_end)."""

    WAIT = "wait"  # ours is still the live file: nothing more to read for now
    DRAIN = "drain"  # ours was rotated away: read it once more to its very end
    MOVED = "moved"  # ours was read to its end, the file written after it is open now


class FollowedFile:
    """An open log file read on across rotations, into the file written after it.

    The caller reads through `fd` and calls at_end() whenever a read finds nothing more. Once the
    path names another file (ours was renamed aside and the writer went on in a new one), ours is
    read once more to its end, then the next file is opened: the one rotated right after ours when
    several rotations happened since (oldest first), else the live file. A path that names no file
    (renamed, the new one not created yet) means "keep reading ours".
    """

    def __init__(self, path: str, fd: int) -> None:
        self.path = path
        self.fd = fd
        self._draining = False

    @property
    def closed(self) -> bool:
        return self.fd < 0

    def rotated_away(self) -> bool:
        """True once the path names another file than the open one."""
        try:
            now = os.stat(self.path)
        except FileNotFoundError:
            return False
        mine = os.fstat(self.fd)
        return (now.st_dev, now.st_ino) != (mine.st_dev, mine.st_ino)

    def at_end(self) -> AtEnd:
        """Call at end of file: WAIT for more, or read again (DRAIN, MOVED). After MOVED, an
        unterminated last line of the old file is all there will be of that line."""
        if not self.rotated_away():
            self._draining = False
            return AtEnd.WAIT
        if not self._draining:
            self._draining = True
            return AtEnd.DRAIN
        self._draining = False
        return AtEnd.MOVED if self._advance() else AtEnd.DRAIN

    def _advance(self) -> bool:
        try:
            fd = os.open(self._next_file(), os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return False  # pruned or renamed between listing and opening: look again
        try:
            is_next = self._is_next(fd)
        except OSError:
            os.close(fd)  # the directory could not be listed again: not ours to keep
            raise
        if not is_next:
            os.close(fd)
            return False  # a newer file than the one listed: look again
        os.close(self.fd)
        self.fd = fd
        return True

    def _is_next(self, fd: int) -> bool:
        """Whether the file opened at `fd` is still the one written after ours, by a listing made
        after the open. The live path opened as the next file may have been rotated between the
        listing and the open, and name the file after that one: reading it would skip a file."""
        try:
            now = os.stat(self._next_file())
        except FileNotFoundError:
            return False
        opened = os.fstat(fd)
        return (now.st_dev, now.st_ino) == (opened.st_dev, opened.st_ino)

    def _next_file(self) -> str:
        try:
            names = rotated_files(self.path)
        except FileNotFoundError:
            names = []
        rotated = []
        for name in names:
            try:
                rotated.append((name, os.stat(name)))
            except FileNotFoundError:
                continue
        mine = os.fstat(self.fd)
        for index, (_, st) in enumerate(rotated):
            if (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino):
                return rotated[index + 1][0] if index + 1 < len(rotated) else self.path
        # Ours was pruned meanwhile: go on with what was rotated after it was last written.
        later = [name for name, st in rotated if st.st_mtime_ns >= mine.st_mtime_ns]
        return later[0] if later else self.path

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def remove_logs(paths: Sequence[str]) -> list[tuple[str, OSError]]:
    """Remove these log files (one already gone is fine); the ones that could not be removed,
    with why, for the caller to report."""
    failed = []
    for name in paths:
        try:
            os.remove(name)
        except FileNotFoundError:
            continue
        except OSError as exc:
            failed.append((name, exc))
    return failed
