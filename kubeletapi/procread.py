"""Cheap reads of small kernel files (/proc, /sys): raw os.open/os.read, no Python file objects.

A seq_file in /proc hands out at most one buffer (usually a page) per read(2), so a file larger than
that needs more than one call; the loop stops at the first empty read. Small files (meminfo, stat,
loadavg, pid_max) come back in one data read plus the EOF read; read_head skips the EOF read
where only the start of a file matters.

/proc/<pid>/stat has its one parser here (parse_stat, read_stat): the process runtime reads a
process's identity and session from it, the stats its process trees.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

_CHUNK = 65536


def read_bytes(path: Path | str) -> bytes:
    """The whole file; OSError (FileNotFoundError, PermissionError, ...) propagates."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        first = os.read(fd, _CHUNK)
        if not first:
            return first
        chunks = [first]
        while chunk := os.read(fd, _CHUNK):
            chunks.append(chunk)
        return first if len(chunks) == 1 else b"".join(chunks)
    finally:
        os.close(fd)


def read_head(path: Path | str, size: int = 4096) -> bytes:
    """At most `size` bytes in one read(2): for files whose needed part is known to fit
    (/proc/<pid>/stat is under 1.2 KiB; the aggregate cpu line opens /proc/stat)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, size)
    finally:
        os.close(fd)


def read_optional(path: Path | str) -> bytes | None:
    """The file, or None when it is missing or unreadable (optional sources)."""
    try:
        return read_bytes(path)
    except OSError:
        return None


def read_str(path: Path | str) -> str:
    """An optional one-value file (an id, a version) stripped of whitespace; "" when unreadable."""
    data = read_optional(path)
    return "" if data is None else data.decode(errors="replace").strip()


def to_int(data: bytes | None) -> int | None:
    """The integer a small file holds (int() skips surrounding whitespace); None when absent or not a number."""
    if data is None:
        return None
    try:
        return int(data)
    except ValueError:
        return None


def read_int(path: Path | str) -> int | None:
    """An optional one-integer file (/proc/sys/kernel/pid_max); None when unreadable or not a number."""
    return to_int(read_optional(path))


class ProcStat(NamedTuple):
    """The fields of /proc/<pid>/stat kubeletapi uses (proc(5) numbering in comments).

    A NamedTuple, not a frozen dataclass: the stats build one per process per housekeeping cycle,
    and a frozen dataclass's __init__ costs several times more.
    """

    pid: int
    state: str  # (3) R, S, D, Z, ...
    ppid: int  # (4)
    session: int  # (6)
    utime: int  # (14) clock ticks
    stime: int  # (15)
    cutime: int  # (16) reaped children
    cstime: int  # (17)
    threads: int  # (20)
    start_ticks: int  # (22) ticks after boot; with the pid, a process's identity (a reused pid has another)
    rss_pages: int  # (24)


def parse_stat(pid: int, data: bytes) -> ProcStat:
    """Parse one /proc/<pid>/stat; comm (2) may hold spaces and ')', so split after the last ')'.
    IndexError or ValueError for a record that is cut short or not a stat line."""
    f = data[data.rfind(b")") + 2 :].split()
    return ProcStat(
        pid=pid,
        state=f[0].decode(),
        ppid=int(f[1]),
        session=int(f[3]),
        utime=int(f[11]),
        stime=int(f[12]),
        cutime=int(f[13]),
        cstime=int(f[14]),
        threads=int(f[17]),
        start_ticks=int(f[19]),
        rss_pages=int(f[21]),
    )


def read_stat(pid: int, proc_root: Path | str = "/proc") -> ProcStat:
    """/proc/<pid>/stat (under 1.2 KiB: one read(2)), parsed. OSError when the process is gone or
    unreadable; IndexError or ValueError for a torn record."""
    return parse_stat(pid, read_head(f"{proc_root}/{pid}/stat"))
