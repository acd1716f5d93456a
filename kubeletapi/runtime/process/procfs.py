"""Reads of /proc for process identity (root injectable for tests)."""

from __future__ import annotations

from pathlib import Path

from kubeletapi.procread import read_stat

PROC = Path("/proc")


def start_ticks(pid: int, proc: Path = PROC) -> int:
    """The process's start time in clock ticks since boot (field 22 of stat), or -1 if gone.

    With the pid, it identifies a process: a recycled pid has a different start time.
    """
    try:
        stat = read_stat(pid, proc)
    except (FileNotFoundError, ProcessLookupError, PermissionError, IndexError, ValueError):
        return -1  # gone, unreadable, or a record cut short
    if stat.state == "Z":  # a zombie has exited
        return -1
    return stat.start_ticks
