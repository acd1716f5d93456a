"""Reads of /proc for process identity (root injectable for tests)."""

from __future__ import annotations

from pathlib import Path

PROC = Path("/proc")


def start_ticks(pid: int, proc: Path = PROC) -> int:
    """The process's start time in clock ticks since boot (field 22 of stat), or -1 if gone.

    With the pid, it identifies a process: a recycled pid has a different start time.
    """
    try:
        text = (proc / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return -1
    # comm (field 2) may hold spaces and parentheses: split after the last ')'
    fields = text[text.rfind(")") + 2 :].split()
    if not fields or fields[0] == "Z":  # a zombie has exited
        return -1
    return int(fields[19])
