"""Cheap reads of small kernel files (/proc, /sys): raw os.open/os.read, no Python file objects.

A seq_file in /proc hands out at most one buffer (usually a page) per read(2), so a file larger than
that needs more than one call; the loop stops at the first empty read. Small files (meminfo, stat,
loadavg, pid_max) come back in one data read plus the EOF read; read_head skips the EOF read
where only the start of a file matters.
"""

from __future__ import annotations

import os
from pathlib import Path

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
